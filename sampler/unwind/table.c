/*
 * table.c - ELF unwind information to rows, through libdw's CFI API.
 * libdw parses the CIEs/FDEs and runs their instructions; we only ask it,
 * range by range, for the rule in force and classify the DWARF
 * expressions it hands back into the few shapes bpf/unwind.h knows.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/symbols/gopclntab.h"
#include "sampler/unwind/table.h"

/* x86-64 DWARF register numbers. */
enum { R_RBP = 6, R_RSP = 7, R_RIP = 16 };

struct seg {
	uint64_t vaddr, memsz, off;
};

struct build {
	const int *cancel;
	struct unw_table *t;
	size_t rcap, lcap;
	struct seg segs[16];
	int nsegs;
	uint32_t rule_hash[1024]; /* open addressing over t->rules: index + 1 */
};

static int is_breg(const Dwarf_Op *op, int reg, int64_t *off)
{
	if (op->atom == DW_OP_bregx && (int)op->number == reg) {
		*off = (int64_t)op->number2;
		return 1;
	}
	if (op->atom == DW_OP_breg0 + reg) {
		*off = (int64_t)op->number;
		return 1;
	}
	return 0;
}

static int lit(const Dwarf_Op *op)
{
	return op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31 ? op->atom - DW_OP_lit0 : -1;
}

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void cfa_rule(Dwarf_Frame *f, struct unw_rule *r)
{
	Dwarf_Op *ops;
	size_t n;
	int64_t off;

	r->cfa = UNW_CFA_BAD;
	if (dwarf_frame_cfa(f, &ops, &n) || n == 0)
		return;
	if (n == 1 && (is_breg(&ops[0], R_RSP, &off) || is_breg(&ops[0], R_RBP, &off)) &&
	    fits32(off)) {
		r->cfa = ops[0].atom == DW_OP_breg0 + R_RBP ||
				 (ops[0].atom == DW_OP_bregx && ops[0].number == R_RBP)
			 ? UNW_CFA_BP
			 : UNW_CFA_SP;
		r->cfa_off = off;
		return;
	}
	/* A signal frame: the interrupted sp saved in the sigcontext. */
	if (n == 2 && is_breg(&ops[0], R_RSP, &off) && ops[1].atom == DW_OP_deref && fits32(off)) {
		r->cfa = UNW_CFA_DEREF_SP;
		r->cfa_off = off;
		return;
	}
	/* The PLT expression GNU ld writes: sp + off + ((rip & 15) >= k) << 3. */
	int64_t rip0;
	if (n == 9 && is_breg(&ops[0], R_RSP, &off) && is_breg(&ops[1], R_RIP, &rip0) &&
	    rip0 == 0 && lit(&ops[2]) == 15 && ops[3].atom == DW_OP_and && lit(&ops[4]) >= 0 &&
	    ops[5].atom == DW_OP_ge && lit(&ops[6]) == 3 && ops[7].atom == DW_OP_shl &&
	    ops[8].atom == DW_OP_plus && fits32(off)) {
		r->cfa = UNW_CFA_PLT;
		r->cfa_off = off;
		r->arg = lit(&ops[4]);
	}
}

/* Classifies a register rule: kind 0 same, 1 at cfa+off, 2 at sp+off
 * (expression after the CFA push), 3 in register, 4 undefined, -1 other. */
static int reg_rule(Dwarf_Frame *f, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;

	if (dwarf_frame_register(f, regno, mem, &ops, &n))
		return -1;
	if (n == 0)
		return ops ? 4 : 0;
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		if (n == 1) {
			*off = 0;
			return 1;
		}
		if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
			*off = (int64_t)ops[1].number;
			return 1;
		}
		if (n == 2 && is_breg(&ops[1], R_RSP, off))
			return 2;
		return -1;
	}
	if (n == 1 && ops[0].atom == DW_OP_regx) {
		*off = (int64_t)ops[0].number;
		return 3;
	}
	if (n == 1 && ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) {
		*off = ops[0].atom - DW_OP_reg0;
		return 3;
	}
	return -1;
}

