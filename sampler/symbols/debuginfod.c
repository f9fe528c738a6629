/*
 * debuginfod.c - see debuginfod.h.
 *
 * One thread, one libdebuginfod client, one lookup at a time: lookups are
 * rare (once per stripped build id the host runs, then on a schedule),
 * and one at a time keeps what a slow server can cost to one thread. The
 * request table (build id -> state, tries, when next) is the negative
 * cache: a build id a server said it lacks is not asked for again for an
 * hour at first (dbgsched.h). libdebuginfod keeps a negative cache of its
 * own (cache_miss_s, 10 minutes); we set it to 0 in our cache directory
 * so that there is one schedule, ours.
 *
 * Limits the library does not enforce on its own are enforced in the
 * progress callback, which it calls about once a second while it waits
 * (curl_multi_wait with a 1 s timeout) and with every chunk that arrives:
 * the lookup's deadline (a server that accepts and never answers), the
 * file's size (a server that sends without end), and the daemon's stop.
 */
#include <dirent.h>
#include <stdatomic.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "sampler/symbols/debugfile.h"
#include "sampler/symbols/debuginfod.h"
#include "store/db/store.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

/* libdebuginfod, mapped by load_lib(). */
static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_err;

static void load_lib(void)
{
	void *h = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
	void *f[6];
	static const char *const names[6] = {
		"debuginfod_begin", "debuginfod_end", "debuginfod_find_debuginfo",
		"debuginfod_set_progressfn", "debuginfod_set_user_data", "debuginfod_get_user_data",
	};

	if (!h) {
		pr_err("debuginfod: cannot load %s: %s", DEBUGINFOD_SONAME, dlerror());
		lib_err = -ELIBACC;
		return;
	}
	for (int i = 0; i < 6; i++)
		if (!(f[i] = dlsym(h, names[i]))) {
			pr_err("debuginfod: %s lacks %s", DEBUGINFOD_SONAME, names[i]);
			lib_err = -ELIBACC;
			return; /* h stays mapped: harmless */
		}
	/* POSIX lets a function's address travel through void *. */
	memcpy(&lib.begin, &f[0], sizeof(f[0]));
	memcpy(&lib.end, &f[1], sizeof(f[1]));
	memcpy(&lib.find_debuginfo, &f[2], sizeof(f[2]));
	memcpy(&lib.set_progressfn, &f[3], sizeof(f[3]));
	memcpy(&lib.set_user_data, &f[4], sizeof(f[4]));
	memcpy(&lib.get_user_data, &f[5], sizeof(f[5]));
}

enum { R_WAIT, R_BUSY, R_DONE };

struct req {
	char bid[129];
	int state;
	unsigned tries;     /* lookups in a row that failed */
	enum dbg_outcome last;
	int64_t due_ns;     /* R_WAIT: not before (CLOCK_MONOTONIC) */
};

struct dbgd {
	struct dbgd_opts o;
	char *cache_dir;
	uint64_t max_file;  /* one file at most */
	pthread_t thread;
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	struct hmap reqs;     /* hash(bid) -> struct req * */
	bool stop, joined;
	uint64_t outcomes[DBG__N], evicted, dropped, fetched_bytes;
	_Atomic uint64_t cache_bytes;
	/* the lookup in flight (the fetcher's) */
	int64_t deadline_ns;
	bool aborted, past_deadline;
};

int dbgd__cache_path(const char *cache_dir, const char *bid, char *out, size_t size)
{
	int n = snprintf(out, size, "%s/%s/debuginfo", cache_dir, bid);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int dbgd__setenv(const char *urls, const char *cache_dir, int64_t timeout_s)
{
	char v[32];
	const char *u = urls ? urls : getenv(DEBUGINFOD_URLS_ENV_VAR);

	if (!u || !*u)
		return -ENOENT;
	if (urls)
		setenv(DEBUGINFOD_URLS_ENV_VAR, urls, 1);
	setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, cache_dir, 1);
	/* The library's own time limits, as a second line behind ours: its
	 * "commencing" timeout (no first 100 KB in that long) and its whole
	 * lookup. Not its size limit: with DEBUGINFOD_MAXSIZE set, 0.188
	 * leaks a stdio buffer (8 KB) per lookup (valgrind: a dprintf's
	 * buffer); our progress callback bounds the size instead. */
	snprintf(v, sizeof(v), "%" PRId64, timeout_s > 0 ? timeout_s : 30);
	setenv(DEBUGINFOD_TIMEOUT_ENV_VAR, v, 1);
	setenv(DEBUGINFOD_MAXTIME_ENV_VAR, v, 1);
	unsetenv(DEBUGINFOD_MAXSIZE_ENV_VAR);
	/* No progress lines on our stderr. */
	unsetenv(DEBUGINFOD_PROGRESS_ENV_VAR);
	unsetenv(DEBUGINFOD_VERBOSE_ENV_VAR);
	return 0;
}

