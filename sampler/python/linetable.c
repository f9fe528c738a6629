/*
 * linetable.c - CPython line tables, decoded as co_lines() decodes them.
 *
 * 3.10 (Objects/lnotab_notes.txt of 3.10): pairs (byte delta: unsigned,
 * line delta: signed). Each pair is a range of `byte delta` bytes; a line
 * delta of -128 means "no line" and leaves the running line alone, any
 * other is added to it (which starts at co_firstlineno). Pairs of byte
 * delta 0 cover nothing: CPython skips them, but their line deltas count,
 * and the range after them takes the line of the last one. co_lines()
 * says None for a range whose line is negative.
 *
 * 3.11+ (Objects/locations.md): entries, each a first byte 1CCCCLLL
 * (code C, L+1 code units of 2 bytes) and bytes with bit 7 clear. Codes
 * 0-9: same line (one column byte follows); 10-12: line + 0/1/2 (two
 * column bytes); 13: line + svarint, no columns; 14: line + svarint, then
 * end-line delta, start and end column + 1 (varints); 15: no location,
 * line unchanged, co_lines() says None. A varint is 6-bit chunks, least
 * significant first, bit 6 set on all but the last; an svarint is a
 * varint v meaning v >> 1, negated when v & 1. co_lines() says None for a
 * computed line of exactly -1.
 *
 * Beyond CPython's rule, for untrusted bytes: each entry's payload must
 * have the size its code implies and 3.10 byte deltas must be even (what
 * every CPython writes); a trailing run of empty 3.10 pairs covers no
 * code and is dropped (CPython would read past the table there).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "sampler/python/linetable.h"

/* Appends a range ending at `end`, merged with the previous one when
 * their lines agree. end > the previous end (callers only add length). */
static void add(struct pyline *t, uint32_t end, int32_t line)
{
	if (t->n && t->r[t->n - 1].line == line) {
		t->r[t->n - 1].end = end;
		return;
	}
	t->r[t->n].end = end;
	t->r[t->n].line = line;
	t->n++;
}

static bool line_ok(int64_t line)
{
	return line >= INT32_MIN + 1 && line <= INT32_MAX;
}

static int decode_310(struct pyline *t, const uint8_t *tab, size_t len, int32_t first)
{
	int64_t line = first;
	uint32_t end = 0;
	int32_t cur = PYLINE_NONE;

	if (len % 2)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 2) {
		uint8_t bdelta = tab[i];
		int8_t ldelta = (int8_t)tab[i + 1];

		if (bdelta % 2)
			return -EINVAL;
		if (ldelta == -128) {
			cur = PYLINE_NONE;
		} else {
			line += ldelta;
			if (!line_ok(line))
				return -EINVAL;
			cur = line < 0 ? PYLINE_NONE : (int32_t)line;
		}
		if (!bdelta)
			continue; /* its line is the next range's, unless one follows */
		end += bdelta;
		add(t, end, cur);
	}
	return 0;
}

/* Reads a varint of at most 6 chunks from p[*i..lim); CPython keeps the
 * low 32 bits. Returns false when it does not end before lim. */
static bool varint(const uint8_t *p, size_t *i, size_t lim, uint32_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift <= 30; shift += 6) {
		uint8_t b;

		if (*i >= lim)
			return false;
		b = p[(*i)++];
		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64)) {
			*out = (uint32_t)v;
			return true;
		}
	}
	return false;
}

static bool svarint(const uint8_t *p, size_t *i, size_t lim, int64_t *out)
{
	uint32_t u;

	if (!varint(p, i, lim, &u))
		return false;
	*out = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

static int decode_311(struct pyline *t, const uint8_t *tab, size_t len, int32_t first)
{
	int64_t line = first;
	uint32_t end = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = tab[i];
		unsigned code = (b >> 3) & 15;
		size_t j = i + 1, lim = j;
		int64_t delta = 0, skip;
		uint32_t u;

		if (!(b & 128))
			return -EINVAL;
		while (lim < len && !(tab[lim] & 128))
			lim++;
		switch (code) {
		case 15: /* no location */
			break;
		case 14: /* long form: line, end line, columns */
			if (!svarint(tab, &j, lim, &delta) || !varint(tab, &j, lim, &u) ||
			    !varint(tab, &j, lim, &u) || !varint(tab, &j, lim, &u))
				return -EINVAL;
			break;
		case 13: /* no columns */
			if (!svarint(tab, &j, lim, &delta))
				return -EINVAL;
			break;
		case 10:
		case 11:
		case 12: /* one line: two column bytes */
			delta = code - 10;
			j += 2;
			break;
		default: /* short form: one column byte */
			j += 1;
			break;
		}
		if (j != lim)
			return -EINVAL;
		line += delta;
		if (!line_ok(line))
			return -EINVAL;
		skip = code == 15 || line == -1;
		end += ((b & 7) + 1) * 2;
		add(t, end, skip ? PYLINE_NONE : (int32_t)line);
		i = lim;
	}
	return 0;
}

struct pyline *pyline__decode(int minor, const uint8_t *tab, size_t len, int32_t firstlineno)
{
	struct pyline *t;
	size_t most;
	int err;

	if (minor < 10 || minor > 13) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (len > PYLINE_MAX_TABLE) {
		errno = EFBIG;
		return NULL;
	}
	if (len && !tab) {
		errno = EINVAL;
		return NULL;
	}
	/* At most one range per entry: a pair (3.10) or a byte (3.11+). */
	most = minor == 10 ? len / 2 : len;
	t = malloc(sizeof(*t) + (most ? most : 1) * sizeof(t->r[0]));
	if (!t) {
		errno = ENOMEM;
		return NULL;
	}
	t->n = 0;
	err = minor == 10 ? decode_310(t, tab, len, firstlineno)
			  : decode_311(t, tab, len, firstlineno);
	if (err) {
		free(t);
		errno = -err;
		return NULL;
	}
	if (t->n < most) { /* give back what merging saved */
		struct pyline *s = realloc(t, sizeof(*t) + (t->n ? t->n : 1) * sizeof(t->r[0]));

		if (s)
			t = s;
	}
	return t;
}

int pyline__line_at(const struct pyline *t, uint32_t offset, int32_t *line)
{
	uint32_t lo = 0, hi = t->n;

	/* The first range whose end is past offset. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->r[mid].end > offset)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == t->n)
		return -ERANGE;
	if (t->r[lo].line == PYLINE_NONE)
		return -ENODATA;
	*line = t->r[lo].line;
	return 0;
}

void pyline__free(struct pyline *t)
{
	free(t);
}
