/*
 * interp.c - recognising CPython in an ELF file (see interp.h).
 *
 * Build id and PT_LOAD segments come from the symbolizer's reader
 * (elfsym__read without symbols). Its symbol table is not used: it keeps
 * only functions, and we need objects (_PyRuntime, PyCode_Type,
 * Py_Version), a handful looked up by name here with libelf.
 *
 * Bytes at a link-time address are read with pread from the PT_LOAD that
 * holds them in the file (filesz, never the zero-filled rest). 64-bit
 * little-endian files only: PyTypeObject and PyMemberDef are read with
 * x86-64/aarch64 offsets.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/python/interp.h"
#include "sampler/symbols/elfsym.h"

/* PyTypeObject (3.10-3.13, LP64): tp_basicsize, tp_members. */
#define TP_BASICSIZE 32
#define TP_MEMBERS 240
/* PyMemberDef (LP64): name, type, offset; 40 bytes each. */
#define MEMBER_SIZE 40

#define DEBUG_COOKIE "xdebugpy"


/* Relocation sections longer than this are not searched (a libpython has
 * ~40,000 entries): a file cannot make each pointer read cost more. */
#define MAX_RELA (1u << 20)

/* The addend of a RELATIVE relocation at vaddr, if a RELA section has one. */
static bool relative_at(const struct elf_img *im, uint64_t vaddr, uint64_t *val)
{
	uint32_t want = im->machine == EM_X86_64 ? R_X86_64_RELATIVE
		      : im->machine == EM_AARCH64 ? R_AARCH64_RELATIVE
						  : 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (!want)
		return false;
	while ((scn = elf_nextscn(im->elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    sh.sh_offset > im->fsize || sh.sh_size > im->fsize - sh.sh_offset)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || sh.sh_size / sh.sh_entsize > MAX_RELA)
			continue;
		for (size_t i = 0, n = sh.sh_size / sh.sh_entsize; i < n; i++) {
			GElf_Rela r;

			if (gelf_getrela(d, (int)i, &r) && r.r_offset == vaddr &&
			    GELF_R_TYPE(r.r_info) == want) {
				*val = (uint64_t)r.r_addend;
				return true;
			}
		}
	}
	return false;
}

static int rd_ptr(const struct elf_img *im, uint64_t vaddr, uint64_t *p)
{
	int err = elf_img__read(im, vaddr, p, 8);

	if (!err && !*p)
		relative_at(im, vaddr, p);
	return err;
}

/* A NUL-terminated string of at most cap - 1 bytes at vaddr. */
static int rd_str(const struct elf_img *im, uint64_t vaddr, char *buf, size_t cap)
{
	for (size_t n = cap; n > 0; n--) /* shorter reads near a segment's end */
		if (!elf_img__read(im, vaddr, buf, n)) {
			if (!memchr(buf, 0, n))
				return -EINVAL;
			return 0;
		}
	return -EINVAL;
}

/* The wanted names among the defined symbols of the first section of
 * `type` (a value 0 is no definition here). */
static void find_syms(const struct elf_img *im, Elf64_Word type, struct elfsym_want *w, size_t nw)
{
	elfsym__want(im->elf, im->fsize, type, false, w, nw);
}

/* "python3.N" in the base name: N, or -1. */
static int minor_from_name(const char *name)
{
	const char *b, *p;
	int minor = -1;

	if (!name)
		return -1;
	b = strrchr(name, '/');
	b = b ? b + 1 : name;
	for (p = b; (p = strstr(p, "python3.")); p++) {
		const char *d = p + 8;
		int v = 0, nd = 0;

		while (*d >= '0' && *d <= '9' && nd < 3)
			v = v * 10 + (*d++ - '0'), nd++;
		if (nd && !(*d >= '0' && *d <= '9'))
			minor = v;
	}
	return minor;
}

enum { W_RUNTIME, W_CODE, W_VERSION, W_EVAL, W_N };

