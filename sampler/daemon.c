/*
 * cmd_run.c - `proffs run`: the daemon. One process: a sampler thread
 * (BPF ring -> batch, a batch into the store every interval, retention),
 * the FUSE threads serving the tree, and the main thread waiting for
 * SIGINT/SIGTERM.
 *
 * Signals are blocked in every thread before any is created (threads
 * inherit the mask) and taken with sigwait() by the main thread alone:
 * libfuse would otherwise swallow a SIGTERM in one of its threads.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "fs/fuse/mount.h"
#include "sampler/profiler.h"
#include "fs/render/render.h"
#include "store/db/store.h"
#include "fs/tree/tree.h"
#include "store/util/util.h"

#define MAX_LABELS 64

struct run {
	struct store *store;
	struct profiler *prof;
	struct store_label extra[MAX_LABELS + 1];
	size_t nextra;
	int64_t interval_ns;
	int64_t retention_s;
	volatile int stop; /* set by the main thread, read by the sampler thread */
	pthread_t thread;
	/* figures for /metrics, written by the sampler thread */
	uint64_t batches, append_errors, last_batch_samples;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proffs run [--store DIR] [--mount DIR] [--hz N] [--retention DUR]\n"
		"                  [--max-size SIZE] [--label k=v]... [--allow-other]\n"
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
		"  --allow-other      let users other than root read the mount\n");
}

