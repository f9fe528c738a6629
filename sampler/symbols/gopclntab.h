/*
 * gopclntab.h - function names from Go's own function table.
 *
 * Every Go binary carries .gopclntab: the table Go's runtime reads to
 * print a panic's stack (names, files, lines, frame sizes). A release
 * build (`go build -ldflags='-s -w'`) has no .symtab and no DWARF, so
 * this table is the only place its functions are named. The reader here
 * takes names and entry addresses; a table of a layout it does not know
 * is refused, never read as another (a wrong name is worse than none).
 *
 * Layouts (the table's first word): Go 1.16-1.17 0xfffffffa, 1.18-1.19
 * 0xfffffff0, 1.20 and later 0xfffffff1. Go 1.2-1.15 (0xfffffffb) is not
 * read: refused as unknown.
 */
#ifndef PROFFS_GOPCLNTAB_H
#define PROFFS_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct Elf Elf;

/* The .gopclntab section of the ELF file elf (its bytes, as libelf holds
 * them, valid while elf is; *file_off: where they start in the file) and
 * the link-time address of its .text. Returns 0, or -ENODATA when the
 * file has none (not Go, or a section the file cannot hold). */
int gopclntab__section(Elf *elf, const uint8_t **tab, size_t *n, uint64_t *text, uint64_t *file_off);

/* The Go versions a layout covers, for metrics ("1.16", "1.18", "1.20"),
 * or NULL when the magic is not one we read. */
const char *gopclntab__layout(const uint8_t *tab, size_t n);

/* Called per function: its entry (link-time address), its end (the next
 * function's entry, or the table's end of text) and its name (n bytes,
 * not NUL-terminated; valid during the call). Return non-zero to stop. */
typedef int (*gopclntab_fn)(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t n);

/*
 * Walks the table tab (n bytes, the whole .gopclntab section) of a binary
 * whose Go code starts at the table's own textStart, or where the
 * table holds 0 there (a position-independent binary) at text (the
 * link-time address of .text; Go 1.18+ tables hold offsets from it). Every offset is checked against n. Returns the number
 * of functions walked, or -errno: -EPROTONOSUPPORT for a layout not read
 * here, -EINVAL for a table that contradicts itself (damaged, truncated),
 * or the callback's non-zero value.
 */
long gopclntab__walk(const uint8_t *tab, size_t n, uint64_t text, gopclntab_fn fn, void *ctx);

/* Called per run of instructions with one stack depth: [lo, hi) (link-
 * time addresses) of function `name` (n bytes) have sp = the function's
 * entry sp - sp_delta (bytes; 0 at the entry, where the return address is
 * at sp; negative where an assembly stub popped it). Return non-zero to
 * stop. */
typedef int (*gopclntab_sp_fn)(void *ctx, uint64_t lo, uint64_t hi, int32_t sp_delta, const char *name,
			      size_t n);

/* Walks every function's stack-depth table (its pcsp, the table Go's own
 * traceback unwinds with), bounded like gopclntab__walk. Returns the
 * number of functions, or -errno as gopclntab__walk. */
long gopclntab__walk_sp(const uint8_t *tab, size_t n, uint64_t text, gopclntab_sp_fn fn, void *ctx);

/*
 * The source position of link-time address pc, as Go's own traceback
 * gives it (its pcfile and pcln tables): *file_off, the offset in tab of
 * the file's NUL-terminated path, and *line. Returns 0,
 * -ENOENT when no function or position covers pc or pc lies in code
 * the compiler inlined there (the line pcln gives is the callee's), or
 * -errno as
 * gopclntab__walk for a table not read or damaged. Bounded like it.
 */
int gopclntab__line(const uint8_t *tab, size_t n, uint64_t text, uint64_t pc, uint32_t *file_off,
		    int32_t *line);

#endif
