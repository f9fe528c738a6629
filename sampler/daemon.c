/*
 * daemon.c - `proffs run`: the daemon. One process: a sampler thread
 * (BPF ring -> batch, a batch into the store every interval, retention),
 * the FUSE threads serving the tree, and the main thread waiting for
 * SIGINT/SIGTERM. Its flags are run_opts.c's; cmd_run wires the parts
 * together in order and stop_all takes them apart.
 *
 * Signals are blocked in every thread before any is created (threads
 * inherit the mask) and taken with sigwait() by the main thread alone:
 * libfuse would otherwise swallow a SIGTERM in one of its threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
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
#include "sampler/offcpu/offcpu.h"
#include "sampler/privs.h"
#include "sampler/run_opts.h"
#include "sampler/profiler.h"
#include "sampler/push/push.h"
#include "sampler/scrape/scrape.h"
#include "sampler/symbols/debuginfod.h"
#include "sampler/symbols/namer.h"
#include "sampler/symbols/symbolize.h"
#include "fs/render/render.h"
#include "store/db/store.h"
#include "fs/tree/tree.h"
#include "store/util/prom.h"
#include "store/util/util.h"

struct run {
	struct store *store;
	struct profiler *prof;
	const struct store_label *extra; /* --label and node (struct run_opts') */
	size_t nextra;
	int64_t interval_ns;
	int64_t retention_s;
	bool offcpu;
	volatile int stop; /* set by the main thread, read by the sampler thread */
	int64_t trim_ns;   /* flush()'s last heap_trim (sampler thread) */
	pthread_t thread;
	struct pusher *pusher; /* --push, else NULL */
	/* set by fsmount__start() before the first request, read by /metrics */
	struct fsmount *fm;
	/* Appends come from the sampler and the scrape thread; the store
	 * takes one at a time. Held only around a store call, never around
	 * a transfer; the sampler only try-locks it (a busy store postpones
	 * its flush to the next poll), so the drain never waits for it. */
	pthread_mutex_t store_mu;
	struct scraper *scraper;
	/* Issue 30: names found later (always) and debuginfod (when a server
	 * is set). Set before the sampler thread starts, read by callbacks
	 * of the loader and the fetcher. */
	struct namer *namer;
	struct dbgd *dbgd;
	struct symbolizer *sym;
	/* figures for /metrics, written by the sampler thread */
	uint64_t batches, append_errors, last_batch_samples;
	int64_t stored_until_ns; /* the store's complete mark, as last set */
};

/* Issue 30's figures: debug information looked for, names found later,
 * the files recorded for /binaries. */
static void symbol_metrics(struct run *r, struct buf *out)
{
	struct dbgd_stats ds;
	struct namer_stats ns;

	dbgd__stats(r->dbgd, &ds);
	namer__stats(r->namer, &ns);
	ds.outcomes[DBG_LOCAL] = ns.local;
	prom__family(out, "proffs_debuginfo_lookups_total", PROM_COUNTER,
		     "Debug information looked for, for files without a symbol table, by outcome "
		     "(local: a debug file on this host; the others are debuginfod's answers).");
	for (int i = 0; i < DBG__N; i++)
		prom__u64_by(out, "proffs_debuginfo_lookups_total", "outcome",
			     dbg_outcome__name(i), ds.outcomes[i]);
	prom__gauge(out, "proffs_debuginfod_cache_bytes",
		    "Bytes of fetched debug files kept (bounded by --debuginfod-cache).", ds.cache_bytes);
	prom__counter(out, "proffs_debuginfod_cache_evictions_total",
		      "Fetched debug files deleted to stay within the bound.", ds.evicted);
	prom__counter(out, "proffs_debuginfod_fetched_bytes_total",
		      "Bytes of debug files fetched that checked out.", ds.fetched_bytes);
	prom__gauge(out, "proffs_debuginfod_waiting",
		    "Build ids waiting for their next lookup (after a miss, an error or a timeout).",
		    ds.waiting);
	prom__counter(out, "proffs_frames_named_later_total",
		      "Stored frames without a name that were named once their symbols turned up.",
		      ns.named);
	prom__counter(out, "proffs_symbols_found_later_total",
		      "Build ids whose symbols turned up after frames of them were stored.", ns.resolved);
	prom__gauge(out, "proffs_symbols_waiting",
		    "Build ids with stored frames without a name and no symbols yet.", ns.waiting);
	prom__counter(out, "proffs_binaries_recorded_total",
		      "Files recorded for /binaries by this daemon.", ns.binaries);
}

