/*
 * test_debuginfod: looking for debug files (sampler/symbols/).
 *  - the schedule: when a build id is asked for again after a miss, an
 *    error or a timeout, and how a lookup's end maps to its outcome;
 *  - the cache's plan (oldest first, the file just fetched kept) and its
 *    bound applied to a real cache directory at start;
 *  - what makes a file a build id's debug file (debugfile.h): that build
 *    id, a symbol table; anything else refused;
 *  - the fetcher with libdebuginfod itself, from a file:// server (the
 *    library's own, no network): a hit is checked, cached, counted and
 *    announced; a corrupt file is an error and leaves no cached file; a
 *    missing one is a miss; an error is asked again on retry_now;
 *  - DWARF lines (dwline.h) of this very binary, with absolute paths,
 *    and the bound on what a file's DWARF may hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sampler/symbols/dbgsched.h"
#include "sampler/symbols/debugfile.h"
#include "sampler/symbols/debuginfod.h"
#include "sampler/symbols/dwline.h"
#include "store/util/util.h"
#include "tests/unit/rss.h"
#include "tests/test.h"

__attribute__((noinline)) int dbg_test_marker(int x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

/* This binary's build id (the test's own debug file comes from it). */
static void own_bid(char *out, size_t size)
{
	struct elf_info e;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	out[0] = 0;
	if (fd >= 0 && !elfsym__read(fd, false, &e)) {
		snprintf(out, size, "%s", e.build_id);
		elfsym__fini(&e);
	}
	if (fd >= 0)
		close(fd);
}

/* Runs fmt with a and b for its two %s, and this process's pid for
 * every "@EXE@" (a shell's /proc/self/exe is the shell's own). */
static int sh(const char *fmt, const char *a, const char *b)
{
	char cmd[1024], exe[64], out[2048];
	const char *s = cmd;
	size_t o = 0;

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)getpid());
	while (*s && o + strlen(exe) + 1 < sizeof(out)) {
		if (!strncmp(s, "@EXE@", 5)) {
			o += (size_t)sprintf(out + o, "%s", exe);
			s += 5;
		} else {
			out[o++] = *s++;
		}
	}
	out[o] = 0;
	return system(out);
}

static void t_schedule(const char *dir)
{
	(void)dir;
	CHECK(dbgsched__delay_s(DBG_ERROR, 1, 60, 0) == 60 && dbgsched__delay_s(DBG_ERROR, 2, 60, 0) == 120 &&
		      dbgsched__delay_s(DBG_TIMEOUT, 3, 60, 0) == 240,
	      "error, timeout: 60 s, doubling");
	CHECK(dbgsched__delay_s(DBG_ERROR, 40, 60, 0) == 3600, "error: at most an hour (40 tries: no overflow)");
	CHECK(dbgsched__delay_s(DBG_MISS, 1, 60, 0) == 3600 && dbgsched__delay_s(DBG_MISS, 2, 60, 0) == 7200 &&
		      dbgsched__delay_s(DBG_MISS, 100, 60, 0) == 86400,
	      "miss: an hour, doubling, at most a day");
	CHECK(dbgsched__delay_s(DBG_ERROR, 1, 0, 0) == 60 && dbgsched__delay_s(DBG_MISS, 1, -5, 0) == 3600,
	      "base <= 0 is 60 s");
	CHECK(dbgsched__delay_s(DBG_ERROR, 9, 1, 2) == 2 && dbgsched__delay_s(DBG_TIMEOUT, 9, 1, 2) == 2 &&
		      dbgsched__delay_s(DBG_MISS, 1, 1, 2) == 60,
	      "a cap lowers errors' and timeouts' waits, not a miss's");
	CHECK(dbg_outcome__of(-ENOENT, 0, 0) == DBG_MISS, "404: miss");
	CHECK(dbg_outcome__of(-ETIME, 0, 0) == DBG_TIMEOUT && dbg_outcome__of(-ETIMEDOUT, 0, 0) == DBG_TIMEOUT,
	      "the library's timeouts: timeout");
	CHECK(dbg_outcome__of(-ECONNREFUSED, 0, 0) == DBG_ERROR && dbg_outcome__of(-EIO, 0, 0) == DBG_ERROR,
	      "refused, I/O: error");
	CHECK(dbg_outcome__of(-ECONNABORTED, 1, 1) == DBG_TIMEOUT, "stopped by us at the deadline: timeout");
	CHECK(dbg_outcome__of(-ECONNABORTED, 1, 0) == DBG_ERROR, "stopped by us for size: error");
	CHECK(!strcmp(dbg_outcome__name(DBG_LOCAL), "local") && !strcmp(dbg_outcome__name(DBG_HIT), "hit") &&
		      !strcmp(dbg_outcome__name(DBG__N), "error"),
	      "outcome names (an unknown one reads error)");
}

