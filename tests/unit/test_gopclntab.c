/*
 * test_gopclntab - Go's function table as a symbol table.
 *
 * build/tests/gohot_stripped (Debian's Go 1.19, -ldflags='-s -w': no
 * .symtab, no DWARF) is read with elfsym__read: every function it names
 * is one the same program built with its symbol table (gohot_full) has at
 * that address, under Go's own name (the two builds differ only in the
 * tables the linker drops), main.heavy, main.light and runtime.main among
 * them, and the layout is reported as Go 1.18's.
 * Lines: at 3 addresses in each function (entry, middle, last byte),
 * gopclntab__line gives the file and line Go's own reader does (`go tool
 * addr2line` on the stripped binary), every one of them, but in code the
 * compiler inlined (more than one frame there in the DWARF of the same
 * program built with it, binutils' addr2line -i), where it gives none.
 * Damaged tables: the magic of a layout we do not read (Go 1.2-1.15's),
 * every truncation of the table, and bytes flipped at many places are
 * each refused or read without a name outside the table and without a
 * crash (ASan twin), never naming a function at another's address.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/gopclntab.h"
#include "tests/test.h"

#define STRIPPED "build/tests/gohot_stripped"
#define FULL "build/tests/gohot_full"
#define CGO "build/tests/gocgo_stripped"

static int read_file(const char *path, struct elf_info *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = elfsym__read(fd, true, e);
	close(fd);
	return err;
}

static uint64_t addr_of(const struct elf_info *e, const char *name)
{
	const struct elf_sym *s = elfsym__find(e, name);

	return s ? s->addr : 0;
}

/* The table's bytes and .text's address, from the file. */
static uint8_t *table_of(const char *path, size_t *n, uint64_t *text)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstr;
	uint8_t *out = NULL;

	elf_version(EV_CURRENT);
	elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf || elf_getshdrstrndx(elf, &shstr))
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *nm;

		if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstr, sh.sh_name)))
			continue;
		if (!strcmp(nm, ".text"))
			*text = sh.sh_addr;
		if (!strcmp(nm, ".gopclntab")) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d && (out = malloc(d->d_size))) {
				memcpy(out, d->d_buf, d->d_size);
				*n = d->d_size;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return out;
}

/* Runs `tool bin < (the addresses, one a line)` (tool: a command line
 * prefix) and returns its output stream (NULL on failure); in[] gets the
 * input file's name, for the caller to unlink after pclose. */
static FILE *run_on_addrs(const char *tool, const char *bin, const uint64_t *pcs, size_t n, char in[27])
{
	char cmd[1024];
	int fd;
	FILE *f;

	strcpy(in, "/tmp/test_gopclntab.XXXXXX");
	fd = mkstemp(in);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%#llx\n", (unsigned long long)pcs[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "timeout 120 %s %s < %s", tool, bin, in);
	return popen(cmd, "r");
}

/* Go's own answer for each address (`go tool addr2line`): "file:line"
 * into want[i], or "" where it knows none. Returns the count read. */
static size_t go_addr2line(const char *bin, const uint64_t *pcs, size_t n, char (*want)[512])
{
	char in[27], fn[512], pos[512];
	FILE *p = run_on_addrs("go tool addr2line", bin, pcs, n, in);
	size_t got = 0;

	while (p && got < n && fgets(fn, sizeof(fn), p) && fgets(pos, sizeof(pos), p)) {
		pos[strcspn(pos, "\n")] = 0;
		/* "?:0" nothing; ":-1" a function without a file (padding) */
		snprintf(want[got++], 512, "%s", strcmp(pos, "?:0") && pos[0] != ':' ? pos : "");
	}
	if (p)
		pclose(p);
	unlink(in);
	return got;
}

/* How many frames the DWARF of the same program built with it (gohot_full:
 * the same code at the same addresses) has at each address: binutils'
 * addr2line -i, one line per frame, > 1 where the compiler inlined. */
static size_t dwarf_depths(const char *bin, const uint64_t *pcs, size_t n, int *depth)
{
	char in[27], l[1024];
	FILE *p = run_on_addrs("addr2line -a -i -e", bin, pcs, n, in);
	long k = -1;

	while (p && fgets(l, sizeof(l), p)) {
		if (!strncmp(l, "0x", 2)) {
			if (++k >= (long)n)
				break;
			depth[k] = 0;
		} else if (k >= 0) {
			depth[k]++;
		}
	}
	if (p)
		pclose(p);
	unlink(in);
	return (size_t)(k + 1);
}

/* A damaged table's walk: every name it gives must be a name the real
 * table gives at that address (or at least be text inside the table). */
struct damaged {
	const struct elf_info *full;
	long named, wrong;
};

static int check_name(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t n)
{
	struct damaged *d = ctx;
	const char *want = elfsym__lookup(d->full, entry);

	(void)end;
	d->named++;
	if (!want || strlen(want) != n || memcmp(want, name, n))
		d->wrong++;
	return 0;
}

