/*
 * test_scrape: the --scrape pieces that need no network: target specs
 * ([job=NAME@]URL), the cumulative-to-delta rules (baseline, per-stack
 * delta matched by content not ids, restart, never negative, inuse
 * columns zeroed), and the store's merge of snapshot types (heap,
 * goroutine: mean per series, summed over series; also across a closed
 * hour, where cumulative types use the rollup).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "sampler/scrape/scrape.h"
#include "store/profile/pprof.h"
#include "store/db/store.h"
#include "store/profile/profile.h"
#include "tests/test.h"

static void spec_ok(const char *spec, const char *job, const char *inst, const char *base)
{
	struct scrape_target t;
	char err[256] = "";
	int rc = scrape_target__parse(spec, &t, err, sizeof(err));

	CHECK(rc == 0, "parses: %s (%s)", spec, err);
	if (rc)
		return;
	CHECK(!strcmp(t.job, job), "%s: job %s (want %s)", spec, t.job, job);
	CHECK(!strcmp(t.instance, inst), "%s: instance %s (want %s)", spec, t.instance, inst);
	CHECK(!strcmp(t.base, base), "%s: base %s (want %s)", spec, t.base, base);
	scrape_target__fini(&t);
}

static void spec_bad(const char *spec)
{
	struct scrape_target t;
	char err[256] = "";
	int rc = scrape_target__parse(spec, &t, err, sizeof(err));

	CHECK(rc == -EINVAL && err[0] && !t.job && !t.base, "refused: '%s' (%s)", spec, err);
	if (!rc)
		scrape_target__fini(&t);
}

static const char *at[] = { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" };
static const char *au[] = { "count", "bytes", "count", "bytes" };

/* A Go-allocs-like profile; stacks "a;b" root first, values {objs, bytes,
 * inuse objs, inuse bytes}. rev adds the locations in reverse order, so
 * ids differ between two profiles of the same stacks. */
static struct profile *mk(int n, const char *const *stacks, const int64_t (*v)[4], bool rev)
{
	struct profile *p = profile__new();

	profile__set_value_types(p, 4, at, au);
	p->default_sample_type = profile__intern_str(p, "alloc_space");
	for (int k = 0; k < n; k++) {
		int i = rev ? n - 1 - k : k;
		uint64_t locs[8];
		uint32_t nl = 0;
		char buf[64], *save, *tok, *fr[8];
		int nf = 0;

		snprintf(buf, sizeof(buf), "%s", stacks[i]);
		for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
			fr[nf++] = tok;
		for (int f = nf - 1; f >= 0; f--) {
			struct prof_function fn = { .name = profile__intern_str(p, fr[f]) };
			struct prof_line ln = { profile__add_function(p, &fn), 1 };
			struct prof_location L = { 0, 0x1000 + (uint64_t)fr[f][0] * 16, 1, &ln };

			locs[nl++] = profile__add_location(p, &L);
		}
		profile__add_sample(p, locs, nl, NULL, 0, v[i]);
	}
	return p;
}

/* Value vi of the sample whose leaf function is leaf, or -1. */
static int64_t val(const struct profile *p, const char *leaf, int vi)
{
	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_location *l = &p->locations[p->samples[i].locs[0] - 1];

		if (!strcmp(p->strs[p->functions[l->lines[0].function_id - 1].name], leaf))
			return p->samples[i].values[vi];
	}
	return -1;
}

static bool none_negative(const struct profile *p)
{
	for (uint32_t i = 0; i < p->nsamples; i++)
		for (uint32_t j = 0; j < p->nvalues; j++)
			if (p->samples[i].values[j] < 0)
				return false;
	return true;
}

