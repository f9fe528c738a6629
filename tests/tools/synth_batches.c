/*
 * synth_batches - appends synthetic CPU batches to a store (tests and
 * benchmarks of the store).
 *
 *   synth_batches --store DIR [--batches N (0 = forever)] [--interval S]
 *       [--procs N] [--stacks N] [--depth MIN-MAX] [--zipf S] [--samples N]
 *       [--start UNIX_S] [--max-size SIZE] [--retention DUR] [--seed N]
 *       [--type T] [--log FILE] [--random-values]
 *   synth_batches --store DIR --verify LOG    every logged batch is there
 *   synth_batches --store DIR --stat          key=value figures of the store
 *
 * Stacks are a fixed, seeded set whose members fork off earlier ones (shared
 * prefixes like real call trees); processes and stacks are drawn Zipf. With
 * --log, a line "committed START TOTAL" is written (unbuffered) after each
 * append returned 0, so a test that kill -9s this program knows what must
 * have survived. START is the batch start (Unix s), TOTAL the sum of its
 * first values (the sample count, unless --random-values makes the values
 * random, incompressible numbers so that a store fills fast).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/profile/profile.h"
#include "store/db/store.h"
#include "store/util/util.h"
#include "tests/xorshift.h"

static uint64_t rs = 0x9E3779B97F4A7C15ULL;

static uint64_t rnd(void)
{
	return xorshift64(&rs);
}

static double *zipf_cdf(size_t n, double s)
{
	double *c = malloc(n * sizeof(*c)), sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += 1.0 / pow((double)(i + 1), s);
	for (size_t i = 0, acc = 0; i < n; i++) {
		double v = 1.0 / pow((double)(i + 1), s) / sum;

		c[i] = (i ? c[i - 1] : 0) + v;
		(void)acc;
	}
	c[n - 1] = 1.0;
	return c;
}

static size_t zipf_draw(const double *c, size_t n)
{
	double u = (double)(rnd() >> 11) / (double)(1ULL << 53);
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct synth {
	size_t nprocs, nstacks, dmin, dmax, nfuncs;
	uint32_t **stk; /* function indexes, root first */
	uint32_t *depth;
	double *pc, *sc;
};

static void synth_init(struct synth *sy, double zs)
{
	sy->nfuncs = sy->nstacks * 2 + 100;
	sy->stk = calloc(sy->nstacks, sizeof(*sy->stk));
	sy->depth = calloc(sy->nstacks, sizeof(*sy->depth));
	for (size_t i = 0; i < sy->nstacks; i++) {
		uint32_t d = sy->dmin + (sy->dmax > sy->dmin ? rnd() % (sy->dmax - sy->dmin + 1) : 0);
		uint32_t shared = 0;

		sy->stk[i] = malloc(d * sizeof(uint32_t));
		sy->depth[i] = d;
		if (i) {
			size_t par = rnd() % i;

			shared = rnd() % (sy->depth[par] < d ? sy->depth[par] : d);
			memcpy(sy->stk[i], sy->stk[par], shared * sizeof(uint32_t));
		}
		for (uint32_t j = shared; j < d; j++)
			sy->stk[i][j] = j == 0 ? 0 : rnd() % sy->nfuncs;
	}
	sy->pc = zipf_cdf(sy->nprocs, 1.0);
	sy->sc = zipf_cdf(sy->nstacks, zs);
}

static bool random_values; /* incompressible values: fills a store fast */

static struct profile *synth_batch(struct synth *sy, size_t nsamples, int64_t *total)
{
	static const char *t[] = { "samples", "cpu" }, *u[] = { "count", "nanoseconds" };
	struct profile *p = profile__new();
	uint64_t *floc = calloc(sy->nfuncs, sizeof(uint64_t)), locs[512];
	struct prof_mapping m = { .start = 0x400000, .limit = 0x400000 + 16 * sy->nfuncs + 4096 };
	uint64_t mid;
	char buf[64];

