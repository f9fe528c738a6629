/*
 * bench_gen.c - the synthetic workload of `make bench`: one busy host.
 *
 * A fixed, seeded universe: ~200 processes running ~40 executables, ~5,000
 * distinct stacks of depth 10-60 that share prefixes the way real call
 * trees do (each new stack forks off an existing one of its executable),
 * some ending in kernel frames. Processes are drawn Zipf(1.0) and, inside a
 * process, stacks Zipf(1.1) over its executable's stacks. A batch is 10 s
 * of 99 Hz x 2 CPUs = 1,980 samples, aggregated like the sampler does.
 *
 * Modes (key=value results on stdout, one per line, for scripts/bench):
 *   hour    --start T [--batches 360] [--store DIR] [--pprof-dir DIR]
 *           [--folded FILE.zst]: each batch appended to the store (the
 *           appends alone are timed: the ingest figure), written as one
 *           gzip pprof file (what conprof kept) and as zstd folded text.
 *   day     --start T --store DIR [--batches 8640]: same, store only.
 *   minutes --start T --store DIR [--minutes 10080]: one small 60 s batch
 *           per minute (listing benchmarks).
 *   close   --start T --store DIR: one batch of one sample at T, which
 *           closes the hours before T as the daemon's next batch would
 *           (the store rolls up an hour once a later batch arrives).
 * --churn N (hour, day): each batch also holds N short-lived processes,
 * new pids never seen again (a fork storm: a series each), each with 1-3
 * stacks of 1-4 samples of an executable drawn like the steady ones.
 * The same seed gives the same data; T is Unix seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "store/db/store.h"
#include "store/db/store_int.h"

#define NEXE 40
#define NPROC 200
#define NSTACK_TARGET 5000
#define HZ 99
#define NCPU 2
#define BATCH_S 10
#define PERIOD_NS (1000000000LL / HZ)
#define MAX_DEPTH 60
#define MIN_DEPTH 10
#define NSITES 3

/* ---- deterministic randomness ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rndn(uint32_t n) { return (uint32_t)(rnd() % n); }
static double rndu(void) { return (rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* Zipf over ranks 0..n-1 with exponent s: a cumulative table, then a
 * binary search per draw. */
struct zipf {
	double *cdf;
	uint32_t n;
};

static int zipf__init(struct zipf *z, uint32_t n, double s)
{
	double sum = 0;

	z->n = n;
	z->cdf = malloc(n * sizeof(double));
	if (!z->cdf)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		z->cdf[i] = (sum += 1.0 / pow(i + 1, s));
	for (uint32_t i = 0; i < n; i++)
		z->cdf[i] /= sum;
	return 0;
}