static void frame_rule(Dwarf_Frame *f, bool signal, struct unw_rule *r)
{
	int64_t off = 0;
	int k;

	memset(r, 0, sizeof(*r));
	cfa_rule(f, r);
	k = reg_rule(f, R_RIP, &off);
	if (k == 1 && fits32(off)) {
		r->ra = UNW_RA_CFA;
		r->ra_off = off;
	} else if (k == 2 && fits32(off)) {
		r->ra = UNW_RA_SP;
		r->ra_off = off;
	} else if (k == 3 && off < 17) {
		r->ra = UNW_RA_REG;
		r->arg = off;
	} else if (k == 4) {
		r->ra = UNW_RA_UNDEF;
	} else {
		r->ra = UNW_RA_BAD;
	}
	off = 0;
	k = reg_rule(f, R_RBP, &off);
	/* rbp is callee-saved: "undefined" in CFI that never mentions it
	 * means untouched, as libdw's own unwinder treats it. */
	if (k == 0 || k == 4) {
		r->bp = UNW_BP_SAME;
	} else if (k == 1 && fits32(off)) {
		r->bp = UNW_BP_CFA;
		r->bp_off = off;
	} else if (k == 2 && fits32(off)) {
		r->bp = UNW_BP_SP;
		r->bp_off = off;
	} else {
		r->bp = UNW_BP_UNDEF;
	}
	if (signal)
		r->flags |= UNW_R_SIGNAL;
	/* The outermost frame needs no CFA. */
	if (r->ra == UNW_RA_UNDEF)
		r->cfa = r->cfa == UNW_CFA_BAD ? UNW_CFA_SP : r->cfa;
}