	profile__set_value_types(p, 2, t, u);
	p->period_type.type = profile__intern_str(p, "cpu");
	p->period_type.unit = profile__intern_str(p, "nanoseconds");
	p->period = 1000000000 / 99;
	m.file = profile__intern_str(p, "/usr/bin/synth");
	m.build_id = profile__intern_str(p, "5e1f00d5");
	m.has_functions = true;
	mid = profile__add_mapping(p, &m);
	*total = 0;
	for (size_t k = 0; k < nsamples; k++) {
		size_t pi = zipf_draw(sy->pc, sy->nprocs), si = zipf_draw(sy->sc, sy->nstacks);
		uint32_t d = sy->depth[si] < 512 ? sy->depth[si] : 512;
		struct prof_label l[2];
		int64_t v[2] = { 1, p->period };

		if (random_values) {
			v[0] = 1 + (int64_t)(rnd() >> 24);
			v[1] = (int64_t)(rnd() >> 2);
		}

		for (uint32_t j = 0; j < d; j++) {
			uint32_t f = sy->stk[si][j];

			if (!floc[f]) {
				struct prof_function fn;
				struct prof_line ln;
				struct prof_location L = { mid, 0x400000 + 16 * (uint64_t)f, 1, &ln };

				snprintf(buf, sizeof(buf), f ? "fn_%u" : "main", f);
				fn = (struct prof_function){ .name = profile__intern_str(p, buf),
							     .system_name = profile__intern_str(p, buf),
							     .filename = profile__intern_str(p, "synth.c") };
				ln = (struct prof_line){ profile__add_function(p, &fn), f };
				floc[f] = profile__add_location(p, &L);
			}
			locs[d - 1 - j] = floc[f]; /* leaf first */
		}
		snprintf(buf, sizeof(buf), "proc-%zu", pi % 40);
		l[0] = (struct prof_label){ .key = profile__intern_str(p, "comm"),
					    .str = profile__intern_str(p, buf) };
		snprintf(buf, sizeof(buf), "%zu", 1000 + pi);
		l[1] = (struct prof_label){ .key = profile__intern_str(p, "pid"),
					    .str = profile__intern_str(p, buf) };
		profile__add_sample(p, locs, d, l, 2, v);
		*total += v[0];
	}
	free(floc);
	return p;
}

static int verify(struct store *s, const char *type, const char *log)
{
	FILE *f = fopen(log, "r");
	long long start, total;
	int bad = 0, n = 0;

	if (!f) {
		fprintf(stderr, "synth_batches: %s: %s\n", log, strerror(errno));
		return 1;
	}
	while (fscanf(f, "committed %lld %lld\n", &start, &total) == 2) {
		struct store_sel sel = { type, NULL, 0 };
		struct profile *p = NULL;
		int rc = store__merge(s, &sel, start, start + 1, &p);
		int64_t got = rc ? -1 : profile__total(p, 0);

		if (got != total) {
			printf("batch %lld: expected %lld samples, found %lld\n", start, total,
			       (long long)got);
			bad++;
		}
		profile__free(p);
		n++;
	}
	fclose(f);
	printf("verified %d committed batches, %d missing or wrong\n", n, bad);
	return bad ? 1 : 0;
}

