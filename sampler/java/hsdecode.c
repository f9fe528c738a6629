/*
 * hsdecode.c - HotSpot's compressed streams, line tables, PcDescs and
 * scopes (hsdecode.h), read from HotSpot's sources' rules:
 *
 * UNSIGNED5 (compressedStream.hpp / unsigned5.hpp): a byte below L = 192
 * (after removing x) ends a number; a number is at most 5 bytes, byte i
 * weighing 64^i. Since JDK 20 every byte is stored plus x = 1, so that no
 * number contains a 0 byte (the line table's terminator).
 *
 * Line number table (CompressedLineNumberWriteStream): pairs of deltas
 * from (bci 0, line 0); a byte b other than 0 and 0xff is one pair
 * (bci += b >> 3, line += b & 7); 0xff is followed by two zigzag-signed
 * UNSIGNED5 deltas; 0 ends the table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/java/hsdecode.h"
#include "store/util/util.h"

#define U5_L 192u

int hsu5__read(const uint8_t *p, size_t len, size_t *pos, unsigned x, uint32_t *v)
{
	uint32_t sum = 0;
	size_t i = *pos;

	for (int k = 0; k < 5; k++) {
		uint32_t b;

		if (i >= len)
			return -ENODATA;
		b = p[i++];
		if (b < x)
			return -EINVAL;
		sum += (b - x) << (6 * k);
		if (b < U5_L || k == 4) {
			*pos = i;
			*v = sum;
			return 0;
		}
	}
	return -EINVAL; /* not reached */
}

static int u5_signed(const uint8_t *p, size_t len, size_t *pos, unsigned x, int32_t *v)
{
	uint32_t u;
	int err = hsu5__read(p, len, pos, x, &u);

	if (!err)
		*v = (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
	return err;
}

struct hsline *hsline__decode(const uint8_t *tab, size_t len, unsigned x, size_t *used)
{
	struct hsline *t = NULL, *nt;
	uint32_t cap = 0;
	uint32_t bci = 0, line = 0; /* HotSpot's ints wrap; so do ours */
	size_t pos = 0;

	if (len > HSLINE_MAX_BYTES)
		len = HSLINE_MAX_BYTES;
	for (;;) {
		uint8_t b;

		if (pos >= len) {
			errno = ENODATA;
			goto fail;
		}
		b = tab[pos++];
		if (!b)
			break;
		if (b == 0xff) {
			int32_t db, dl;

			if (u5_signed(tab, len, &pos, x, &db) || u5_signed(tab, len, &pos, x, &dl)) {
				errno = pos >= len ? ENODATA : EINVAL;
				goto fail;
			}
			bci += (uint32_t)db;
			line += (uint32_t)dl;
		} else {
			bci += b >> 3;
			line += b & 7;
		}
		if (t && t->n == HSLINE_MAX_PAIRS) {
			errno = E2BIG;
			goto fail;
		}
		if (!t || t->n == cap) {
			cap = cap ? cap * 2 : 16;
			nt = realloc(t, sizeof(*t) + cap * sizeof(t->p[0]));
			if (!nt) {
				errno = ENOMEM;
				goto fail;
			}
			if (!t)
				nt->n = 0;
			t = nt;
		}
		t->p[t->n].bci = (int32_t)bci;
		t->p[t->n].line = (int32_t)line;
		t->n++;
	}
	if (!t) {
		t = malloc(sizeof(*t));
		if (!t) {
			errno = ENOMEM;
			return NULL;
		}
		t->n = 0;
	}
	if (used)
		*used = pos;
	return t;
fail:
	free(t);
	return NULL;
}

int32_t hsline__line_at(const struct hsline *t, uint32_t code_size, int32_t bci)
{
	int32_t best_bci = 0, best_line = -1;

	if (!t || bci < 0 || (uint32_t)bci >= code_size)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->p[i].bci == bci)
			return t->p[i].line;
		if (t->p[i].bci < bci && t->p[i].bci >= best_bci) {
			best_bci = t->p[i].bci;
			best_line = t->p[i].line;
		}
	}
	return best_line;
}

static void pc_at(const uint8_t *pcs, const struct hspc_geo *g, size_t i, int32_t *pc,
		  uint32_t *scope)
{
	memcpy(pc, pcs + i * g->size + g->pc_off, 4);
	memcpy(scope, pcs + i * g->size + g->scope_off, 4);
}