static uint32_t rule_hash(const struct unw_rule *r)
{
	const unsigned char *p = (const unsigned char *)r;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(*r); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* The table-local index of r, added if new. Returns -1 on overflow. */
static long intern(struct build *b, const struct unw_rule *r)
{
	struct unw_table *t = b->t;
	uint32_t h = rule_hash(r) & 1023;

	for (unsigned i = 0; i < 1024; i++, h = (h + 1) & 1023) {
		uint32_t v = b->rule_hash[h];

		if (!v) {
			if (t->nrules >= 1023)
				return -1;
			t->rules[t->nrules] = *r;
			b->rule_hash[h] = t->nrules + 1;
			return t->nrules++;
		}
		if (!memcmp(&t->rules[v - 1], r, sizeof(*r)))
			return v - 1;
	}
	return -1;
}

static int vaddr_to_off(const struct build *b, uint64_t va, uint64_t *off)
{
	for (int i = 0; i < b->nsegs; i++)
		if (va >= b->segs[i].vaddr && va < b->segs[i].vaddr + b->segs[i].memsz) {
			*off = va - b->segs[i].vaddr + b->segs[i].off;
			return 0;
		}
	return -1;
}

static int add_row(struct build *b, uint64_t va, long rule)
{
	struct unw_table *t = b->t;
	uint64_t off;

	if (vaddr_to_off(b, va, &off) || off > UINT32_MAX)
		return 0; /* outside executable segments: never looked up */
	if (t->nrows && t->rows[t->nrows - 1].rule == (uint32_t)rule)
		return 0;
	/* Out-of-order input (overlapping FDEs): keep the first claim. */
	if (t->nrows && t->rows[t->nrows - 1].off >= off) {
		if (t->rows[t->nrows - 1].off == off && t->rows[t->nrows - 1].rule == 0)
			t->rows[t->nrows - 1].rule = rule;
		return 0;
	}
	if (t->nrows == b->rcap) {
		size_t nc = b->rcap ? b->rcap * 2 : 1024;
		struct unw_row *n;

		if (nc > UNW_TABLE_MAX_ROWS)
			nc = UNW_TABLE_MAX_ROWS;
		if (t->nrows >= nc)
			return -EFBIG;
		n = realloc(t->rows, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->rows = n;
		b->rcap = nc;
	}
	t->rows[t->nrows].off = off;
	t->rows[t->nrows].rule = rule;
	t->nrows++;
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Rows for every range of every function starting at starts[] (sorted). */
static int emit(struct build *b, Dwarf_CFI *cfi, uint64_t *starts, size_t n)
{
	int err;

	qsort(starts, n, sizeof(*starts), u64_cmp);
	for (size_t i = 0; i < n; i++) {
		uint64_t pc = starts[i], next = i + 1 < n ? starts[i + 1] : UINT64_MAX;
		unsigned steps = 0;

		if (i && starts[i] == starts[i - 1])
			continue;
		if (b->cancel && (i & 255) == 0 && __atomic_load_n(b->cancel, __ATOMIC_RELAXED))
			return -ECANCELED;
		while (pc < next && steps++ < 100000) {
			Dwarf_Frame *f;
			Dwarf_Addr s, e;
			bool sig = false;
			struct unw_rule r;
			long idx;

			if (dwarf_cfi_addrframe(cfi, pc, &f))
				break;
			if (dwarf_frame_info(f, &s, &e, &sig) < 0 || e <= pc) {
				free(f);
				break;
			}
			frame_rule(f, sig, &r);
			free(f);
			if (r.cfa == UNW_CFA_BAD || r.ra == UNW_RA_BAD)
				b->t->unsupported++;
			idx = intern(b, &r);
			if (idx < 0)
				return -EFBIG;
			err = add_row(b, pc, idx);
			if (err)
				return err;
			pc = e;
		}
		/* The gap up to the next function has no information. */
		if (pc < next) {
			err = add_row(b, pc, 0);
			if (err)
				return err;
		}
	}
	return 0;
}

/* .eh_frame_hdr's sorted table of function starts (GNU ld's encodings). */
static int hdr_starts(Elf *e, const GElf_Phdr *ph, uint64_t **out, size_t *n)
{
	Elf_Data *d = elf_getdata_rawchunk(e, ph->p_offset, ph->p_filesz, ELF_T_BYTE);
	const unsigned char *p;
	uint32_t count;
	uint64_t *s;
	size_t len, pos;

	if (!d || d->d_size < 12)
		return -ENODATA;
	p = d->d_buf;
	len = d->d_size;
	/* version 1; eh_frame_ptr as 4 bytes; count udata4; table datarel sdata4 */
	if (p[0] != 1 || (p[1] & 0x0f) != 0x0b || p[2] != 0x03 || p[3] != 0x3b)
		return -ENODATA;
	memcpy(&count, p + 8, 4);
	pos = 12;
	if (count > (len - pos) / 8)
		return -ENODATA;
	s = malloc((count ? count : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		int32_t v;

		memcpy(&v, p + pos + 8 * i, 4);
		s[i] = ph->p_vaddr + (int64_t)v;
	}
	*out = s;
	*n = count;
	return 0;
}

static Elf_Scn *section(Elf *e, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *nm;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		nm = elf_strptr(e, shstrndx, sh.sh_name);
		if (nm && !strcmp(nm, name))
			return scn;
	}
	return NULL;
}

/* Function starts from .debug_frame's FDEs (plain 8-byte addresses). */
static int debug_starts(Elf *e, uint64_t **out, size_t *n)
{
	Elf_Scn *scn = section(e, ".debug_frame");
	Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;
	const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
	Dwarf_Off off = 0, next;
	size_t cap = 0, cnt = 0;
	uint64_t *s = NULL;

	if (!d || !ident)
		return -ENODATA;
	for (unsigned guard = 0; guard < UNW_TABLE_MAX_ROWS; guard++) {
		Dwarf_CFI_Entry ent;
		int r = dwarf_next_cfi(ident, d, false, off, &next, &ent);

		if (r)
			break;
		off = next;
		if (dwarf_cfi_cie_p(&ent))
			continue;
		if (ent.fde.end - ent.fde.start < 8)
			continue;
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 256;
			uint64_t *ns = realloc(s, nc * sizeof(*ns));

			if (!ns) {
				free(s);
				return -ENOMEM;
			}
			s = ns;
			cap = nc;
		}
		memcpy(&s[cnt++], ent.fde.start, 8);
	}
	if (!cnt) {
		free(s);
		return -ENODATA;
	}
	*out = s;
	*n = cnt;
	return 0;
}

static int from_debug_frame(struct build *b, Elf *e)
{
	uint64_t *starts = NULL;
	size_t n = 0;
	Dwarf *dw;
	Dwarf_CFI *cfi;
	int err = debug_starts(e, &starts, &n);

	if (err)
		return err;
	dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	cfi = dw ? dwarf_getcfi(dw) : NULL;
	err = cfi ? emit(b, cfi, starts, n) : -ENODATA;
	if (!err)
		b->t->source = ".debug_frame";
	if (dw)
		dwarf_end(dw);
	free(starts);
	return err;
}

/* The separate debug file by build id, if installed. */
static int from_debug_file(struct build *b, Elf *e, const char *root)
{
	const void *id;
	ssize_t n = dwelf_elf_gnu_build_id(e, &id);
	char path[4200], *p;
	int fd, err;
	Elf *de;

	if (n < 2 || n > 64)
		return -ENODATA;
	p = path + snprintf(path, sizeof(path), "%s/.build-id/%02x/", root ? root : "/usr/lib/debug",
			    ((const unsigned char *)id)[0]);
	for (ssize_t i = 1; i < n; i++)
		p += sprintf(p, "%02x", ((const unsigned char *)id)[i]);
	strcpy(p, ".debug");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -ENODATA;
	de = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = de ? from_debug_frame(b, de) : -ENODATA;
	if (de)
		elf_end(de);
	close(fd);
	return err;
}

/* The ELF entry point without unwind information (the dynamic loader's
 * _start, hand-written) is where the process's stack begins: a root. */
static int entry_root(struct build *b, uint64_t entry)
{
	struct unw_table *t = b->t;
	struct unw_rule root = { .cfa = UNW_CFA_SP, .cfa_off = 8, .ra = UNW_RA_UNDEF };
	uint64_t off;
	long i, ix;

	if (!entry || vaddr_to_off(b, entry, &off) || off > UINT32_MAX)
		return 0;
	i = unw_table__find(t->rows, t->nrows, off);
	if (i >= 0 && t->rows[i].rule != 0)
		return 0; /* covered by an FDE */
	ix = intern(b, &root);
	if (ix < 0)
		return 0;
	if (i >= 0 && t->rows[i].off == off) {
		t->rows[i].rule = ix;
		return 0;
	}
	if (t->nrows == b->rcap) {
		struct unw_row *n = realloc(t->rows, (b->rcap + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->rows = n;
		b->rcap++;
	}
	memmove(&t->rows[i + 2], &t->rows[i + 1], (t->nrows - (i + 1)) * sizeof(*t->rows));
	t->rows[i + 1].off = off;
	t->rows[i + 1].rule = ix;
	t->nrows++;
	return 0;
}

/*
 * V8's builtins (bytecode handlers, InterpreterEntryTrampoline, JSEntry)
 * are linked into node or libnode as one blob without CFI, and every
 * interpreted JS function runs inside them: the walk ended there. V8
 * keeps rbp as a frame pointer in all its generated code, so in a file
 * that carries V8 (it exports v8dbg_off_fp_function, its post-mortem
 * metadata) an executable stretch of at least V8_GAP_MIN bytes with no
 * FDE takes the frame-pointer rule. Why 64 KiB: the blob is 1.4 MiB
 * (Debian's node 18) to 1.6 MiB (NodeSource 20); the other gaps in those
 * files are alignment and hand-written stubs of at most 7.4 KiB, and one
 * 150 KiB table of OpenSSL constants in .text (node 20), where no code
 * runs, so its rule is never used.
 */
#define V8_GAP_MIN (64u << 10)

static bool has_symbol(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *nm;

			if (gelf_getsym(d, i, &sym) && sym.st_name && sym.st_shndx != SHN_UNDEF &&
			    (nm = elf_strptr(e, sh.sh_link, sym.st_name)) && !strcmp(nm, name))
				return true;
		}
	}
	return false;
}

static int off_cmp(const void *a, const void *b)
{
	const struct unw_row *x = a, *y = b;

	/* At one offset, a gap's start before another's end. */
	if (x->off == y->off)
		return (x->rule < y->rule) - (x->rule > y->rule);
	return (x->off > y->off) - (x->off < y->off);
}

/* Gives V8's FDE gaps the frame-pointer rule (see V8_GAP_MIN). */
static int v8_gaps(struct build *b, Elf *e)
{
	static const struct unw_rule fp = { .cfa = UNW_CFA_BP, .cfa_off = 16, .ra = UNW_RA_CFA,
					     .ra_off = -8, .bp = UNW_BP_CFA, .bp_off = -16 };
	struct unw_table *t = b->t;
	struct unw_row *ed = NULL, *rows;
	size_t ned = 0, cap = 0, n = 0;
	long rule;

	if (!has_symbol(e, "v8dbg_off_fp_function"))
		return 0;
	rule = intern(b, &fp);
	if (rule < 0)
		return 0;
	/* Edits (offset, rule): a gap's start takes the rule; its end, where
	 * no row starts, gets "no information" back. */
	for (int s = 0; s < b->nsegs; s++) {
		uint64_t lo = b->segs[s].off, hi = lo + b->segs[s].memsz;
		long i = unw_table__find(t->rows, t->nrows, lo > UINT32_MAX ? UINT32_MAX : lo);
		uint64_t at = lo;
		bool none = i < 0 || t->rows[i].rule == 0;

		for (size_t j = i + 1; at < hi; j++) {
			uint64_t end = j < t->nrows && t->rows[j].off < hi ? t->rows[j].off : hi;

			if (none && end - at >= V8_GAP_MIN && hi <= UINT32_MAX) {
				if (ned + 2 > cap) {
					struct unw_row *ne = realloc(ed, (cap = cap * 2 + 8) * sizeof(*ne));

					if (!ne) {
						free(ed);
						return -ENOMEM;
					}
					ed = ne;
				}
				ed[ned++] = (struct unw_row){ at, rule };
				if (end == hi && !(j < t->nrows && t->rows[j].off == hi))
					ed[ned++] = (struct unw_row){ hi, 0 };
			}
			if (end == hi)
				break;
			at = end;
			none = t->rows[j].rule == 0;
		}
	}
	if (!ned)
		return 0;
	qsort(ed, ned, sizeof(*ed), off_cmp);
	rows = malloc((t->nrows + ned) * sizeof(*rows));
	if (!rows) {
		free(ed);
		return -ENOMEM;
	}
	/* Merge; an edit at a row's offset replaces that row's rule. */
	for (size_t i = 0, k = 0; i < t->nrows || k < ned;) {
		struct unw_row r = k < ned && (i == t->nrows || ed[k].off <= t->rows[i].off) ? ed[k++]
											 : t->rows[i++];

		if (n && rows[n - 1].off == r.off)
			continue; /* the edit came first */
		if (!n || rows[n - 1].rule != r.rule)
			rows[n++] = r;
	}
	free(ed);
	free(t->rows);
	t->rows = rows;
	t->nrows = b->rcap = n;
	return 0;
}

/* Go code has no CFI: its own table of stack depths (gopclntab.h), the
 * one Go's traceback unwinds with, gives each run of instructions its
 * rule. At depth d (bytes below the entry sp): CFA = sp + d + 8, the
 * return address just below it; once a frame is made (d > 0) the
 * caller's rbp is saved under the return address (Go's amd64 prologue).
 * The functions that start a stack (runtime.goexit under every
 * goroutine, runtime.mstart and rt0_go under the system stacks) end the
 * walk as Go's traceback ends there. */
/* The end of the Go text walked so far (go_run): from_go ends the Go rows
 * there, so that what follows keeps no Go rule. */
static __thread uint64_t go_text_end;

static int go_run(void *ctx, uint64_t lo, uint64_t hi, int32_t d, const char *name, size_t n)
{
	struct build *b = ctx;

	if (hi > go_text_end)
		go_text_end = hi;
	struct unw_rule r = { .cfa = UNW_CFA_SP, .cfa_off = d + 8, .ra = UNW_RA_CFA, .ra_off = -8 };
	long idx;

	(void)hi;
	if ((n == 14 && !memcmp(name, "runtime.goexit", 14)) || (n == 14 && !memcmp(name, "runtime.mstart", 14)) ||
	    (n == 14 && !memcmp(name, "runtime.rt0_go", 14)))
		r = (struct unw_rule){ .cfa = UNW_CFA_SP, .cfa_off = 8, .ra = UNW_RA_UNDEF };
	else if (d < 0) /* the return address popped: no way up from here */
		r = (struct unw_rule){ .cfa = UNW_CFA_BAD, .ra = UNW_RA_BAD };
	else if (d > 0)
		r.bp = UNW_BP_CFA, r.bp_off = -16;
	if (r.cfa == UNW_CFA_BAD)
		b->t->unsupported++;
	if (b->cancel && __atomic_load_n(b->cancel, __ATOMIC_RELAXED))
		return -ECANCELED;
	idx = intern(b, &r);
	if (idx < 0)
		return -EFBIG;
	return add_row(b, lo, idx);
}

static int from_go(struct build *b, Elf *e)
{
	const uint8_t *tab;
	uint64_t text, off;
	size_t n;
	long r;

	if (gopclntab__section(e, &tab, &n, &text, &off))
		return -ENODATA;
	go_text_end = 0;
	r = gopclntab__walk_sp(tab, n, text, go_run, b);
	if (r < 0)
		return r == -ECANCELED || r == -ENOMEM || r == -EFBIG ? (int)r : -ENODATA;
	r = add_row(b, go_text_end, 0);
	if (r)
		return (int)r;
	b->t->source = ".gopclntab";
	return 0;
}

/* The rule in force at off in rows (sorted, each holding to the next):
 * 0 before the first. *i is a cursor that only moves forward. */
static uint32_t rule_at(const struct unw_row *rows, size_t n, size_t *i, uint32_t off)
{
	while (*i + 1 < n && rows[*i + 1].off <= off)
		(*i)++;
	return n && rows[*i].off <= off ? rows[*i].rule : 0;
}

/*
 * A cgo binary: its C code has .eh_frame, its Go code none. The Go rows
 * are built apart and laid under the .eh_frame ones: wherever .eh_frame
 * has no information (rule 0, or no row yet), Go's rule holds.
 */
static int go_under(struct build *b, Elf *e)
{
	struct unw_table *t = b->t;
	struct unw_row *a = t->rows, *g, *c;
	size_t na = t->nrows, acap = b->rcap, ng, nc = 0, i = 0, j = 0, ia = 0, ig = 0;
	const char *src = t->source;
	uint32_t last = UINT32_MAX;
	int err;

	t->rows = NULL;
	t->nrows = b->rcap = 0;
	err = from_go(b, e);
	g = t->rows;
	ng = t->nrows;
	t->rows = a;
	t->nrows = na;
	b->rcap = acap;
	t->source = src;
	if (err || !ng) {
		free(g);
		return err == -ENODATA ? 0 : err;
	}
	c = malloc((na + ng) * sizeof(*c));
	if (!c) {
		free(g);
		return -ENOMEM;
	}
	while (i < na || j < ng) {
		uint32_t off = j >= ng || (i < na && a[i].off <= g[j].off) ? a[i].off : g[j].off, ra, rg, r;

		while (i < na && a[i].off == off)
			i++;
		while (j < ng && g[j].off == off)
			j++;
		ra = rule_at(a, na, &ia, off);
		rg = rule_at(g, ng, &ig, off);
		r = ra ? ra : rg;
		if (r != last)
			c[nc++] = (struct unw_row){ off, r };
		last = r;
	}
	free(g);
	free(t->rows);
	t->rows = c;
	t->nrows = b->rcap = nc;
	t->source = ".eh_frame+.gopclntab";
	return 0;
}

static int compile_elf(Elf *e, const char *debug_root, const int *cancel, struct unw_table **out)
{
	struct build *b = calloc(1, sizeof(*b));
	GElf_Ehdr eh;
	GElf_Phdr hdr_ph = { 0 };
	size_t nph;
	uint64_t *starts = NULL;
	size_t n = 0;
	Dwarf_CFI *cfi = NULL;
	int err = -ENOEXEC;

	if (!b)
		return -ENOMEM;
	b->cancel = cancel;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 ||
	    gelf_getclass(e) != ELFCLASS64 || elf_getphdrnum(e, &nph))
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, i, &ph))
			continue;
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && b->nsegs < 16)
			b->segs[b->nsegs++] = (struct seg){ ph.p_vaddr, ph.p_filesz, ph.p_offset };
		else if (ph.p_type == PT_GNU_EH_FRAME)
			hdr_ph = ph;
	}
	err = -ENOMEM;
	b->t = calloc(1, sizeof(*b->t));
	if (!b->t || !(b->t->rules = calloc(1024, sizeof(*b->t->rules))))
		goto out;
	b->t->nrules = 1; /* rules[0]: no information */
	err = -ENODATA;
	if (!b->nsegs)
		goto out;
	if (hdr_ph.p_filesz && !hdr_starts(e, &hdr_ph, &starts, &n) && n &&
	    (cfi = dwarf_getcfi_elf(e))) {
		err = emit(b, cfi, starts, n);
		b->t->source = ".eh_frame";
		if (!err)
			err = go_under(b, e);
	} else {
		err = from_debug_frame(b, e);
		if (err == -ENODATA)
			err = from_go(b, e);
		if (err == -ENODATA)
			err = from_debug_file(b, e, debug_root);
	}
	if (!err && !b->t->nrows)
		err = -ENODATA;
	if (!err)
		err = v8_gaps(b, e);
	if (!err)
		err = entry_root(b, eh.e_entry);
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	free(starts);
	if (err) {
		unw_table__free(b->t);
	} else {
		struct unw_rule *r = realloc(b->t->rules, b->t->nrules * sizeof(*r));

		if (r)
			b->t->rules = r;
		*out = b->t;
	}
	free(b);
	return err;
}

int unw_table__compile(int fd, const char *debug_root, const int *cancel, struct unw_table **out)
{
	Elf *e;
	int err;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	err = compile_elf(e, debug_root, cancel, out);
	elf_end(e);
	return err;
}

int unw_table__compile_mem(const void *img, size_t size, struct unw_table **out)
{
	Elf *e;
	int err;

	elf_version(EV_CURRENT);
	e = elf_memory((char *)img, size);
	if (!e)
		return -ENOEXEC;
	err = compile_elf(e, NULL, NULL, out);
	elf_end(e);
	return err;
}

void unw_table__free(struct unw_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->rules);
	free(t);
}

long unw_table__find(const struct unw_row *rows, size_t n, uint32_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}
