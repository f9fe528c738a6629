/*
 * dbgsched.h - the pure rules of looking for debug files: what a lookup
 * came to, when a build id is asked for again, and which cached files go
 * when the cache is over its bound. No I/O here (tests/unit/test_debuginfod.c).
 */
#ifndef PROFFS_DBGSCHED_H
#define PROFFS_DBGSCHED_H

#include <stddef.h>
#include <stdint.h>

/* What looking for a build id's debug information came to. */
enum dbg_outcome {
	DBG_LOCAL,   /* a debug file on this host (debug root, or cached) */
	DBG_HIT,     /* a debuginfod server sent one, and it checked out */
	DBG_MISS,    /* every server said it has none (404) */
	DBG_ERROR,   /* no answer we could use: refused, 5xx, corrupt, too big */
	DBG_TIMEOUT, /* no complete answer in time */
	DBG__N
};

/* "local", "hit", "miss", "error", "timeout": the metric's label. */
const char *dbg_outcome__name(enum dbg_outcome o);

/* The outcome of a libdebuginfod lookup that returned err (< 0); aborted:
 * our progress callback stopped it, past_deadline: because the time was
 * up (else the file was too big, or the daemon stops). */
enum dbg_outcome dbg_outcome__of(int err, int aborted, int past_deadline);

/*
 * Seconds before a build id is asked for again after tries (>= 1) lookups
 * in a row came to o. An error or timeout is the server's trouble, often
 * brief: base_s, doubling, at most an hour. A miss is the server's answer
 * and changes only when it indexes new packages: 60 * base_s, doubling,
 * at most a day. base_s <= 0 is 60 (so a miss waits an hour first);
 * max_s > 0 lowers the cap of errors and timeouts to max_s (tests: a
 * server that comes up is asked again soon; a miss is no reason to ask
 * every few seconds, even there).
 */
int64_t dbgsched__delay_s(enum dbg_outcome o, unsigned tries, int64_t base_s, int64_t max_s);

/* A cached file, for dbgcache__plan. */
struct dbgcache_ent {
	uint64_t bytes;
	int64_t mtime_ns; /* when it was fetched */
	size_t idx;       /* the caller's */
	int keep;         /* never evicted (the file just fetched) */
};

/*
 * Orders e[0..n) oldest first (ties by idx) and returns how many of the
 * first entries to evict so that the rest hold at most bound bytes;
 * entries with keep are moved last and never counted as evictable.
 * *left gets the bytes that stay.
 */
size_t dbgcache__plan(struct dbgcache_ent *e, size_t n, uint64_t bound, uint64_t *left);

#endif