int hspc__find(const uint8_t *pcs, size_t n, const struct hspc_geo *g, int32_t pc, bool exact,
	       uint32_t *scope, int32_t *at)
{
	int32_t p;
	uint32_t s;

	*scope = 0;
	*at = 0;
	if (!g->size || g->pc_off > g->size - 4 || g->scope_off > g->size - 4 || g->size < 8)
		return -EINVAL;
	/* HotSpot's tables are sorted (a sentinel at -1 first, one at
	 * INT_MAX last) but a forged one need not be: a linear scan with
	 * HotSpot's conditions gives the same answer on a sorted table and
	 * a bounded one on any other. */
	for (size_t i = 0; i < n; i++) {
		pc_at(pcs, g, i, &p, &s);
		if (p == pc && (exact || s)) {
			*scope = s;
			*at = p;
			return 0;
		}
	}
	if (exact || pc == INT32_MAX)
		return -ENOENT;
	/* pc_desc_near(pc + 1): the first PcDesc whose predecessor's
	 * offset is below pc + 1 and whose own is at least it. */
	for (size_t i = 1; i < n; i++) {
		int32_t prev;
		uint32_t ps;

		pc_at(pcs, g, i - 1, &prev, &ps);
		pc_at(pcs, g, i, &p, &s);
		if (prev < pc + 1 && pc + 1 <= p) {
			*scope = s;
			*at = p;
			return 0;
		}
	}
	return -ENOENT;
}

int hsscope__read(const uint8_t *d, size_t len, uint32_t off, unsigned x, struct hsscope *s)
{
	size_t pos = off;
	uint32_t bci;
	int err;

	memset(s, 0, sizeof(*s));
	if (!off)
		return -ENOENT;
	if (off >= len)
		return -ERANGE;
	err = hsu5__read(d, len, &pos, x, &s->sender);
	if (!err)
		err = hsu5__read(d, len, &pos, x, &s->method);
	if (!err)
		err = hsu5__read(d, len, &pos, x, &bci);
	if (err)
		return err;
	s->bci = (int32_t)(bci - 1); /* stored + 1: InvocationEntryBci is -1 */
	return 0;
}

/* One modified UTF-8 character at in[*i]: its code unit (a UTF-16 unit,
 * or U+FFFD for a malformed sequence), *i past it. */
static uint32_t unit(const uint8_t *in, size_t n, size_t *i)
{
	uint8_t b = in[(*i)++];

	if (b < 0x80)
		return b ? b : 0xfffd;
	if ((b & 0xe0) == 0xc0 && *i < n && (in[*i] & 0xc0) == 0x80) {
		uint32_t c = (uint32_t)(b & 0x1f) << 6 | (in[(*i)++] & 0x3f);

		return c >= 0x80 ? c : 0xfffd; /* C0 80 (NUL) and overlongs */
	}
	if ((b & 0xf0) == 0xe0 && *i + 1 < n && (in[*i] & 0xc0) == 0x80 &&
	    (in[*i + 1] & 0xc0) == 0x80) {
		uint32_t c = (uint32_t)(b & 0x0f) << 12 | (uint32_t)(in[*i] & 0x3f) << 6 |
			     (in[*i + 1] & 0x3f);

		*i += 2;
		return c >= 0x800 ? c : 0xfffd;
	}
	return 0xfffd;
}

size_t hsstr__utf8(const uint8_t *in, size_t n, char *out, size_t cap)
{
	size_t i = 0, o = 0;

	if (!cap)
		return 0;
	while (i < n) {
		uint32_t c = unit(in, n, &i);
		char tmp[4];
		size_t k;

		if (c >= 0xd800 && c <= 0xdbff) {
			size_t j = i;
			uint32_t lo = j < n ? unit(in, n, &j) : 0;

			if (lo >= 0xdc00 && lo <= 0xdfff) {
				c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
				i = j;
			} else {
				c = 0xfffd;
			}
		} else if (c >= 0xdc00 && c <= 0xdfff) {
			c = 0xfffd;
		}
		k = utf8_put(c, tmp);
		if (o + k >= cap)
			break;
		memcpy(out + o, tmp, k);
		o += k;
	}
	out[o] = 0;
	return o;
}