static void t_cache_plan(const char *dir)
{
	struct dbgcache_ent e[5] = {
		{ .bytes = 100, .mtime_ns = 50, .idx = 0 },
		{ .bytes = 300, .mtime_ns = 10, .idx = 1 },
		{ .bytes = 200, .mtime_ns = 30, .idx = 2, .keep = 1 },
		{ .bytes = 100, .mtime_ns = 10, .idx = 3 },
		{ .bytes = 100, .mtime_ns = 70, .idx = 4 },
	};
	uint64_t left;
	size_t k;

	(void)dir;
	k = dbgcache__plan(e, 5, 450, &left);
	CHECK(k == 2 && e[0].idx == 1 && e[1].idx == 3 && left == 400,
	      "over by 350: the two oldest go (ties by index), %zu evicted, %llu left", k,
	      (unsigned long long)left);
	CHECK(e[4].idx == 2, "the file just fetched sorts last");
	k = dbgcache__plan(e, 5, 100, &left);
	CHECK(k == 4 && left == 200, "a bound under the kept file: all but it go (%zu, %llu left)", k,
	      (unsigned long long)left);
	k = dbgcache__plan(e, 5, 10000, &left);
	CHECK(k == 0 && left == 800, "under the bound: nothing goes");
	CHECK(dbgcache__plan(NULL, 0, 0, &left) == 0 && left == 0, "an empty cache");
}

/* A file of n bytes at <dir>/<bid>/debuginfo, fetched age_s ago. */
static void cache_file(const char *dir, const char *bid, size_t n, int age_s)
{
	char p[512];
	struct timespec ts[2];
	FILE *f;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, bid);
	mkdir(p, 0700);
	strcat(p, "/debuginfo");
	f = fopen(p, "w");
	for (size_t i = 0; f && i < n; i++)
		fputc('x', f);
	if (f)
		fclose(f);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age_s;
	ts[1] = ts[0];
	fd = open(p, O_RDONLY);
	if (fd >= 0) {
		futimens(fd, ts);
		close(fd);
	}
}

static bool exists(const char *dir, const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return access(p, F_OK) == 0;
}

static void t_cache_bound(const char *dir)
{
	char cache[256];
	struct dbgd *d = NULL;
	struct dbgd_stats st;
	int err;

	snprintf(cache, sizeof(cache), "%s/cache", dir);
	mkdir(cache, 0700);
	cache_file(cache, "aa01", 400 << 10, 400);
	cache_file(cache, "aa02", 400 << 10, 300);
	cache_file(cache, "aa03", 400 << 10, 200);
	cache_file(cache, "aa04", 400 << 10, 100);
	cache_file(cache, "not-a-build-id", 4 << 20, 999);
	CHECK(dbgd__cache_size(cache) == 1600 << 10, "the cache's size counts debug files only: %llu",
	      (unsigned long long)dbgd__cache_size(cache));
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	unsetenv("DEBUGINFOD_URLS");
	err = dbgd__start(&d, &(struct dbgd_opts){ .cache_dir = cache, .cache_bytes = 1 << 20 });
	CHECK(!err, "start over a cache 1.6 MB of a 1 MB bound: %s", strerror(-err));
	dbgd__stats(d, &st);
	CHECK(!exists(cache, "aa01/debuginfo") && !exists(cache, "aa02/debuginfo") &&
		      exists(cache, "aa03/debuginfo") && exists(cache, "aa04/debuginfo"),
	      "the two oldest are deleted, the two newest stay");
	CHECK(!exists(cache, "aa01") && exists(cache, "not-a-build-id/debuginfo"),
	      "their directories go; what is not a build id's is not ours to delete");
	CHECK(st.evicted == 2 && st.cache_bytes == 800 << 10, "figures: %llu evicted, %llu bytes",
	      (unsigned long long)st.evicted, (unsigned long long)st.cache_bytes);
	CHECK(dbgd__request(d, "xyz") == -EINVAL && dbgd__request(d, "abc") == -EINVAL,
	      "a request that is not a build id is refused");
	dbgd__stop(d);
	CHECK(dbgd__start(&d, &(struct dbgd_opts){ .cache_dir = cache, .cache_bytes = 0 }) == -EINVAL && !d,
	      "no bound: refused");
}

