/*
 * render_folded.c - folded stacks (flamegraph.pl's input) and the
 * differential folded format ("stack countA countB").
 *
 * Each sample becomes one line "root;...;leaf"; samples whose lines are
 * equal (they differ only in labels the text does not show, e.g. pid) are
 * summed. Lines are sorted by the stack text in byte order, so the output
 * is deterministic and diff-able (see struct fline for how, cheaply).
 */
#include "fs/render/render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"

/*
 * Lines are sequences of frame-name ids, not text: sorting 40k long lines
 * by memcmp over shared prefixes was most of a render. The order is still
 * exactly the byte order of the text lines ("a;b;c"): two lines first
 * differ in some frame, and there the text compares the name followed by
 * ';' (or by the end of the line, for a line's last frame), since no name
 * holds a ';'. So every name gets two ranks in one byte-ordered list of
 * keys: "name;" (a frame with more after it) and "name" (the last frame);
 * lines compare rank by rank, integers only.
 */
struct fline {
	size_t off;   /* into flines.ids */
	uint32_t len; /* frames, >= 1 */
	int64_t v[2]; /* per side */
};

struct flines {
	struct frametab ft; /* names of every side (the first side's table) */
	bool have_ft;
	uint32_t *ids;      /* lines' frames, back to back */
	size_t nids, cap_ids;
	struct fline *v;
	size_t n, cap;
	uint32_t *rank; /* per name id: [2 id] as "name;", [2 id + 1] as "name" */
};

struct rank_key {
	const struct frametab *ft;
	uint32_t id, end; /* end: the line's last frame (no ';' after it) */
};

/* Byte order of name + (end ? "" : ";"). */
static int key_cmp(const void *a, const void *b)
{
	const struct rank_key *x = a, *y = b;
	const unsigned char *sx = (const unsigned char *)frametab__name(x->ft, x->id);
	const unsigned char *sy = (const unsigned char *)frametab__name(y->ft, y->id);
	uint32_t lx = x->ft->len[x->id], ly = y->ft->len[y->id];
	uint32_t n = lx < ly ? lx : ly;
	int c = memcmp(sx, sy, n), tx, ty;

	if (c)
		return c;
	/* The byte after the common part, -1 for the end of the key. */
	tx = lx > n ? sx[n] : x->end ? -1 : ';';
	ty = ly > n ? sy[n] : y->end ? -1 : ';';
	if (tx != ty)
		return tx < ty ? -1 : 1;
	/* Equal keys come from one name (ids are unique per name). */
	return (x->end > y->end) - (x->end < y->end);
}

static int flines_rank(struct flines *fl)
{
	uint32_t n = fl->ft.nnames;
	struct rank_key *k = malloc((size_t)n * 2 * sizeof(*k) + 1);

	fl->rank = malloc((size_t)n * 2 * sizeof(*fl->rank) + 1);
	if (!k || !fl->rank) {
		free(k);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < 2 * n; i++)
		k[i] = (struct rank_key){ &fl->ft, i / 2, i & 1 };
	qsort(k, (size_t)n * 2, sizeof(*k), key_cmp);
	for (uint32_t i = 0; i < 2 * n; i++)
		fl->rank[2 * k[i].id + k[i].end] = i;
	free(k);
	return 0;
}

/* qsort_r, not qsort with a global: renders run on many FUSE threads. */
static int fline_cmp(const void *a, const void *b, void *ctx)
{
	const struct fline *x = a, *y = b;
	const struct flines *fl = ctx;
	const uint32_t *ix = fl->ids + x->off, *iy = fl->ids + y->off;

	for (uint32_t i = 0;; i++) {
		uint32_t rx = fl->rank[2 * ix[i] + (i + 1 == x->len)];
		uint32_t ry = fl->rank[2 * iy[i] + (i + 1 == y->len)];

		if (rx != ry)
			return rx < ry ? -1 : 1;
		if (i + 1 == x->len) /* both end here: equal lines */
			return (x->off > y->off) - (x->off < y->off);
	}
}

static bool fline_eq(const struct flines *fl, const struct fline *a, const struct fline *b)
{
	return a->len == b->len && !memcmp(fl->ids + a->off, fl->ids + b->off, a->len * sizeof(*fl->ids));
}

/* Appends every sample of p with a non-zero count (render__count_unit's
 * value, undivided: lines are summed first, then divided) to fl, counted
 * on side `side`. The first call builds fl->ft from p; later ones map
 * their names into it. */
/* What makes a sample's line: its locs array and its comm. Samples of a
 * merge that differ only in pid share both (one locs array per stack,
 * profile__add_sample), and a busy hour has 40k samples over 5k stacks:
 * summing them at once saves building, sorting and comparing the 35k
 * lines that would only be summed after the sort. (Equal lines from
 * distinct arrays are still summed there.) */