static int stat_store(struct store *s, const char *type)
{
	struct store_stats st;
	struct store_sel sel = { type, NULL, 0 };
	char **pairs;
	int64_t *mins;
	size_t np, nm;
	int rc;

	if ((rc = store__stats(s, &st)))
		return 1;
	printf("map_size=%llu\nused_bytes=%llu\nfile_bytes=%llu\nnblocks=%llu\ndropped=%llu\n"
	       "nseries=%llu\nnstacks=%llu\n",
	       (unsigned long long)st.map_size, (unsigned long long)st.used_bytes,
	       (unsigned long long)st.file_bytes, (unsigned long long)st.nblocks,
	       (unsigned long long)st.dropped_blocks, (unsigned long long)st.nseries,
	       (unsigned long long)st.nstacks);
	rc = store__list(s, &sel, &pairs, &np, &mins, &nm);
	if (rc == 0) {
		printf("npairs=%zu\nnminutes=%zu\n", np, nm);
		if (nm)
			printf("first_minute=%lld\nlast_minute=%lld\n", (long long)mins[0],
			       (long long)mins[nm - 1]);
		store__free_strv(pairs, np);
		free(mins);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: synth_batches --store DIR [--batches N] [--interval S] [--procs N]\n"
		   "       [--stacks N] [--depth MIN-MAX] [--zipf S] [--samples N] [--start T]\n"
		   "       [--max-size SIZE] [--retention DUR] [--seed N] [--type T] [--log FILE]\n"
		   "       [--random-values]\n"
		   "       synth_batches --store DIR --verify LOG | --stat\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", 1, NULL, 'S' },    { "batches", 1, NULL, 'b' }, { "interval", 1, NULL, 'i' },
		{ "procs", 1, NULL, 'p' },    { "stacks", 1, NULL, 'k' },  { "depth", 1, NULL, 'd' },
		{ "zipf", 1, NULL, 'z' },     { "samples", 1, NULL, 'n' }, { "start", 1, NULL, 't' },
		{ "max-size", 1, NULL, 'm' }, { "retention", 1, NULL, 'r' }, { "seed", 1, NULL, 's' },
		{ "type", 1, NULL, 'T' },     { "log", 1, NULL, 'l' },     { "verify", 1, NULL, 'v' },
		{ "stat", 0, NULL, 'x' },     { "random-values", 0, NULL, 'R' },     { "help", 0, NULL, 'h' },    { 0 },
	};
	struct synth sy = { .nprocs = 20, .nstacks = 500, .dmin = 10, .dmax = 30 };
	struct store_opts so = { 0 };
	const char *type = "cpu", *logp = NULL, *verify_log = NULL;
	long long batches = 10, interval = 10, nsamples = 1980, start = -1;
	double zs = 1.1;
	bool do_stat = false;
	double append_s = 0;
	long long nappended = 0;
	struct store *s;
	int c, logfd = -1, rc = 0;

	/* A test tool's switch (no proffs command has one): commits without
	 * an fsync when the test is not about durability. */
	so.nosync = getenv("PROFFS_STORE_NOSYNC") && strcmp(getenv("PROFFS_STORE_NOSYNC"), "0");
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'S': so.dir = optarg; break;
		case 'b': batches = atoll(optarg); break;
		case 'i': interval = atoll(optarg); break;
		case 'p': sy.nprocs = strtoul(optarg, NULL, 10); break;
		case 'k': sy.nstacks = strtoul(optarg, NULL, 10); break;
		case 'd':
			if (sscanf(optarg, "%zu-%zu", &sy.dmin, &sy.dmax) != 2)
				sy.dmin = sy.dmax = strtoul(optarg, NULL, 10);
			break;
		case 'z': zs = atof(optarg); break;
		case 'n': nsamples = atoll(optarg); break;
		case 't': start = atoll(optarg); break;
		case 'm':
			if (parse_size(optarg, &so.max_size)) {
				fprintf(stderr, "synth_batches: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'r':
			if (parse_duration(optarg, &so.retention_s)) {
				fprintf(stderr, "synth_batches: bad duration '%s'\n", optarg);
				return 2;
			}
			break;
		case 's': rs = strtoull(optarg, NULL, 0) * 0x9E3779B97F4A7C15ULL + 1; break;
		case 'T': type = optarg; break;
		case 'l': logp = optarg; break;
		case 'v': verify_log = optarg; break;
		case 'x': do_stat = true; break;
		case 'R': random_values = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!so.dir || !sy.nprocs || !sy.nstacks || !sy.dmin || sy.dmax < sy.dmin || interval <= 0) {
		usage(stderr);
		return 2;
	}
	so.readonly = verify_log || do_stat;
	if ((rc = store__open(&s, &so))) {
		fprintf(stderr, "synth_batches: cannot open %s: %s\n", so.dir, strerror(-rc));
		return 1;
	}
	if (verify_log || do_stat) {
		rc = verify_log ? verify(s, type, verify_log) : stat_store(s, type);
		store__close(s);
		return rc;
	}
	if (logp && (logfd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0644)) < 0) {
		fprintf(stderr, "synth_batches: %s: %s\n", logp, strerror(errno));
		return 1;
	}
	synth_init(&sy, zs);
	if (start < 0)
		start = (now_s() - (batches ? batches : 1) * interval) / interval * interval;
	for (long long b = 0; !batches || b < batches; b++) {
		int64_t total, t = start + b * interval;
		struct profile *p = synth_batch(&sy, nsamples, &total);

		struct timespec a, z;

		clock_gettime(CLOCK_MONOTONIC, &a);
		rc = store__append(s, type, t * 1000000000LL, interval * 1000000000LL, p, NULL, 0);
		clock_gettime(CLOCK_MONOTONIC, &z);
		append_s += (z.tv_sec - a.tv_sec) + (z.tv_nsec - a.tv_nsec) / 1e9;
		nappended += nsamples;
		profile__free(p);
		if (rc) {
			fprintf(stderr, "synth_batches: append at %lld: %s\n", (long long)t, strerror(-rc));
			rc = 1;
			break;
		}
		if (logfd >= 0) {
			char line[80];
			int l = snprintf(line, sizeof(line), "committed %lld %lld\n", (long long)t,
					 (long long)total);

			if (write(logfd, line, l) != l) {
				rc = 1;
				break;
			}
		}
	}
	if (logfd >= 0)
		close(logfd);
	store__close(s);
	printf("samples=%lld\nappend_seconds=%.3f\nsamples_per_second=%.0f\n", nappended,
	       append_s, append_s > 0 ? nappended / append_s : 0);
	return rc;
}
