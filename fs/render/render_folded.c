/*
 * render_folded.c - folded stacks (flamegraph.pl's input) and the
 * differential folded format ("stack countA countB").
 *
 * Each sample becomes one line "root;...;leaf"; samples whose lines are
 * equal (they differ only in labels the text does not show, e.g. pid) are
 * summed. Lines are sorted by the stack text in byte order, so the output
 * is deterministic and diff-able.
 */
#include "fs/render/render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"

struct fline {
	size_t off;   /* into the text buffer */
	uint32_t len;
	int64_t v[2]; /* per side */
};

struct flines {
	struct buf text; /* stack texts, back to back, no separators */
	struct fline *v;
	size_t n, cap;
};

/* qsort_r, not qsort with a global: renders run on many FUSE threads. */
static int fline_cmp(const void *a, const void *b, void *ctx)
{
	const struct fline *x = a, *y = b;
	const char *sort_base = ctx;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(sort_base + x->off, sort_base + y->off, n);

	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	/* Equal texts: keep the order stable-ish for determinism. */
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Appends every sample of p with a non-zero count (render__count_unit's
 * value, undivided: lines are summed first, then divided) to fl, counted
 * on side `side`. */
static int flines_add(struct flines *fl, const struct profile *p, int side)
{
	struct frametab ft;
	struct count_unit cu;
	uint32_t *ids = NULL, cap = 0;
	uint32_t vi;
	int rc;

	render__count_unit(p, &cu);
	vi = cu.vi;
	rc = frametab__build(&ft, p);
	if (rc)
		goto out;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		int64_t v = p->nvalues ? s->values[vi] : 0;
		size_t start = fl->text.len;
		int n;

		if (!v)
			continue;
		n = frametab__stack(&ft, p, s, true, &ids, &cap);
		if (n < 0) {
			rc = n;
			goto out;
		}
		for (int k = 0; k < n; k++) {
			if (k)
				buf__put(&fl->text, ";", 1);
			buf__puts(&fl->text, frametab__name(&ft, ids[k]));
		}
		if (fl->text.err) {
			rc = fl->text.err;
			goto out;
		}
		if (fl->n == fl->cap) {
			size_t nc = fl->cap ? fl->cap * 2 : 1024;
			struct fline *nv = realloc(fl->v, nc * sizeof(*nv));

			if (!nv) {
				rc = -ENOMEM;
				goto out;
			}
			fl->v = nv;
			fl->cap = nc;
		}
		fl->v[fl->n] = (struct fline){ .off = start, .len = (uint32_t)(fl->text.len - start) };
		fl->v[fl->n].v[side] = v;
		fl->n++;
	}
	rc = 0;
out:
	free(ids);
	frametab__free(&ft);
	return rc;
}

/* Sorts and sums equal stacks in place; returns the new count. */
static size_t flines_merge(struct flines *fl)
{
	size_t w = 0;

	if (!fl->n)
		return 0;
	qsort_r(fl->v, fl->n, sizeof(*fl->v), fline_cmp, fl->text.data);
	for (size_t r = 1; r < fl->n; r++) {
		struct fline *a = &fl->v[w], *b = &fl->v[r];

		if (a->len == b->len && !memcmp(fl->text.data + a->off, fl->text.data + b->off, a->len)) {
			a->v[0] += b->v[0];
			a->v[1] += b->v[1];
		} else {
			fl->v[++w] = *b;
		}
	}
	return w + 1;
}

static void flines_free(struct flines *fl)
{
	buf__free(&fl->text);
	free(fl->v);
}

int render__folded(const struct profile *p, struct buf *out)
{
	struct flines fl = { 0 };
	struct count_unit cu;
	size_t n;
	int rc;

	render__count_unit(p, &cu);
	rc = flines_add(&fl, p, 0);
	if (rc)
		goto out;
	n = flines_merge(&fl);
	for (size_t i = 0; i < n; i++) {
		int64_t v = render__count(&cu, fl.v[i].v[0]);

		if (v <= 0)
			continue;
		buf__put(out, fl.text.data + fl.v[i].off, fl.v[i].len);
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
	size_t n;
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
	for (size_t i = 0; i < n; i++) {
		int64_t va = render__count(&ca, fl.v[i].v[0]), vb = render__count(&cb, fl.v[i].v[1]);

		if (!va && !vb)
			continue;
		buf__put(out, fl.text.data + fl.v[i].off, fl.v[i].len);
		buf__printf(out, " %" PRId64 " %" PRId64 "\n", va, vb);
	}
	rc = out->err;
out:
	flines_free(&fl);
	return rc;
}
