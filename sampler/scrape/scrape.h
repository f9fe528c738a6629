/*
 * scrape.h - `proffs run --scrape`: polling Go net/http/pprof endpoints.
 *
 * One scraper owns one thread. Every interval it fetches heap, allocs,
 * goroutine, mutex and block from every target at once (libcurl's multi
 * interface: a target that hangs delays nobody), decodes each answer with
 * the pprof codec, turns cumulative profiles into per-interval deltas
 * (scrape_delta.c) and hands the result to the owner's append callback.
 * The sampler's drain never waits on any of this: the only thing the two
 * threads share is the store, which the owner serialises in the callback.
 */
#ifndef PROFFS_SCRAPE_H
#define PROFFS_SCRAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/db/store.h"
#include "store/profile/profile.h"

struct buf;

/* One --scrape argument, parsed. Strings are malloc'd, owned by the
 * target; free with scrape_target__fini(). */
struct scrape_target {
	char *job;      /* job=NAME, else instance */
	char *instance; /* host:port of the URL (port defaulted by scheme) */
	char *base;     /* the URL without trailing '/', e.g. http://h:6060/debug/pprof */
};

/*
 * Parses "[job=NAME@]URL". URL must be http:// or https:// with a host;
 * NAME is 1..128 printable ASCII bytes other than '@'. On failure returns
 * -EINVAL and writes a one-line reason into err[errsz]; *t is then empty.
 */
int scrape_target__parse(const char *spec, struct scrape_target *t, char *err, size_t errsz);
void scrape_target__fini(struct scrape_target *t);

/* What is fetched, in this order, and the store type each becomes. */
enum scrape_kind { SK_HEAP, SK_ALLOCS, SK_GOROUTINE, SK_MUTEX, SK_BLOCK, SK__N };
extern const char *const scrape_kind_path[SK__N];  /* "heap", "allocs", ... */
extern const char *const scrape_kind_type[SK__N];  /* "heap", "alloc", ... */
/* Go serves allocs, mutex and block as totals since process start. */
static inline bool scrape_kind_cumulative(enum scrape_kind k)
{
	return k == SK_ALLOCS || k == SK_MUTEX || k == SK_BLOCK;
}

/*
 * Turning one target's cumulative profiles into deltas. One state per
 * (target, kind); the previous answer is kept as the baseline.
 * - The first answer is a baseline only: it holds everything since the
 *   process started, at an unknown time, so storing it would be a spike.
 * - A total of a counted value that went down means the target
 *   restarted: the new answer holds only what happened since the restart,
 *   which is after the baseline was taken, so it is stored whole.
 * - Otherwise the delta is per stack; a stack whose counter went down is
 *   stored as 0, never negative.
 * Columns named inuse_* are snapshots inside a cumulative profile (Go's
 * allocs profile carries them): their delta is meaningless and is stored
 * as 0.
 */
struct scrape_delta {
	struct profile *prev; /* owned; NULL before the first answer */
	int64_t prev_ns;
	uint64_t restarts;
};

/*
 * Feeds the answer cur taken at t_ns (cur is taken over: freed, or kept
 * as the next baseline). On return *out is NULL (a baseline, nothing to
 * store) or a new profile of the delta (the caller's) covering
 * [*start_ns, *start_ns + *dur_ns). Returns 0 or -ENOMEM (state
 * unchanged then but cur freed) or -EINVAL (value types changed: cur
 * becomes the new baseline).
 */
int scrape_delta__next(struct scrape_delta *d, struct profile *cur, int64_t t_ns,
		       struct profile **out, int64_t *start_ns, int64_t *dur_ns);
void scrape_delta__fini(struct scrape_delta *d);

/* Stores one profile: called from the scrape thread, must serialise with
 * the owner's other appends. Returns 0 or -errno. */
typedef int (*scrape_append_fn)(void *ctx, const char *type, int64_t time_ns,
				int64_t duration_ns, const struct profile *p,
				const struct store_label *labels, size_t nlabels);

struct scrape_opts {
	struct scrape_target *targets; /* taken over by scraper__new (freed there) */
	size_t ntargets;
	int64_t interval_ns;
	const struct store_label *extra; /* --label labels; must outlive the scraper */
	size_t nextra;
	scrape_append_fn append;
	void *append_ctx;
	uint64_t max_body; /* bytes per answer; 0 = 64 MiB; 4x that decompressed */
};

struct scraper;

/* Creates a scraper (no thread yet); takes over o->targets even on
 * failure. Returns NULL with errno set. */
struct scraper *scraper__new(const struct scrape_opts *o);
/* Starts the thread. Returns 0 or -errno. */
int scraper__start(struct scraper *s);
/* Stops (transfers in flight are abandoned within ~100 ms), joins and
 * frees. NULL is a no-op. */
void scraper__free(struct scraper *s);
/* Appends proffs_scrape_* in Prometheus text format. Thread-safe. */
void scraper__metrics(struct scraper *s, struct buf *out);

#endif