static void metrics_cb(struct buf *out, void *ctx)
{
	struct run *r = ctx;
	struct profiler_stats st;
	struct rusage ru;
	long rss_pages = 0;
	FILE *f;

	profiler__stats(r->prof, &st);
#define H(name, type, help) buf__printf(out, "# HELP " name " " help "\n# TYPE " name " " type "\n")
	H("proffs_samples_total", "counter", "CPU samples stored in batches.");
	buf__printf(out, "proffs_samples_total %" PRIu64 "\n", st.samples);
	H("proffs_bpf_samples_total", "counter", "Samples the BPF program took (idle excluded).");
	buf__printf(out, "proffs_bpf_samples_total %" PRIu64 "\n", st.bpf_samples);
	H("proffs_idle_samples_total", "counter", "Samples of idle CPUs (counted, not stored).");
	buf__printf(out, "proffs_idle_samples_total %" PRIu64 "\n", st.idle);
	H("proffs_lost_samples_total", "counter", "Samples lost, by cause.");
	buf__printf(out, "proffs_lost_samples_total{cause=\"ring_full\"} %" PRIu64 "\n", st.lost_ring_full);
	buf__printf(out, "proffs_lost_samples_total{cause=\"no_memory\"} %" PRIu64 "\n", st.lost_nomem);
	H("proffs_lost_events_total", "counter", "Process exec/fork/exit records lost (ring full).");
	buf__printf(out, "proffs_lost_events_total %" PRIu64 "\n", st.lost_events);
	H("proffs_stack_errors_total", "counter", "Stacks that could not be read, by kind.");
	buf__printf(out, "proffs_stack_errors_total{stack=\"kernel\"} %" PRIu64 "\n", st.kstack_errors);
	buf__printf(out, "proffs_stack_errors_total{stack=\"user\"} %" PRIu64 "\n", st.ustack_errors);
	H("proffs_stacks_truncated_total", "counter", "Stacks cut at the kernel's depth cap, by kind.");
	buf__printf(out, "proffs_stacks_truncated_total{stack=\"kernel\"} %" PRIu64 "\n", st.ktruncated);
	buf__printf(out, "proffs_stacks_truncated_total{stack=\"user\"} %" PRIu64 "\n", st.utruncated);
	{
		static const char *const ends[PROF_UE_MAX] = {
			[PROF_UE_NONE] = "none", [PROF_UE_ROOT] = "root", [PROF_UE_FP_END] = "fp_end",
			[PROF_UE_TRUNC] = "truncated", [PROF_UE_PENDING] = "pending",
			[PROF_UE_NO_TABLE] = "no_table", [PROF_UE_NO_RULE] = "no_rule",
			[PROF_UE_BAD_FRAME] = "bad_frame", [PROF_UE_BAD_PC] = "outside_mappings",
			[PROF_UE_NO_VMA] = "mappings_busy", [PROF_UE_FP] = "frame_pointers",
		};

		H("proffs_user_stacks_total", "counter", "Stored user stacks by how their walk ended.");
		for (int i = 0; i < PROF_UE_MAX; i++)
			if (ends[i] && i != PROF_UE_PENDING)
				buf__printf(out, "proffs_user_stacks_total{end=\"%s\"} %" PRIu64 "\n", ends[i], st.uends[i]);
	}
	H("proffs_unwind_tables", "gauge", "Files with unwind tables loaded, by kind.");
	buf__printf(out, "proffs_unwind_tables{kind=\"table\"} %" PRIu64 "\n", st.unw.tables);
	buf__printf(out, "proffs_unwind_tables{kind=\"frame_pointers\"} %" PRIu64 "\n", st.unw.fp_files);
	buf__printf(out, "proffs_unwind_tables{kind=\"failed\"} %" PRIu64 "\n", st.unw.failed_files);
	H("proffs_unwind_rows", "gauge", "Unwind table rows loaded.");
	buf__printf(out, "proffs_unwind_rows %" PRIu64 "\n", st.unw.rows);
	H("proffs_unwind_rules", "gauge", "Distinct unwind rules loaded (shared by all tables).");
	buf__printf(out, "proffs_unwind_rules %" PRIu64 "\n", st.unw.rules);
	H("proffs_unwind_table_bytes", "gauge", "Bytes of unwind rows and rules in use.");
	buf__printf(out, "proffs_unwind_table_bytes %" PRIu64 "\n", st.unw.table_bytes);
	H("proffs_unwind_map_bytes", "gauge", "Bytes preallocated for the unwind BPF maps.");
	buf__printf(out, "proffs_unwind_map_bytes %" PRIu64 "\n", st.unw.map_bytes);
	H("proffs_unwind_builds_total", "counter", "Unwind tables built, and freed (unused or for room).");
	buf__printf(out, "proffs_unwind_builds_total{event=\"built\"} %" PRIu64 "\n", st.unw.built);
	buf__printf(out, "proffs_unwind_builds_total{event=\"freed\"} %" PRIu64 "\n", st.unw.evicted);
	H("proffs_unwind_build_seconds_total", "counter", "Time the worker spent building tables.");
	buf__printf(out, "proffs_unwind_build_seconds_total %.3f\n", st.unw.build_ns / 1e9);
	H("proffs_unwind_pending_total", "counter", "Walks finished in user space from a stack copy, by outcome.");
	buf__printf(out, "proffs_unwind_pending_total{outcome=\"finished\"} %" PRIu64 "\n", st.pend_finished);
	buf__printf(out, "proffs_unwind_pending_total{outcome=\"expired\"} %" PRIu64 "\n", st.pend_expired);
	buf__printf(out, "proffs_unwind_pending_total{outcome=\"no_room\"} %" PRIu64 "\n", st.pend_dropped);
	H("proffs_sampled_cpus", "gauge", "CPUs with an attached sampling event.");
	buf__printf(out, "proffs_sampled_cpus %d\n", st.ncpus);
	H("proffs_processes_tracked", "gauge", "Processes in the process-info cache.");
	buf__printf(out, "proffs_processes_tracked %" PRIu64 "\n", st.procs);
	H("proffs_symbol_cache_files", "gauge", "Mapped files known to the symbol cache.");
	buf__printf(out, "proffs_symbol_cache_files %" PRIu64 "\n", st.dsos);
	H("proffs_symbol_cache_tables", "gauge", "Symbol tables loaded (one per build id).");
	buf__printf(out, "proffs_symbol_cache_tables %" PRIu64 "\n", st.symtabs);
	H("proffs_symbol_cache_symbols", "gauge", "User-space symbols held.");
	buf__printf(out, "proffs_symbol_cache_symbols %" PRIu64 "\n", st.symbols);
	H("proffs_kernel_symbols", "gauge", "Kernel symbols held (kallsyms).");
	buf__printf(out, "proffs_kernel_symbols %" PRIu64 "\n", st.kernel_symbols);
	H("proffs_symbol_cache_lookups_total", "counter", "User frame lookups, by result.");
	buf__printf(out, "proffs_symbol_cache_lookups_total{result=\"hit\"} %" PRIu64 "\n", st.sym_hits);
	buf__printf(out, "proffs_symbol_cache_lookups_total{result=\"miss\"} %" PRIu64 "\n", st.sym_misses);
	H("proffs_batches_total", "counter", "Batches written to the store.");
	buf__printf(out, "proffs_batches_total %" PRIu64 "\n", __atomic_load_n(&r->batches, __ATOMIC_RELAXED));
	H("proffs_batch_errors_total", "counter", "Batches the store refused.");
	buf__printf(out, "proffs_batch_errors_total %" PRIu64 "\n", __atomic_load_n(&r->append_errors, __ATOMIC_RELAXED));
	if (!getrusage(RUSAGE_SELF, &ru)) {
		double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
			     ru.ru_stime.tv_usec / 1e6;

		H("proffs_cpu_seconds_total", "counter", "CPU time of the daemon (user + system).");
		buf__printf(out, "proffs_cpu_seconds_total %.3f\n", cpu);
	}
	f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%*s %ld", &rss_pages) != 1)
			rss_pages = 0;
		fclose(f);
	}
	H("proffs_resident_memory_bytes", "gauge", "Resident set size of the daemon.");
	buf__printf(out, "proffs_resident_memory_bytes %ld\n", rss_pages * sysconf(_SC_PAGESIZE));
