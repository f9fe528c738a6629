/*
 * render_top.c - top.txt: what `go tool pprof -top` prints for the same
 * profile.pb (SPEC §2 Files), header lines included, so the two can be
 * compared line for line.
 *
 * pprof's rules, followed here (from its report and graph packages):
 * - nodes are functions (granularity "functions"): a line's function name,
 *   "[objfile]" for a frame with no name, "<unknown>" with no mapping;
 *   kernel frames carry no "_[k]" here, pprof does not know that mark;
 * - cum counts a sample once per node, flat goes to the leaf frame;
 * - nodes whose |cum| is below 0.5% of the flat total are dropped and the
 *   graph rebuilt without them (a sample whose leaf was dropped then adds
 *   no flat to anyone), reported as "Dropped N nodes (cum <= X)";
 * - rows sorted by |flat| descending, then name, then |cum|;
 * - values scaled to one unit chosen from the smallest node and the total
 *   (1.23s, 450ms, 12.50MB; counts stay bare numbers), "%.2f" with ".00"
 *   trimmed; percentages "%5.2f%%" from 1%, "%5.2g%%" below, "  100%";
 * - the total is the sum of |value| over samples, the base side's only in
 *   a diff (samples labelled pprof::base=true);
 * - "(inline)" after a function reached only through inlined calls.
 * Time is printed in UTC (pprof prints local time; run it with TZ=UTC).
 */
#include "fs/render/render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render_int.h"
#include "store/util/demangle.h"
#include "store/util/hmap.h"

#define NODE_FRACTION 0.005

struct tnode {
	int64_t flat, cum;
	bool kept;          /* survives the node fraction cut */
	bool in_inline, in_call; /* kinds of incoming edges */
	uint32_t seen;      /* last sample (index + 1) that counted cum */
};

struct top {
	const struct profile *p;
	uint32_t vi;
	struct frametab names; /* used only as an interner */
	uint32_t *loc_off, *loc_frames; /* per location: name ids, innermost first */
	struct tnode *n;
	struct hmap edges; /* (parent + 1) << 32 | child -> flags */
};

static inline int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static uint32_t node_name(struct top *t, const struct prof_location *l, const struct prof_line *ln)
{
	const struct profile *p = t->p;
	const char *name = NULL;
	char buf[512];
	int n;

	if (ln && ln->function_id && ln->function_id <= p->nfunctions) {
		const struct prof_function *f = &p->functions[ln->function_id - 1];

		name = p->strs[f->name];
		/* pprof demangles a name equal to its system name (an imported
		 * C++ profile) to its short form; ours are stored demangled. */
		if (!strcmp(name, p->strs[f->system_name]) && (n = (int)demangle__name(name, false, buf, sizeof(buf))))
			return frametab__intern(&t->names, buf, (size_t)n);
	}
	if (name && *name)
		return frametab__intern(&t->names, name, strlen(name));
	if (l->mapping_id && l->mapping_id <= p->nmappings) {
		const char *file = p->strs[p->mappings[l->mapping_id - 1].file];

		if (*file) {
			n = snprintf(buf, sizeof(buf), "[%s]", base_name(file));
			return frametab__intern(&t->names, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		}
	}
	return frametab__intern(&t->names, "<unknown>", 9);
}

static int build_names(struct top *t)
{
	const struct profile *p = t->p;
	uint32_t total = 0, k = 0;

	for (uint32_t i = 0; i < p->nlocations; i++)
		total += p->locations[i].nlines ? p->locations[i].nlines : 1;
	t->loc_off = calloc((size_t)p->nlocations + 1, sizeof(*t->loc_off));
	t->loc_frames = calloc(total ? total : 1, sizeof(*t->loc_frames));
	if (!t->loc_off || !t->loc_frames)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const struct prof_location *l = &p->locations[i];

		t->loc_off[i] = k;
		for (uint32_t j = 0; j < (l->nlines ? l->nlines : 1); j++) {
			uint32_t id = node_name(t, l, l->nlines ? &l->lines[j] : NULL);

			if (id == UINT32_MAX)
				return -ENOMEM;
			t->loc_frames[k++] = id;
		}
	}
	t->loc_off[p->nlocations] = k;
	return 0;
}

/* One pass of pprof's graph building over every sample: with `trim`,
 * dropped nodes are skipped (and cost their samples' flat when a leaf). */
