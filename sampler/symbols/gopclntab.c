/*
 * gopclntab.c - Go's function table read for names (gopclntab.h).
 *
 * The table (Go's runtime/symtab.go, pcHeader and functab) starts with a
 * header: magic (4 bytes), two pad bytes, the instruction quantum, the
 * pointer size, then pointer-sized words: nfunc, nfiles, [textStart from
 * 1.18], and the offsets, from the table's start, of funcnametab, cutab,
 * filetab, pctab and pclntab. pclntab begins with functab: nfunc + 1
 * pairs (entry, offset of the function's _func record from pclntab's
 * start); 1.18 on they are two uint32 (entry as an offset from
 * textStart), before that two pointer-sized words. A _func record starts
 * with the entry (uint32 offset from 1.18, a word before) and the name's
 * offset in funcnametab (int32). The last pair's entry is the end of the
 * module's text.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <string.h>

#include "sampler/symbols/gopclntab.h"

#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u
/* A name longer than this is a damaged table (Go's longest are a few
 * hundred bytes: generic instantiations). */
#define NAME_MAX_BYTES 4096

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int gopclntab__section(Elf *elf, const uint8_t **tab, size_t *n, uint64_t *text, uint64_t *file_off)
{
	Elf_Scn *scn = NULL, *found = NULL;
	size_t shstr, fsize = 0;
	GElf_Shdr sh;
	Elf_Data *d;

	*text = 0;
	if (elf_getshdrstrndx(elf, &shstr))
		return -ENODATA;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *nm;

		if (!gelf_getshdr(scn, &sh) || !(nm = elf_strptr(elf, shstr, sh.sh_name)))
			continue;
		/* (a position-independent build puts it in .data.rel.ro) */
		if (!strcmp(nm, ".gopclntab") || !strcmp(nm, ".data.rel.ro.gopclntab"))
			found = scn;
		else if (!strcmp(nm, ".text"))
			*text = sh.sh_addr;
	}
	/* (A compressed table is not one Go's runtime could read: not Go's.) */
	if (!found || !gelf_getshdr(found, &sh) || sh.sh_type == SHT_NOBITS || (sh.sh_flags & SHF_COMPRESSED))
		return -ENODATA;
	elf_rawfile(elf, &fsize);
	if (sh.sh_offset > fsize || sh.sh_size > fsize - sh.sh_offset || !(d = elf_getdata(found, NULL)) ||
	    !d->d_buf)
		return -ENODATA;
	*tab = d->d_buf;
	*n = d->d_size;
	*file_off = sh.sh_offset;
	return 0;
}

const char *gopclntab__layout(const uint8_t *tab, size_t n)
{
	if (n < 8)
		return NULL;
	switch (u32(tab)) {
	case MAGIC_116:
		return "1.16";
	case MAGIC_118:
		return "1.18";
	case MAGIC_120:
		return "1.20";
	default:
		return NULL;
	}
}

/* One function as the walk found it: its record (at tab + rec), entry,
 * end and name. */
struct gofunc {
	size_t rec;
	uint64_t entry, end;
	const char *name;
	size_t len;
};
typedef int (*walk_fn)(void *ctx, const struct gofunc *f);

struct layout {
	bool new_layout;
	uint64_t pctab, pcln;
};

/* The header's facts, checked. */
struct hdr {
	bool new_layout;
	uint64_t nfunc, names, cu, filetab, pctab, pcln;
	uint64_t text; /* where the entries' offsets count from (1.18+) */
	size_t pair;   /* bytes per functab pair */
};