static uint32_t zipf__draw(const struct zipf *z)
{
	double u = rndu();
	uint32_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the universe ---- */

struct gmap {
	char file[96], build_id[41];
	uint64_t start, limit, offset;
};

struct gfunc {
	char *name, *file;
	uint32_t map;
	uint64_t addr;
	int line;
};

struct gexe {
	char path[64], comm[16];
	uint32_t map;
	uint32_t f0, nf;     /* its functions */
	uint32_t s0, ns;     /* its stacks */
	struct zipf zf;      /* which function a new frame calls */
	uint32_t *perm;      /* popularity rank -> stack index within s0.. */
	struct zipf zs;
};

struct gproc {
	uint32_t exe;
	char pid[12];
};

/* A stack, root first; each frame a location = func * NSITES + site. */
struct gstack {
	uint32_t depth;
	uint32_t loc[MAX_DEPTH];
	uint32_t user_depth; /* frames before the kernel tail */
};

static struct gmap maps[NEXE + 3];
static uint32_t nmaps;
static struct gfunc *funcs;
static uint32_t nfuncs, cap_funcs;
static struct gexe exes[NEXE];
static struct gproc procs[NPROC];
static uint32_t proc_order[NPROC]; /* popularity rank -> process */
static struct gstack *stacks;
static uint32_t nstacks;
static struct zipf zproc, zexe;
static uint32_t libc_map, kern_map, libc_f0, libc_nf, kern_f0, kern_nf;
static struct zipf zlibc, zkern;

static const char *const verbs[] = {
	"get", "set", "process", "handle", "read", "write", "parse", "encode",
	"decode", "update", "compute", "alloc", "release", "lookup", "insert",
	"flush", "poll", "send", "recv", "dispatch", "run", "schedule", "visit",
	"emit", "build", "resolve", "merge", "scan", "hash", "compare",
};
static const char *const nouns[] = {
	"request", "buffer", "header", "connection", "session", "event",
	"table", "index", "page", "tuple", "node", "frame", "block", "cache",
	"string", "object", "stream", "socket", "record", "query", "plan",
	"row", "key", "value", "map", "list", "task", "worker", "timer",
	"queue", "chunk", "batch", "segment", "cursor", "lock", "pool",
};
static const char *const exe_names[] = {
	"nginx", "postgres", "python3", "java", "node", "envoy",
	"redis-server", "mysqld", "dockerd", "containerd", "kubelet",
	"prometheus", "grafana-server", "etcd", "haproxy", "memcached",
	"rsyslogd", "sshd", "systemd-journald", "clickhouse-server",
	"elasticsearch", "kafka", "zookeeper", "consul", "vault", "traefik",
	"php-fpm", "ruby", "gunicorn", "uwsgi", "celery", "rabbitmq-server",
	"mongod", "influxd", "telegraf", "fluent-bit", "coredns",
	"cadvisor", "node_exporter", "chronyd",
};
static const char *const kernel_fixed[] = {
	"entry_SYSCALL_64_after_hwframe", "do_syscall_64", "__x64_sys_read",
	"__x64_sys_write", "__x64_sys_epoll_wait", "__x64_sys_futex",
	"__x64_sys_sendto", "__x64_sys_recvfrom", "ksys_read", "vfs_read",
	"tcp_sendmsg", "tcp_recvmsg", "ep_poll", "futex_wait",
	"schedule", "__schedule", "finish_task_switch", "copy_user_generic",
	"asm_exc_page_fault", "exc_page_fault", "handle_mm_fault",
};
#define NARR(a) (sizeof(a) / sizeof((a)[0]))

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d) {
		perror("strdup");
		exit(1);
	}
	return d;
}

static const char *pick(const char *const *a, size_t n) { return a[rndn((uint32_t)n)]; }

static void cap_first(char *s)
{
	if (*s >= 'a' && *s <= 'z')
		*s -= 32;
}

/* A symbol name in one of four language styles, so lengths and shapes
 * look like a mixed fleet: C, C++, Java, Go. */
static void make_name(char *out, size_t size, int style, const char *mod)
{
	char a[32], b[32], c[32];

	snprintf(a, sizeof(a), "%s", pick(nouns, NARR(nouns)));
	snprintf(b, sizeof(b), "%s", pick(nouns, NARR(nouns)));
	snprintf(c, sizeof(c), "%s", pick(verbs, NARR(verbs)));
	switch (style) {
	case 0:
		snprintf(out, size, "%s_%s_%s_%u", mod, c, a, rndn(100));
		break;
	case 1:
		cap_first(a);
		cap_first(b);
		snprintf(out, size, "%s::%s%s::%s%s(std::string const&, unsigned long)",
			 mod, a, b, c, a);
		break;
	case 2:
		cap_first(a);
		cap_first(b);
		snprintf(out, size, "org.%s.%s.%s%s.%s%s", mod, pick(nouns, NARR(nouns)),
			 a, b, c, a);
		break;
	default:
		cap_first(a);
		cap_first(c);
		snprintf(out, size, "github.com/%s/%s.(*%s).%s%s", mod,
			 pick(nouns, NARR(nouns)), a, c, b);
		break;
	}
}

static uint32_t add_map(const char *file, uint64_t start, uint64_t size)
{
	struct gmap *m = &maps[nmaps];

	snprintf(m->file, sizeof(m->file), "%s", file);
	for (int i = 0; i < 40; i++)
		m->build_id[i] = "0123456789abcdef"[rndn(16)];
	m->build_id[40] = 0;
	m->start = start;
	m->limit = start + size;
	m->offset = 0;
	return nmaps++;
}