static int walk(struct top *t, bool trim)
{
	const struct profile *p = t->p;

	for (uint32_t i = 0; i < t->names.nnames; i++) {
		t->n[i].flat = t->n[i].cum = 0;
		t->n[i].seen = 0;
		t->n[i].in_inline = t->n[i].in_call = false;
	}
	hmap__fini(&t->edges);
	for (uint32_t si = 0; si < p->nsamples; si++) {
		const struct prof_sample *s = &p->samples[si];
		int64_t w = s->values[t->vi];
		uint32_t parent = UINT32_MAX;
		bool residual = false;

		if (!w)
			continue;
		/* Root first: the last location, its outermost line first. */
		for (uint32_t li = s->nlocs; li-- > 0;) {
			uint64_t loc = s->locs[li];
			uint32_t lo, hi;

			if (!loc || loc > p->nlocations)
				continue;
			lo = t->loc_off[loc - 1];
			hi = t->loc_off[loc];
			for (uint32_t k = hi; k-- > lo;) {
				uint32_t id = t->loc_frames[k];
				bool inl = k != hi - 1;

				if (trim && !t->n[id].kept) {
					residual = true;
					continue;
				}
				if (t->n[id].seen != si + 1) {
					t->n[id].seen = si + 1;
					t->n[id].cum += w;
				}
				if (parent != UINT32_MAX && parent != id) {
					uint64_t key = ((uint64_t)parent + 1) << 32 | id;
					uintptr_t f = (uintptr_t)hmap__get(&t->edges, key);

					/* bit 0: exists; bit 1: some call not inlined */
					f |= 1 | (inl ? 0 : 2);
					if (hmap__put(&t->edges, key, (void *)f))
						return -ENOMEM;
				}
				parent = id;
				residual = false;
			}
		}
		if (parent != UINT32_MAX && !residual)
			t->n[parent].flat += w;
	}
	for (size_t i = 0; i < t->edges.cap; i++) {
		uint64_t key = t->edges.keys[i];
		uintptr_t f;

		if (!key)
			continue;
		f = (uintptr_t)t->edges.vals[i];
		if (f & 2)
			t->n[(uint32_t)key].in_call = true;
		else
			t->n[(uint32_t)key].in_inline = true;
	}
	return 0;
}

/* ---- pprof's measurement package: units and labels ---- */

struct unit {
	const char *name;
	const char *aliases[4];
	double factor;
};

static const struct unit mem_units[] = {
	{ "B", { "b", "byte" }, 1 },
	{ "kB", { "kb", "kbyte", "kilobyte" }, 1024.0 },
	{ "MB", { "mb", "mbyte", "megabyte" }, 1048576.0 },
	{ "GB", { "gb", "gbyte", "gigabyte" }, 1073741824.0 },
	{ "TB", { "tb", "tbyte", "terabyte" }, 1099511627776.0 },
	{ "PB", { "pb", "pbyte", "petabyte" }, 1125899906842624.0 },
	{ NULL, { NULL }, 0 },
};
static const struct unit time_units[] = {
	{ "ns", { "ns", "nanosecond" }, 1 },
	{ "us", { "\xce\xbcs", "us", "microsecond" }, 1e3 },
	{ "ms", { "ms", "millisecond" }, 1e6 },
	{ "s", { "s", "sec", "second" }, 1e9 },
	{ "hrs", { "hour", "hr" }, 3600e9 },
	{ NULL, { NULL }, 0 },
};
static const struct unit gcu_units[] = {
	{ "n*GCU", { "nanogcu" }, 1e-9 },
	{ "u*GCU", { "microgcu" }, 1e-6 },
	{ "m*GCU", { "milligcu" }, 1e-3 },
	{ "GCU", { "gcu" }, 1 },
	{ "k*GCU", { "kilogcu" }, 1e3 },
	{ "M*GCU", { "megagcu" }, 1e6 },
	{ "G*GCU", { "gigagcu" }, 1e9 },
	{ "T*GCU", { "teragcu" }, 1e12 },
	{ "P*GCU", { "petagcu" }, 1e15 },
	{ NULL, { NULL }, 0 },
};
static const struct {
	const struct unit *units;
	int def; /* index of the default unit */
} unit_types[] = { { mem_units, 0 }, { time_units, 3 }, { gcu_units, 3 } };

static const struct unit *sniff(const struct unit *us, const char *name)
{
	char low[64];
	size_t n = strlen(name);

	if (n >= sizeof(low))
		return NULL;
	for (size_t i = 0; i <= n; i++)
		low[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] + 32) : name[i];
	if (n > 2 && low[n - 1] == 's')
		low[n - 1] = 0;
	for (const struct unit *u = us; u->name; u++)
		for (int a = 0; a < 4 && u->aliases[a]; a++)
			if (!strcmp(low, u->aliases[a]))
				return u;
	return NULL;
}

/* measurement.Scale: value in fromUnit to toUnit ("minimum"/"auto" pick
 * the largest unit the value reaches). *unit is "" for plain counts. */
