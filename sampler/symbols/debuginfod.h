/*
 * debuginfod.h - fetching debug files of stripped code from debuginfod
 * servers (DEBUGINFOD_URLS or `proffs run --debuginfod URL`), on a thread
 * of its own, with libdebuginfod (elfutils): its HTTP client, server list,
 * cache layout and protocol are the ones gdb, perf and systemd use, and
 * none of it is ours to write. The library is loaded when first started
 * (dlopen), not linked: it brings libcurl's libraries, which would slow
 * every `proffs cat` down.
 *
 * Requests are build ids; a build id is asked for once, then again on a
 * schedule after a miss, an error or a timeout (dbgsched.h), never while
 * a request for it is in flight. Each lookup is bounded in time and size
 * (our progress callback stops it: a server that hangs or sends without
 * end costs this thread a timeout, nothing else). A file that arrives is
 * checked (debugfile.h: ELF, that build id, a symbol table) before anyone
 * is told of it; a bad one is deleted. The cache, in the store's
 * directory, is kept under its bound, oldest files first.
 */
#ifndef PROFFS_DEBUGINFOD_H
#define PROFFS_DEBUGINFOD_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/symbols/dbgsched.h"

struct dbgd;

struct dbgd_opts {
	const char *cache_dir; /* where files go: <cache_dir>/<build id>/debuginfo */
	uint64_t cache_bytes;  /* bound of what the cache holds */
	int64_t timeout_s;     /* one lookup, whole (0: 30) */
	int64_t retry_s;       /* first wait after an error (0: 60; dbgsched.h) */
	int64_t retry_max_s;   /* longest wait after an error (0: dbgsched.h's) */
	/* A checked debug file of bid is at path: called on the fetcher
	 * thread (it must not block long). */
	void (*ready)(void *ctx, const char *bid, const char *path);
	void *ctx;
};

/* Build ids waiting or asked for at most; a request beyond is dropped
 * (counted) and asked again when its file is next read. */
#define DBGD_MAX_REQS 65536

/*
 * Sets what libdebuginfod reads from the environment: the server list
 * (urls; NULL keeps DEBUGINFOD_URLS as it is), the cache directory, and
 * the library's own time limits (ours are tighter), and no size limit of
 * its own (debuginfod.c says why). Call before
 * any thread exists (setenv is not thread-safe). Returns 0, or -ENOENT
 * when no server is set at all (debuginfod is then off).
 */
int dbgd__setenv(const char *urls, const char *cache_dir, int64_t timeout_s);

/* Starts the fetcher. *out is the caller's (dbgd__stop). Returns 0 or
 * -errno (-ELIBACC: libdebuginfod cannot be loaded). */
int dbgd__start(struct dbgd **out, const struct dbgd_opts *o);

/* Stops a lookup in flight (within a second) and the thread: no ready
 * callback runs after it returns; dbgd__request stays safe (and does
 * nothing more). NULL is a no-op. */
void dbgd__halt(struct dbgd *d);
/* dbgd__halt, then frees d. NULL is a no-op. */
void dbgd__stop(struct dbgd *d);

/* Asks for bid's debug file (hex). Never blocks; any thread. A build id
 * asked for already is left to its schedule. Returns 0, -EINVAL (not a
 * build id) or -ENOSPC (DBGD_MAX_REQS reached). */
int dbgd__request(struct dbgd *d, const char *bid);

/* Asks again now for every build id waiting after an error or a timeout
 * (not after a miss): for tests, and for a server that came back. */
void dbgd__retry_now(struct dbgd *d);

struct dbgd_stats {
	uint64_t outcomes[DBG__N]; /* lookups by outcome (DBG_LOCAL unused here) */
	uint64_t cache_bytes;      /* what the cache holds now */
	uint64_t evicted;          /* files deleted to stay under the bound */
	uint64_t waiting;          /* build ids waiting for their next try */
	uint64_t dropped;          /* requests refused: table full */
	uint64_t fetched_bytes;    /* bytes of files that checked out */
};
/* Thread-safe; d NULL gives zeros. */
void dbgd__stats(struct dbgd *d, struct dbgd_stats *st);

/* Where the debug file of bid lives in cache_dir (libdebuginfod's layout):
 * "<cache_dir>/<bid>/debuginfo". Returns 0 or -ENAMETOOLONG. */
int dbgd__cache_path(const char *cache_dir, const char *bid, char *out, size_t size);

/* Bytes the cache directory's debug files hold (a walk of one level). */
uint64_t dbgd__cache_size(const char *cache_dir);

#endif