/* Lines, against Go's own reader, at 3 addresses in each function. */
static void lines_check(const char *bin, const char *dwarf)
{
	struct elf_info s = { 0 };
	size_t n = 0;
	uint64_t text = 0;
	uint8_t *tab = table_of(bin, &n, &text);
	int err = read_file(bin, &s);

	CHECK(!err && tab, "%s: read", bin);
	if (err || !tab) {
		free(tab);
		return;
	}
		size_t np = 0, agree = 0, have = 0;
		uint64_t *pcs = calloc(3 * s.nsyms, sizeof(*pcs));
		char (*want)[512] = calloc(3 * s.nsyms, 512);

		for (size_t i = 0; pcs && want && i < s.nsyms; i++) {
			uint64_t a = s.syms[i].addr, z = s.syms[i].size ? s.syms[i].size : 1;

			pcs[np++] = a;
			pcs[np++] = a + z / 2;
			pcs[np++] = a + z - 1;
		}
		/* Go 1.19's own reader (debug/gosym) counts a 1.18+ table's
		 * offsets from .text's start, not from the table's textStart
		 * (runtime.text): in an externally linked (cgo) binary it names
		 * every address by the one runtime.text - .text bytes below it
		 * (0x100 here, the C start code), as the binary's own symbol
		 * table shows. It is asked about those addresses. */
		uint64_t hdr_text, delta = 0;

		memcpy(&hdr_text, tab + 24, 8);
		if (hdr_text > text)
			delta = hdr_text - text;
		for (size_t i = 0; i < np; i++)
			pcs[i] -= delta;
		size_t got = pcs && want ? go_addr2line(bin, pcs, np, want) : 0;

		for (size_t i = 0; i < np; i++)
			pcs[i] += delta;

		CHECK(np > 3000 && got == np, "%s: go tool addr2line answered %zu of %zu addresses", bin, got, np);
		int *depth = calloc(np ? np : 1, sizeof(int));
		size_t nd = dwarf && depth ? dwarf_depths(dwarf, pcs, np, depth) : 0, inl = 0, inl_none = 0,
		       wrappers = 0, unjudged = 0;

		if (dwarf)
			CHECK(nd == np, "%s: binutils' addr2line -i answered %zu of %zu addresses", bin, nd, np);
		for (size_t i = 0; i < got; i++) {
			uint32_t fo;
			int32_t ln;
			char mine[512] = "";

			if (!gopclntab__line(tab, n, text, pcs[i], &fo, &ln))
				snprintf(mine, sizeof(mine), "%s:%d", (const char *)tab + fo, (int)ln);
			have += mine[0] != 0;
			/* Inlined code (DWARF's frames > 1): Go's reader gives the
			 * callee's line; we give none (no line of this function). */
			if (i < nd && depth[i] > 1) {
				inl++;
				inl_none += !mine[0];
				agree += !mine[0];
				if (mine[0] && inl - inl_none <= 5)
					printf("  %#llx: inlined code (%d frames), we say '%s'\n", (unsigned long long)pcs[i],
					       depth[i], mine);
				continue;
			}
			/* Without a DWARF twin (the cgo binary) inlined code is not
			 * known: every line we give must be Go's. */
			if (!dwarf && !mine[0] && want[i][0]) {
				agree++;
				unjudged++;
				continue;
			}
			/* A pointer-receiver wrapper, (*T).M, is the value method
			 * inlined: Go's table says so, the DWARF of a wrapper
			 * (autogenerated) records no inlining. */
			const char *fn = elfsym__lookup(&s, pcs[i]);

			if (!mine[0] && want[i][0] && dwarf && fn && strstr(fn, ".(*")) {
				agree++;
				wrappers++;
				continue;
			}
			if (!strcmp(mine, want[i]))
				agree++;
			else if (i + 1 - agree <= 5)
				printf("  %#llx: we say '%s', go tool addr2line '%s'\n", (unsigned long long)pcs[i], mine,
				       want[i]);
		}
		/* (Go knows no line for a function's alignment padding, its
		 * last bytes here, nor for some runtime stubs.) */
		CHECK(got && agree == got && have * 2 > got,
		      "%s: %zu of %zu addresses at the file and line Go's own reader gives (%zu with one)", bin, agree, got, have);
		if (!dwarf)
			printf("  %s: %zu addresses without a line where Go gives one (inlined code or not: no DWARF to say)\n",
			       bin, unjudged);
		if (dwarf)
			CHECK(inl > 0 && inl_none == inl && wrappers < 10,
			      "%s: %zu of %zu addresses in inlined code left without a line (and %zu in (*T).M wrappers)",
			      bin, inl_none, inl, wrappers);
		free(depth);
		free(pcs);
		free(want);
		free(tab);
	elfsym__fini(&s);
}

