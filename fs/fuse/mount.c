/*
 * mount.c - the lifetime of a mount (see mount.h): a stale mount left by
 * a crash is detached before mounting; requests are served by a libfuse
 * loop in a background thread; an unmount from outside turns into the
 * process's own SIGTERM; and stopping must end that loop even while
 * readers hold files open.
 *
 * Stopping: libfuse checks for the session's exit only between requests,
 * so fsmount__end_loop() sends one (a stat of a fresh name) while the
 * mount is still attached here; fsmount__stop() then unmounts and, as a
 * last resort, aborts the connection through fusectl (itself, or through
 * the caller's abort_conn when it gave up the privilege). Unmounting alone
 * is no way to end the loop: a copy of the mount in another mount
 * namespace keeps the connection, and our workers blocked on it, alive.
 * The final unmount is lazy so that the mountpoint is free at once.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fs/fuse/fuse_int.h"
#include "store/util/prom.h"
#include "store/util/util.h"

#define MAX_THREADS 16

static void *loop_main(void *arg)
{
	struct fsmount *m = arg;
	struct fuse_loop_config *cfg;
	int err;

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-fuse");

	if (m->on_serve)
		m->on_serve(m->on_serve_ctx);
	cfg = fuse_loop_cfg_create();
	if (cfg) {
		fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
		fuse_loop_cfg_set_clone_fd(cfg, 0);
	}
	err = fuse_session_loop_mt(m->se, cfg);
	if (err)
		pr_debug("fuse loop ended: %d", err);
	fuse_loop_cfg_destroy(cfg);
	/* Unmounted from outside (fusermount3 -u, umount): nothing is served
	 * any more, so ask the process to shut down the way SIGTERM does;
	 * its signal-waiting thread takes it (the mask is inherited). */
	if (!atomic_load(&m->stopping)) {
		pr_warn("%s was unmounted from outside; shutting down", m->mountpoint);
		kill(getpid(), SIGTERM);
	}
	return NULL;
}

/* A mountpoint whose FUSE daemon died answers ENOTCONN; detach it.
 * statfs, unlike stat, is never answered from the kernel's attribute
 * cache, so it sees a dead connection at once. */
static void detach_stale(const char *mp)
{
	struct statvfs sv;

	if (statvfs(mp, &sv) == 0 || errno != ENOTCONN)
		return;
	pr_warn("%s: stale mount (transport endpoint not connected), detaching",
		mp);
	if (umount2(mp, MNT_DETACH))
		pr_warn("%s: umount2: %s", mp, strerror(errno));
}

static void fsmount__free(struct fsmount *m)
{
	if (m->se)
		fuse_session_destroy(m->se);
	cache__free(m->cache);
	inotab__fini(&m->inos);
	free(m->mountpoint);
	free(m);
}

