/*
 * run_opts.c - `proffs run`'s flags, their defaults, checks and --help
 * (run_opts.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/offcpu/offcpu.h"
#include "sampler/run_opts.h"
#include "store/util/util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proffs run [--store DIR] [--mount DIR] [--hz N] [--retention DUR]\n"
		"                  [--max-size SIZE] [--label k=v]... [--cache-size SIZE]\n"
		"                  [--allow-other] [--push URL] [--offcpu [--offcpu-min DUR] [--offcpu-states LIST]]\n"
		"                  [--scrape [job=NAME@]URL]... [--scrape-interval DUR]\n"
		"                  [--debuginfod URL] [--debuginfod-cache SIZE]\n"
		"\n"
		"Samples the stacks of every process with eBPF, stores them and serves\n"
		"them as a read-only tree. Runs in the foreground; SIGINT/SIGTERM store\n"
		"the last batch, unmount and exit 0.\n"
		"\n"
		"  --store DIR        the store directory (default /var/lib/proffs)\n"
		"  --mount DIR        where to mount the tree (default /prof)\n"
		"  --hz N             samples per second per CPU (default 19)\n"
		"  --retention DUR    drop data older than DUR, e.g. 6h, 7d (default 7d)\n"
		"  --max-size SIZE    bound on the store's size, e.g. 512M, 4G (default 4G)\n"
		"  --label k=v        attach this label to every series (repeatable)\n"
		"  --cache-size SIZE  bound of the render cache, kept in an unlinked file in\n"
		"                     the store's directory (default 32M)\n"
		"  --allow-other      let users other than root read the mount\n"
		"  --push URL         send every complete minute to the Grafana Pyroscope\n"
		"                     server at URL (its push API), retrying across restarts\n"
		"  --offcpu           also record where threads wait (type offcpu)\n"
		"  --offcpu-min DUR   shortest block recorded, e.g. 500us, 1ms (default 1ms)\n"
		"  --offcpu-states L  any of sleep,disk,runqueue, or all (default all)\n"
		"  --scrape [job=NAME@]URL  poll a Go net/http/pprof endpoint (URL: its\n"
		"                     /debug/pprof base) for heap, allocs, goroutine, mutex\n"
		"                     and block profiles (repeatable)\n"
		"  --scrape-interval DUR  how often (default 15s)\n"
		"  --debuginfod URL   fetch debug files of stripped code from this debuginfod\n"
		"                     server (several: space-separated; default: the\n"
		"                     DEBUGINFOD_URLS variable; none: off), on a thread of its own;\n"
		"                     frames stored before a file arrived are named then\n"
		"  --debuginfod-cache SIZE  bound of the fetched files kept in the store's\n"
		"                     directory (default 1G)\n"
		"\n"
		"Binaries and their debug files: /binaries/<build id>/ in the tree, for\n"
		"PPROF_BINARY_PATH (see /prof/README).\n");
}

/* "500us", "1ms", "0.5s", "20000ns" -> nanoseconds, within [1us, 10s]
 * (--offcpu-min; parse_duration counts whole seconds). Returns 0 or
 * -EINVAL. */
static int parse_short_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	double v = strtod(s, &end);

	if (end == s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		v *= units[i].mul;
		if (!(v >= 1e3 && v <= 1e10))
			return -EINVAL;
		*ns = (uint64_t)v;
		return 0;
	}
	return -EINVAL;
}