static void metrics_cb(struct buf *out, void *ctx)
{
	struct run *r = ctx;
	struct rusage ru;
	long rss_pages = 0;
	FILE *f;

	/* The sampler and its modules write their own lines (profiler.c). */
	profiler__metrics(r->prof, r->offcpu, out);
	symbol_metrics(r, out);
	prom__counter(out, "proffs_batches_total", "Batches written to the store.",
		      __atomic_load_n(&r->batches, __ATOMIC_RELAXED));
	prom__counter(out, "proffs_batch_errors_total", "Batches the store refused.",
		      __atomic_load_n(&r->append_errors, __ATOMIC_RELAXED));
	/* A reader that wants every sample up to a moment waits for this
	 * to pass it, instead of for a drain interval and some. */
	prom__family(out, "proffs_stored_until_seconds", PROM_GAUGE,
		     "Wall-clock time before which every sample taken is stored and readable.");
	prom__f64(out, "proffs_stored_until_seconds", NULL, 0,
		  __atomic_load_n(&r->stored_until_ns, __ATOMIC_RELAXED) / 1e9);
	if (!getrusage(RUSAGE_SELF, &ru)) {
		double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
			     ru.ru_stime.tv_usec / 1e6;

		prom__family(out, "proffs_cpu_seconds_total", PROM_COUNTER,
			     "CPU time of the daemon (user + system).");
		prom__f64(out, "proffs_cpu_seconds_total", NULL, 0, cpu);
	}
	f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%*s %ld", &rss_pages) != 1)
			rss_pages = 0;
		fclose(f);
	}
	prom__family(out, "proffs_resident_memory_bytes", PROM_GAUGE, "Resident set size of the daemon.");
	prom__i64(out, "proffs_resident_memory_bytes", NULL, 0, (int64_t)rss_pages * sysconf(_SC_PAGESIZE));
	/* The mount's render cache and FUSE figures, as `proffs mount` has
	 * them: one /metrics for both commands. */
	fsmount__metrics(__atomic_load_n(&r->fm, __ATOMIC_ACQUIRE), out);
	pusher__metrics(__atomic_load_n(&r->pusher, __ATOMIC_ACQUIRE), out);
	scraper__metrics(r->scraper, out);
}

/* Stores closed windows of one type and frees their profiles; returns
 * the samples they held. A refused batch is dropped and counted. */
static uint64_t store_windows(struct run *r, const char *type, struct minute_batch *mb, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++) {
		int err;

		total += (uint64_t)profile__total(mb[i].p, 0);
		err = store__append(r->store, type, mb[i].start_ns, mb[i].duration_ns, mb[i].p,
				    r->extra, r->nextra);
		if (err) {
			pr_err("run: storing a %s batch failed: %s", type, strerror(-err));
			__atomic_add_fetch(&r->append_errors, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&r->batches, 1, __ATOMIC_RELAXED);
		}
		profile__free(mb[i].p);
	}
	return total;
}

/*
 * Users may keep every CPU busy; the drain (the ring holds about a second
 * of worst-case records), the answer to SIGTERM and a reader's render
 * must not wait for them. nice -10 does that only among the threads of
 * one scheduling group: with autogroup on (Debian's kernel), every session
 * is a group of its own and the groups share the CPUs equally whatever
 * their threads' nice. Under busy.sh's load (ten sessions) renders of
 * 4-20 ms of CPU waited 30-104 ms to run, at nice -10. So a daemon that
 * leads its own session (systemd starts each service so; `setsid`) gives
 * its group nice -10 as well: the wait fell to 0-16 ms. The symbolizer's
 * loader inherits it too (its work per file is capped, and a starved
 * loader leaves frames unresolved). Started inside
 * another session (a shell's) it leaves that group alone: raising it would
 * raise everything else the session runs.
 */