struct fsrc {
	const uint64_t *locs;
	const char *comm;
	uint32_t nlocs;
	uint32_t line; /* index in flines.v */
};

static uint64_t fsrc_key(const struct fsrc *x)
{
	uintptr_t w[3] = { (uintptr_t)x->locs, (uintptr_t)x->comm, x->nlocs };

	return hash64(w, sizeof(w), 0xf01d);
}

static int flines_add(struct flines *fl, const struct profile *p, int side)
{
	struct frametab own, *ft = &own;
	struct count_unit cu;
	uint32_t *ids = NULL, *map = NULL, cap = 0, nmap = 0, cap_map = 0;
	struct u64map seen = { 0 }; /* fsrc_key -> index in src */
	struct fsrc *src = NULL;
	size_t nsrc = 0, capsrc = 0;
	uint32_t vi;
	int rc;

	render__count_unit(p, &cu);
	vi = cu.vi;
	if (!fl->have_ft) {
		ft = &fl->ft;
		fl->have_ft = true;
		rc = frametab__build(ft, p);
	} else {
		rc = frametab__build(&own, p);
	}
	if (rc)
		goto out;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		int64_t v = p->nvalues ? s->values[vi] : 0;
		int n;

		if (!v)
			continue;
		{
			struct fsrc k = { s->locs, profile__sample_label(p, s, "comm"), s->nlocs,
					  (uint32_t)fl->n };
			uint64_t h = fsrc_key(&k), j;

			if (u64map__get(&seen, h, &j) && src[j].locs == k.locs &&
			    src[j].comm == k.comm && src[j].nlocs == k.nlocs) {
				fl->v[src[j].line].v[side] += v;
				continue;
			}
			if (GROW(src, &capsrc, nsrc + 1) || u64map__put(&seen, h, nsrc)) {
				rc = -ENOMEM;
				goto out;
			}
			src[nsrc++] = k;
		}
		n = frametab__stack(ft, p, s, true, &ids, &cap);
		if (n < 0) {
			rc = n;
			goto out;
		}
		if (GROW(fl->ids, &fl->cap_ids, fl->nids + n) || GROW(fl->v, &fl->cap, fl->n + 1) ||
		    (ft == &own && GROW(map, &cap_map, own.nnames))) {
			rc = -ENOMEM;
			goto out;
		}
		/* own grows as frametab__stack interns comm labels */
		for (; ft == &own && nmap < own.nnames; nmap++)
			map[nmap] = UINT32_MAX;
		for (int k = 0; k < n; k++) {
			uint32_t id = ids[k];

			if (ft == &own) { /* into the first side's names */
				if (map[id] == UINT32_MAX)
					map[id] = frametab__intern(&fl->ft, frametab__name(&own, id), own.len[id]);
				if (map[id] == UINT32_MAX) {
					rc = -ENOMEM;
					goto out;
				}
				id = map[id];
			}
			fl->ids[fl->nids + k] = id;
		}
		fl->v[fl->n] = (struct fline){ .off = fl->nids, .len = (uint32_t)n };
		fl->v[fl->n].v[side] = v;
		fl->nids += n;
		fl->n++;
	}
	rc = 0;
out:
	free(ids);
	free(map);
	free(src);
	u64map__free(&seen);
	if (ft == &own)
		frametab__free(&own);
	return rc;
}

/* Sorts and sums equal stacks in place; returns the new count, or -ENOMEM. */
static long flines_merge(struct flines *fl)
{
	size_t w = 0;

	if (!fl->n)
		return 0;
	if (flines_rank(fl))
		return -ENOMEM;
	qsort_r(fl->v, fl->n, sizeof(*fl->v), fline_cmp, fl);
	for (size_t r = 1; r < fl->n; r++) {
		struct fline *a = &fl->v[w], *b = &fl->v[r];

		if (fline_eq(fl, a, b)) {
			a->v[0] += b->v[0];
			a->v[1] += b->v[1];
		} else {
			fl->v[++w] = *b;
		}
	}
	return (long)(w + 1);
}

static void flines_put(const struct flines *fl, const struct fline *l, struct buf *out)
{
	for (uint32_t k = 0; k < l->len; k++) {
		uint32_t id = fl->ids[l->off + k];

		if (k)
			buf__put(out, ";", 1);
		buf__put(out, frametab__name(&fl->ft, id), fl->ft.len[id]);
	}
}

/* At most the bytes of lines [0, n) with ncounts counts each (a bound:
 * the text is written into room made once, not grown by copies). */
