/*
 * store_block.c - the sample block codec.
 *
 * One block holds every series of one batch (or, for a rollup, of one
 * hour). Layout:
 *   byte  format (1)
 *   byte  flags (bit 0: payload is one zstd frame)
 *   varint duration_ns, varint nvalues, varint raw payload length
 *   payload: varint nseries, then per series (ascending ids):
 *     varint series id delta, varint nentries, varint entry bytes,
 *     entries (ascending stacks): varint stack delta, nvalues zigzag varints
 * The per-series byte length lets a reader skip series outside its
 * selection without parsing them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "store/db/store_int.h"

#define BLOCK_FORMAT 1
#define BLOCK_ZSTD 1
#define BLOCK_MAX_RAW (256u << 20)

static int entry_cmp(const void *a, const void *b)
{
	const struct blk_entry *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	return 0;
}

static size_t normalize_qsort(struct blk_entry *e, size_t n, uint32_t nvalues)
{
	size_t o = 0;

	qsort(e, n, sizeof(*e), entry_cmp);
	for (size_t i = 1; i < n; i++) {
		if (e[i].series == e[o].series && e[i].stack == e[o].stack) {
			for (uint32_t j = 0; j < nvalues; j++)
				e[o].v[j] += e[i].v[j];
		} else {
			e[++o] = e[i];
		}
	}
	return o + 1;
}

struct kidx {
	uint64_t k; /* series << 32 | stack */
	uint32_t i;
};

/* LSD radix sort of (series, stack) keys, one pass per byte that differs
 * among the keys (three for a batch: series ids and stack ids are small),
 * then one gather: qsort moving whole entries through a comparison
 * callback was a noticeable part of an append. */