static double scale(int64_t value, const char *from, const char *to, const char **unit)
{
	if (value < 0 && -value > 0) {
		double v = scale(-value, from, to, unit);

		return -v;
	}
	for (size_t t = 0; t < sizeof(unit_types) / sizeof(unit_types[0]); t++) {
		const struct unit *us = unit_types[t].units, *fu = sniff(us, from), *tu;
		double v;

		if (!fu)
			continue;
		v = (double)value * fu->factor;
		if (!strcmp(to, "minimum") || !strcmp(to, "auto")) {
			const struct unit *best = NULL;

			for (const struct unit *u = us; u->name; u++)
				if ((!best || u->factor >= best->factor) && v / u->factor >= 1.0)
					best = u;
			if (!best)
				best = &us[unit_types[t].def];
			*unit = best->name;
			return v / best->factor;
		}
		tu = sniff(us, to);
		if (!tu)
			tu = &us[unit_types[t].def];
		*unit = tu->name;
		return v / tu->factor;
	}
	if (!strcmp(to, "count") || !strcmp(to, "sample") || !strcmp(to, "unit") ||
	    !strcmp(to, "minimum") || !strcmp(to, "auto"))
		*unit = "";
	else
		*unit = to;
	return (double)value;
}

/* measurement.ScaledLabel. */
static void scaled_label(char *out, size_t size, int64_t value, const char *from, const char *to)
{
	const char *u;
	double v = scale(value, from, to, &u);
	size_t n;

	snprintf(out, size, "%.2f", v);
	n = strlen(out);
	if (n > 3 && !strcmp(out + n - 3, ".00"))
		out[n - 3] = 0;
	if (!strcmp(out, "0") || !strcmp(out, "-0")) {
		snprintf(out, size, "0");
		return;
	}
	n = strlen(out);
	snprintf(out + n, size - n, "%s", u);
}

/* measurement.Percentage. */
static void percentage(char *out, size_t size, int64_t value, int64_t total)
{
	double r = total ? fabs((double)value / (double)total) * 100 : 0;

	if (r >= 99.95 && r <= 100.05)
		snprintf(out, size, "  100%%");
	else if (r >= 1.0)
		snprintf(out, size, "%5.2f%%", r);
	else
		snprintf(out, size, "%5.2g%%", r);
}

static int trow_cmp(const void *a, const void *b, void *ctx)
{
	const struct top *t = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c;

	if (abs64(t->n[x].flat) != abs64(t->n[y].flat))
		return abs64(t->n[x].flat) > abs64(t->n[y].flat) ? -1 : 1;
	c = strcmp(frametab__name(&t->names, x), frametab__name(&t->names, y));
	if (c)
		return c;
	if (abs64(t->n[x].cum) != abs64(t->n[y].cum))
		return abs64(t->n[x].cum) > abs64(t->n[y].cum) ? -1 : 1;
	return 0;
}

