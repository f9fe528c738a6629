/*
 * rbfile.c - recognising CRuby in an ELF file (see rbfile.h).
 *
 * Build id and PT_LOAD segments come from the symbolizer's reader
 * (elfsym__read without symbols); the few symbols we need include
 * objects and a TLS symbol, which its function table does not keep, so
 * they are looked up by name here with libelf, as interp.c does for
 * CPython.
 *
 * The code matching. Three facts have no symbol in a stripped libruby:
 * where the VM keeps its objspace and the GC's flag, and the address of
 * ruby_global_symbols. Each is read from an exported function that does
 * nothing but reach it, by the instruction bytes GCC 12 emits for it
 * (x86-64). Every pattern is searched only inside the function's
 * symbol size (or a 256-byte window of the jump target), each operand
 * is taken as a whole instruction's, and a pattern that is not found
 * leaves the fact unknown: the layout check then refuses the row rather
 * than take the row's value on trust.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/ruby/rbfile.h"
#include "sampler/symbols/elfsym.h"

/* The file opened (elfsym.h's elf_img): a 64-bit little-endian x86-64
 * ELF file, else -ENOEXEC (-ENOMEM as is). */
static int img_open(int fd, struct elf_img *im)
{
	int err = elf_img__open(fd, im);

	if (!err && im->machine != EM_X86_64)
		err = -ENOEXEC;
	return err && err != -ENOMEM ? -ENOEXEC : err;
}

/* Up to n bytes at vaddr, as far as its PT_LOAD's file bytes go: how
 * many were read (0: none). */
static size_t rd_upto(const struct elf_img *im, uint64_t vaddr, void *buf, size_t n)
{
	for (size_t i = 0; i < im->e.nloads; i++) {
		const struct elf_load *l = &im->e.loads[i];
		uint64_t in;

		if (vaddr < l->vaddr || vaddr - l->vaddr >= l->filesz)
			continue;
		in = l->filesz - (vaddr - l->vaddr);
		if (in < n)
			n = (size_t)in;
		return elf_img__read(im, vaddr, buf, n) ? 0 : n;
	}
	return 0;
}

enum { W_VERSION, W_EXEC, W_EC, W_VMPTR, W_DURING_GC, W_ID2STR, W_HAS_GVL, W_N };

/* The wanted names among the defined symbols of the first section of
 * `type` (a TLS symbol's value is its offset in the block: 0 is fine);
 * that section's index in *scn_ndx (0 if none). */
static void find_syms(const struct elf_img *im, Elf64_Word type, struct elfsym_want *w, size_t *scn_ndx)
{
	*scn_ndx = elfsym__want(im->elf, im->fsize, type, true, w, W_N);
}

/* Relocation sections longer than this are not searched. */
#define MAX_RELA (1u << 20)

/* ruby_current_ec's DTPMOD64/DTPOFF64 pair in the RELA sections that
 * use symbol table symndx. */
static void find_tls(const struct elf_img *im, size_t symndx, const struct elfsym_want *ec, struct rbfile *rf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t mod = 0, off_at = 0, off = 0;

	while ((scn = elf_nextscn(im->elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_link != symndx ||
		    !sh.sh_entsize || sh.sh_size / sh.sh_entsize > MAX_RELA)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0, n = d ? sh.sh_size / sh.sh_entsize : 0; i < n; i++) {
			GElf_Rela r;

			if (!gelf_getrela(d, (int)i, &r) || GELF_R_SYM(r.r_info) != ec->index)
				continue;
			if (GELF_R_TYPE(r.r_info) == R_X86_64_DTPMOD64)
				mod = r.r_offset;
			else if (GELF_R_TYPE(r.r_info) == R_X86_64_DTPOFF64)
				off_at = r.r_offset, off = ec->addr + (uint64_t)r.r_addend;
		}
	}
	/* The pair __tls_get_addr takes: module id, then offset. */
	if (mod && off_at == mod + 8) {
		rf->tls_modid_got = mod;
		rf->tls_dtpoff = off;
	}
}

