/*
 * test_v8file: V8 detection and layouts on the real files (node 20's
 * executable, Debian's libnode.so.108), refusals (a file without V8, an
 * unknown version, a row that disagrees with the file), damaged ELF input
 * (never a crash), and the pure decoders of sampler/v8/v8pos.c on tables
 * built here by V8's encoding rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/v8/v8layout.h"
#include "sampler/v8/v8name.h"
#include "sampler/v8/v8pos.h"
#include "tests/test.h"
#include "tests/unit/test_v8.h"

/* The address of a symbol of the ELF file at path (.symtab, else .dynsym). */
static uint64_t sym_addr(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t v = 0;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (!v && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *nm;

			if (gelf_getsym(d, i, &s) && (nm = elf_strptr(e, sh.sh_link, s.st_name)) && !strcmp(nm, name)) {
				v = s.st_value;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
	return v;
}

static void real_files(void)
{
	for (size_t i = 0; i < NODE_RTS; i++) {
		const struct node_rt *rt = &node_rts[i];
		struct v8file f;
		struct v8layout l;
		struct v8_proc p;
		char why[200] = "";
		int fd = open(rt->engine, O_RDONLY), err;

		if (fd < 0) {
			CHECK(0, "%s: %s missing (scripts/deps.sh)", rt->name, rt->engine);
			continue;
		}
		err = v8file__read(fd, &f);
		close(fd);
		CHECK(!err && f.major == rt->v8_major && f.minor == rt->v8_minor,
		      "%s: V8 %d.%d.%d.%d detected (err %d)", rt->name, f.major, f.minor, f.build, f.patch, err);
		CHECK(f.ndbg > 400, "%s: %u v8dbg_* values", rt->name, f.ndbg);
		CHECK(f.nbytecodes > 150 && f.bc_sizes[0][4] > 0, "%s: kBytecodeSizes, %u bytecodes", rt->name,
		      f.nbytecodes);
		CHECK(f.code_hi - f.code_lo > (1u << 20) && f.code_off, "%s: builtins %#lx-%#lx (%lu KiB)",
		      rt->name, (unsigned long)f.code_lo, (unsigned long)f.code_hi,
		      (unsigned long)((f.code_hi - f.code_lo) >> 10));
		/* node 20 names its builtins: the range found by FDEs holds them */
		if (!rt->libdir) {
			uint64_t iet = sym_addr(rt->engine, "Builtins_InterpreterEntryTrampoline");
			uint64_t jse = sym_addr(rt->engine, "Builtins_JSEntry");

			CHECK(iet >= f.code_lo && iet < f.code_hi && jse >= f.code_lo && jse < f.code_hi,
			      "%s: InterpreterEntryTrampoline %#lx and JSEntry %#lx in the builtins", rt->name,
			      (unsigned long)iet, (unsigned long)jse);
		}
		err = v8layout__init(&f, &l, why, sizeof(why));
		CHECK(!err, "%s: layout row accepted (%s)", rt->name, why);
		/* as measured (DESIGN-NOTES): 12.4 moved JSFunction.code before
		 * shared, and BytecodeArray's positions up by a slot */
		bool v12 = f.major >= 12;

		CHECK(!err && l.fp_function == -16 && l.fp_bytecode_offset == -40 &&
			      l.jsf_shared == (v12 ? 32 : 24) && l.jsf_code == (v12 ? 24 : 48) &&
			      l.bytecode_positions == (v12 ? 24 : 32),
		      "%s: frame slots and fields as measured", rt->name);
		CHECK(!v8layout__proc(&l, f.code_off, f.code_hi - f.code_lo, 0x800001, 12345, &p) &&
			      p.jsf_read_off == 24 && p.jsf_code == (v12 ? 0 : 24) && p.blob_off == f.code_off,
		      "%s: BPF set-up fits its reads", rt->name);
		/* an unknown version is refused, never guessed */
		char env[16];
		snprintf(env, sizeof(env), "%d.%d", f.major, f.minor);
		setenv("PROFFS_V8_WITHHOLD", env, 1);
		err = v8layout__init(&f, &l, why, sizeof(why));
		unsetenv("PROFFS_V8_WITHHOLD");
		CHECK(err == -EOPNOTSUPP, "%s: withheld, %d.%d is unsupported (%d: %s)", rt->name, f.major, f.minor,
		      err, why);
		/* a row off by a field is refused */
		f.dbg[v12 ? V8D_JSF_SHARED : V8D_JSF_PROTOTYPE] += 8;
		err = v8layout__init(&f, &l, why, sizeof(why));
		CHECK(err == -EPROTO, "%s: a file whose JSFunction differs from the row: refused (%s)", rt->name,
		      why);
	}
}

/* Damaged copies of a V8 file: an error or a result, never a crash. */
static void damaged(void)
{
	const char *path = node_rts[1].engine; /* the smaller one */
	int fd = open(path, O_RDONLY), ok = 0;
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
	unsigned char *img = size > 0 ? malloc(size) : NULL, *cp = size > 0 ? malloc(size) : NULL;
	struct v8file f;

	if (!img || !cp || pread(fd, img, size, 0) != size) {
		CHECK(0, "read %s", path);
		goto out;
	}
	CHECK(v8file__read_mem(img, 12, &f) == -ENOEXEC, "a 12-byte file is not ELF");
	for (int i = 0; i < 40; i++) {
		memcpy(cp, img, size);
		for (int k = 0; k < 256; k++)
			cp[(size_t)(k * 7919ull * (i + 1) + i * 104729ull) % size] ^= 0x5a;
		ok += v8file__read_mem(cp, i < 20 ? (size_t)size : (size_t)size * (i + 1) / 41, &f) == 0;
	}
	CHECK(1, "40 damaged copies read without a crash (%d still V8)", ok);
	{
		struct v8file g;
		int nf = open("/bin/true", O_RDONLY);

		CHECK(nf >= 0 && v8file__read(nf, &g) == -ENOENT, "a file without V8 is not V8");
		if (nf >= 0)
			close(nf);
	}
out:
	free(img);
	free(cp);
	if (fd >= 0)
		close(fd);
}

/* --- V8's encodings, to build tables --- */

static size_t put_uvlq(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			p[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

static size_t put_svlq(uint8_t *p, int64_t v)
{
	return put_uvlq(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* An entry as V8's SourcePositionTableBuilder writes it (deltas). */
static size_t put_entry(uint8_t *p, int64_t dcode, bool statement, int64_t dpos)
{
	size_t n = put_svlq(p, statement ? dcode : -dcode - 1);

	return n + put_svlq(p + n, dpos);
}

static uint64_t srcpos(int32_t script_offset, int32_t inlining_id)
{
	return (uint64_t)(script_offset + 1) << 1 | (uint64_t)(inlining_id + 1) << 31;
}

static void positions(void)
{
	uint8_t t[256];
	size_t n = 0;
	uint64_t raw, prev = 0;
	int64_t at;
	/* (code offset, position) as a bytecode table would have them */
	struct {
		int64_t code;
		uint64_t pos;
		bool stmt;
	} e[] = { { -1, srcpos(10, -1), true }, { 0, srcpos(12, -1), true }, { 5, srcpos(30, -1), false },
		  { 5, srcpos(31, -1), true },  { 90, srcpos(7, -1), true }, { 200, srcpos(5000, 3), false } };
	int64_t code = -1;

	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		n += put_entry(t + n, e[i].code - code, e[i].stmt, (int64_t)(e[i].pos - prev));
		code = e[i].code;
		prev = e[i].pos;
	}
	CHECK(!v8pos__find(t, n, -1, &raw, &at) && v8pos__script_offset(raw) == 10 && at == -1,
	      "function entry (code -1): position 10");
	CHECK(!v8pos__find(t, n, 4, &raw, NULL) && v8pos__script_offset(raw) == 12, "code 4: the entry at 0");
	CHECK(!v8pos__find(t, n, 5, &raw, NULL) && v8pos__script_offset(raw) == 31,
	      "code 5: the last of two entries there");
	CHECK(!v8pos__find(t, n, 89, &raw, NULL) && v8pos__script_offset(raw) == 31, "code 89: still 31");
	CHECK(!v8pos__find(t, n, 1000, &raw, &at) && v8pos__script_offset(raw) == 5000 &&
		      v8pos__inlining_id(raw) == 3 && at == 200,
	      "code 1000: the last entry, inlined (id 3)");
	CHECK(v8pos__find(t, n, -2, &raw, NULL) == -ENOENT, "before the first entry: none");
	CHECK(v8pos__find(t, n - 1, 1000, &raw, NULL) == -EINVAL, "a table cut in a VLQ is refused");
	memset(t, 0xff, 16);
	CHECK(v8pos__find(t, 16, 0, &raw, NULL) == -EINVAL, "a VLQ over 64 bits is refused");
	/* an external position (bit 0) is skipped */
	n = put_entry(t, 1, true, 2 * 7 + 1); /* code 0: external */
	n += put_entry(t + n, 1, true, 1);    /* code 1: script offset 7 */
	CHECK(v8pos__find(t, n, 0, &raw, NULL) == -ENOENT && !v8pos__find(t, n, 1, &raw, NULL) &&
		      !v8pos__external(raw) && v8pos__script_offset(raw) == 7,
	      "external entries are skipped");
}

static void baseline(void)
{
	static uint8_t sizes[3][256];
	/* bytecodes: op 10 at 0 (3 bytes), Wide + op 11 at 3 (1 + 5), op 12 at 9 */
	uint8_t bc[] = { 10, 0, 0, 0, 11, 0, 0, 0, 0, 12 }, tab[16];
	size_t n = 0;
	int32_t off;

	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 256; k++)
			sizes[s][k] = 1;
	sizes[0][10] = 3;
	sizes[1][11] = 5;
	/* machine code: prologue 16 bytes, then 4, 8, 2 per bytecode */
	n += put_uvlq(tab + n, 16);
	n += put_uvlq(tab + n, 4);
	n += put_uvlq(tab + n, 8);
	n += put_uvlq(tab + n, 2);
	CHECK(!v8pos__baseline(tab, n, bc, sizeof(bc), sizes, 200, 0, &off) && off == -1, "pc 0: the prologue");
	CHECK(!v8pos__baseline(tab, n, bc, sizeof(bc), sizes, 200, 16, &off) && off == -1,
	      "pc 16: still the prologue (V8 maps a pc to the code ending at or after it)");
	CHECK(!v8pos__baseline(tab, n, bc, sizeof(bc), sizes, 200, 17, &off) && off == 0, "pc 17: bytecode 0");
	CHECK(!v8pos__baseline(tab, n, bc, sizeof(bc), sizes, 200, 21, &off) && off == 3,
	      "pc 21: the Wide bytecode at 3");
	CHECK(!v8pos__baseline(tab, n, bc, sizeof(bc), sizes, 200, 30, &off) && off == 9, "pc 30: bytecode 9");
	CHECK(v8pos__baseline(tab, n, bc, sizeof(bc), sizes, 200, 31, &off) == -ERANGE, "pc 31: past the table");
	CHECK(v8pos__baseline(tab, n, bc, 5, sizes, 200, 30, &off) == -EINVAL, "bytecodes cut short: refused");
}

static void lines(void)
{
	const char *src = "a\nbb\r\ncc\rd";
	uint8_t two[2 * 8];
	uint32_t ends[8], line;
	size_t n = v8pos__line_ends1((const uint8_t *)src, strlen(src), ends, 8);
	const uint16_t w[8] = { 'x', 0x2028, 'y', '\r', '\n', 'z', 0x2029, 'q' };

	CHECK(n == 4 && ends[0] == 1 && ends[1] == 5 && ends[2] == 8 && ends[3] == 10,
	      "line ends of \"a\\nbb\\r\\ncc\\rd\": 1, 5, 8, 10 (%zu)", n);
	CHECK(!v8pos__line(ends, n, 0, &line) && line == 0 && !v8pos__line(ends, n, 1, &line) && line == 0 &&
		      !v8pos__line(ends, n, 2, &line) && line == 1 && !v8pos__line(ends, n, 9, &line) &&
		      line == 3 && v8pos__line(ends, n, 11, &line) == -ERANGE,
	      "positions to lines: a terminator belongs to its line");
	for (int i = 0; i < 8; i++) {
		two[2 * i] = (uint8_t)w[i];
		two[2 * i + 1] = (uint8_t)(w[i] >> 8);
	}
	n = v8pos__line_ends2(two, 8, ends, 8);
	CHECK(n == 4 && ends[0] == 1 && ends[1] == 4 && ends[2] == 6 && ends[3] == 8,
	      "two-byte line ends: U+2028, CR LF, U+2029 (%zu)", n);
	CHECK(v8pos__line_ends1((const uint8_t *)src, strlen(src), NULL, 0) == 4, "counting without room");
}

static void names(void)
{
	uint16_t u[] = { 'a', 0xe9, 0xd83d, 0xde00, 0xd800, 0, 'z' };
	char out[64];
	size_t n = v8name__utf8(u, 7, out, sizeof(out));

	CHECK(n == 14 && !strcmp(out, "a\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbdz"),
	      "UTF-16 to UTF-8: pairs joined, lone surrogates and NUL replaced");
	v8name__display("heavy", "/srv/app/known.js", out, sizeof(out));
	CHECK(!strcmp(out, "heavy (known.js)"), "display: base name (%s)", out);
	v8name__display("parse", "/srv/app/node_modules/a/node_modules/b/lib/x.js", out, sizeof(out));
	CHECK(!strcmp(out, "parse (b/lib/x.js)"), "display: below the last node_modules/ (%s)", out);
	v8name__display("Module._load", "node:internal/modules/cjs/loader", out, sizeof(out));
	CHECK(!strcmp(out, "Module._load (node:internal/modules/cjs/loader)"), "display: node: kept (%s)", out);
	v8name__display("(anonymous)", "", out, sizeof(out));
	CHECK(!strcmp(out, "(anonymous) (<anonymous>)"), "display: no script (%s)", out);
	v8name__display("f", "file:///srv/m.mjs", out, sizeof(out));
	CHECK(!strcmp(out, "f (m.mjs)"), "display: a file URL (%s)", out);
}

int main(void)
{
	real_files();
	damaged();
	positions();
	baseline();
	lines();
	names();
	return test_done();
}