int fsmount__start(struct fsmount **out, struct tree *t,
		   const struct mount_opts *o)
{
	char opts[256];
	char *argv[] = { "proffs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fsmount *m;
	struct stat st;
	int err;

	*out = NULL;
	detach_stale(o->mountpoint);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->t = t;
	m->uid = getuid();
	m->gid = getgid();
	m->on_serve = o->on_serve;
	m->on_serve_ctx = o->on_serve_ctx;
	m->abort_conn = o->abort_conn;
	m->abort_ctx = o->abort_ctx;
	m->mountpoint = realpath(o->mountpoint, NULL);
	if (!m->mountpoint) {
		err = -errno;
		pr_err("mountpoint %s: %s", o->mountpoint, strerror(errno));
		goto err_free;
	}
	if (stat(m->mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		err = -ENOTDIR;
		pr_err("mountpoint %s: not a directory", m->mountpoint);
		goto err_free;
	}
	m->cache = cache__new(o->cache_bytes);
	if (!m->cache || inotab__init(&m->inos)) {
		err = -ENOMEM;
		goto err_free;
	}
	if (o->spill_dir && (err = cache__spill_to(m->cache, o->spill_dir)))
		pr_info("render cache: in memory (%s cannot hold its file: %s)", o->spill_dir,
			strerror(-err));
	snprintf(opts, sizeof(opts),
		 "ro,default_permissions,fsname=proffs,subtype=proffs%s",
		 o->allow_other ? ",allow_other" : "");
	m->se = fuse_session_new(&args, &fsmount__ops, sizeof(fsmount__ops), m);
	fuse_opt_free_args(&args);
	if (!m->se) {
		err = -EINVAL;
		pr_err("fuse_session_new failed");
		goto err_free;
	}
	if (fuse_session_mount(m->se, m->mountpoint)) {
		err = -EIO;
		pr_err("cannot mount FUSE at %s", m->mountpoint);
		goto err_free;
	}
	m->mounted = true;
	/* Published before the loop runs: /metrics may be read at once. */
	*out = m;
	err = pthread_create(&m->loop, NULL, loop_main, m);
	if (err) {
		*out = NULL;
		err = -err;
		goto err_unmount;
	}
	m->loop_started = true;
	/* Remember which FUSE connection is ours (see fsmount__stop). */
	if (stat(m->mountpoint, &st) == 0)
		m->dev = st.st_dev;
	pr_info("mounted at %s", m->mountpoint);
	return 0;

err_unmount:
	fuse_session_unmount(m->se);
err_free:
	fsmount__free(m);
	return err;
}

static void *poke_main(void *arg)
{
	struct stat st;

	stat((const char *)arg, &st);
	free(arg);
	return NULL;
}

/* Sends one request through the mount so that a worker wakes up, sees
 * the session exited and ends the loop (libfuse only checks between
 * requests). The path is new each time so no negative entry hides it. */
static void poke(struct fsmount *m)
{
	static atomic_uint seq;
	pthread_attr_t attr;
	pthread_t th;
	char *p;

	if (asprintf(&p, "%s/.proffs-stop-%d-%u", m->mountpoint, (int)getpid(),
		     atomic_fetch_add(&seq, 1)) < 0)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, poke_main, p))
		free(p);
	pthread_attr_destroy(&attr);
}

/* Last resort: abort our connection through fusectl, which fails every
 * pending and future request and wakes every worker. */
static void abort_conn(struct fsmount *m)
{
	char p[64];
	FILE *f;

	if (m->abort_conn) {
		int err = m->abort_conn(m->abort_ctx);

		if (err)
			pr_warn("cannot abort the FUSE connection: %s", strerror(-err));
		return;
	}
	if (!m->dev)
		return;
	snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%u/abort",
		 minor(m->dev));
	if (access(p, F_OK))
		mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	f = fopen(p, "w");
	if (!f) {
		pr_warn("cannot abort FUSE connection: %s: %s", p, strerror(errno));
		return;
	}
	fputs("1", f);
	fclose(f);
}

/* libfuse skips the unmount when it believes the connection is already
 * gone; make sure no mount of ours (now dead: the device fd is closed, so
 * this stat cannot hang) stays at the mountpoint. */
static void ensure_unmounted(struct fsmount *m)
{
	struct stat st;

	if (stat(m->mountpoint, &st) == 0 ? st.st_dev != m->dev || !m->dev
					  : errno != ENOTCONN)
		return;
	pr_warn("%s: still mounted after unmount, detaching", m->mountpoint);
	if (umount2(m->mountpoint, MNT_DETACH))
		pr_warn("%s: umount2: %s", m->mountpoint, strerror(errno));
}

/* Waits up to ms for the loop thread to end. */
static bool join_ms(pthread_t th, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return pthread_timedjoin_np(th, NULL, &ts) == 0;
}

int fsmount__end_loop(struct fsmount *m)
{
	if (!m || !m->loop_started || m->loop_joined)
		return 0;
	atomic_store(&m->stopping, true);
	fuse_session_exit(m->se);
	/* A poke's request is answered in microseconds when a worker is
	 * free; one busy rendering takes its turn. */
	for (int i = 0; i < 8 && !m->loop_joined; i++) {
		poke(m);
		m->loop_joined = join_ms(m->loop, 50 + 25 * i);
	}
	return m->loop_joined ? 0 : -ETIMEDOUT;
}

