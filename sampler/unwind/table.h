/*
 * table.h - compiling one ELF file's unwind information (.eh_frame, or
 * .debug_frame from the file or its separate debug file) into compact
 * rows with libdw's CFI API: for every address range libdw reports, the
 * rule it resolves to (CFA, return address, rbp), as bpf/unwind.h encodes
 * it. Offsets are file offsets, so a mapping's pgoff finds them without
 * knowing the load bias. Pure computation on the caller's thread.
 */
#ifndef PROFFS_SAMPLER_UNWIND_TABLE_H
#define PROFFS_SAMPLER_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind.h"

/* One file's table: rows sorted by offset, their rule indexes into the
 * table's own rules (rules[0] is the "no information" rule). */
struct unw_table {
	struct unw_row *rows;
	size_t nrows;
	struct unw_rule *rules;
	size_t nrules;
	unsigned unsupported; /* ranges whose rule we do not implement */
	const char *source;   /* ".eh_frame" or ".debug_frame" (static) */
};

/* Row cap per file: a bound on memory for hostile or huge input. */
#define UNW_TABLE_MAX_ROWS (4u << 20)

/*
 * Compiles the ELF file open at fd (the caller keeps fd). debug_root
 * (NULL = /usr/lib/debug) is where a separate debug file is looked up by
 * build id when the file has no .eh_frame. cancel (NULL = never): a flag
 * another thread may set to stop a long build. Returns 0 and *out (the
 * caller's, unw_table__free), or -errno: -ENOEXEC not an x86-64 ELF,
 * -ENODATA no unwind information, -EFBIG over the row cap, -ENOMEM,
 * -ECANCELED.
 */
int unw_table__compile(int fd, const char *debug_root, const int *cancel, struct unw_table **out);
/* The same for an ELF image in memory (the vDSO); img must outlive the call. */
int unw_table__compile_mem(const void *img, size_t size, struct unw_table **out);
void unw_table__free(struct unw_table *t);

/* The index of the row holding file offset off, or -1 (before the first). */
long unw_table__find(const struct unw_row *rows, size_t n, uint32_t off);

#endif