static void test_delta(void)
{
	const char *st[] = { "main;A", "main;B", "main;C" };
	const int64_t v1[][4] = { { 10, 100, 1, 7 }, { 2, 10, 1, 7 } };
	const int64_t v2[][4] = { { 30, 300, 1, 7 }, { 3, 15, 1, 7 }, { 1, 5, 1, 5 } };
	const int64_t v3[][4] = { { 4, 40, 1, 7 }, { 1, 1, 1, 7 } };       /* restarted */
	const int64_t v4[][4] = { { 5, 50, 1, 7 }, { 0, 0, 0, 0 } };        /* B went down */
	struct scrape_delta d = { 0 };
	struct profile *o;
	int64_t s, du;
	int rc;

	rc = scrape_delta__next(&d, mk(2, st, v1, false), 1000, &o, &s, &du);
	CHECK(rc == 0 && !o, "first answer is a baseline only");
	rc = scrape_delta__next(&d, mk(3, st, v2, true), 3000, &o, &s, &du);
	CHECK(rc == 0 && o, "second answer gives a delta");
	if (o) {
		CHECK(val(o, "A", 1) == 200 && val(o, "A", 0) == 20, "A: 200 bytes, 20 objects (got %ld)",
		      (long)val(o, "A", 1));
		CHECK(val(o, "B", 1) == 5, "B: 5 bytes (got %ld)", (long)val(o, "B", 1));
		CHECK(val(o, "C", 1) == 5, "C (new stack): 5 bytes (got %ld)", (long)val(o, "C", 1));
		CHECK(val(o, "A", 3) == 0 && val(o, "C", 2) == 0, "inuse columns are 0 in a delta");
		CHECK(s == 1000 && du == 2000 && o->time_nanos == 1000 && o->duration_nanos == 2000,
		      "delta covers [previous answer, this answer)");
		CHECK(o->default_sample_type && !strcmp(o->strs[o->default_sample_type], "alloc_space"),
		      "default sample type kept");
		profile__free(o);
	}
	rc = scrape_delta__next(&d, mk(2, st, v3, false), 5000, &o, &s, &du);
	CHECK(rc == 0 && o && d.restarts == 1, "totals went down: a restart");
	if (o) {
		CHECK(val(o, "A", 1) == 40 && val(o, "B", 1) == 1 && none_negative(o),
		      "after a restart the answer is stored whole (A %ld, B %ld)", (long)val(o, "A", 1),
		      (long)val(o, "B", 1));
		profile__free(o);
	}
	rc = scrape_delta__next(&d, mk(2, st, v4, false), 7000, &o, &s, &du);
	CHECK(rc == 0 && o && d.restarts == 1, "one stack down, totals up: no restart");
	if (o) {
		CHECK(val(o, "A", 1) == 10 && none_negative(o), "A +10, nothing negative");
		profile__free(o);
	}
	rc = scrape_delta__next(&d, mk(2, st, v4, false), 7000, &o, &s, &du);
	CHECK(rc == 0 && !o, "an answer no newer than the baseline stores nothing");
	{
		struct profile *q = profile__new();
		const char *t1[] = { "contentions" }, *u1[] = { "count" };

		profile__set_value_types(q, 1, t1, u1);
		rc = scrape_delta__next(&d, q, 9000, &o, &s, &du);
		CHECK(rc == -EINVAL && !o, "value types changed: refused, new baseline");
	}
	scrape_delta__fini(&d);
}

static void test_specs(void)
{
	spec_ok("http://127.0.0.1:6060/debug/pprof", "127.0.0.1:6060", "127.0.0.1:6060",
		"http://127.0.0.1:6060/debug/pprof");
	spec_ok("job=api@https://api.example/debug/pprof/", "api", "api.example:443",
		"https://api.example/debug/pprof");
	spec_ok("http://h/debug/pprof", "h:80", "h:80", "http://h/debug/pprof");
	spec_ok("job=x@http://[::1]:6060/debug/pprof", "x", "[::1]:6060", "http://[::1]:6060/debug/pprof");
	spec_bad("job=a@b@http://h:1/"); /* a job name ends at the first @ */
	spec_bad("ftp://h/debug/pprof");
	spec_bad("localhost:6060/debug/pprof");
	spec_bad("job=@http://h/");
	spec_bad("job=api");
	spec_bad("job=a b@http://h/");
	spec_bad("http://");
	spec_bad("http://h/debug/pprof?x=1");
	spec_bad("http://h/debug/pprof#x");
	spec_bad("");
}

