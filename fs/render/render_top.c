/*
 * render_top.c - top.txt, the flat/cumulative table of `go tool pprof -top`.
 *
 * Per function name (as every renderer names frames): flat = value of the
 * samples whose leaf frame it is, cum = value of the samples it appears in
 * at all, counted once per sample even when it recurses. Values are exact
 * integers in the display sample type's unit so the table can be checked
 * against pprof's own figures. For a pprof diff (samples labelled
 * pprof::base=true) percentages are of the base total, as pprof does.
 */
#include "fs/render/render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"

struct trow {
	uint32_t name;
	int64_t flat, cum;
};

static inline int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

/* Flat (by magnitude, for diffs) descending, then name: pprof's order. */
static int trow_cmp(const void *a, const void *b, void *ctx)
{
	const struct trow *x = a, *y = b;
	const struct frametab *ft = ctx;

	if (abs64(x->flat) != abs64(y->flat))
		return abs64(x->flat) > abs64(y->flat) ? -1 : 1;
	return strcmp(frametab__name(ft, x->name), frametab__name(ft, y->name));
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

int render__top(const struct profile *p, struct buf *out)
{
	struct frametab ft;
	struct trow *rows = NULL;
	uint32_t *ids = NULL, cap = 0, *seen = NULL, nrows = 0;
	uint32_t vi = profile__display_value(p);
	int64_t total = 0, base_total = 0, sum = 0;
	bool has_base = false;
	int rc;

	rc = frametab__build(&ft, p);
	if (rc)
		goto out;
	/* Interned now so the name count cannot change below. */
	if (frametab__intern(&ft, "(no stack)", 10) == UINT32_MAX) {
		rc = -ENOMEM;
		goto out;
	}
	rows = calloc(ft.nnames ? ft.nnames : 1, sizeof(*rows));
	seen = calloc(ft.nnames ? ft.nnames : 1, sizeof(*seen));
	if (!rows || !seen) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < ft.nnames; i++)
		rows[i].name = i;

	for (uint32_t i = 0; i < p->nsamples && p->nvalues; i++) {
		const struct prof_sample *s = &p->samples[i];
		int64_t v = s->values[vi];
		int n;

		if (render__is_base(p, s)) {
			has_base = true;
			base_total += v;
		} else {
			total += v;
		}
		if (!v)
			continue;
		n = frametab__stack(&ft, p, s, false, &ids, &cap);
		if (n < 0) {
			rc = n;
			goto out;
		}
		rows[ids[n - 1]].flat += v;
		for (int k = 0; k < n; k++) {
			if (seen[ids[k]] == i + 1)
				continue;
			seen[ids[k]] = i + 1;
			rows[ids[k]].cum += v;
		}
	}
	if (has_base)
		total = abs64(base_total);
	else
		total = abs64(total);

	for (uint32_t i = 0; i < ft.nnames; i++)
		if (rows[i].flat || rows[i].cum)
			rows[nrows++] = rows[i];
	qsort_r(rows, nrows, sizeof(*rows), trow_cmp, &ft);

	if (p->nvalues)
		buf__printf(out, "Type: %s  Unit: %s  Total: %" PRId64 "%s  Functions: %u\n",
			    p->strs[p->sample_types[vi].type],
			    p->strs[p->sample_types[vi].unit], total,
			    has_base ? " (base)" : "", nrows);
	else
		buf__printf(out, "Type: none  Unit: none  Total: 0  Functions: 0\n");
	buf__printf(out, "%10s %6s %7s %10s %6s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "name");
	for (uint32_t i = 0; i < nrows; i++) {
		sum += rows[i].flat;
		buf__printf(out, "%10" PRId64 " %5.2f%% %6.2f%% %10" PRId64 " %5.2f%%  %s\n",
			    rows[i].flat, pct(rows[i].flat, total), pct(sum, total),
			    rows[i].cum, pct(rows[i].cum, total),
			    frametab__name(&ft, rows[i].name));
	}
	rc = out->err;
out:
	free(rows);
	free(seen);
	free(ids);
	frametab__free(&ft);
	return rc;
}