static void t_debugfile(const char *dir)
{
	char bid[64], dbg[256], strip[256], junk[256];
	struct elf_info e;
	int fd, err;
	FILE *f;

	own_bid(bid, sizeof(bid));
	snprintf(dbg, sizeof(dbg), "%s/own.debug", dir);
	snprintf(strip, sizeof(strip), "%s/own.stripped", dir);
	snprintf(junk, sizeof(junk), "%s/junk", dir);
	CHECK(bid[0] && !sh("objcopy --only-keep-debug @EXE@ %s && objcopy --strip-all @EXE@ %s",
			    dbg, strip),
	      "objcopy: this binary's debug file and a stripped copy (build id %s)", bid);
	fd = open(dbg, O_RDONLY);
	err = debugfile__read(fd, bid, &e);
	CHECK(!err && e.has_symtab && e.nsyms > 0, "the debug file of this build id: %s, %zu symbols",
	      strerror(-err), e.nsyms);
	if (!err)
		elfsym__fini(&e);
	CHECK(debugfile__read(fd, "0123456789abcdef0123456789abcdef01234567", &e) == -ESTALE && !e.syms,
	      "another build id's: -ESTALE, nothing held");
	close(fd);
	fd = open(strip, O_RDONLY);
	CHECK(debugfile__read(fd, bid, &e) == -ENODATA && !e.syms, "no symbol table: -ENODATA");
	close(fd);
	f = fopen(junk, "w");
	if (f) {
		fputs("<html>404 not found</html>\n", f);
		fclose(f);
	}
	fd = open(junk, O_RDONLY);
	CHECK(debugfile__read(fd, bid, &e) == -ENOEXEC, "not ELF (a proxy's error page): -ENOEXEC");
	close(fd);
	CHECK(debugfile__read_mem("\177ELF", 4, bid, &e) == -ENOEXEC, "a cut ELF header: -ENOEXEC");
}

struct ready {
	pthread_mutex_t mu;
	int n;
	char bid[129], path[512];
};

static void on_ready(void *ctx, const char *bid, const char *path)
{
	struct ready *r = ctx;

	pthread_mutex_lock(&r->mu);
	r->n++;
	snprintf(r->bid, sizeof(r->bid), "%s", bid);
	snprintf(r->path, sizeof(r->path), "%s", path);
	pthread_mutex_unlock(&r->mu);
}

/* Waits up to 10 s for the fetcher's figures to reach `lookups` lookups. */
static void wait_lookups(struct dbgd *d, uint64_t lookups, struct dbgd_stats *st)
{
	for (int i = 0; i < 1000; i++) {
		uint64_t n = 0;

		dbgd__stats(d, st);
		for (int o = 0; o < DBG__N; o++)
			n += st->outcomes[o];
		if (n >= lookups)
			return;
		usleep(10000);
	}
}