void fsmount__detached(struct fsmount *m)
{
	if (m)
		m->mounted = false;
}

void fsmount__stop(struct fsmount *m)
{
	bool joined;

	if (!m)
		return;
	fsmount__end_loop(m);
	joined = m->loop_joined;
	if (m->loop_started && !joined) {
		/* Unmounting ends the connection when no file is open and no
		 * other namespace holds a copy of the mount. */
		fuse_session_unmount(m->se);
		m->mounted = false;
		joined = join_ms(m->loop, 300);
		if (!joined) {
			abort_conn(m);
			pthread_join(m->loop, NULL);
		}
	}
	/* Lazy: a reader still holding a file open keeps its (now dead) file
	 * but the mountpoint is free at once. Closing the device fd in
	 * fuse_session_destroy() then fails its further reads with ENOTCONN. */
	if (m->mounted)
		fuse_session_unmount(m->se);
	fuse_session_destroy(m->se);
	m->se = NULL;
	ensure_unmounted(m);
	pr_info("unmounted %s", m->mountpoint);
	fsmount__free(m);
}

/* Requests that show someone is reading: renders (misses and waits),
 * lookups, opens, directory listings. */
static uint64_t activity(struct fsmount *m)
{
	struct cache_stats cs;

	cache__stats(m->cache, &cs);
	return cs.misses + cs.waits + atomic_load(&m->n_lookup) + atomic_load(&m->n_open) +
	       atomic_load(&m->n_readdir);
}

int fsmount__wait_signal(struct fsmount *m, const sigset_t *sigs)
{
	const struct timespec second = { 1, 0 };
	uint64_t seen = 0, held, forgot, bytes;
	const int64_t idle_ns = FSMOUNT_IDLE_S * 1000000000LL;
	int64_t busy_ns = now_mono_ns(), pruned_ns = 0, now;
	bool dropped = true, trim = false;
	uint64_t names = m ? tree__names_version(m->t) : 0;

	for (;;) {
		int sig = sigtimedwait(sigs, NULL, &second);

		if (sig > 0)
			return sig;
		if (!m)
			continue;
		now = now_mono_ns();
		/* Frames stored without a name were named (SPEC §2's one
		 * exception): complete minutes the kernel cached for a day
		 * read differently now. Their sizes and pages go, so the next
		 * stat or read asks again (from this thread, not a worker:
		 * the kernel may wait on pages a worker is filling). */
		if (tree__names_version(m->t) != names) {
			size_t n = 0;
			uint64_t *inos = inotab__held_files(&m->inos, &n);

			names = tree__names_version(m->t);
			for (size_t i = 0; i < n; i++)
				fuse_lowlevel_notify_inval_inode(m->se, inos[i], 0, 0);
			free(inos);
			atomic_fetch_add(&m->n_renamed, 1);
		}
		/* Renders kept their freed blocks in the heap (ops.c): once
		 * reads stop, back to handing them back, and the free pages
		 * go now (after a prune, the second after, once its FORGETs
		 * came in). Once per pause: each trim madvises every free run
		 * again, a TLB shootdown each (the sampler trims its own frees
		 * once a minute). */
		if (trim) {
			heap_keep(false);
			heap_trim();
			trim = false;
		}
		inotab__stats(&m->inos, &held, &forgot, &bytes);
		uint64_t act = activity(m);

		if (act != seen) {
			seen = act;
			busy_ns = now;
			dropped = false;
			/* A long walk: bound the table while it goes on. */
			if (held > INO_PRUNE_BUSY &&
			    now - pruned_ns >= INO_PRUNE_BUSY_GAP_S * 1000000000LL) {
				fsmount__prune(m);
				pruned_ns = now;
				seen = activity(m); /* its own lookups (prune.c) */
			}
		} else if (!dropped && now - busy_ns >= idle_ns) {
			if (held > INO_PRUNE_IDLE) {
				fsmount__prune(m);
				pruned_ns = now;
				/* Its own lookups are not reads: with more than
				 * INO_PRUNE_IDLE inodes in use it would otherwise
				 * prune again every FSMOUNT_IDLE_S. */
				seen = activity(m);
				trim = true; /* next second */
			} else {
				heap_keep(false);
				heap_trim();
			}
			dropped = true;
		}
	}
}