size_t blk_entries__normalize(struct blk_entry *e, size_t n, uint32_t nvalues)
{
	struct kidx *a, *b, *t;
	struct blk_entry *out;
	uint64_t or_ = 0, and_ = ~0ULL;
	size_t o = 0;

	if (n < 2)
		return n;
	a = malloc(n * sizeof(*a));
	b = malloc(n * sizeof(*b));
	out = malloc(n * sizeof(*out));
	if (!a || !b || !out) {
		free(a);
		free(b);
		free(out);
		return normalize_qsort(e, n, nvalues);
	}
	for (size_t i = 0; i < n; i++) {
		a[i].k = (uint64_t)e[i].series << 32 | e[i].stack;
		a[i].i = (uint32_t)i;
		or_ |= a[i].k;
		and_ &= a[i].k;
	}
	for (int sh = 0; sh < 64; sh += 8) {
		size_t cnt[256] = { 0 }, sum = 0;

		if (!(((or_ ^ and_) >> sh) & 0xff))
			continue; /* all keys share this byte */
		for (size_t i = 0; i < n; i++)
			cnt[(a[i].k >> sh) & 0xff]++;
		for (int d = 0; d < 256; d++) {
			size_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[cnt[(a[i].k >> sh) & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	out[0] = e[a[0].i];
	for (size_t i = 1; i < n; i++) {
		const struct blk_entry *x = &e[a[i].i];

		if (a[i].k == a[i - 1].k) {
			for (uint32_t j = 0; j < nvalues; j++)
				out[o].v[j] += x->v[j];
		} else {
			out[++o] = *x;
		}
	}
	memcpy(e, out, (o + 1) * sizeof(*e));
	free(a);
	free(b);
	free(out);
	return o + 1;
}

int block__encode(const struct blk_entry *e, size_t n, uint32_t nvalues,
		  int64_t duration_ns, void *zc, uint8_t **out, size_t *outlen)
{
	/* Worst case per entry: stack varint + nvalues varints of 10 bytes. */
	size_t cap = 64 + n * (5 + 10 * (size_t)nvalues) + n * 15;
	uint8_t *raw = malloc(cap), *blk = NULL;
	size_t rl = 0, i = 0, nser = 0, hl;
	uint32_t prev_series = 0;
	uint8_t hdr[32];
	int rc = 0;

	if (!raw)
		return -ENOMEM;
	for (size_t j = 0; j < n; j++)
		if (!j || e[j].series != e[j - 1].series)
			nser++;
	rl += varint_put(raw + rl, nser);
	while (i < n) {
		size_t j = i, bytes = 0;
		uint32_t prev_stack = 0;
		uint8_t tmp[10];

		while (j < n && e[j].series == e[i].series)
			j++;
		rl += varint_put(raw + rl, e[i].series - prev_series);
		prev_series = e[i].series;
		rl += varint_put(raw + rl, j - i);
		/* Entry bytes first computed, then written: two passes are
		 * cheaper than moving memory. */
		for (size_t k = i; k < j; k++) {
			bytes += varint_put(tmp, e[k].stack - prev_stack);
			prev_stack = e[k].stack;
			for (uint32_t v = 0; v < nvalues; v++)
				bytes += varint_put(tmp, zigzag(e[k].v[v]));
		}
		rl += varint_put(raw + rl, bytes);
		prev_stack = 0;
		for (size_t k = i; k < j; k++) {
			rl += varint_put(raw + rl, e[k].stack - prev_stack);
			prev_stack = e[k].stack;
			for (uint32_t v = 0; v < nvalues; v++)
				rl += varint_put(raw + rl, zigzag(e[k].v[v]));
		}
		i = j;
	}

	hl = 0;
	hdr[hl++] = BLOCK_FORMAT;
	hdr[hl++] = 0;
	hl += varint_put(hdr + hl, (uint64_t)(duration_ns < 0 ? 0 : duration_ns));
	hl += varint_put(hdr + hl, nvalues);
	hl += varint_put(hdr + hl, rl);

	if (rl >= 128) {
		size_t zcap = ZSTD_compressBound(rl), zl;

		blk = malloc(hl + zcap);
		if (!blk) {
			rc = -ENOMEM;
			goto out;
		}
		/* A batch's block (tens of KiB raw at most) at level 1: on
		 * the benchmark hour level 3 took 7% of an append for blocks
		 * that land in the same 4 KiB pages anyway. Rollups (large,
		 * built once, kept long) at level 3. */
		int lvl = rl < (64u << 10) ? 1 : 3;

		if (zc)
			zl = ZSTD_compressCCtx(zc, blk + hl, zcap, raw, rl, lvl);
		else
			zl = ZSTD_compress(blk + hl, zcap, raw, rl, lvl);
		if (!ZSTD_isError(zl) && zl + zl / 16 < rl) {
			hdr[1] = BLOCK_ZSTD;
			memcpy(blk, hdr, hl);
			*out = blk;
			*outlen = hl + zl;
			goto out;
		}
		free(blk);
	}
	blk = malloc(hl + rl);
	if (!blk) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(blk, hdr, hl);
	memcpy(blk + hl, raw, rl);
	*out = blk;
	*outlen = hl + rl;
out:
	free(raw);
	return rc;
}

int block__decode(const void *b, size_t len, block_series_fn want,
		  block_entry_fn fn, void *ctx, struct block_hdr *hdr)
{
	return block__decode_dctx(NULL, b, len, want, fn, ctx, hdr);
}

int block__raw_len(const void *b, size_t len, size_t *raw)
{
	const uint8_t *p = b, *end = p + len;
	uint64_t v;
	size_t l;

	if (len < 5 || p[0] != BLOCK_FORMAT)
		return -EBADMSG;
	p += 2;
	for (int i = 0; i < 3; i++) {
		if (!(l = varint_get(p, end - p, &v)))
			return -EBADMSG;
		p += l;
	}
	*raw = v;
	return 0;
}

int block__decode_dctx(void *dctx, const void *b, size_t len, block_series_fn want,
		       block_entry_fn fn, void *ctx, struct block_hdr *hdr)
{
	const uint8_t *p = b, *end = p + len, *q, *qend;
	uint8_t *buf = NULL;
	uint64_t dur, nv, rl, nser, series = 0;
	struct block_hdr h;
	int rc = -EBADMSG;
	size_t l;

	if (len < 5 || p[0] != BLOCK_FORMAT || (p[1] & ~BLOCK_ZSTD))
		return -EBADMSG;
	h.zstd = p[1] & BLOCK_ZSTD;
	p += 2;
	if (!(l = varint_get(p, end - p, &dur)))
		return -EBADMSG;
	p += l;
	if (!(l = varint_get(p, end - p, &nv)) || !nv || nv > PROF_MAX_VALUES)
		return -EBADMSG;
	p += l;
	if (!(l = varint_get(p, end - p, &rl)) || rl > BLOCK_MAX_RAW)
		return -EBADMSG;
	p += l;
	h.nvalues = nv;
	h.duration_ns = (int64_t)dur;
	h.raw_len = rl;
	h.stored_len = len;
	if (h.zstd) {
		size_t got;

		buf = malloc(rl ? rl : 1);
		if (!buf)
			return -ENOMEM;
		got = dctx ? ZSTD_decompressDCtx(dctx, buf, rl, p, end - p)
			   : ZSTD_decompress(buf, rl, p, end - p);
		if (ZSTD_isError(got) && ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation)
			rc = -ENOMEM; /* not a corrupt block */
		if (ZSTD_isError(got) || got != rl)
			goto out;
		q = buf;
		qend = buf + rl;
	} else {
		if ((uint64_t)(end - p) != rl)
			goto out;
		q = p;
		qend = end;
	}
	if (hdr)
		*hdr = h;
	if (!(l = varint_get(q, qend - q, &nser)))
		goto out;
	q += l;
	for (uint64_t si = 0; si < nser; si++) {
		uint64_t d, ne, bytes, stack = 0;
		const uint8_t *se;

		if (!(l = varint_get(q, qend - q, &d)))
			goto bad;
		q += l;
		if (!(l = varint_get(q, qend - q, &ne)))
			goto bad;
		q += l;
		if (!(l = varint_get(q, qend - q, &bytes)) || bytes > (uint64_t)(qend - q - l))
			goto bad;
		q += l;
		series += d;
		if ((si && !d) || series > UINT32_MAX)
			goto bad;
		se = q + bytes;
		if (!want || want(ctx, (uint32_t)series)) {
			for (uint64_t k = 0; k < ne; k++) {
				int64_t v[PROF_MAX_VALUES];
				uint64_t x;

				if (!(l = varint_get(q, se - q, &x)))
					goto bad;
				q += l;
				stack += x;
				if ((k && !x) || stack > UINT32_MAX)
					goto bad;
				for (uint64_t j = 0; j < nv; j++) {
					if (!(l = varint_get(q, se - q, &x)))
						goto bad;
					q += l;
					v[j] = unzigzag(x);
				}
				if (fn) {
					rc = fn(ctx, (uint32_t)series, (uint32_t)stack, v, nv);
					if (rc)
						goto out;
				}
			}
			if (q != se)
				goto bad;
		}
		q = se;
	}
	rc = q == qend ? 0 : -EBADMSG;
	goto out;
bad:
	rc = -EBADMSG;
out:
	free(buf);
	return rc;
}