int render__top(const struct profile *p, struct buf *out)
{
	struct top t = { .p = p, .vi = profile__display_value(p) };
	uint32_t *rows = NULL, nrows = 0, dropped = 0;
	const char *sunit = p->nvalues ? p->strs[p->sample_types[t.vi].unit] : "count";
	const char *stype = p->nvalues ? p->strs[p->sample_types[t.vi].type] : "";
	const char *ounit;
	int64_t total = 0, base_total = 0, flat_total = 0, cutoff, flat_sum = 0, minv = 0;
	bool has_base = false;
	char a[64], b[64], c[64], d[16], e[16], f[16];
	int rc;

	rc = build_names(&t);
	if (rc)
		goto out;
	t.n = calloc(t.names.nnames ? t.names.nnames : 1, sizeof(*t.n));
	rows = calloc(t.names.nnames ? t.names.nnames : 1, sizeof(*rows));
	if (!t.n || !rows) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < p->nsamples && p->nvalues; i++) {
		int64_t v = abs64(p->samples[i].values[t.vi]);

		total += v;
		if (render__is_base(p, &p->samples[i])) {
			has_base = true;
			base_total += v;
		}
	}
	if (has_base && base_total > 0)
		total = base_total;
	if (p->nvalues) {
		rc = walk(&t, false);
		if (rc)
			goto out;
	}
	for (uint32_t i = 0; i < t.names.nnames; i++)
		flat_total += t.n[i].flat;
	cutoff = abs64((int64_t)((double)flat_total * NODE_FRACTION));
	for (uint32_t i = 0; i < t.names.nnames; i++) {
		bool present = t.n[i].flat || t.n[i].cum;

		t.n[i].kept = abs64(t.n[i].cum) >= cutoff;
		if (present && !t.n[i].kept)
			dropped++;
	}
	if (dropped) {
		rc = walk(&t, true);
		if (rc)
			goto out;
	}
	for (uint32_t i = 0; i < t.names.nnames; i++)
		if (t.n[i].flat || t.n[i].cum)
			rows[nrows++] = i;
	qsort_r(rows, nrows, sizeof(*rows), trow_cmp, &t);

	/* report.selectOutputUnit ("minimum"). */
	for (uint32_t i = 0; i < nrows; i++) {
		int64_t m = abs64(t.n[rows[i]].flat);

		if (!m)
			m = abs64(t.n[rows[i]].cum);
		if (m > 0 && (!minv || m < minv))
			minv = m;
		flat_sum += t.n[rows[i]].flat;
	}
	ounit = sunit;
	if (nrows) {
		const char *umin, *umax, *u;
		int64_t maxv = total;

		if (!minv)
			minv = maxv;
		scale(minv, sunit, "minimum", &umin);
		scale(maxv, sunit, "minimum", &umax);
		u = umin;
		if (strcmp(umin, umax) && minv * 100 < maxv)
			scale(100 * minv, sunit, "minimum", &u);
		ounit = *u ? u : sunit;
	}

	/* report.ProfileLabels */
	if (p->nmappings) {
		const struct prof_mapping *m = &p->mappings[0];

		if (*p->strs[m->file])
			buf__printf(out, "File: %s\n", base_name(p->strs[m->file]));
		if (m->build_id && *p->strs[m->build_id])
			buf__printf(out, "Build ID: %s\n", p->strs[m->build_id]);
	}
	if (*stype)
		buf__printf(out, "Type: %s\n", stype);
	if (p->time_nanos) {
		static const char *const mon[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
						   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
		time_t s = (time_t)(p->time_nanos / 1000000000LL);
		struct tm tm;

		if (p->time_nanos < 0 && p->time_nanos % 1000000000LL)
			s--;
		gmtime_r(&s, &tm);
		buf__printf(out, "Time: %s %d, %d at %d:%02d%s (UTC)\n", mon[tm.tm_mon], tm.tm_mday,
			    tm.tm_year + 1900, tm.tm_hour % 12 ? tm.tm_hour % 12 : 12, tm.tm_min,
			    tm.tm_hour < 12 ? "am" : "pm");
	}
	if (p->duration_nanos) {
		const char *tu;
		double tn = scale(total, sunit, "nanoseconds", &tu);

		scaled_label(a, sizeof(a), p->duration_nanos, "nanoseconds", "auto");
		scaled_label(b, sizeof(b), total, sunit, ounit);
		if (!strcmp(tu, "ns") && tn != 0) {
			percentage(d, sizeof(d), (int64_t)tn, p->duration_nanos);
			buf__printf(out, "Duration: %s, Total samples = %s (%s)\n", a, b, d);
		} else {
			buf__printf(out, "Duration: %s, Total samples = %s \n", a, b);
		}
	}
	/* report.reportLabels */
	scaled_label(a, sizeof(a), flat_sum, sunit, ounit);
	percentage(d, sizeof(d), flat_sum, total);
	scaled_label(b, sizeof(b), total, sunit, ounit);
	{
		const char *pd = d;

		while (*pd == ' ')
			pd++;
		buf__printf(out, "Showing nodes accounting for %s, %s of %s total\n", a, pd, b);
	}
	if (total && dropped) {
		scaled_label(c, sizeof(c), abs64((int64_t)((double)total * NODE_FRACTION)), sunit, ounit);
		buf__printf(out, "Dropped %u node%s (cum <= %s)\n", dropped, dropped > 1 ? "s" : "", c);
	}
	buf__printf(out, "%10s %5s%% %5s%% %10s %5s%%\n", "flat", "flat", "sum", "cum", "cum");
	flat_sum = 0;
	for (uint32_t i = 0; i < nrows; i++) {
		const struct tnode *n = &t.n[rows[i]];

		flat_sum += n->flat;
		scaled_label(a, sizeof(a), n->flat, sunit, ounit);
		scaled_label(b, sizeof(b), n->cum, sunit, ounit);
		percentage(d, sizeof(d), n->flat, total);
		percentage(e, sizeof(e), flat_sum, total);
		percentage(f, sizeof(f), n->cum, total);
		buf__printf(out, "%10s %s %s %10s %s  %s%s\n", a, d, e, b, f,
			    frametab__name(&t.names, rows[i]),
			    n->in_inline ? (n->in_call ? " (partial-inline)" : " (inline)") : "");
	}
	rc = out->err;
out:
	hmap__fini(&t.edges);
	free(t.loc_off);
	free(t.loc_frames);
	free(t.n);
	free(rows);
	frametab__free(&t.names);
	return rc;
}
