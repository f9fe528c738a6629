/*
 * elfsym.h - what the symbolizer needs from one ELF file: its build id, its
 * PT_LOAD segments (to turn a file offset into a link-time address, which
 * covers PIE and shared-library bias) and its function symbols.
 */
#ifndef PROFFS_ELFSYM_H
#define PROFFS_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_load {
	uint64_t vaddr, off, filesz;
};

struct elf_sym {
	uint64_t addr, size;
	uint32_t name; /* offset into elf_info.strs; a version suffix (@@V, @V) cut off */
	uint8_t rank;  /* among aliases at one address, lower wins (elfsym.c) */
};

struct elf_info {
	char build_id[41]; /* lowercase hex, "" when the file has none */
	struct elf_load *loads;
	size_t nloads;
	struct elf_sym *syms; /* sorted by addr */
	size_t nsyms;
	char *strs; /* all symbol names, NUL-separated */
	size_t strs_len;
	bool has_symtab; /* .symtab found (not just .dynsym) */
	/* A Go binary named from its .gopclntab (no .symtab): the layout
	 * read ("1.16", "1.18", "1.20"; static), else NULL. go_refused: it
	 * has one we do not read, or a damaged one (its code stays
	 * module+0x). */
	const char *go_layout;
	bool go_refused;
	/* Named from it: where the table lies in the file, and the .text
	 * address its offsets count from when it holds none (gopclntab.h):
	 * what a line lookup reads again (symbolize.c). */
	uint64_t go_off, go_size, go_text;
	bool corrupt;    /* a symbol table lies outside the file: skipped */
};

/* Caps on what one file may make us hold; a file over them is refused
 * (-EFBIG) rather than cut (a cut table would name the wrong functions). */
#define ELFSYM_MAX_SYMS (1u << 20)
#define ELFSYM_MAX_STRS (32u << 20)

/*
 * An ELF file opened for a runtime's detector (sampler/python/interp.c,
 * sampler/ruby/rbfile.c): libelf's view of it, its loads and build id,
 * its size, its bytes read by link-time address.
 */
struct elf_img {
	int fd;		/* borrowed */
	struct Elf *elf;
	uint64_t fsize;
	uint16_t machine; /* EM_* */
	struct elf_info e;
};
/* 0 (close im with elf_img__close; twice is fine); -ENOEXEC: not a
 * regular ELF file; -EOPNOTSUPP: not 64-bit little endian; elfsym__read's
 * -errno. On error im holds nothing. */
int elf_img__open(int fd, struct elf_img *im);
void elf_img__close(struct elf_img *im);
/* The n bytes at link-time address vaddr, when one PT_LOAD's file bytes
 * hold them all: their file offset into *off, true; else false. */
bool elf_img__off(const struct elf_img *im, uint64_t vaddr, uint64_t n, uint64_t *off);
/* Those n bytes into buf: 0, or -EINVAL (not in the file's loads, or a
 * short read). */
int elf_img__read(const struct elf_img *im, uint64_t vaddr, void *buf, size_t n);

/* A symbol a runtime's detector looks for (sampler/python/interp.c,
 * sampler/ruby/rbfile.c): name set, the rest filled when found. */
struct elfsym_want {
	const char *name;
	uint64_t addr, size;
	size_t index; /* in the table it came from (for relocations) */
	uint8_t type; /* STT_* */
	bool found;
};

/*
 * Finds the wanted names w[0..nw) among the symbols defined in the first
 * section of `type` (SHT_DYNSYM, SHT_SYMTAB) of elf, a file of fsize
 * bytes; a value 0 counts only with zero_ok (a TLS symbol's offset).
 * Sections past the file's end or over ELFSYM_MAX_SYMS are not read.
 * Returns that section's index, 0 if there is none.
 */
struct Elf;
size_t elfsym__want(struct Elf *elf, uint64_t fsize, unsigned type, bool zero_ok, struct elfsym_want *w,
		    size_t nw);

/*
 * Reads build id, PT_LOADs and function symbols (.symtab, else .dynsym)
 * of the ELF file open at fd (the fd stays the caller's). want_syms false
 * reads only headers and build id. On success *e owns malloc'd arrays
 * until elfsym__fini(). Returns 0 or -errno (-ENOEXEC: not ELF or
 * unreadable headers, -EFBIG: over the caps above).
 */
int elfsym__read(int fd, bool want_syms, struct elf_info *e);

/* The same for an ELF image in memory (the vDSO), symbols included. */
int elfsym__read_mem(const void *image, size_t size, struct elf_info *e);

/* Replaces e's symbols with those of the (debug) file at fd, if it has a
 * .symtab. Returns 0 or -errno; e is unchanged on error. */
int elfsym__read_debug(int fd, struct elf_info *e);

/* Link-time address of a file offset via the PT_LOAD containing it;
 * false if no segment holds it. */
bool elfsym__off_to_vaddr(const struct elf_info *e, uint64_t off, uint64_t *vaddr);

/* Name of the function containing vaddr, or NULL. The string lives in e. */
const char *elfsym__lookup(const struct elf_info *e, uint64_t vaddr);

/* The function symbol named name (the first one), or NULL: a linear
 * scan, for the loader's few questions about a file. Lives in e. */
const struct elf_sym *elfsym__find(const struct elf_info *e, const char *name);

void elfsym__fini(struct elf_info *e);

#endif