#undef H
}

/* Hands the open batch to the store. A refused batch is dropped (and
 * counted): keeping it would grow without bound if the store stays sick. */
static void flush(struct run *r)
{
	struct profile *p = NULL;
	int64_t t0, dur;
	int err;

	if (profiler__take(r->prof, &p, &t0, &dur))
		return;
	if (!p)
		return;
	__atomic_store_n(&r->last_batch_samples, (uint64_t)profile__total(p, 0), __ATOMIC_RELAXED);
	err = store__append(r->store, "cpu", t0, dur, p, r->extra, r->nextra);
	if (err) {
		pr_err("run: storing a batch failed: %s", strerror(-err));
		__atomic_add_fetch(&r->append_errors, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&r->batches, 1, __ATOMIC_RELAXED);
	}
	profile__free(p);
}

static void *sampler_thread(void *arg)
{
	struct run *r = arg;
	int64_t last_flush = now_mono_ns(), last_expire = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		int n = profiler__poll(r->prof, 250);
		int64_t now = now_mono_ns();

		if (n < 0)
			pr_warn("run: polling the sampler: %s", strerror(-n));
		if (now - last_flush >= r->interval_ns) {
			flush(r);
			last_flush = now;
		}
		if (now - last_expire >= 60 * 1000000000LL) {
			store__expire(r->store, now_s());
			last_expire = now;
		}
	}
	/* Whatever the ring still holds belongs in the last batch. */
	profiler__poll(r->prof, 0);
	flush(r);
	return NULL;
}