static size_t flines_bytes(const struct flines *fl, size_t n, int ncounts)
{
	size_t b = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fline *l = &fl->v[i];

		for (uint32_t k = 0; k < l->len; k++)
			b += fl->ft.len[fl->ids[l->off + k]] + 1;
		b += (size_t)ncounts * 21 + 1;
	}
	return b;
}

static void flines_free(struct flines *fl)
{
	frametab__free(&fl->ft);
	free(fl->ids);
	free(fl->v);
	free(fl->rank);
}

bool render__folded_scaled(const struct profile *p)
{
	struct count_unit cu;

	render__count_unit(p, &cu);
	return cu.div != 1;
}

int render__folded(const struct profile *p, struct buf *out)
{
	struct flines fl = { 0 };
	struct count_unit cu;
	long n;
	int rc;

	render__count_unit(p, &cu);
	rc = flines_add(&fl, p, 0);
	if (rc)
		goto out;
	n = flines_merge(&fl);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	if (!buf__room(out, flines_bytes(&fl, (size_t)n, 1))) {
		rc = out->err;
		goto out;
	}
	for (long i = 0; i < n; i++) {
		int64_t v = render__count(&cu, fl.v[i].v[0]);

		if (v <= 0)
			continue;
		flines_put(&fl, &fl.v[i], out);
		buf__printf(out, " %" PRId64 "\n", v);
	}
	rc = out->err;
out:
	flines_free(&fl);
	return rc;
}

int render__folded_diff(const struct profile *a, const struct profile *b,
			struct buf *out)
{
	struct flines fl = { 0 };
	struct count_unit ca, cb;
	long n;
	int rc;

	/* Both sides of a diff have one type, so one unit. */
	render__count_unit(a->nvalues ? a : b, &ca);
	render__count_unit(b->nvalues ? b : a, &cb);
	rc = flines_add(&fl, a, 0);
	if (!rc)
		rc = flines_add(&fl, b, 1);
	if (rc)
		goto out;
	n = flines_merge(&fl);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	if (!buf__room(out, flines_bytes(&fl, (size_t)n, 2))) {
		rc = out->err;
		goto out;
	}
	for (long i = 0; i < n; i++) {
		int64_t va = render__count(&ca, fl.v[i].v[0]), vb = render__count(&cb, fl.v[i].v[1]);

		if (!va && !vb)
			continue;
		flines_put(&fl, &fl.v[i], out);
		buf__printf(out, " %" PRId64 " %" PRId64 "\n", va, vb);
	}
	rc = out->err;
out:
	flines_free(&fl);
	return rc;
}

/* One line of a folded text at *at: its stack [*stk, + *slen) and count;
 * *at moves past it. false at the end or for a malformed line (*bad). */
static bool folded_line(const char *t, size_t len, size_t *at, const char **stk, size_t *slen,
			int64_t *count, bool *bad)
{
	const char *s = t + *at, *nl, *sp;
	char *end;

	if (*at >= len)
		return false;
	nl = memchr(s, '\n', len - *at);
	if (!nl)
		goto bad;
	sp = nl;
	while (sp > s && sp[-1] != ' ')
		sp--;
	if (sp <= s + 1 || sp == nl)
		goto bad;
	errno = 0;
	*count = strtoll(sp, &end, 10);
	if (end != nl || errno)
		goto bad;
	*stk = s;
	*slen = (size_t)(sp - 1 - s);
	*at = (size_t)(nl + 1 - t);
	return true;
bad:
	*bad = true;
	return false;
}

/* Byte order of two stacks' text, a prefix first (folded.txt's order). */
static int stack_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

int render__folded_sum(const char *a, size_t alen, const char *b, size_t blen,
		       struct buf *out)
{
	size_t ia = 0, ib = 0, la = 0, lb = 0;
	const char *sa = NULL, *sb = NULL;
	int64_t ca = 0, cb = 0;
	bool bad = false, ha, hb;

	if (!buf__room(out, alen + blen))
		return out->err;
	ha = folded_line(a, alen, &ia, &sa, &la, &ca, &bad);
	hb = folded_line(b, blen, &ib, &sb, &lb, &cb, &bad);
	while ((ha || hb) && !bad) {
		int c = !ha ? 1 : !hb ? -1 : stack_cmp(sa, la, sb, lb);

		int64_t v = c < 0 ? ca : c > 0 ? cb : ca + cb;

		if (v > 0) { /* (as render__folded: a stack that counts 0 is left out) */
			buf__put(out, c <= 0 ? sa : sb, c <= 0 ? la : lb);
			buf__printf(out, " %" PRId64 "\n", v);
		}
		if (c <= 0)
			ha = folded_line(a, alen, &ia, &sa, &la, &ca, &bad);
		if (c >= 0)
			hb = folded_line(b, blen, &ib, &sb, &lb, &cb, &bad);
	}
	return bad ? -EINVAL : out->err;
}