static void raise_priority(void)
{
	char on = '0';
	int fd;

	if (setpriority(PRIO_PROCESS, 0, -10))
		pr_warn("run: cannot raise the daemon's priority: %s", strerror(errno));
	fd = open("/proc/sys/kernel/sched_autogroup_enabled", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &on, 1) != 1)
			on = '0';
		close(fd);
	}
	if (on != '1')
		return; /* no autogroup: the nice value is what counts */
	if (getsid(0) != getpid()) {
		pr_info("run: started inside another session, whose scheduling group shares the CPUs "
			"with every other session's whatever the daemon's nice; on a busy host, run it "
			"as a service or with setsid");
		return;
	}
	fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "-10", 3) != 3)
		pr_warn("run: cannot raise the priority of the daemon's scheduling group: %s",
			strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* The FUSE threads' side of privs__drop (see mount_opts.on_serve). */
static void drop_in_fuse_thread(void *ctx)
{
	int err = privs__drop();

	if (err)
		pr_warn("run: the FUSE thread cannot drop capabilities: %s", strerror(-err));
}

/* Hands the windows that end by cut_ns (all of them when `all`) to the
 * store, then marks the store complete up to cut_ns. A refused batch is
 * dropped (and counted): keeping it would grow without bound if the store
 * stays sick. Unless wait, returns -EBUSY (batches untouched) while the
 * scrape thread is appending; the caller tries again at its next poll. */
/* How often flush() gives freed heap back to the kernel. */
#define TRIM_EVERY_NS (60 * 1000000000LL)

static int flush(struct run *r, int64_t cut_ns, bool all, bool wait)
{
	struct minute_batch mb[MINUTES_SLOTS];
	uint64_t total;
	size_t n = 0;
	int err;

	if (wait)
		pthread_mutex_lock(&r->store_mu);
	else if (pthread_mutex_trylock(&r->store_mu))
		return -EBUSY;
	err = profiler__take(r->prof, cut_ns, all, mb, &n);
	if (err)
		pr_err("run: closing a batch failed: %s", strerror(-err));
	total = store_windows(r, "cpu", mb, n);
	if (n)
		__atomic_store_n(&r->last_batch_samples, total, __ATOMIC_RELAXED);
	err = profiler__take_offcpu(r->prof, cut_ns, all, mb, &n);
	if (err)
		pr_err("run: closing an offcpu batch failed: %s", strerror(-err));
	store_windows(r, "offcpu", mb, n);
	/* Every sample taken before the cut was drained before the take (the
	 * cut waits CUT_GRACE_NS for records in flight), so minutes ending by
	 * it are complete: `latest` may name them now. But a sample still
	 * held (a walk parked for its table, up to 5 s; an off-CPU block
	 * awaiting its user part) joins its window's batch later, as another
	 * block: its minute is not complete until then. */
	{
		int64_t held = profiler__held_since(r->prof);

		int64_t mark = held < cut_ns ? held : cut_ns;

		err = store__set_complete(r->store, mark);
		if (!err && mark > __atomic_load_n(&r->stored_until_ns, __ATOMIC_RELAXED))
			__atomic_store_n(&r->stored_until_ns, mark, __ATOMIC_RELAXED);
	}
	if (err)
		pr_warn("run: recording the complete mark failed: %s", strerror(-err));
	pthread_mutex_unlock(&r->store_mu);
	/* New locations: the namer looks at them now, not at its next tick. */
	if (n)
		namer__kick(r->namer);
	/* A batch and the maps re-read since are freed in bulk: give the
	 * pages back, so the resident figure is what the daemon holds (the
	 * budget), not what its threads' malloc arenas once touched. Once a
	 * minute: each trim is a walk of the arenas and a madvise per free
	 * run, whose TLB shootdowns interrupt every CPU (after each 10 s
	 * batch it was a tenth of the daemon's CPU time). */
	if (now_mono_ns() - r->trim_ns >= TRIM_EVERY_NS) {
		heap_trim();
		r->trim_ns = now_mono_ns();
	}
	return 0;
}

/* How long after a cut the ring is drained: a sample taken just before the
 * cut on another CPU may still be being written into the ring. */
#define CUT_GRACE_NS (100 * 1000000LL)

/* How long the stop waits for walks parked for a table. */
#define SETTLE_NS (500 * 1000000LL)

/* The sampler thread's longest sleep. */
#define POLL_MAX_MS 250

/* The next cut after wall-clock time `wall`: cuts fall on multiples of the
 * window (a divisor of a minute), so minute boundaries are always cuts. */
static int64_t next_cut(const struct run *r, int64_t wall)
{
	int64_t w = minutes__window_ns(r->interval_ns);
	/* An interval longer than the window: cut at its multiples only. */
	int64_t step = r->interval_ns > w ? r->interval_ns / w * w : w;

	return (wall / step + 1) * step;
}

static void *sampler_thread(void *arg)
{
	struct run *r = arg;
	int64_t cut = next_cut(r, now_ns()), last_expire = 0;

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-sampler");

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		/* At most POLL_MAX_MS: samples wait in the ring (it holds a second of worst-case records, far more of typical ones)
		 * and each wakeup costs the daemon more than its records do;
		 * exec records and the stop (profiler__wake) end a wait early. */
		int64_t wall = now_ns(), wait = (cut + CUT_GRACE_NS - wall) / 1000000;
		int n = profiler__poll(r->prof, wait < 0 ? 0 : wait > POLL_MAX_MS ? POLL_MAX_MS : (int)wait);
		int64_t now = now_mono_ns();

		if (n < 0)
			pr_warn("run: polling the sampler: %s", strerror(-n));
		wall = now_ns();
		if (wall >= cut + CUT_GRACE_NS) {
			profiler__poll(r->prof, 0);
			/* A clock stepped forward skips the cuts in between
			 * (one take closes their windows). */
			if (!flush(r, cut, false, false))
				cut = next_cut(r, wall - CUT_GRACE_NS);
		} else if (cut - wall > r->interval_ns + minutes__window_ns(r->interval_ns)) {
			/* The clock stepped back: cut from the new time. */
			if (!flush(r, cut, false, false))
				cut = next_cut(r, wall);
		}
		if (now - last_expire >= 60 * 1000000000LL && !pthread_mutex_trylock(&r->store_mu)) {
			store__expire(r->store, now_s());
			pthread_mutex_unlock(&r->store_mu);
			last_expire = now;
		}
	}
	/* Whatever the ring still holds belongs in the last batch, and so
	 * do the walks parked for a table (half a second of the 2 s that
	 * a stop may take). */
	profiler__poll(r->prof, 0);
	profiler__settle(r->prof, SETTLE_NS);
	flush(r, now_ns(), true, true);
	return NULL;
}