int run_opts__parse(struct run_opts *o, int argc, char **argv)
{
	enum { O_BATCH = 256, O_CGROOT, O_PODSROOT, O_PID, O_ALLOW, O_CACHE, O_OFFCPU, O_OFFMIN, O_OFFSTATES,
	       O_SCRAPE, O_SCRAPE_IVL, O_PUSH, O_DEBUGINFOD, O_DBGCACHE };
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "mount", required_argument, NULL, 'm' },
		{ "hz", required_argument, NULL, 'z' },
		{ "retention", required_argument, NULL, 'r' },
		{ "max-size", required_argument, NULL, 'x' },
		{ "label", required_argument, NULL, 'l' },
		{ "allow-other", no_argument, NULL, O_ALLOW },
		{ "push", required_argument, NULL, O_PUSH },
		{ "cache-size", required_argument, NULL, O_CACHE },
		{ "scrape", required_argument, NULL, O_SCRAPE },
		{ "scrape-interval", required_argument, NULL, O_SCRAPE_IVL },
		{ "offcpu", no_argument, NULL, O_OFFCPU },
		{ "offcpu-min", required_argument, NULL, O_OFFMIN },
		{ "offcpu-states", required_argument, NULL, O_OFFSTATES },
		{ "debuginfod", required_argument, NULL, O_DEBUGINFOD },
		{ "debuginfod-cache", required_argument, NULL, O_DBGCACHE },
		{ "help", no_argument, NULL, 'h' },
		/* hidden, for tests */
		{ "batch-interval", required_argument, NULL, O_BATCH },
		{ "cgroup-root", required_argument, NULL, O_CGROOT },
		{ "pods-root", required_argument, NULL, O_PODSROOT },
		{ "pid", required_argument, NULL, O_PID },
		{ NULL, 0, NULL, 0 },
	};

	memset(o, 0, sizeof(*o));
	o->so = (struct store_opts){ .dir = "/var/lib/proffs", .max_size = 4ULL << 30,
				     .retention_s = 7 * 86400 };
	o->mo.mountpoint = "/prof";
	o->po.hz = 19;
	o->interval_s = 10;
	o->scrape_s = 15;
	o->dbg_cache = 1ULL << 30;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		char *end;
		long v;
		uint64_t size;

		switch (c) {
		case 's': o->so.dir = optarg; break;
		case 'm': o->mo.mountpoint = optarg; break;
		case 'z':
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 1 || v > 10000) {
				fprintf(stderr, "proffs run: --hz wants a number from 1 to 10000, not '%s'\n", optarg);
				return 2;
			}
			o->po.hz = v;
			break;
		case 'r':
			if (parse_duration(optarg, &o->so.retention_s) || o->so.retention_s <= 0) {
				fprintf(stderr, "proffs run: bad --retention '%s' (e.g. 6h, 7d)\n", optarg);
				return 2;
			}
			break;
		case 'x':
			if (parse_size(optarg, &o->so.max_size) || o->so.max_size < (1 << 20)) {
				fprintf(stderr, "proffs run: bad --max-size '%s' (e.g. 512M, 4G; at least 1M)\n", optarg);
				return 2;
			}
			break;
		case 'l': {
			const char *k, *val;

			if (o->ndups == RUN_MAX_LABELS) {
				fprintf(stderr, "proffs run: at most %d --label\n", RUN_MAX_LABELS);
				return 2;
			}
			if (parse_label(optarg, &o->dups[o->ndups], &k, &val) || !*k || !*val) {
				fprintf(stderr, "proffs run: bad --label '%s' (want name=value)\n", optarg);
				return 2;
			}
			o->ndups++;
			/* A repeated name: the last one wins. */
			size_t i;
			for (i = 0; i < o->nextra && strcmp(o->extra[i].name, k); i++)
				;
			o->extra[i].name = k;
			o->extra[i].value = val;
			if (i == o->nextra)
				o->nextra++;
			break;
		}
		case O_ALLOW: o->mo.allow_other = true; break;
		case O_PUSH:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8)) {
				fprintf(stderr, "proffs run: bad --push '%s' (want an http:// or https:// URL)\n", optarg);
				return 2;
			}
			o->push.url = optarg;
			break;
		case O_CACHE:
			if (parse_size(optarg, &size) || size == 0) {
				fprintf(stderr, "proffs run: bad --cache-size '%s' (e.g. 32M, 1G)\n", optarg);
				return 2;
			}
			o->mo.cache_bytes = size;
			break;
		case O_SCRAPE: {
			struct scrape_target *nt = realloc(o->targets, (o->ntargets + 1) * sizeof(*nt));
			char why[256];

			if (!nt)
				return 2;
			o->targets = nt;
			if (scrape_target__parse(optarg, &o->targets[o->ntargets], why, sizeof(why))) {
				fprintf(stderr, "proffs run: bad --scrape '%s': %s\n", optarg, why);
				return 2;
			}
			o->ntargets++;
			break;
		}
		case O_SCRAPE_IVL:
			if (parse_duration(optarg, &o->scrape_s) || o->scrape_s <= 0) {
				fprintf(stderr, "proffs run: bad --scrape-interval '%s' (e.g. 15s, 1m)\n", optarg);
				return 2;
			}
			break;
		case O_DEBUGINFOD:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8) &&
			    strncmp(optarg, "file://", 7)) {
				fprintf(stderr, "proffs run: bad --debuginfod '%s' (want an http://, https:// or file:// URL)\n", optarg);
				return 2;
			}
			o->dbg_urls = optarg;
			break;
		case O_DBGCACHE:
			if (parse_size(optarg, &o->dbg_cache) || o->dbg_cache < (1 << 20)) {
				fprintf(stderr, "proffs run: bad --debuginfod-cache '%s' (e.g. 256M, 2G; at least 1M)\n", optarg);
				return 2;
			}
			break;
		case O_OFFCPU: o->po.offcpu = true; break;
		case O_OFFMIN:
			if (parse_short_duration(optarg, &o->po.offcpu_min_ns)) {
				fprintf(stderr, "proffs run: bad --offcpu-min '%s' (e.g. 500us, 1ms, 0.5s; 1us to 10s)\n", optarg);
				return 2;
			}
			break;
		case O_OFFSTATES:
			if (offcpu__parse_states(optarg, &o->po.offcpu_states)) {
				fprintf(stderr, "proffs run: bad --offcpu-states '%s' (any of sleep,disk,runqueue, or all)\n", optarg);
				return 2;
			}
			break;
		case O_BATCH:
			if (parse_duration(optarg, &o->interval_s) || o->interval_s <= 0) {
				fprintf(stderr, "proffs run: bad --batch-interval '%s'\n", optarg);
				return 2;
			}
			break;
		case O_CGROOT: o->po.cgroup_root = optarg; break;
		case O_PODSROOT: o->po.pods_root = optarg; break;
		case O_PID: o->po.target_tgid = atoi(optarg); break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			fprintf(stderr, "proffs run: option '%s' needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "proffs run: unknown option '%s' (try --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "proffs run: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	/* node = the host name, unless --label node=... said otherwise. */
	{
		size_t i;

		for (i = 0; i < o->nextra && strcmp(o->extra[i].name, "node"); i++)
			;
		if (i == o->nextra && !gethostname(o->host, sizeof(o->host))) {
			o->host[sizeof(o->host) - 1] = 0;
			o->extra[o->nextra].name = "node";
			o->extra[o->nextra].value = o->host;
			o->nextra++;
		}
	}
	if ((o->po.offcpu_min_ns || o->po.offcpu_states) && !o->po.offcpu) {
		fprintf(stderr, "proffs run: --offcpu-min and --offcpu-states need --offcpu\n");
		return 2;
	}
	o->po.interval_ns = o->interval_s * 1000000000LL;
	return 0;
}

void run_opts__fini(struct run_opts *o)
{
	for (int i = 0; i < o->ndups; i++)
		free(o->dups[i]);
	for (size_t i = 0; i < o->ntargets && o->targets; i++)
		scrape_target__fini(&o->targets[i]);
	free(o->targets);
	o->targets = NULL;
	o->ntargets = 0;
	o->ndups = 0;
}