static uint64_t bid_key(const char *bid)
{
	uint64_t k = hash64(bid, strlen(bid), 0xdb9d);

	return k ? k : 1;
}

/* ---- the cache's bound ---- */

/* Lists the cache's debug files; *v malloc'd (with idx the position in
 * *names, malloc'd build ids). */
static int cache_list(const char *dir, struct dbgcache_ent **v, char ***names, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0, ncap = 0;

	*v = NULL;
	*names = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char p[4096];
		struct stat st;

		if (!store__build_id_ok(de->d_name) ||
		    dbgd__cache_path(dir, de->d_name, p, sizeof(p)) || lstat(p, &st) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (GROW(*v, &cap, *n + 1) || GROW(*names, &ncap, *n + 1) ||
		    !((*names)[*n] = strdup(de->d_name)))
			break;
		(*v)[*n] = (struct dbgcache_ent){ .bytes = (uint64_t)st.st_size,
						  .mtime_ns = st.st_mtim.tv_sec * 1000000000LL +
							      st.st_mtim.tv_nsec,
						  .idx = *n };
		(*n)++;
	}
	closedir(d);
	return 0;
}

static void cache_remove(const char *dir, const char *bid)
{
	char p[4096];

	if (dbgd__cache_path(dir, bid, p, sizeof(p)))
		return;
	unlink(p);
	*strrchr(p, '/') = 0;
	rmdir(p); /* empty now, unless the library keeps more there */
}