void fsmount__metrics(struct fsmount *m, struct buf *out)
{
	static const char fuse_reqs[] = "proffs_fuse_requests_total";
	struct cache_stats cs;

	if (!m)
		return;
	cache__stats(m->cache, &cs);
	prom__counter(out, "proffs_render_cache_hits_total",
		      "Renders served from the cache.", cs.hits);
	prom__counter(out, "proffs_render_cache_misses_total",
		      "Renders started because the cache had no entry.", cs.misses);
	prom__counter(out, "proffs_render_cache_waits_total",
		      "Requests that waited for a render already in progress.", cs.waits);
	prom__counter(out, "proffs_render_cache_evictions_total",
		      "Entries dropped to stay within the bound.", cs.evictions);
	prom__counter(out, "proffs_render_cache_failures_total",
		      "Renders that failed.", cs.failures);
	prom__gauge(out, "proffs_render_cache_bytes",
		    "Bytes held by the render cache.", cs.bytes);
	prom__gauge(out, "proffs_render_cache_file_bytes",
		    "Of those, bytes in its file (page cache the kernel may reclaim; the rest is heap).",
		    cs.file_bytes);
	prom__gauge(out, "proffs_render_cache_entries",
		    "Entries in the render cache.", cs.entries);
	prom__gauge(out, "proffs_render_cache_max_bytes",
		    "Bound of the render cache.", cs.max_bytes);

	prom__family(out, fuse_reqs, PROM_COUNTER, "FUSE requests by operation.");
	prom__u64_by(out, fuse_reqs, "op", "lookup", m->n_lookup);
	prom__u64_by(out, fuse_reqs, "op", "getattr", m->n_getattr);
	prom__u64_by(out, fuse_reqs, "op", "opendir", m->n_readdir);
	prom__u64_by(out, fuse_reqs, "op", "open", m->n_open);
	prom__u64_by(out, fuse_reqs, "op", "read", m->n_read);
	prom__u64_by(out, fuse_reqs, "op", "mutation", m->n_erofs);
	prom__counter(out, "proffs_fuse_negative_lookups_total",
		      "Lookups of paths that do not exist.", m->n_negative);
	prom__counter(out, "proffs_fuse_handle_lookups_total",
		      "Lookups of . and .. (file handles of NFS re-exports).", m->n_dot);
	prom__counter(out, "proffs_fuse_read_bytes_total",
		      "Bytes returned by reads.", m->n_read_bytes);
	prom__counter(out, "proffs_fuse_render_errors_total",
		      "Renders that failed while serving a request.", m->n_render_errors);
	uint64_t ni, nf, ib;

	inotab__stats(&m->inos, &ni, &nf, &ib);
	prom__gauge(out, "proffs_fuse_inodes", "Inodes the kernel holds, and the last 4096 it forgot (NFS handles).", ni + nf);
	prom__gauge(out, "proffs_fuse_inodes_held", "Of those, inodes the kernel holds.", ni);
	prom__gauge(out, "proffs_fuse_inode_bytes", "Memory of the inode table.", ib);
	prom__counter(out, "proffs_fuse_prunes_total",
		      "Times the kernel was asked to drop the dentries nobody uses (a bound on the inode table).",
		      m->n_prunes);
	prom__counter(out, "proffs_fuse_names_invalidations_total",
		      "Times frames stored without a name were named later and the kernel was told to drop what it cached of files.",
		      m->n_renamed);
}