static int read_interp(struct elf_img *im, const char *name, struct pyinterp *pi)
{
	struct elfsym_want w[W_N] = {
		[W_RUNTIME] = { "_PyRuntime" },
		[W_CODE] = { "PyCode_Type" },
		[W_VERSION] = { "Py_Version" },
		[W_EVAL] = { "_PyEval_EvalFrameDefault" },
	};
	uint64_t off;

	memcpy(pi->build_id, im->e.build_id, sizeof(pi->build_id));
	find_syms(im, SHT_DYNSYM, w, W_N);
	find_syms(im, SHT_SYMTAB, w, W_N);
	if (!w[W_RUNTIME].found || !w[W_CODE].found)
		return -ENOENT;
	pi->runtime = w[W_RUNTIME].addr;
	pi->runtime_size = w[W_RUNTIME].size;
	if (elf_img__off(im, pi->runtime, 16, &off))
		pi->runtime_off = off;
	pi->code_type = w[W_CODE].addr;
	if (!elf_img__off(im, pi->code_type, TP_MEMBERS + 8, &pi->code_type_off))
		return -EINVAL; /* a type object the file does not hold */
	pi->eval_frame = w[W_EVAL].addr;
	pi->eval_frame_size = w[W_EVAL].size;

	if (w[W_VERSION].found) {
		if (w[W_VERSION].size != 8 || elf_img__read(im, w[W_VERSION].addr, &pi->hexversion, 8))
			return -EINVAL;
		pi->major = (int)(pi->hexversion >> 24 & 0xff);
		pi->minor = (int)(pi->hexversion >> 16 & 0xff);
		if (pi->major != 3 || pi->hexversion >> 32)
			return -EINVAL;
	} else {
		/* Py_Version is 3.11's: a file without it is 3.10 or older. */
		int m = minor_from_name(name);

		if (m < 0)
			return -EOPNOTSUPP;
		pi->major = 3;
		pi->minor = m;
		if (m >= 11)
			return -EINVAL;
	}
	if (pi->minor < 10 || pi->minor > 13)
		return -EOPNOTSUPP;
	if (pi->minor >= 13) {
		uint8_t head[16];
		uint64_t v;

		if (!pi->runtime_off || elf_img__read(im, pi->runtime, head, sizeof(head)) ||
		    memcmp(head, DEBUG_COOKIE, 8))
			return -EINVAL;
		memcpy(&v, head + 8, 8);
		if (v != pi->hexversion)
			return -EINVAL;
		pi->debug_offsets = pi->runtime;
	}
	return 0;
}

int pyinterp__read(int fd, const char *name, struct pyinterp *pi)
{
	struct elf_img im;
	int err;

	memset(pi, 0, sizeof(*pi));
	err = elf_img__open(fd, &im);
	if (err)
		return err;
	err = read_interp(&im, name, pi);
	elf_img__close(&im);
	return err;
}

int pyinterp__code_members(int fd, const struct pyinterp *pi, struct pymember *m, size_t cap,
			   size_t *n, uint64_t *basicsize)
{
	struct elf_img im;
	uint64_t tab;
	int err;

	*n = 0;
	err = elf_img__open(fd, &im);
	if (err)
		return err;
	err = elf_img__read(&im, pi->code_type + TP_BASICSIZE, basicsize, 8);
	if (!err)
		err = rd_ptr(&im, pi->code_type + TP_MEMBERS, &tab);
	if (!err && !tab)
		err = -EINVAL;
	for (size_t i = 0; !err; i++) {
		uint64_t at = tab + i * MEMBER_SIZE, name;
		uint8_t raw[24];

		err = rd_ptr(&im, at, &name);
		if (err || !name) /* the table ends with a NULL name */
			break;
		if (i == cap) {
			err = -EINVAL;
			break;
		}
		err = elf_img__read(&im, at, raw, sizeof(raw));
		if (!err)
			err = rd_str(&im, name, m[i].name, sizeof(m[i].name));
		if (err)
			break;
		memcpy(&m[i].type, raw + 8, 4);
		memcpy(&m[i].offset, raw + 16, 8);
		*n = i + 1;
	}
	elf_img__close(&im);
	return err;
}

int pyinterp__debug_offsets(int fd, const struct pyinterp *pi, uint64_t *w, size_t nwords)
{
	struct elf_img im;
	int err;

	if (!pi->debug_offsets)
		return -ENOENT;
	if (nwords > (1u << 12))
		return -EINVAL;
	err = elf_img__open(fd, &im);
	if (err)
		return err;
	err = elf_img__read(&im, pi->debug_offsets, w, nwords * 8);
	elf_img__close(&im);
	return err;
}