static int scrape_append(void *ctx, const char *type, int64_t time_ns, int64_t duration_ns,
			 const struct profile *p, const struct store_label *labels, size_t nlabels)
{
	struct run *r = ctx;
	int err;

	pthread_mutex_lock(&r->store_mu);
	err = store__append(r->store, type, time_ns, duration_ns, p, labels, nlabels);
	pthread_mutex_unlock(&r->store_mu);
	return err;
}

/* The symbolizer's loader read a file (its lock held: only queue). */
static void on_file_read(void *ctx, const struct store_binary *b, bool has_symtab, int debug)
{
	struct run *r = ctx;

	namer__file_read(r->namer, b, has_symtab, debug);
}

/* debuginfod's thread: a checked debug file of bid is in the cache. */
static void on_debug_ready(void *ctx, const char *bid, const char *path)
{
	struct run *r = ctx;

	symbolizer__symbols_changed(r->sym, bid);
	namer__ready(r->namer, bid);
}

/* The namer found symbols for bid: new samples should use them. */
static void on_symbols_changed(void *ctx, const char *bid)
{
	struct run *r = ctx;

	symbolizer__symbols_changed(r->sym, bid);
}

/* A test knob: the integer value of environment variable name, or def. */
static int64_t env_i64(const char *name, int64_t def)
{
	const char *e = getenv(name);

	return e && *e ? atoll(e) : def;
}