int main(void)
{
	struct elf_info s = { 0 }, f = { 0 };
	size_t n = 0, same = 0, gofuncs = 0;
	uint64_t text = 0;
	uint8_t *tab, *copy;
	int err;

	err = read_file(STRIPPED, &s);
	CHECK(!err, "%s read: %s", STRIPPED, strerror(-err));
	err = read_file(FULL, &f);
	CHECK(!err, "%s read: %s", FULL, strerror(-err));
	if (!s.nsyms || !f.nsyms)
		return test_done();
	CHECK(s.go_layout && !strcmp(s.go_layout, "1.18"), "the stripped binary is named from its table, layout %s",
	      s.go_layout ? s.go_layout : "none");
	/* Each function the table names is one the symbol table has at that
	 * address, under Go's own name for it: the linker's ".abi0" suffix
	 * of an assembly function's wrapper dropped, a generic instance's
	 * type arguments shown as "[...]" (as Go's tracebacks and pprof do). */
	for (size_t i = 0; i < s.nsyms; i++) {
		const char *nm = s.strs + s.syms[i].name, *fn = elfsym__lookup(&f, s.syms[i].addr);
		size_t ln = strlen(nm);
		const char *g = strstr(nm, "[...]");
		bool ok;

		gofuncs++;
		if (!fn)
			ok = false;
		else if (g)
			ok = !strncmp(fn, nm, (size_t)(g - nm) + 1) && strchr(fn + (g - nm), ']') &&
			     !strcmp(strchr(fn + (g - nm), ']') + 1, g + 5);
		else
			ok = !strcmp(fn, nm) || (strlen(fn) == ln + 5 && !strncmp(fn, nm, ln) && !strcmp(fn + ln, ".abi0"));
		if (ok)
			same++;
		else if (gofuncs - same <= 5)
			printf("  %s at %#llx: the symbol table says %s\n", nm, (unsigned long long)s.syms[i].addr,
			       fn ? fn : "nothing");
	}
	CHECK(gofuncs > 1000 && same == gofuncs, "%zu of %zu functions named as the symbol table does at their address",
	      same, gofuncs);
	const char *want[] = { "main.heavy", "main.light", "main.work", "main.main", "runtime.main", "runtime.goexit" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		uint64_t a = addr_of(&s, want[i]);
		char abi0[64];

		snprintf(abi0, sizeof(abi0), "%s.abi0", want[i]);
		CHECK(a && (a == addr_of(&f, want[i]) || a == addr_of(&f, abi0)) && !strcmp(elfsym__lookup(&s, a + 1), want[i]),
		      "%s at %#llx, looked up from inside it", want[i], (unsigned long long)a);
	}

	tab = table_of(STRIPPED, &n, &text);
	CHECK(tab && n > 4096, "the table: %zu bytes", n);
	if (!tab)
		return test_done();
	lines_check(STRIPPED, FULL);
	lines_check(CGO, NULL);
	copy = malloc(n);
	/* Go 1.2-1.15's magic: a layout not read, refused as such. */
	memcpy(copy, tab, n);
	memcpy(copy, "\xfb\xff\xff\xff", 4);
	/* Damaged tables are judged against the whole table's own names. */
	struct damaged d = { &s, 0, 0 };
	long r = gopclntab__walk(copy, n, text, check_name, &d);
	CHECK(r == -EPROTONOSUPPORT && d.named == 0, "Go 1.2's magic: refused (%ld), nothing named", r);
	/* Truncated anywhere: refused, or what it names is right. */
	long refused = 0, walked = 0;
	d = (struct damaged){ &s, 0, 0 };
	for (size_t cut = 0; cut < n; cut += cut < 4096 ? 1 : 997) {
		r = gopclntab__walk(tab, cut, text, check_name, &d);
		if (r < 0)
			refused++;
		else
			walked++;
	}
	CHECK(d.wrong == 0 && refused > 0, "truncated tables: %ld refused, %ld walked, %ld names, %ld wrong",
	      refused, walked, d.named, d.wrong);
	/* Bytes flipped: no crash; every name given is the right one or the
	 * walk is refused; count the rest. */
	long flips = 0, wrongs = 0;
	srand(1);
	for (int k = 0; k < 3000; k++) {
		size_t at = k < 1000 ? (size_t)k % 256 : (size_t)rand() % n;

		memcpy(copy, tab, n);
		copy[at] ^= (uint8_t)(1 + rand() % 255);
		d = (struct damaged){ &s, 0, 0 };
		r = gopclntab__walk(copy, n, text, check_name, &d);
		flips++;
		if (d.wrong)
			wrongs++;
	}
	printf("  %ld flipped tables, %ld gave a name the real table does not\n", flips, wrongs);
	CHECK(flips == 3000, "3000 flipped tables walked without a crash");
	free(copy);
	free(tab);
	elfsym__fini(&s);
	elfsym__fini(&f);
	return test_done();
}
