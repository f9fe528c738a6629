/*
 * bench_render.c - in-process render timings for `make bench`: what
 * `proffs cat` costs without process start-up, and where the time goes.
 *
 *   bench_render --store DIR [--repeat N] [--from T --to T] PATH...
 *
 * For each PATH (a tree path, e.g. /merged/cpu/2026-11-22T10/profile.pb):
 * tree__resolve + tree__render timed on a freshly opened store (the first
 * PATH's first run is the process's first render: no in-process cache is
 * warm) and then N more times (median). With --from/--to, afterwards, the
 * parts on their own: store__merge of all cpu series over [from, to),
 * pprof__encode of the result and render__folded of it. Results are
 * key=value lines.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/profile/pprof.h"
#include "fs/render/render.h"
#include "store/db/store.h"
#include "fs/tree/tree.h"
#include "tests/tools/bench.h"

/* Prints key_first_ms and key_median_ms from t[0..n) (t[0] = first). */
static void report(const char *key, double *t, int n)
{
	printf("%s_first_ms=%.2f\n", key, t[0] * 1e3);
	if (n > 1) {
		qsort(t + 1, n - 1, sizeof(double), cmp_d);
		printf("%s_median_ms=%.2f\n", key, t[1 + (n - 1) / 2] * 1e3);
	}
}

static void keyof(const char *path, char *key, size_t size)
{
	size_t i;

	snprintf(key, size, "%s", path);
	for (i = 0; key[i]; i++)
		if (!((key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9')))
			key[i] = '_';
}

/* The parts on their own over [from, to), each timed repeat + 1 times in
 * t: store__merge of all cpu series, pprof__encode of the result and
 * render__folded of it. The exit status: 0, or 1 when one fails. */
static int parts(struct store *s, int64_t from, int64_t to, double *t, int repeat)
{
	struct store_sel sel = { .type = "cpu" };
	struct profile *p = NULL;

	for (int i = 0; i <= repeat; i++) {
		double t0 = now();

		profile__free(p);
		p = NULL;
		if (store__merge(s, &sel, from, to, &p)) {
			fprintf(stderr, "bench_render: store__merge failed\n");
			return 1;
		}
		t[i] = now() - t0;
	}
	report("merge", t, repeat + 1);
	printf("merge_samples=%u\nmerge_locations=%u\nmerge_total=%lld\n",
	       p->nsamples, p->nlocations, (long long)profile__total(p, 0));
	for (int i = 0; i <= repeat; i++) {
		double t0 = now();
		uint8_t *enc;
		size_t n;

		if (pprof__encode(p, &enc, &n))
			return 1;
		t[i] = now() - t0;
		free(enc);
		if (!i)
			printf("encode_bytes=%zu\n", n);
	}
	report("encode", t, repeat + 1);
	for (int i = 0; i <= repeat; i++) {
		double t0 = now();
		struct buf b = { 0 };

		if (render__folded(p, &b))
			return 1;
		t[i] = now() - t0;
		if (!i)
			printf("folded_bytes=%zu\n", b.len);
		buf__free(&b);
	}
	report("folded", t, repeat + 1);
	profile__free(p);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "store", 1, 0, 's' }, { "repeat", 1, 0, 'n' },
		{ "from", 1, 0, 'f' }, { "to", 1, 0, 't' }, { 0 },
	};
	const char *dir = NULL;
	int64_t from = -1, to = -1;
	int repeat = 5, c, rc = 1;
	struct store *s = NULL;
	struct tree *tr = NULL;
	double *t;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': dir = optarg; break;
		case 'n': repeat = atoi(optarg); break;
		case 'f': from = strtoll(optarg, NULL, 10); break;
		case 't': to = strtoll(optarg, NULL, 10); break;
		default: return 2;
		}
	}
	if (!dir || repeat < 0) {
		fprintf(stderr, "usage: bench_render --store DIR [--repeat N] [--from T --to T] PATH...\n");
		return 2;
	}
	t = calloc(repeat + 1, sizeof(double));
	if (!t)
		return 1;
	{
		struct store_opts o = { .dir = dir, .readonly = true };
		double t0 = now();

		if (store__open(&s, &o))
			goto out;
		printf("store_open_ms=%.2f\n", (now() - t0) * 1e3);
	}
	tr = tree__new(s, &(struct tree_opts){ 0 });
	if (!tr)
		goto out;
	for (int a = optind; a < argc; a++) {
		char key[256];
		size_t len = 0;

		keyof(argv[a], key, sizeof(key));
		for (int i = 0; i <= repeat; i++) {
			double t0 = now();
			struct node n = { 0 };
			struct buf b = { 0 };
			int err = tree__resolve(tr, argv[a], &n);

			if (!err)
				err = tree__render(tr, &n, &b);
			t[i] = now() - t0;
			len = b.len;
			buf__free(&b);
			node__fini(&n);
			if (err) {
				fprintf(stderr, "bench_render: %s: %s\n", argv[a], strerror(-err));
				goto out;
			}
		}
		printf("%s_bytes=%zu\n", key, len);
		report(key, t, repeat + 1);
	}
	rc = from >= 0 && to > from ? parts(s, from, to, t, repeat) : 0;
out:
	tree__free(tr);
	store__close(s);
	free(t);
	return rc;
}