/* Issue 30's threads: debuginfod's fetcher (dbg_on: a server is set),
 * the namer, and the symbolizer's hooks into them. After the capabilities
 * went (threads inherit them) and before the first sample (the loader
 * calls the hooks). A failure leaves its part off, with a warning. */
static void start_names(struct run *r, const struct run_opts *o, const char *dcache, bool dbg_on)
{
	int err;

	r->sym = profiler__symbolizer(r->prof);
	if (dbg_on) {
		struct dbgd_opts dopt = { .cache_dir = dcache, .cache_bytes = o->dbg_cache,
					  .timeout_s = env_i64("PROFFS_DEBUGINFOD_TIMEOUT_S", 30),
					  .retry_s = env_i64("PROFFS_DEBUGINFOD_RETRY_S", 60),
					  .retry_max_s = env_i64("PROFFS_DEBUGINFOD_RETRY_MAX_S", 0),
					  .ready = on_debug_ready, .ctx = r };

		err = dbgd__start(&r->dbgd, &dopt);
		if (err)
			pr_warn("run: debuginfod is off: %s", strerror(-err));
		else
			pr_info("run: fetching debug files from %s", getenv("DEBUGINFOD_URLS"));
	}
	{
		struct namer_opts nopt = { .store = r->store, .store_mu = &r->store_mu,
					   .cache_dir = dcache, .dbgd = r->dbgd,
					   .symbols_changed = on_symbols_changed, .ctx = r,
					   .tick_ms = env_i64("PROFFS_NAMER_TICK_MS", 0) };
		struct symbolizer_hooks h = { .debug_cache = dcache, .file_read = on_file_read,
					      .ctx = r };

		err = namer__start(&r->namer, &nopt);
		if (err)
			pr_warn("run: frames stored without a name will stay so: %s", strerror(-err));
		else if ((err = symbolizer__set_hooks(r->sym, &h)))
			pr_warn("run: no /binaries records: %s", strerror(-err));
	}
}

/* --push and --scrape, once sampling runs. Returns 0 or -errno (logged;
 * the daemon then stops). The scrape targets become the scraper's. */
static int start_outputs(struct run *r, struct run_opts *o)
{
	int err;

	if (o->push.url) {
		const char *e;

		/* Complete: its last batch is in, one drain interval after
		 * its end. The PROFFS_PUSH_* variables are test knobs. */
		o->push.settle_s = o->interval_s + 5;
		if ((e = getenv("PROFFS_PUSH_SETTLE_S")))
			o->push.settle_s = atoll(e);
		if ((e = getenv("PROFFS_PUSH_BACKOFF_MAX_S")))
			o->push.backoff_max_s = atoll(e);
		if ((e = getenv("PROFFS_PUSH_MAX_AGE_S")))
			o->push.max_age_s = atoll(e);
		struct pusher *pp = NULL;

		err = pusher__start(&pp, r->store, &o->push);
		__atomic_store_n(&r->pusher, pp, __ATOMIC_RELEASE);
		if (err) {
			pr_err("run: cannot start pushing to %s: %s", o->push.url, strerror(-err));
			return err;
		}
	}
	if (o->ntargets) {
		struct scrape_opts sco = { .targets = o->targets, .ntargets = o->ntargets,
					   .interval_ns = o->scrape_s * 1000000000LL,
					   .extra = r->extra, .nextra = r->nextra,
					   .append = scrape_append, .append_ctx = r };

		o->targets = NULL; /* the scraper's now, even on failure */
		r->scraper = scraper__new(&sco);
		err = r->scraper ? scraper__start(r->scraper) : -errno;
		if (err) {
			pr_err("run: cannot start scraping: %s", strerror(-err));
			return err;
		}
		pr_info("run: scraping %zu target%s every %" PRId64 "s", o->ntargets,
			o->ntargets == 1 ? "" : "s", o->scrape_s);
	}
	return 0;
}