static void t_fetcher(const char *dir)
{
	char bid[64], srv[256], cache[256], url[300], p[600];
	const char *bad = "00112233445566778899aabbccddeeff00112233";
	const char *none = "ffeeddccbbaa99887766554433221100ffeeddcc";
	struct ready r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct dbgd *d = NULL;
	struct dbgd_stats st;
	struct stat sb;
	int err;

	own_bid(bid, sizeof(bid));
	snprintf(srv, sizeof(srv), "%s/srv", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	/* The layout a debuginfod server answers: buildid/<id>/debuginfo. */
	CHECK(!sh("mkdir -p %s/buildid/%s", srv, bid) && !sh("mkdir -p %s/buildid/%s", srv, bad), "server tree");
	snprintf(p, sizeof(p), "%s/buildid/%s/debuginfo", srv, bid);
	CHECK(!sh("objcopy --only-keep-debug @EXE@ %s%s", p, ""), "the server's debug file");
	snprintf(p, sizeof(p), "%s/buildid/%s/debuginfo", srv, bad);
	CHECK(!sh("head -c 5000 /dev/urandom > %s%s", p, ""), "and a corrupt one");
	snprintf(url, sizeof(url), "file://%s", srv);
	CHECK(!dbgd__setenv(url, cache, 5), "setenv: %s", url);
	CHECK(getenv("DEBUGINFOD_URLS") && !strcmp(getenv("DEBUGINFOD_URLS"), url) &&
		      !strcmp(getenv("DEBUGINFOD_CACHE_PATH"), cache),
	      "the library's settings are ours");
	err = dbgd__start(&d, &(struct dbgd_opts){ .cache_dir = cache, .cache_bytes = 64 << 20,
						   .timeout_s = 5, .retry_s = 1, .ready = on_ready,
						   .ctx = &r });
	if (err == -ELIBACC) {
		CHECK(0, "libdebuginfod cannot be loaded (scripts/deps.sh installs libdebuginfod1)");
		return;
	}
	CHECK(!err, "start: %s", strerror(-err));
	CHECK(!dbgd__request(d, bid) && !dbgd__request(d, bid), "request (twice: one lookup)");
	wait_lookups(d, 1, &st);
	dbgd__cache_path(cache, bid, p, sizeof(p));
	pthread_mutex_lock(&r.mu);
	CHECK(st.outcomes[DBG_HIT] == 1 && r.n == 1 && !strcmp(r.bid, bid) && !strcmp(r.path, p),
	      "a hit, announced once with its cached path (%d: %s)", r.n, r.path);
	pthread_mutex_unlock(&r.mu);
	CHECK(!stat(p, &sb) && st.cache_bytes == (uint64_t)sb.st_size && st.fetched_bytes == st.cache_bytes,
	      "cached and counted: %llu bytes", (unsigned long long)st.cache_bytes);
	CHECK(!dbgd__request(d, bad), "request a build id whose file is corrupt");
	wait_lookups(d, 2, &st);
	dbgd__cache_path(cache, bad, p, sizeof(p));
	CHECK(st.outcomes[DBG_ERROR] == 1 && access(p, F_OK) && r.n == 1,
	      "corrupt: an error, nothing cached, nothing announced");
	CHECK(!dbgd__request(d, none), "request a build id the server lacks");
	wait_lookups(d, 3, &st);
	CHECK(st.outcomes[DBG_MISS] == 1 && st.waiting == 2,
	      "missing: a miss; two build ids wait for their next try (%llu)", (unsigned long long)st.waiting);
	/* The corrupt one's retry is due in 1 s anyway: retry_now only
	 * makes it sooner; the miss waits its hour. */
	dbgd__retry_now(d);
	wait_lookups(d, 4, &st);
	CHECK(st.outcomes[DBG_ERROR] == 2 && st.outcomes[DBG_MISS] == 1, "retry_now asks the error again, not the miss");
	dbgd__stop(d);
	dbgd__stop(NULL);
}

static void t_dwline(const char *dir)
{
	char copy[4200];
	int fd = -1;
	struct elf_info e;
	struct dwline *d;
	const char *file = NULL;
	uint64_t bytes = 0, vaddr = 0;
	int line = 0;
	long rss;

	/* A copy of this binary, so that only libdw maps it. */
	snprintf(copy, sizeof(copy), "%s/exe-copy", dir);
	CHECK(!sh("cp @EXE@ %s%s", copy, "") && (fd = open(copy, O_RDONLY | O_CLOEXEC)) >= 0 &&
		      !elfsym__read(fd, true, &e),
	      "this binary's symbols");
	for (size_t i = 0; i < e.nsyms; i++)
		if (!strcmp(e.strs + e.syms[i].name, "dbg_test_marker"))
			vaddr = e.syms[i].addr;
	elfsym__fini(&e);
	d = dwline__open(fd, 0, &bytes);
	CHECK(d && bytes > 0, "DWARF of this binary: %llu bytes of debug sections", (unsigned long long)bytes);
	CHECK(vaddr && dwline__lookup(d, vaddr + 1, &file, &line) && file[0] == '/' &&
		      strstr(file, "tests/unit/test_debuginfod.c") && line >= 33 && line <= 37,
	      "dbg_test_marker+1: %s:%d (absolute, its own lines)", file ? file : "-", line);
	CHECK(!dwline__lookup(d, 1, &file, &line), "an address no unit covers: none");
	/* Its sections are not compressed: libdw read them through its map. */
	rss = file_rss_kib(copy);
	dwline__unmap(d);
	CHECK(rss > 0 && file_rss_kib(copy) == 0, "the file's pages given back: %ld KiB mapped, then %ld",
	      rss, file_rss_kib(copy));
	CHECK(dwline__lookup(d, vaddr + 1, &file, &line) && strstr(file, "tests/unit/test_debuginfod.c"),
	      "and read again after: %s:%d", file ? file : "-", line);
	dwline__close(d);
	errno = 0;
	CHECK(!dwline__open(fd, 1, &bytes) && errno == EFBIG, "over the bound: refused (EFBIG)");
	close(fd);
	fd = open("/dev/null", O_RDONLY);
	errno = 0;
	CHECK(!dwline__open(fd, 0, NULL) && errno == ENODATA, "no ELF: ENODATA");
	close(fd);
	dwline__close(NULL);
}

static const struct test_scenario scenarios[] = {
	{ "schedule", t_schedule },
	{ "cache_plan", t_cache_plan },
	{ "cache_bound", t_cache_bound },
	{ "debugfile", t_debugfile },
	{ "fetcher", t_fetcher },
	{ "dwline", t_dwline },
};

TEST_SCENARIOS_MAIN(scenarios)