static int parse_header(const uint8_t *tab, size_t n, uint64_t text, struct hdr *h)
{
	uint32_t magic;
	uint64_t hdr_text = 0;
	size_t w = 8, o;

	if (n < 8)
		return -EINVAL;
	magic = u32(tab);
	if (magic != MAGIC_116 && magic != MAGIC_118 && magic != MAGIC_120)
		return -EPROTONOSUPPORT;
	/* x86-64 only: 8-byte words, 1-byte instruction quantum. */
	if (tab[4] || tab[5] || tab[6] != 1 || tab[7] != 8)
		return -EPROTONOSUPPORT;
	h->new_layout = magic != MAGIC_116;
	if (n < w + 8 * (h->new_layout ? 8 : 7))
		return -EINVAL;
	h->nfunc = u64(tab + w);
	o = w + (h->new_layout ? 24 : 16);
	if (h->new_layout)
		hdr_text = u64(tab + w + 16);
	h->names = u64(tab + o);
	h->cu = u64(tab + o + 8);
	h->filetab = u64(tab + o + 16);
	h->pctab = u64(tab + o + 24);
	h->pcln = u64(tab + o + 32);
	/* The parts follow each other in this order: names end where the
	 * compilation units' table begins. */
	if (!(h->names < h->cu && h->cu <= h->filetab && h->filetab <= h->pctab && h->pctab <= h->pcln &&
	      h->pcln < n))
		return -EINVAL;
	/* Go's linker writes textStart (runtime.text) for a binary linked
	 * at a fixed address: it is where Go's code starts, which for an
	 * externally linked (cgo) binary is not .text's start (the C start
	 * code comes first). A position-independent one gets it by
	 * relocation (0 in the file): then the caller's .text address. */
	h->text = hdr_text ? hdr_text : text;
	h->pair = h->new_layout ? 8 : 16;
	if (h->nfunc == 0 || h->nfunc > (n - h->pcln) / h->pair - 1)
		return -EINVAL;
	return 0;
}

/* Functab pair i's entry and record offset (from pcln's start). */
static void pair_at(const uint8_t *tab, const struct hdr *h, uint64_t i, uint64_t *entry, uint64_t *off)
{
	const uint8_t *ft = tab + h->pcln + i * h->pair;

	if (h->new_layout) {
		*entry = h->text + u32(ft);
		if (off)
			*off = u32(ft + 4);
	} else {
		*entry = u64(ft);
		if (off)
			*off = u64(ft + 8);
	}
}

static long walk(const uint8_t *tab, size_t n, uint64_t text, walk_fn fn, void *ctx, struct layout *lo)
{
	struct hdr hd;
	uint64_t nfunc, names, cu, pcln;
	size_t at, pair;
	bool new_layout;
	int err = parse_header(tab, n, text, &hd);

	if (err)
		return err;
	nfunc = hd.nfunc;
	names = hd.names;
	cu = hd.cu;
	pcln = hd.pcln;
	text = hd.text;
	pair = hd.pair;
	new_layout = hd.new_layout;
	uint64_t prev = 0;

	for (uint64_t i = 0; i < nfunc; i++) {
		const uint8_t *ft = tab + pcln + i * pair;
		uint64_t entry, end, off, nameoff;
		const char *name;
		size_t len;
		int32_t no;

		if (new_layout) {
			entry = text + u32(ft);
			end = text + u32(ft + 8);
			off = u32(ft + 4);
		} else {
			entry = u64(ft);
			end = u64(ft + 16);
			off = u64(ft + 8);
		}
		/* Entries ascend; the record lies in the table. */
		if (end < entry || entry < prev)
			return -EINVAL;
		prev = entry;
		at = pcln + off;
		if (off >= n || at >= n || n - at < (new_layout ? 8 : 12))
			return -EINVAL;
		/* The record names the entry the pair did. */
		if (new_layout ? text + u32(tab + at) != entry : u64(tab + at) != entry)
			return -EINVAL;
		memcpy(&no, tab + at + (new_layout ? 4 : 8), 4);
		if (no < 0)
			return -EINVAL;
		nameoff = names + (uint64_t)no;
		if (nameoff >= cu)
			return -EINVAL;
		name = (const char *)tab + nameoff;
		len = strnlen(name, cu - nameoff < NAME_MAX_BYTES ? cu - nameoff : NAME_MAX_BYTES);
		if (!len || nameoff + len >= cu || len == NAME_MAX_BYTES)
			return -EINVAL;
		/* A name is printable text (UTF-8 allowed): a control byte
		 * says the offset is not a name's. */
		for (size_t k = 0; k < len; k++)
			if ((uint8_t)name[k] < 0x20 || name[k] == 0x7f)
				return -EINVAL;
		struct gofunc f = { at, entry, end, name, len };
		int r;

		lo->new_layout = new_layout;
		lo->pctab = hd.pctab;
		lo->pcln = pcln;
		r = fn(ctx, &f);
		if (r)
			return r;
	}
	return (long)nfunc;
}