/* Stops what cmd_run started (any part may be missing), in the order
 * that leaves no thread reading freed memory, the last batch stored. */
static void stop_all(struct run *r, struct tree *tree, struct unmounter *um, bool dropped,
		     bool thread_started)
{
	int64_t t_stop;
	int err;

	t_stop = now_mono_ns();
	/* Before the sampler's last flush: nothing appends after that. */
	scraper__free(r->scraper);
	r->scraper = NULL;
	if (thread_started) {
		__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
		profiler__wake(r->prof);
		pthread_join(r->thread, NULL);
		pr_debug("run: last batch stored after %lld ms", (long long)(now_mono_ns() - t_stop) / 1000000);
	}
	/* The request loop ends first, while our own requests still reach
	 * the mount (fsmount__end_loop says why); then, without
	 * CAP_SYS_ADMIN, the helper detaches it, and fsmount__stop finds
	 * it gone. */
	if (r->fm && fsmount__end_loop(r->fm))
		pr_warn("run: the FUSE request loop did not end; aborting the connection");
	if (r->fm && dropped && (err = privs__unmount(um)))
		pr_warn("run: the unmount helper failed: %s", strerror(-err));
	else if (r->fm && dropped)
		fsmount__detached(r->fm);
	if (r->fm)
		fsmount__stop(__atomic_exchange_n(&r->fm, NULL, __ATOMIC_ACQ_REL));
	pr_debug("run: unmounted after %lld ms", (long long)(now_mono_ns() - t_stop) / 1000000);
	/* After the mount: /metrics reads the pusher's figures. */
	pusher__stop(r->pusher);
	/* Issue 30's threads, after the mount (/metrics reads them), in the
	 * order that leaves no callback pointing at freed memory: the loader
	 * stops calling the namer, the fetcher stops (no more ready calls),
	 * the namer stops (it may still ask the halted fetcher), then the
	 * fetcher goes. */
	if (r->sym)
		symbolizer__set_hooks(r->sym, NULL);
	dbgd__halt(r->dbgd);
	namer__stop(r->namer);
	r->namer = NULL;
	dbgd__stop(r->dbgd);
	r->dbgd = NULL;
	if (tree)
		tree__free(tree);
	profiler__close(r->prof);
	/* After the profiler: its unwinder's worker asks the helper for
	 * table chunks until it stops (freed before, the worker read the
	 * freed helper: ASan in san/it/mount_multi). */
	privs__unmounter_free(um);
	if (r->store)
		store__close(r->store);
	pr_debug("run: stopped after %lld ms", (long long)(now_mono_ns() - t_stop) / 1000000);
}