uint64_t dbgd__cache_size(const char *cache_dir)
{
	struct dbgcache_ent *v;
	char **names;
	size_t n;
	uint64_t total = 0;

	if (cache_list(cache_dir, &v, &names, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		total += v[i].bytes;
		free(names[i]);
	}
	free(v);
	free(names);
	return total;
}

/* Deletes the oldest files until the cache is within its bound; keep (a
 * build id, may be NULL) stays. */
static void cache_bound(struct dbgd *d, const char *keep)
{
	struct dbgcache_ent *v;
	char **names;
	size_t n, k;
	uint64_t left;

	if (cache_list(d->cache_dir, &v, &names, &n))
		return;
	for (size_t i = 0; i < n; i++)
		v[i].keep = keep && !strcmp(names[i], keep);
	k = dbgcache__plan(v, n, d->o.cache_bytes, &left);
	for (size_t i = 0; i < k; i++) {
		pr_debug("debuginfod: cache over %" PRIu64 " bytes: dropping %s", d->o.cache_bytes,
			 names[v[i].idx]);
		cache_remove(d->cache_dir, names[v[i].idx]);
	}
	pthread_mutex_lock(&d->lock);
	d->evicted += k;
	pthread_mutex_unlock(&d->lock);
	atomic_store(&d->cache_bytes, left);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(v);
	free(names);
}

/* ---- one lookup ---- */

static int progress(debuginfod_client *c, long a, long b)
{
	struct dbgd *d = lib.get_user_data(c);
	bool stop;

	pthread_mutex_lock(&d->lock);
	stop = d->stop;
	pthread_mutex_unlock(&d->lock);
	if (now_mono_ns() > d->deadline_ns)
		d->past_deadline = true;
	/* a: bytes so far; b: the size announced, 0 until known. */
	if (stop || d->past_deadline || (a > 0 && (uint64_t)a > d->max_file) ||
	    (b > 0 && (uint64_t)b > d->max_file)) {
		d->aborted = true;
		return 1;
	}
	return 0;
}

/* Looks bid up; returns the outcome. */
static enum dbg_outcome fetch(struct dbgd *d, debuginfod_client *c, const char *bid)
{
	char *path = NULL;
	struct elf_info e;
	struct stat st;
	enum dbg_outcome o;
	int fd, err;

	d->deadline_ns = now_mono_ns() + d->o.timeout_s * 1000000000LL;
	d->aborted = d->past_deadline = false;
	fd = lib.find_debuginfo(c, (const unsigned char *)bid, 0, &path);
	if (fd < 0) {
		o = dbg_outcome__of(fd, d->aborted, d->past_deadline);
		pr_debug("debuginfod: %s: %s (%s)", bid, dbg_outcome__name(o), strerror(-fd));
		free(path);
		return o;
	}
	/* What arrived is the server's word only: check it before anyone
	 * reads it. The cache holds it under the build id we asked for. */
	err = fstat(fd, &st) ? -errno : (uint64_t)st.st_size > d->max_file ? -EFBIG : 0;
	if (!err)
		err = debugfile__read(fd, bid, &e);
	close(fd);
	if (err) {
		pr_debug("debuginfod: %s: the file sent is not its debug file (%s)", bid, strerror(-err));
		cache_remove(d->cache_dir, bid);
		free(path);
		return DBG_ERROR;
	}
	elfsym__fini(&e);
	pthread_mutex_lock(&d->lock);
	d->fetched_bytes += (uint64_t)st.st_size;
	pthread_mutex_unlock(&d->lock);
	pr_debug("debuginfod: %s: %s (%lld bytes)", bid, path, (long long)st.st_size);
	cache_bound(d, bid);
	if (d->o.ready)
		d->o.ready(d->o.ctx, bid, path);
	free(path);
	return DBG_HIT;
}

/* The waiting request due first, made busy; NULL with *wait_ns the time
 * until one is due (or -1: none). d->lock held. */
static struct req *next_due(struct dbgd *d, int64_t *wait_ns)
{
	struct req *best = NULL;
	int64_t now = now_mono_ns();

	*wait_ns = -1;
	for (size_t i = 0; i < d->reqs.cap; i++) {
		struct req *r = d->reqs.keys[i] ? d->reqs.vals[i] : NULL;

		if (r && r->state == R_WAIT && (!best || r->due_ns < best->due_ns))
			best = r;
	}
	if (best && best->due_ns > now) {
		*wait_ns = best->due_ns - now;
		return NULL;
	}
	if (best)
		best->state = R_BUSY;
	return best;
}

static void *fetcher_main(void *arg)
{
	struct dbgd *d = arg;
	debuginfod_client *c = lib.begin();

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-fetch");

	if (!c)
		pr_warn("debuginfod: cannot start a client; no debug files are fetched");
	else {
		lib.set_user_data(c, d);
		lib.set_progressfn(c, progress);
	}
	pthread_mutex_lock(&d->lock);
	while (!d->stop && c) {
		int64_t wait_ns;
		struct req *r = next_due(d, &wait_ns);
		char bid[129];
		enum dbg_outcome o;

		if (!r) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			if (wait_ns < 0 || wait_ns > 60 * 1000000000LL)
				wait_ns = 60 * 1000000000LL;
			ts.tv_sec += wait_ns / 1000000000LL;
			ts.tv_nsec += wait_ns % 1000000000LL;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&d->wake, &d->lock, &ts);
			continue;
		}
		snprintf(bid, sizeof(bid), "%s", r->bid);
		pthread_mutex_unlock(&d->lock);
		o = fetch(d, c, bid);
		pthread_mutex_lock(&d->lock);
		/* Stopped by us: not the server's answer. */
		if (d->stop && d->aborted && !d->past_deadline)
			break;
		d->outcomes[o]++;
		r = hmap__get(&d->reqs, bid_key(bid));
		if (!r)
			continue;
		r->last = o;
		if (o == DBG_HIT) {
			r->state = R_DONE;
			r->tries = 0;
		} else {
			r->state = R_WAIT;
			r->tries++;
			r->due_ns = now_mono_ns() +
				    dbgsched__delay_s(o, r->tries, d->o.retry_s,
						      d->o.retry_max_s) * 1000000000LL;
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (c)
		lib.end(c);
	return NULL;
}

int dbgd__start(struct dbgd **out, const struct dbgd_opts *o)
{
	struct dbgd *d;
	pthread_condattr_t ca;
	char p[4096];
	FILE *f;
	int err;

	*out = NULL;
	pthread_once(&lib_once, load_lib);
	if (lib_err)
		return lib_err;
	if (!o->cache_dir || !o->cache_bytes)
		return -EINVAL;
	if (mkdir(o->cache_dir, 0700) && errno != EEXIST)
		return -errno;
	/* One negative cache, ours (see the top of this file). */
	snprintf(p, sizeof(p), "%s/cache_miss_s", o->cache_dir);
	if ((f = fopen(p, "we"))) {
		fputs("0\n", f);
		fclose(f);
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->o = *o;
	d->o.timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
	d->max_file = o->cache_bytes / 2 ? o->cache_bytes / 2 : 1;
	d->cache_dir = strdup(o->cache_dir);
	pthread_mutex_init(&d->lock, NULL);
	/* The fetcher's waits are deadlines on CLOCK_MONOTONIC (a cond's
	 * default clock is CLOCK_REALTIME: every wait would be over at once,
	 * and the thread would spin). */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (!d->cache_dir) {
		err = -ENOMEM;
		goto fail;
	}
	d->o.cache_dir = d->cache_dir;
	cache_bound(d, NULL); /* a smaller bound than last run's */
	err = -pthread_create(&d->thread, NULL, fetcher_main, d);
	if (err)
		goto fail;
	*out = d;
	return 0;
fail:
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d->cache_dir);
	free(d);
	return err;
}

void dbgd__halt(struct dbgd *d)
{
	if (!d || d->joined)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	d->joined = true;
}

void dbgd__stop(struct dbgd *d)
{
	if (!d)
		return;
	dbgd__halt(d);
	hmap__drain(&d->reqs, hmap__free_val, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d->cache_dir);
	free(d);
}

int dbgd__request(struct dbgd *d, const char *bid)
{
	uint64_t k;
	struct req *r;
	int err = 0;

	if (!d)
		return 0;
	if (!store__build_id_ok(bid))
		return -EINVAL;
	k = bid_key(bid);
	pthread_mutex_lock(&d->lock);
	if (hmap__get(&d->reqs, k))
		goto out; /* known: its schedule decides */
	if (d->reqs.len >= DBGD_MAX_REQS || !(r = calloc(1, sizeof(*r)))) {
		d->dropped++;
		err = -ENOSPC;
		goto out;
	}
	snprintf(r->bid, sizeof(r->bid), "%s", bid);
	r->state = R_WAIT;
	/* Due now, after those asked for before it: first come, first
	 * asked (a hash table's order would let a late one jump the queue). */
	r->due_ns = now_mono_ns();
	if (hmap__put(&d->reqs, k, r)) {
		free(r);
		err = -ENOSPC;
		d->dropped++;
		goto out;
	}
	pthread_cond_signal(&d->wake);
out:
	pthread_mutex_unlock(&d->lock);
	return err;
}

void dbgd__retry_now(struct dbgd *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->reqs.cap; i++) {
		struct req *r = d->reqs.keys[i] ? d->reqs.vals[i] : NULL;

		if (r && r->state == R_WAIT && r->last != DBG_MISS)
			r->due_ns = 0;
	}
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
}

void dbgd__stats(struct dbgd *d, struct dbgd_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	memcpy(st->outcomes, d->outcomes, sizeof(st->outcomes));
	st->evicted = d->evicted;
	st->dropped = d->dropped;
	st->fetched_bytes = d->fetched_bytes;
	for (size_t i = 0; i < d->reqs.cap; i++) {
		struct req *r = d->reqs.keys[i] ? d->reqs.vals[i] : NULL;

		st->waiting += r && r->state == R_WAIT;
	}
	pthread_mutex_unlock(&d->lock);
	st->cache_bytes = atomic_load(&d->cache_bytes);
}
