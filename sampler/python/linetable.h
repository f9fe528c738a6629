/*
 * linetable.h - a CPython code object's line table, decoded by CPython's
 * own rule into (code offset range -> line), for 3.10 to 3.13.
 *
 * The bytes come from another process's memory and are untrusted: the
 * decoder never reads past the length it is given, caps what it holds and
 * refuses a table no CPython would write (-EINVAL) rather than guess.
 *
 * Offsets are bytes of the code object's code (co_code), as co_lines()
 * counts them: a code unit's index times 2.
 *
 * "No line": where co_lines() yields None for a range (3.10: a range of
 * line-delta -128 or a negative line; 3.11+: a "no location" entry, code
 * 15, or a computed line of exactly -1), pyline__line_at() returns
 * -ENODATA. A no-location entry does not change the running line of the
 * entries after it (CPython adds 0 to it).
 */
#ifndef PROFFS_LINETABLE_H
#define PROFFS_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* Refused with -EFBIG: a table longer than this (CPython's own stdlib's
 * longest is a few tens of KiB). */
#define PYLINE_MAX_TABLE (1u << 20)

/* A range's line when co_lines() says None. */
#define PYLINE_NONE INT32_MIN

struct pyline_range {
	uint32_t end;  /* the range is [previous range's end (0 first), end) */
	int32_t line;  /* or PYLINE_NONE */
};

/* A decoded table: ranges in order, contiguous from offset 0, adjacent
 * ranges of the same line merged. */
struct pyline {
	uint32_t n;
	struct pyline_range r[];
};

/*
 * Decodes the co_linetable bytes tab[0..len) of a code object of CPython
 * 3.minor (10..13) whose co_firstlineno is firstlineno. tab is only read,
 * within len, during the call. Returns a table the caller owns (free with
 * pyline__free), or NULL with errno: EOPNOTSUPP (a minor version other
 * than 10..13), EFBIG (len over PYLINE_MAX_TABLE), EINVAL (bytes that are
 * not such a table, or lines outside int32), ENOMEM.
 */
struct pyline *pyline__decode(int minor, const uint8_t *tab, size_t len, int32_t firstlineno);

/*
 * The line CPython reports for the code at byte offset `offset` (any
 * byte of an instruction or of its cache units). Returns 0 with *line
 * set, -ENODATA where co_lines() says None, -ERANGE past the table's last
 * range. t is only read.
 */
int pyline__line_at(const struct pyline *t, uint32_t offset, int32_t *line);

/* Frees a table from pyline__decode; NULL is fine. */
void pyline__free(struct pyline *t);

#endif