int cmd_run(int argc, char **argv)
{
	enum { O_BATCH = 256, O_CGROOT, O_PODSROOT, O_PID, O_ALLOW };
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "mount", required_argument, NULL, 'm' },
		{ "hz", required_argument, NULL, 'z' },
		{ "retention", required_argument, NULL, 'r' },
		{ "max-size", required_argument, NULL, 'x' },
		{ "label", required_argument, NULL, 'l' },
		{ "allow-other", no_argument, NULL, O_ALLOW },
		{ "help", no_argument, NULL, 'h' },
		/* hidden, for tests */
		{ "batch-interval", required_argument, NULL, O_BATCH },
		{ "cgroup-root", required_argument, NULL, O_CGROOT },
		{ "pods-root", required_argument, NULL, O_PODSROOT },
		{ "pid", required_argument, NULL, O_PID },
		{ NULL, 0, NULL, 0 },
	};
	struct store_opts so = { .dir = "/var/lib/proffs", .max_size = 4ULL << 30,
				 .retention_s = 7 * 86400 };
	struct mount_opts mo = { .mountpoint = "/prof" };
	struct profiler_opts po = { .hz = 19 };
	struct tree_opts to = { .metrics_cb = metrics_cb };
	char *dups[MAX_LABELS] = { 0 }, host[256];
	struct fsmount *fm = NULL;
	struct tree *tree = NULL;
	int64_t interval_s = 10;
	struct run r = { 0 };
	sigset_t sigs;
	int c, sig, err, ret = 1, ndups = 0;
	bool thread_started = false;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 's': so.dir = optarg; break;
		case 'm': mo.mountpoint = optarg; break;
		case 'z':
			v = strtol(optarg, &end, 10);
			if (*end || end == optarg || v < 1 || v > 10000) {
				fprintf(stderr, "proffs run: --hz wants a number from 1 to 10000, not '%s'\n", optarg);
				goto usage_err;
			}
			po.hz = v;
			break;
		case 'r':
			if (parse_duration(optarg, &so.retention_s) || so.retention_s <= 0) {
				fprintf(stderr, "proffs run: bad --retention '%s' (e.g. 6h, 7d)\n", optarg);
				goto usage_err;
			}
			break;
		case 'x':
			if (parse_size(optarg, &so.max_size) || so.max_size < (1 << 20)) {
				fprintf(stderr, "proffs run: bad --max-size '%s' (e.g. 512M, 4G; at least 1M)\n", optarg);
				goto usage_err;
			}
			break;
		case 'l': {
			const char *k, *val;

			if (ndups == MAX_LABELS) {
				fprintf(stderr, "proffs run: at most %d --label\n", MAX_LABELS);
				goto usage_err;
			}
			if (parse_label(optarg, &dups[ndups], &k, &val) || !*k || !*val) {
				fprintf(stderr, "proffs run: bad --label '%s' (want name=value)\n", optarg);
				goto usage_err;
			}
			ndups++;
			/* A repeated name: the last one wins. */
			size_t i;
			for (i = 0; i < r.nextra && strcmp(r.extra[i].name, k); i++)
				;
			r.extra[i].name = k;
			r.extra[i].value = val;
			if (i == r.nextra)
				r.nextra++;
			break;
		}
		case O_ALLOW: mo.allow_other = true; break;
		case O_BATCH:
			if (parse_duration(optarg, &interval_s) || interval_s <= 0) {
				fprintf(stderr, "proffs run: bad --batch-interval '%s'\n", optarg);
				goto usage_err;
			}
			break;
		case O_CGROOT: po.cgroup_root = optarg; break;
		case O_PODSROOT: po.pods_root = optarg; break;
		case O_PID: po.target_tgid = atoi(optarg); break;
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		default:
			if (optopt && optopt < 256)
				fprintf(stderr, "proffs run: bad option '-%c' (try --help)\n", optopt);
			else
				fprintf(stderr, "proffs run: bad option '%s' (try --help)\n", argv[optind - 1]);
			goto usage_err;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "proffs run: unexpected argument '%s'\n", argv[optind]);
		goto usage_err;
	}
	/* node = host name, unless --label node=... said otherwise. */
	{
		size_t i;

		for (i = 0; i < r.nextra && strcmp(r.extra[i].name, "node"); i++)
			;
		if (i == r.nextra && !gethostname(host, sizeof(host))) {
			host[sizeof(host) - 1] = 0;
			r.extra[r.nextra].name = "node";
			r.extra[r.nextra].value = host;
			r.nextra++;
		}
	}
	r.interval_ns = interval_s * 1000000000LL;
	r.retention_s = so.retention_s;

	/* Before any thread exists (libbpf, FUSE, ours): they inherit it. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	/* The default /prof usually does not exist yet on a fresh host. */
	if (mkdir(mo.mountpoint, 0755) && errno != EEXIST && errno != ENOTCONN)
		pr_warn("run: cannot create %s: %s", mo.mountpoint, strerror(errno));

	err = store__open(&r.store, &so);
	if (err) {
		pr_err("run: cannot open the store in %s: %s", so.dir, strerror(-err));
		goto out;
	}
	err = profiler__open(&r.prof, &po);
	if (err) {
		pr_err("run: cannot start sampling: %s", strerror(-err));
		goto out;
	}
	to.metrics_ctx = &r;
	tree = tree__new(r.store, &to);
	if (!tree) {
		pr_err("run: cannot build the tree: %s", strerror(errno));
		goto out;
	}
	err = fsmount__start(&fm, tree, &mo);
	if (err) {
		pr_err("run: cannot mount %s: %s", mo.mountpoint, strerror(-err));
		goto out;
	}
	err = pthread_create(&r.thread, NULL, sampler_thread, &r);
	if (err) {
		pr_err("run: cannot start the sampler thread: %s", strerror(err));
		goto out;
	}
	thread_started = true;
	pr_info("run: sampling at %d Hz, store %s, mounted at %s", po.hz, so.dir, mo.mountpoint);

	do {
		err = sigwait(&sigs, &sig);
	} while (err == EINTR);
	pr_info("run: %s, storing the last batch and unmounting", sig == SIGINT ? "SIGINT" : "SIGTERM");
	ret = 0;
out:
	if (thread_started) {
		__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
		pthread_join(r.thread, NULL);
	}
	if (fm)
		fsmount__stop(fm);
	if (tree)
		tree__free(tree);
	profiler__close(r.prof);
	if (r.store)
		store__close(r.store);
	for (int i = 0; i < ndups; i++)
		free(dups[i]);
	return ret;
usage_err:
	for (int i = 0; i < ndups; i++)
		free(dups[i]);
	return 2;
}