static uint32_t add_func(const char *name, uint32_t map, const char *file)
{
	struct gfunc *f;

	if (nfuncs == cap_funcs) {
		cap_funcs = cap_funcs ? cap_funcs * 2 : 4096;
		funcs = realloc(funcs, cap_funcs * sizeof(*funcs));
		if (!funcs) {
			perror("realloc");
			exit(1);
		}
	}
	f = &funcs[nfuncs];
	f->name = xstrdup(name);
	f->file = xstrdup(file);
	f->map = map;
	/* 64 bytes per function, wrapped inside the mapping: distinct
	 * addresses for every function of a mapping this size. */
	f->addr = maps[map].start + 0x1000 +
		  ((uint64_t)nfuncs * 0x40) % (maps[map].limit - maps[map].start - 0x2000);
	f->line = 10 + (int)rndn(3000);
	return nfuncs++;
}

/* Real call graphs reuse a few hot functions (allocators, hash lookups,
 * locks) everywhere: new frames pick functions Zipf(1.0), rank = id. */
static uint32_t exe_func(const struct gexe *e) { return e->f0 + 2 + zipf__draw(&e->zf); }

/* Fills s (root first) for executable e: a prefix of parent (if any),
 * then new frames, then maybe a kernel tail. */
static void make_stack(struct gstack *s, const struct gexe *e, const struct gstack *parent)
{
	uint32_t depth = MIN_DEPTH + rndn(MAX_DEPTH - MIN_DEPTH + 1);
	uint32_t ktail = rndu() < 0.35 ? 3 + rndn(8) : 0;
	uint32_t udepth = depth - ktail, n = 0;

	if (parent && parent->user_depth > 4) {
		n = 3 + rndn(parent->user_depth - 3);
		if (n > udepth)
			n = udepth;
		memcpy(s->loc, parent->loc, n * sizeof(uint32_t));
	} else {
		s->loc[n++] = (e->f0 + 0) * NSITES;      /* _start */
		s->loc[n++] = (libc_f0 + 0) * NSITES;    /* __libc_start_main */
		s->loc[n++] = (e->f0 + 1) * NSITES;      /* main */
	}
	while (n < udepth) {
		uint32_t f = rndu() < 0.1 ? libc_f0 + 1 + zipf__draw(&zlibc) : exe_func(e);

		s->loc[n++] = f * NSITES + rndn(NSITES);
	}
	s->user_depth = n;
	if (ktail) {
		s->loc[n++] = (kern_f0 + 0) * NSITES;
		s->loc[n++] = (kern_f0 + 1) * NSITES;
		while (n < depth)
			s->loc[n++] = (kern_f0 + 2 + zipf__draw(&zkern)) * NSITES + rndn(NSITES);
	}
	s->depth = n;
}