int cmd_run(int argc, char **argv)
{
	struct run_opts o;
	struct tree_opts to = { .metrics_cb = metrics_cb };
	char mp_abs[PATH_MAX];
	struct tree *tree = NULL;
	struct unmounter *um = NULL;
	bool dropped = false;
	struct run r = { .store_mu = PTHREAD_MUTEX_INITIALIZER };
	char dcache[PATH_MAX];
	bool dbg_on = false;
	sigset_t sigs;
	int sig, err, ret = 1;
	bool thread_started = false;

	ret = run_opts__parse(&o, argc, argv);
	if (ret) {
		run_opts__fini(&o);
		return ret == 1 ? 0 : 2;
	}
	ret = 1;
	r.extra = o.extra;
	r.nextra = o.nextra;
	r.offcpu = o.po.offcpu;
	r.interval_ns = o.po.interval_ns;
	r.retention_s = o.so.retention_s;

	/* debuginfod reads its settings from the environment: set them while
	 * no thread exists (setenv is not thread-safe). No server: off. */
	snprintf(dcache, sizeof(dcache), "%s/debuginfod", o.so.dir);
	dbg_on = !dbgd__setenv(o.dbg_urls, dcache, env_i64("PROFFS_DEBUGINFOD_TIMEOUT_S", 30));

	/* Before any thread exists (libbpf, FUSE, ours): they inherit it. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	/* Before any thread exists: Linux keeps the nice value per thread,
	 * and they inherit it. */
	raise_priority();

	/* The default /prof usually does not exist yet on a fresh host. */
	if (mkdir(o.mo.mountpoint, 0755) && errno != EEXIST && errno != ENOTCONN)
		pr_warn("run: cannot create %s: %s", o.mo.mountpoint, strerror(errno));

	/* While we are one thread with signals blocked: the helper that will
	 * unmount the tree once our own privileges are gone. It finds the
	 * mount by its absolute path in the kernel's mount table. */
	if (!realpath(o.mo.mountpoint, mp_abs))
		snprintf(mp_abs, sizeof(mp_abs), "%s", o.mo.mountpoint);
	err = privs__start_unmounter(mp_abs, &um);
	if (err)
		pr_warn("run: no unmount helper (%s): keeping all privileges", strerror(-err));

	err = store__open(&r.store, &o.so);
	if (err) {
		pr_err("run: cannot open the store in %s: %s", o.so.dir, strerror(-err));
		goto out;
	}
	if (um) {
		o.po.unw_chunk_fd = privs__unwind_chunk;
		o.po.unw_chunk_ctx = um;
	}
	err = profiler__open(&r.prof, &o.po);
	if (err) {
		pr_err("run: cannot start sampling: %s", strerror(-err));
		goto out;
	}
	/* A kernel that refused it: the daemon runs on without the type. */
	r.offcpu = o.po.offcpu = profiler__has_offcpu(r.prof);
	to.metrics_ctx = &r;
	if (um) {
		o.mo.on_serve = drop_in_fuse_thread;
		/* fusectl is root's: once dropped, only the helper may. */
		o.mo.abort_conn = privs__abort;
		o.mo.abort_ctx = um;
	}
	tree = tree__new(r.store, &to);
	if (!tree) {
		pr_err("run: cannot build the tree: %s", strerror(errno));
		goto out;
	}
	o.mo.spill_dir = o.so.dir;
	err = fsmount__start(&r.fm, tree, &o.mo);
	if (err) {
		pr_err("run: cannot mount %s: %s", o.mo.mountpoint, strerror(-err));
		goto out;
	}
	/* BPF is attached and the tree mounted: from here on the daemon reads
	 * what local users control, with no more power than that needs. The
	 * FUSE threads dropped theirs when they started; the sampler thread
	 * and the symbolizer's loader start after this and inherit it. */
	if (um) {
		err = privs__drop();
		if (err)
			pr_warn("run: cannot drop capabilities: %s", strerror(-err));
		else
			pr_info("run: capabilities dropped but %s; no_new_privs set", privs__kept());
		dropped = !err;
	}
	start_names(&r, &o, dcache, dbg_on);
	err = pthread_create(&r.thread, NULL, sampler_thread, &r);
	if (err) {
		pr_err("run: cannot start the sampler thread: %s", strerror(err));
		goto out;
	}
	thread_started = true;
	if (start_outputs(&r, &o))
		goto out;
	pr_info("run: sampling at %d Hz%s, store %s, mounted at %s", o.po.hz,
		o.po.offcpu ? " and off-CPU time" : "", o.so.dir, o.mo.mountpoint);

	sig = fsmount__wait_signal(r.fm, &sigs);
	pr_info("run: %s, storing the last batch and unmounting", sig == SIGINT ? "SIGINT" : "SIGTERM");
	ret = 0;
out:
	stop_all(&r, tree, um, dropped, thread_started);
	run_opts__fini(&o);
	return ret;
}