struct names_ctx {
	gopclntab_fn fn;
	void *ctx;
};

static int names_one(void *ctx, const struct gofunc *f)
{
	struct names_ctx *c = ctx;

	return c->fn(c->ctx, f->entry, f->end, f->name, f->len);
}

long gopclntab__walk(const uint8_t *tab, size_t n, uint64_t text, gopclntab_fn fn, void *ctx)
{
	struct names_ctx c = { fn, ctx };
	struct layout lo;

	return walk(tab, n, text, names_one, &c, &lo);
}

/* Go's varint (little-endian base 128) at *p below end; false past end or
 * over 32 bits. */
static bool varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t r = 0;

	for (int shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return false;
		uint8_t b = *(*p)++;

		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

struct sp_ctx {
	const uint8_t *tab;
	size_t n;
	struct layout *lo;
	gopclntab_sp_fn fn;
	void *ctx;
};

/* Max steps of one function's table: a bound for a damaged one. */
#define PCSP_MAX_STEPS 65536

static int sp_one(void *ctx, const struct gofunc *f)
{
	struct sp_ctx *c = ctx;
	const uint8_t *tab = c->tab, *p, *end = tab + c->n;
	uint32_t off, ud, pd;
	uint64_t pc = f->entry;
	int64_t val = -1;
	size_t at = f->rec + (c->lo->new_layout ? 16 : 20);

	if (at + 4 > c->n)
		return -EINVAL;
	off = u32(tab + at);
	if (!off) /* no table: an assembly stub without frame; depth 0 */
		return c->fn(c->ctx, f->entry, f->end, 0, f->name, f->len);
	if (c->lo->pctab + off >= c->lo->pcln)
		return -EINVAL;
	p = tab + c->lo->pctab + off;
	for (int step = 0; step < PCSP_MAX_STEPS; step++) {
		uint64_t lo = pc;
		int r;

		if (p >= end)
			return -EINVAL;
		if (*p == 0 && step)
			return 0; /* the table's end */
		if (!varint(&p, end, &ud) || !varint(&p, end, &pd))
			return -EINVAL;
		val += (int32_t)(-(ud & 1) ^ (ud >> 1));
		pc += pd; /* x86-64: the quantum is 1 */
		/* Below the entry sp is normal; above it only by what an
		 * assembly stub pops (syscall.rawVforkSyscall pops its return
		 * address): the caller decides what such a run means. */
		if (pc > f->end || val < -4096 || val > INT32_MAX - 4096) /* (reflectcall's frames reach 1 GiB) */
			return -EINVAL;
		if (pc > lo && (r = c->fn(c->ctx, lo, pc, (int32_t)val, f->name, f->len)))
			return r;
	}
	return -EINVAL;
}

long gopclntab__walk_sp(const uint8_t *tab, size_t n, uint64_t text, gopclntab_sp_fn fn, void *ctx)
{
	struct layout lo = { 0 };
	struct sp_ctx c = { tab, n, &lo, fn, ctx };

	return walk(tab, n, text, sp_one, &c, &lo);
}

static uint32_t magic_of(const uint8_t *tab)
{
	return u32(tab);
}

/* The value of the pc-value table at pctab + off (a function's pcfile,
 * pcln) at pc, for a function [entry, end): Go's runtime pcvalue. */
static int pcvalue(const uint8_t *tab, size_t n, const struct hdr *h, uint32_t off, uint64_t entry,
		   uint64_t end, uint64_t pc, int32_t *out)
{
	const uint8_t *p, *lim = tab + h->pcln;
	uint64_t at = entry;
	int64_t val = -1;
	uint32_t ud, pd;

	(void)n;
	if (!off || h->pctab + off >= h->pcln)
		return -ENOENT;
	p = tab + h->pctab + off;
	for (int step = 0; step < PCSP_MAX_STEPS; step++) {
		if (p >= lim)
			return -EINVAL;
		if (*p == 0 && step)
			return -ENOENT; /* the table ended before pc */
		if (!varint(&p, lim, &ud) || !varint(&p, lim, &pd))
			return -EINVAL;
		val += (int32_t)(-(ud & 1) ^ (ud >> 1));
		at += pd;
		if (at > end || val < INT32_MIN || val > INT32_MAX)
			return -EINVAL;
		if (pc < at) {
			*out = (int32_t)val;
			return 0;
		}
	}
	return -EINVAL;
}

int gopclntab__line(const uint8_t *tab, size_t n, uint64_t text, uint64_t pc, uint32_t *file_off,
		    int32_t *line)
{
	struct hdr h;
	uint64_t lo = 0, hi, entry, end, off, at;
	uint32_t pcfile, pcln, npcdata, cuoff, foff;
	int32_t fileno, ln;
	size_t f;
	int err = parse_header(tab, n, text, &h);

	if (err)
		return err;
	/* The last pair's entry is the end of the module's text. */
	pair_at(tab, &h, 0, &entry, NULL);
	pair_at(tab, &h, h.nfunc, &end, NULL);
	if (pc < entry || pc >= end)
		return -ENOENT;
	hi = h.nfunc; /* pair lo's entry <= pc < pair hi's */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		pair_at(tab, &h, mid, &entry, NULL);
		if (entry <= pc)
			lo = mid;
		else
			hi = mid;
	}
	pair_at(tab, &h, lo, &entry, &off);
	pair_at(tab, &h, lo + 1, &end, NULL);
	if (end < entry)
		return -EINVAL;
	at = h.pcln + off;
	f = at + (h.new_layout ? 16 : 20); /* pcsp, then pcfile, pcln, npcdata, cuOffset */
	if (off >= n || at >= n || f > n || n - f < 20)
		return -EINVAL;
	if (h.new_layout ? h.text + u32(tab + at) != entry : u64(tab + at) != entry)
		return -EINVAL;
	pcfile = u32(tab + f + 4);
	pcln = u32(tab + f + 8);
	npcdata = u32(tab + f + 12);
	cuoff = u32(tab + f + 16);
	/* Code the compiler inlined here (its PCDATA_InlTreeIndex >= 0 at
	 * pc): pcln gives the inlined callee's line, which is not a line of
	 * this function; the call site's is in the inline tree, which lives
	 * outside this table (go:func.*). No line rather than another's. The
	 * pcdata offsets follow the record's fixed part: 40 bytes in 1.18
	 * and 1.19, 44 with 1.20's startLine and in 1.16 (an 8-byte entry). */
	if (npcdata > 2) {
		size_t pd = at + (magic_of(tab) == MAGIC_118 ? 40 : 44) + 2 * 4;
		int32_t ix;

		if (pd > n || n - pd < 4)
			return -EINVAL;
		if (u32(tab + pd) && !pcvalue(tab, n, &h, u32(tab + pd), entry, end, pc, &ix) && ix >= 0)
			return -ENOENT;
	}
	if ((err = pcvalue(tab, n, &h, pcfile, entry, end, pc, &fileno)) ||
	    (err = pcvalue(tab, n, &h, pcln, entry, end, pc, &ln)))
		return err;
	if (fileno < 0 || ln < 0)
		return -ENOENT;
	/* cutab: per compilation unit, uint32 offsets into filetab. */
	if ((uint64_t)cuoff + (uint64_t)fileno > (h.filetab - h.cu) / 4 - 1 || h.filetab - h.cu < 4)
		return -EINVAL;
	foff = u32(tab + h.cu + 4 * ((uint64_t)cuoff + (uint64_t)fileno));
	if (foff == UINT32_MAX)
		return -ENOENT;
	/* A NUL-terminated path inside filetab. */
	if (h.filetab + foff >= h.pctab || !memchr(tab + h.filetab + foff, 0, h.pctab - h.filetab - foff))
		return -EINVAL;
	*file_off = (uint32_t)(h.filetab + foff);
	*line = ln;
	return 0;
}