/* The first match of pat (0x100 in it: any byte) in code[0..n) from
 * `from`: the index just past it, or 0. */
static size_t match(const uint8_t *code, size_t n, size_t from, const uint16_t *pat, size_t plen)
{
	for (size_t i = from; i + plen <= n; i++) {
		size_t k;

		for (k = 0; k < plen && (pat[k] == 0x100 || code[i + k] == pat[k]); k++)
			;
		if (k == plen)
			return i + plen;
	}
	return 0;
}

static int32_t s32at(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

#define CODE_MAX 256
#define X 0x100

/* rb_during_gc: mov vm_ptr@GOT(%rip),%rax; mov (%rax),%rax;
 * mov OBJSPACE(%rax),%rax; movzbl FLAGS(%rax),%eax; shr $BIT,%al. */
static void read_during_gc(const struct elf_img *im, const struct elfsym_want *w, struct rbfile *rf)
{
	static const uint16_t p_vm[] = { 0x48, 0x8b, 0x00, 0x48, 0x8b, 0x80, X, X, X, X };
	static const uint16_t p_fl[] = { 0x0f, 0xb6, 0x40, X };
	static const uint16_t p_bit[] = { 0xc0, 0xe8, X };
	uint8_t c[CODE_MAX];
	size_t n = w->size, a, b, k;

	if (!w->found || !n || n > CODE_MAX || elf_img__read(im, w->addr, c, n))
		return;
	a = match(c, n, 0, p_vm, 10);
	b = a ? match(c, n, a, p_fl, 4) : 0;
	k = b ? match(c, n, b, p_bit, 3) : 0;
	/* Each next instruction must follow the last at once. */
	if (!k || b != a + 4 || k != b + 3)
		return;
	rf->vm_objspace = s32at(c + a - 4);
	rf->objspace_flags = c[b - 1];
	rf->during_gc_bit = c[k - 1];
}

/* ruby_thread_has_gvl_p: __tls_get_addr of libruby's block (a
 * local-dynamic call); mov TH(%rax),%rax; test; je; cmpq $0,BLOCKING(%rax). */
static void read_has_gvl(const struct elf_img *im, const struct elfsym_want *w, struct rbfile *rf)
{
	static const uint16_t p_th[] = { 0x48, 0x8b, 0x80, X, X, X, X, 0x48, 0x85, 0xc0 };
	static const uint16_t p_cmp[] = { 0x48, 0x83, 0xb8, X, X, X, X, 0x00 };
	uint8_t c[CODE_MAX];
	size_t n = w->size, a, b;

	if (!w->found || !n || n > CODE_MAX || elf_img__read(im, w->addr, c, n))
		return;
	a = match(c, n, 0, p_th, 10);
	b = a ? match(c, n, a, p_cmp, 8) : 0;
	/* Only a conditional jump between them (je rel8). */
	if (!b || b != a + 2 + 8 || c[a] != 0x74)
		return;
	rf->th_dtpoff = s32at(c + a - 7);
	rf->th_blocking = s32at(c + b - 5);
}

/* rb_id2str: mov %rdi,%rax; shr $SHIFT,%rax; cmp $LAST_OP,%rdi; ...;
 * jmp get_id_serial_entry, whose first instructions compare the serial
 * with symbols->last_id and load symbols->ids (both %rip-relative). */
static void read_id2str(const struct elf_img *im, const struct elfsym_want *w, struct rbfile *rf)
{
	static const uint16_t p_shr[] = { 0x48, 0xc1, 0xe8, X };
	static const uint16_t p_cmp[] = { 0x48, 0x81, 0xff, X, X, X, X };
	static const uint16_t p_jmp[] = { 0xe9, X, X, X, X };
	static const uint16_t p_last[] = { 0x39, 0x3d, X, X, X, X };
	static const uint16_t p_ids[] = { 0x48, 0x8b, 0x3d, X, X, X, X };
	uint8_t c[CODE_MAX];
	size_t n = w->size, a, b, j;
	uint64_t tgt, last, ids;

	if (!w->found || !n || n > CODE_MAX || elf_img__read(im, w->addr, c, n))
		return;
	a = match(c, n, 0, p_shr, 4);
	b = a ? match(c, n, a, p_cmp, 7) : 0;
	j = b ? match(c, n, b, p_jmp, 5) : 0;
	if (!j || b != a + 7)
		return;
	rf->id_scope_shift = c[a - 1];
	rf->id_last_op = s32at(c + b - 4);
	tgt = w->addr + j + (uint64_t)(int64_t)s32at(c + j - 4);
	n = rd_upto(im, tgt, c, CODE_MAX);
	a = match(c, n, 0, p_last, 6);
	b = a ? match(c, n, a, p_ids, 7) : 0;
	if (!b)
		return;
	last = tgt + a + (uint64_t)(int64_t)s32at(c + a - 4);
	ids = tgt + b + (uint64_t)(int64_t)s32at(c + b - 4);
	if (ids <= last || ids - last > 64)
		return;
	rf->global_symbols = last;
	rf->symbols_ids = (int32_t)(ids - last);
}

static int read_file(struct elf_img *im, struct rbfile *rf)
{
	struct elfsym_want w[W_N] = {
		[W_VERSION] = { "ruby_version" },   [W_EXEC] = { "rb_vm_exec" },
		[W_EC] = { "ruby_current_ec" },	    [W_VMPTR] = { "ruby_current_vm_ptr" },
		[W_DURING_GC] = { "rb_during_gc" }, [W_ID2STR] = { "rb_id2str" },
		[W_HAS_GVL] = { "ruby_thread_has_gvl_p" },
	};
	size_t dyn, tab;
	char v[16] = { 0 };
	bool ec_dyn;
	int used = 0;

	memcpy(rf->build_id, im->e.build_id, sizeof(rf->build_id));
	find_syms(im, SHT_DYNSYM, w, &dyn);
	/* The TLS relocations name .dynsym's entries. */
	ec_dyn = w[W_EC].found;
	if (!w[W_EC].found || !w[W_VERSION].found || !w[W_EXEC].found)
		find_syms(im, SHT_SYMTAB, w, &tab);
	if (!w[W_VERSION].found || !w[W_EXEC].found || !w[W_EC].found)
		return -ENOENT;
	if (!w[W_VERSION].size || w[W_VERSION].size >= sizeof(v) ||
	    elf_img__read(im, w[W_VERSION].addr, v, w[W_VERSION].size) ||
	    sscanf(v, "%d.%d.%d%n", &rf->major, &rf->minor, &rf->teeny, &used) != 3 ||
	    (size_t)used + 1 != w[W_VERSION].size || rf->major < 1 || rf->major > 9 ||
	    rf->minor < 0 || rf->minor > 99 || rf->teeny < 0 || rf->teeny > 99)
		return -EINVAL;
	rf->vm_exec = w[W_EXEC].addr;
	rf->vm_exec_size = w[W_EXEC].size;
	rf->vm_ptr = w[W_VMPTR].found ? w[W_VMPTR].addr : 0;
	if (ec_dyn)
		find_tls(im, dyn, &w[W_EC], rf);
	read_during_gc(im, &w[W_DURING_GC], rf);
	read_id2str(im, &w[W_ID2STR], rf);
	read_has_gvl(im, &w[W_HAS_GVL], rf);
	return 0;
}

int rbfile__read(int fd, struct rbfile *rf)
{
	struct elf_img im;
	int err;

	memset(rf, 0, sizeof(*rf));
	rf->vm_objspace = rf->objspace_flags = rf->during_gc_bit = RBF_UNKNOWN;
	rf->th_dtpoff = rf->th_blocking = RBF_UNKNOWN;
	rf->id_last_op = rf->id_scope_shift = RBF_UNKNOWN;
	err = img_open(fd, &im);
	if (!err)
		err = read_file(&im, rf);
	elf_img__close(&im);
	return err;
}