/* Snapshot merges: mean per series, summed over series. */
static void test_store_mean(void)
{
	char dir[] = "/tmp/test_scrape.XXXXXX";
	const char *st[] = { "main;X" };
	struct store_opts so = { .max_size = 64 << 20 };
	struct store_sel sel = { 0 };
	struct store *s = NULL;
	struct profile *p, *m;
	/* An hour boundary: 2026-11-23T00:00 */
	const int64_t H0 = 1795392000;
	struct store_label la = { "job", "a" }, lb = { "job", "b" };
	int rc;

	if (!mkdtemp(dir))
		return;
	so.dir = dir;
	CHECK(store__open(&s, &so) == 0, "store for snapshot merges");
	if (!s)
		return;
	for (int i = 0; i < 3; i++) {
		const int64_t v[][4] = { { 1, 100 * (i + 1), 1, 1000 * (i + 1) } };

		p = mk(1, st, v, false);
		store__append(s, "heap", (H0 + 10 * i) * 1000000000LL, 0, p, &la, 1);
		store__append(s, "alloc", (H0 + 10 * i) * 1000000000LL, 10000000000LL, p, &la, 1);
		profile__free(p);
	}
	{
		const int64_t v[][4] = { { 1, 50, 1, 500 } };

		p = mk(1, st, v, false);
		store__append(s, "heap", (H0 + 20) * 1000000000LL, 0, p, &lb, 1);
		/* Closes the hour, so its rollup is built. */
		store__append(s, "heap", (H0 + 3600) * 1000000000LL, 0, p, &lb, 1);
		store__append(s, "alloc", (H0 + 3600) * 1000000000LL, 0, p, &lb, 1);
		profile__free(p);
	}
	sel.type = "heap";
	rc = store__merge(s, &sel, H0, H0 + 60, &m);
	CHECK(rc == 0 && m, "merge heap over a minute");
	if (m) {
		CHECK(val(m, "X", 3) == 2000 + 500, "heap: mean of a (2000) + b (500) = %ld",
		      (long)val(m, "X", 3));
		profile__free(m);
	}
	rc = store__merge(s, &sel, H0, H0 + 3600, &m);
	CHECK(rc == 0 && m && val(m, "X", 3) == 2500, "heap over the closed hour: still a mean (%ld)",
	      m ? (long)val(m, "X", 3) : -1L);
	profile__free(m);
	sel.type = "alloc";
	rc = store__merge(s, &sel, H0, H0 + 3600, &m);
	CHECK(rc == 0 && m && val(m, "X", 1) == 600, "alloc over the hour: a sum (%ld)",
	      m ? (long)val(m, "X", 1) : -1L);
	profile__free(m);
	store__close(s);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			printf("cannot remove %s\n", dir);
	}
}

/* A small gzip answer that inflates past the scraper's bound is refused
 * before the memory is taken. */
static void test_bomb(void)
{
	size_t n = 16 << 20, cap = n / 100 + 4096;
	uint8_t *zeros = calloc(1, n), *gz = malloc(cap);
	z_stream zs = { 0 };
	struct profile *p = NULL;
	char err[256] = "";
	int rc;

	if (!zeros || !gz || deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY))
		return;
	zs.next_in = zeros;
	zs.avail_in = (uInt)n;
	zs.next_out = gz;
	zs.avail_out = (uInt)cap;
	rc = deflate(&zs, Z_FINISH);
	CHECK(rc == Z_STREAM_END, "16 MiB of zeros gzip to %lu bytes", zs.total_out);
	rc = pprof__decode_max(gz, zs.total_out, 1 << 20, &p, err, sizeof(err));
	CHECK(rc == -EINVAL && !p && strstr(err, "exceeds"), "bounded decode refuses it (%s)", err);
	deflateEnd(&zs);
	free(zeros);
	free(gz);
}

int main(void)
{
	test_bomb();
	test_specs();
	test_delta();
	test_store_mean();
	return test_done();
}