static int universe__build(uint64_t seed)
{
	char name[256], file[128];
	struct zipf zw;
	double wsum = 0;
	uint32_t left = NSTACK_TARGET - NEXE * 30;

	rng_state = seed;
	libc_map = add_map("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f3a10000000ULL, 0x200000);
	kern_map = add_map("[kernel.kallsyms]", 0xffffffff81000000ULL, 0x2000000);
	libc_f0 = nfuncs;
	add_func("__libc_start_main", libc_map, "csu/libc-start.c");
	for (uint32_t i = 1; i < 600; i++) {
		make_name(name, sizeof(name), 0, "__libc");
		add_func(name, libc_map, "libc/misc.c");
	}
	libc_nf = nfuncs - libc_f0;
	kern_f0 = nfuncs;
	for (size_t i = 0; i < NARR(kernel_fixed); i++)
		add_func(kernel_fixed[i], kern_map, "");
	for (uint32_t i = 0; i < 1500; i++) {
		make_name(name, sizeof(name), 0, "__kernel");
		add_func(name + 2, kern_map, "");
	}
	kern_nf = nfuncs - kern_f0;

	if (zipf__init(&zlibc, libc_nf - 1, 1.0) || zipf__init(&zkern, kern_nf - 2, 1.0) ||
	    zipf__init(&zw, NEXE, 1.0) || zipf__init(&zexe, NEXE, 1.2) ||
	    zipf__init(&zproc, NPROC, 1.0))
		return -ENOMEM;
	for (uint32_t i = 0; i < NEXE; i++)
		wsum += zw.cdf[i] - (i ? zw.cdf[i - 1] : 0);
	nstacks = 0;
	for (uint32_t i = 0; i < NEXE; i++) {
		struct gexe *e = &exes[i];
		double w = (zw.cdf[i] - (i ? zw.cdf[i - 1] : 0)) / wsum;

		snprintf(e->comm, sizeof(e->comm), "%.15s", exe_names[i]);
		snprintf(e->path, sizeof(e->path), "/usr/%s/%s", i % 3 ? "bin" : "sbin", exe_names[i]);
		e->ns = 30 + (uint32_t)(w * left);
		e->map = add_map(e->path, 0x400000 + (uint64_t)i * 0x10000000ULL, 0x4000000);
		e->f0 = nfuncs;
		add_func("_start", e->map, "start.S");
		add_func("main", e->map, "main.c");
		snprintf(file, sizeof(file), "src/%s/%s.c", exe_names[i], pick(nouns, NARR(nouns)));
		for (uint32_t k = 0; k < 40 + 2 * e->ns; k++) {
			make_name(name, sizeof(name), i % 4, exe_names[i]);
			if (!(k % 25))
				snprintf(file, sizeof(file), "src/%s/%s_%u.c", exe_names[i],
					 pick(nouns, NARR(nouns)), k);
			add_func(name, e->map, file);
		}
		e->nf = nfuncs - e->f0;
		if (zipf__init(&e->zf, e->nf - 2, 1.0))
			return -ENOMEM;
		e->s0 = nstacks;
		nstacks += e->ns;
	}
	stacks = calloc(nstacks, sizeof(*stacks));
	if (!stacks)
		return -ENOMEM;
	for (uint32_t i = 0; i < NEXE; i++) {
		struct gexe *e = &exes[i];

		for (uint32_t k = 0; k < e->ns; k++)
			make_stack(&stacks[e->s0 + k], e,
				   k ? &stacks[e->s0 + rndn(k)] : NULL);
		e->perm = malloc(e->ns * sizeof(uint32_t));
		if (!e->perm || zipf__init(&e->zs, e->ns, 1.1))
			return -ENOMEM;
		for (uint32_t k = 0; k < e->ns; k++)
			e->perm[k] = k;
		for (uint32_t k = e->ns - 1; k > 0; k--) {
			uint32_t j = rndn(k + 1), t = e->perm[k];

			e->perm[k] = e->perm[j];
			e->perm[j] = t;
		}
	}
	/* Every executable runs at least once; the rest are Zipf-popular
	 * (many nginx and php-fpm workers, one chronyd). */
	for (uint32_t p = 0; p < NPROC; p++) {
		procs[p].exe = p < NEXE ? p : zipf__draw(&zexe);
		snprintf(procs[p].pid, sizeof(procs[p].pid), "%u", 1000 + p * 1733 + rndn(1733));
		proc_order[p] = p;
	}
	for (uint32_t k = NPROC - 1; k > 0; k--) {
		uint32_t j = rndn(k + 1), t = proc_order[k];

		proc_order[k] = proc_order[j];
		proc_order[j] = t;
	}
	free(zw.cdf);
	return 0;
}

/* ---- one batch as a profile ---- */

struct batch {
	uint32_t *count;   /* [NPROC * nstacks] */
	uint32_t *touched; /* indexes into count, first-seen order */
	uint32_t ntouched;
	uint64_t *bmap, *bfunc, *bloc; /* universe -> id in the batch profile */
	uint8_t *seen_stack;           /* over the whole run */
	uint64_t nseen_stacks;
	uint8_t *seen_pair;
	uint64_t nseen_pairs;
	/* --churn: this batch's short-lived processes' samples */
	uint32_t churn, next_pid, nchurn, churn_cap;
	struct churn_sample {
		uint32_t pid, exe, stack, n;
	} *cs;
};

static int batch__init(struct batch *b)
{
	b->count = calloc((size_t)NPROC * nstacks, sizeof(uint32_t));
	b->touched = malloc((size_t)NPROC * nstacks * sizeof(uint32_t));
	b->bmap = calloc(nmaps, sizeof(uint64_t));
	b->bfunc = calloc(nfuncs, sizeof(uint64_t));
	b->bloc = calloc((size_t)nfuncs * NSITES, sizeof(uint64_t));
	b->seen_stack = calloc(nstacks, 1);
	b->seen_pair = calloc((size_t)NPROC * nstacks, 1);
	return b->count && b->touched && b->bmap && b->bfunc && b->bloc &&
	       b->seen_stack && b->seen_pair ? 0 : -ENOMEM;
}

static void batch__draw(struct batch *b, uint32_t nsamples)
{
	for (uint32_t i = 0; i < b->ntouched; i++)
		b->count[b->touched[i]] = 0;
	b->ntouched = 0;
	for (uint32_t i = 0; i < nsamples; i++) {
		uint32_t p = proc_order[zipf__draw(&zproc)];
		const struct gexe *e = &exes[procs[p].exe];
		uint32_t s = e->s0 + e->perm[zipf__draw(&e->zs)];
		uint32_t k = p * nstacks + s;

		if (!b->count[k]++)
			b->touched[b->ntouched++] = k;
		if (!b->seen_stack[s]) {
			b->seen_stack[s] = 1;
			b->nseen_stacks++;
		}
		if (!b->seen_pair[k]) {
			b->seen_pair[k] = 1;
			b->nseen_pairs++;
		}
	}
}

/* This batch's short-lived processes (b->churn of them, new pids).
 * Returns their samples. */
static uint32_t batch__draw_churn(struct batch *b)
{
	uint32_t total = 0;

	b->nchurn = 0;
	for (uint32_t j = 0; j < b->churn; j++) {
		uint32_t pid = b->next_pid++, e = zipf__draw(&zexe), k = 1 + rndn(3);

		for (uint32_t i = 0; i < k; i++) {
			struct churn_sample *c;

			if (b->nchurn == b->churn_cap) {
				uint32_t nc = b->churn_cap ? 2 * b->churn_cap : 256;
				struct churn_sample *g = realloc(b->cs, nc * sizeof(*g));

				if (!g)
					return total;
				b->cs = g;
				b->churn_cap = nc;
			}
			c = &b->cs[b->nchurn++];
			c->pid = pid;
			c->exe = e;
			c->stack = exes[e].s0 + exes[e].perm[zipf__draw(&exes[e].zs)];
			c->n = 1 + rndn(4);
			total += c->n;
		}
	}
	return total;
}

#define CHK(x)                                                   \
	do {                                                     \
		if (!(x)) {                                      \
			fprintf(stderr, "bench_gen: %s failed\n", #x); \
			exit(1);                                 \
		}                                                \
	} while (0)

static uint64_t batch__loc(struct batch *b, struct profile *p, uint32_t gl)
{
	uint32_t gf = gl / NSITES, site = gl % NSITES;
	const struct gfunc *f = &funcs[gf];
	struct prof_location l = { 0 };
	struct prof_line line;

	if (b->bloc[gl])
		return b->bloc[gl];
	if (!b->bmap[f->map]) {
		const struct gmap *gm = &maps[f->map];
		struct prof_mapping m = {
			.start = gm->start, .limit = gm->limit, .offset = gm->offset,
			.file = profile__intern_str(p, gm->file),
			.build_id = profile__intern_str(p, gm->build_id),
			.has_functions = true,
		};

		CHK(b->bmap[f->map] = profile__add_mapping(p, &m));
	}
	if (!b->bfunc[gf]) {
		struct prof_function fn = {
			.name = profile__intern_str(p, f->name),
			.system_name = profile__intern_str(p, f->name),
			.filename = profile__intern_str(p, f->file),
			.start_line = f->line,
		};

		CHK(b->bfunc[gf] = profile__add_function(p, &fn));
	}
	line.function_id = b->bfunc[gf];
	line.line = f->line + 1 + site * 7;
	l.mapping_id = b->bmap[f->map];
	l.address = f->addr + 0x10 + site * 0x1b;
	l.nlines = 1;
	l.lines = &line;
	CHK(b->bloc[gl] = profile__add_location(p, &l));
	return b->bloc[gl];
}

/* The drawn samples as a CPU profile of the window [t, t + dur). */
static struct profile *batch__profile(struct batch *b, int64_t t_ns, int64_t dur_ns)
{
	static const char *const types[] = { "samples", "cpu" };
	static const char *const units[] = { "count", "nanoseconds" };
	struct profile *p = profile__new();
	uint32_t kcomm, kpid, kexe;

	CHK(p);
	CHK(!profile__set_value_types(p, 2, types, units));
	p->period_type.type = profile__intern_str(p, "cpu");
	p->period_type.unit = profile__intern_str(p, "nanoseconds");
	p->period = PERIOD_NS;
	p->time_nanos = t_ns;
	p->duration_nanos = dur_ns;
	kcomm = profile__intern_str(p, "comm");
	kpid = profile__intern_str(p, "pid");
	kexe = profile__intern_str(p, "exe");
	memset(b->bmap, 0, nmaps * sizeof(uint64_t));
	memset(b->bfunc, 0, nfuncs * sizeof(uint64_t));
	memset(b->bloc, 0, (size_t)nfuncs * NSITES * sizeof(uint64_t));
	for (uint32_t i = 0; i < b->ntouched; i++) {
		uint32_t k = b->touched[i], pr = k / nstacks;
		const struct gstack *s = &stacks[k % nstacks];
		const struct gexe *e = &exes[procs[pr].exe];
		uint64_t locs[MAX_DEPTH];
		struct prof_label lab[3] = {
			{ .key = kcomm, .str = profile__intern_str(p, e->comm) },
			{ .key = kpid, .str = profile__intern_str(p, procs[pr].pid) },
			{ .key = kexe, .str = profile__intern_str(p, e->path) },
		};
		int64_t v[2] = { b->count[k], (int64_t)b->count[k] * PERIOD_NS };

		for (uint32_t d = 0; d < s->depth; d++) /* pprof: leaf first */
			locs[d] = batch__loc(b, p, s->loc[s->depth - 1 - d]);
		CHK(!profile__add_sample(p, locs, s->depth, lab, 3, v));
	}
	for (uint32_t i = 0; i < b->nchurn; i++) {
		const struct churn_sample *c = &b->cs[i];
		const struct gstack *s = &stacks[c->stack];
		const struct gexe *e = &exes[c->exe];
		uint64_t locs[MAX_DEPTH];
		char pid[12];
		struct prof_label lab[3];
		int64_t v[2] = { c->n, (int64_t)c->n * PERIOD_NS };

		snprintf(pid, sizeof(pid), "%u", c->pid);
		lab[0] = (struct prof_label){ .key = kcomm, .str = profile__intern_str(p, e->comm) };
		lab[1] = (struct prof_label){ .key = kpid, .str = profile__intern_str(p, pid) };
		lab[2] = (struct prof_label){ .key = kexe, .str = profile__intern_str(p, e->path) };
		for (uint32_t d = 0; d < s->depth; d++)
			locs[d] = batch__loc(b, p, s->loc[s->depth - 1 - d]);
		CHK(!profile__add_sample(p, locs, s->depth, lab, 3, v));
	}
	return p;
}

/* ---- outputs ---- */

static double ts(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* gzip exactly as Go's runtime/pprof writes its files (gzip framing,
 * default level). Returns the compressed size. */
static size_t write_gzip(const char *path, const uint8_t *in, size_t len)
{
	z_stream z = { 0 };
	size_t cap = deflateBound(&z, len) + 64, n;
	uint8_t *out;
	FILE *f;

	CHK(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) == Z_OK);
	cap = deflateBound(&z, len) + 64;
	CHK(out = malloc(cap));
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	CHK(deflate(&z, Z_FINISH) == Z_STREAM_END);
	n = z.total_out;
	deflateEnd(&z);
	CHK(f = fopen(path, "wb"));
	CHK(fwrite(out, 1, n, f) == n);
	CHK(!fclose(f));
	free(out);
	return n;
}

/* Folded lines of one batch ("comm;root;...;leaf count"), with a header
 * line carrying the batch time so the file holds the same windows. */
static void folded_batch(const struct profile *p, int64_t t, char **buf,
			 size_t *len, size_t *cap)
{
	char line[MAX_DEPTH * 300], name[512];

	for (uint32_t i = 0; i <= p->nsamples; i++) {
		size_t n;

		if (i == 0) {
			n = (size_t)snprintf(line, sizeof(line), "# t=%" PRId64 "\n", t);
		} else {
			const struct prof_sample *s = &p->samples[i - 1];
			const char *comm = profile__sample_label(p, s, "comm");

			n = (size_t)snprintf(line, sizeof(line), "%s", comm ? comm : "?");
			for (uint32_t d = s->nlocs; d-- > 0;) {
				size_t m = profile__frame_name(p, s->locs[d], 0, true, name,
							       sizeof(name));

				line[n++] = ';';
				memcpy(line + n, name, m);
				n += m;
			}
			n += (size_t)snprintf(line + n, sizeof(line) - n, " %" PRId64 "\n",
					      s->values[0]);
		}
		if (*len + n > *cap) {
			*cap = (*len + n) * 2;
			CHK(*buf = realloc(*buf, *cap));
		}
		memcpy(*buf + *len, line, n);
		*len += n;
	}
}

static int64_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_gen hour|day|minutes|close --start UNIX_S [--store DIR]\n"
		"       [--pprof-dir DIR] [--folded FILE.zst] [--batches N]\n"
		"       [--minutes N] [--seed N] [--max-size BYTES] [--churn N]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "start", 1, 0, 's' }, { "store", 1, 0, 'S' },
		{ "pprof-dir", 1, 0, 'p' }, { "folded", 1, 0, 'f' },
		{ "batches", 1, 0, 'b' }, { "minutes", 1, 0, 'm' },
		{ "seed", 1, 0, 'r' }, { "max-size", 1, 0, 'M' }, { "churn", 1, 0, 'c' },
		{ "help", 0, 0, 'h' }, { 0 },
	};
	const char *mode, *store_dir = NULL, *pprof_dir = NULL, *folded = NULL;
	int64_t start = -1, batch_s = BATCH_S;
	uint64_t seed = 42, max_size = 0, nsamples_total = 0, nseries_stacks = 0;
	uint32_t nbatches = 360, per_batch = HZ * NCPU * BATCH_S;
	double app_wall = 0, app_cpu = 0, app_max = 0, t_all;
	size_t pprof_bytes = 0, pprof_raw = 0, fold_raw = 0;
	char *fbuf = NULL;
	size_t flen = 0, fcap = 0;
	struct store *s = NULL;
	struct batch b = { 0 };
	ZSTD_CCtx *zc = NULL;
	FILE *zf = NULL;
	int c;

	if (argc < 2) {
		usage();
		return 2;
	}
	mode = argv[1];
	if (!strcmp(mode, "day"))
		nbatches = 24 * 360;
	else if (!strcmp(mode, "minutes"))
		nbatches = 10080, batch_s = 60, per_batch = 40;
	else if (!strcmp(mode, "close"))
		nbatches = 1, per_batch = 1;
	else if (strcmp(mode, "hour")) {
		usage();
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': start = strtoll(optarg, NULL, 10); break;
		case 'S': store_dir = optarg; break;
		case 'p': pprof_dir = optarg; break;
		case 'f': folded = optarg; break;
		case 'b':
		case 'm': nbatches = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'r': seed = strtoull(optarg, NULL, 10); break;
		case 'M': max_size = strtoull(optarg, NULL, 10); break;
		case 'c': b.churn = (uint32_t)strtoul(optarg, NULL, 10); break;
		default: usage(); return 2;
		}
	}
	if (start < 0 || !nbatches) {
		usage();
		return 2;
	}
	t_all = ts(CLOCK_MONOTONIC);
	CHK(!universe__build(seed));
	CHK(!batch__init(&b));
	b.next_pid = 100000;
	if (store_dir) {
		struct store_opts o = { .dir = store_dir, .max_size = max_size };

		/* the benches' switch (a test tool's; no proffs command has one) */
		o.nosync = getenv("PROFFS_STORE_NOSYNC") && strcmp(getenv("PROFFS_STORE_NOSYNC"), "0");

		CHK(!store__open(&s, &o));
	}
	if (pprof_dir)
		CHK(!mkdir(pprof_dir, 0755) || errno == EEXIST);
	if (folded) {
		CHK(zc = ZSTD_createCCtx());
		CHK(!ZSTD_isError(ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, 3)));
		CHK(zf = fopen(folded, "wb"));
	}
	/* Draws continue from the universe's stream with a per-run offset so
	 * the batches differ from each other but not between runs. */
	rng_state = seed * 0x2545f4914f6cdd1dULL + 1;
	const char *gb = getenv("BENCH_GEN_WINDOW_BATCHES");
	uint32_t gen_batches = gb ? (uint32_t)atoi(gb) : 0;

	for (uint32_t i = 0; i < nbatches; i++) {
		int64_t t = start + (int64_t)i * batch_s;
		struct profile *p;

		batch__draw(&b, per_batch);
		nsamples_total += per_batch + batch__draw_churn(&b);
		nseries_stacks += b.ntouched;
		p = batch__profile(&b, t * 1000000000LL, batch_s * 1000000000LL);
		if (s) {
			static const struct store_label node = { "node", "bench-host" };
			double w0 = ts(CLOCK_MONOTONIC), c0 = ts(CLOCK_THREAD_CPUTIME_ID), dw;
			int err;

			/* The writer's generations in batches, not seconds (the
			 * bench appends a day in seconds): this batch's commit
			 * ends one. */
			if (gen_batches && i && i % gen_batches == 0)
				store__gen_end_next(s);
			err = store__append(s, "cpu", t * 1000000000LL, batch_s * 1000000000LL, p,
					    &node, 1);

			if (err) {
				fprintf(stderr, "bench_gen: store__append batch %u: %s\n", i,
					strerror(-err));
				return 1;
			}
			dw = ts(CLOCK_MONOTONIC) - w0;
			app_wall += dw;
			app_cpu += ts(CLOCK_THREAD_CPUTIME_ID) - c0;
			if (dw > app_max)
				app_max = dw;
		}
		if (pprof_dir) {
			char path[4096];
			uint8_t *enc;
			size_t n;

			CHK(!pprof__encode(p, &enc, &n));
			snprintf(path, sizeof(path), "%s/batch-%04u.pb.gz", pprof_dir, i);
			pprof_raw += n;
			pprof_bytes += write_gzip(path, enc, n);
			free(enc);
		}
		if (zf) {
			ZSTD_inBuffer in;
			char out[1 << 16];

			flen = 0;
			folded_batch(p, t, &fbuf, &flen, &fcap);
			fold_raw += flen;
			in = (ZSTD_inBuffer){ fbuf, flen, 0 };
			while (in.pos < in.size) {
				ZSTD_outBuffer o = { out, sizeof(out), 0 };

				CHK(!ZSTD_isError(ZSTD_compressStream2(zc, &o, &in, ZSTD_e_continue)));
				CHK(fwrite(out, 1, o.pos, zf) == o.pos);
			}
		}
		profile__free(p);
		if (nbatches >= 1000 && !((i + 1) % (nbatches / 10)))
			fprintf(stderr, "bench_gen: %u/%u batches, %.0f s appending\n",
				i + 1, nbatches, app_wall);
	}
	if (zf) {
		size_t left;
		char out[1 << 16];

		do {
			ZSTD_inBuffer in = { NULL, 0, 0 };
			ZSTD_outBuffer o = { out, sizeof(out), 0 };

			left = ZSTD_compressStream2(zc, &o, &in, ZSTD_e_end);
			CHK(!ZSTD_isError(left));
			CHK(fwrite(out, 1, o.pos, zf) == o.pos);
		} while (left);
		CHK(!fclose(zf));
		ZSTD_freeCCtx(zc);
	}
	if (s)
		store__close(s);

	printf("mode=%s\n", mode);
	printf("batches=%u\n", nbatches);
	printf("samples=%" PRIu64 "\n", nsamples_total);
	printf("universe_stacks=%u\n", nstacks);
	printf("universe_functions=%u\n", nfuncs);
	printf("processes=%u\n", NPROC + (b.next_pid - 100000));
	printf("distinct_stacks=%" PRIu64 "\n", b.nseen_stacks);
	printf("distinct_process_stacks=%" PRIu64 "\n", b.nseen_pairs);
	printf("rows_per_batch=%.1f\n", (double)nseries_stacks / nbatches);
	if (s) {
		printf("append_wall_s=%.4f\n", app_wall);
		printf("append_cpu_s=%.4f\n", app_cpu);
		printf("append_max_ms=%.2f\n", app_max * 1e3);
		printf("ingest_samples_per_s=%.0f\n", nsamples_total / app_wall);
		printf("ingest_samples_per_cpu_s=%.0f\n", nsamples_total / app_cpu);
	}
	if (pprof_dir) {
		printf("pprof_gz_bytes=%zu\n", pprof_bytes);
		printf("pprof_raw_bytes=%zu\n", pprof_raw);
	}
	if (folded) {
		printf("folded_raw_bytes=%zu\n", fold_raw);
		printf("folded_zst_bytes=%" PRId64 "\n", file_size(folded));
	}
	printf("gen_total_s=%.2f\n", ts(CLOCK_MONOTONIC) - t_all);
	free(fbuf);
	free(b.count);
	free(b.touched);
	free(b.bmap);
	free(b.bfunc);
	free(b.bloc);
	free(b.seen_stack);
	free(b.seen_pair);
	free(b.cs);
	return 0;
}
