/*
 * push.h - `proffs run --push URL`: every complete minute of the store,
 * one pprof per series, sent to a Grafana Pyroscope server's push API
 * (POST URL/push.v1.PusherService/Push, a push.v1.PushRequest as
 * application/proto; push.proto beside this file).
 *
 * The store is the queue: a cursor (minute, series done) kept in the store
 * says what the server has accepted, so a restart resumes where the last
 * run stopped and nothing accepted is sent again. Failures the server
 * says are passing (5xx, 408, 429 with Retry-After) and connection errors
 * are retried with capped exponential backoff and jitter for as long as
 * the server would still take the minute (Pyroscope refuses profiles older
 * than an hour); then the minute is dropped and counted. Everything runs
 * on the pusher's own thread: sampling and the mount never wait for it.
 */
#ifndef PROFFS_PUSH_H
#define PROFFS_PUSH_H

#include <stdint.h>

#include "fs/render/render.h"
#include "store/db/store.h"

struct pusher;

struct pusher_opts {
	const char *url;     /* the server's base URL (copied) */
	int64_t settle_s;    /* a minute is complete this long after it ends */
	int64_t backoff_max_s; /* cap of the retry delay; 0 = 60 s */
	int64_t max_age_s;   /* the server refuses older minutes; 0 = 3600 */
};

/* Starts the pusher thread over s (borrowed: must outlive pusher__stop).
 * Returns 0 or -errno. */
int pusher__start(struct pusher **out, struct store *s, const struct pusher_opts *o);

/* Ends the thread (a transfer in flight is aborted: that part is sent
 * again next time) within about a second, and frees p. NULL is a no-op. */
void pusher__stop(struct pusher *p);

/* Appends the pusher's Prometheus metrics to out. Thread-safe. */
void pusher__metrics(struct pusher *p, struct buf *out);

/* ---- the request builder (push_req.c), separate for tests ---- */

/* One series' part of a request: labels as Pyroscope wants them and the
 * gzip'd pprof profiles (several when the series exceeds the per-profile
 * limits), each with its ID. */
struct push_item {
	size_t nlabels;
	char **names, **values;
	size_t nprof;
	uint8_t **gz;
	size_t *gzlen;
	char **ids;
	uint64_t nsamples;   /* pprof samples in the series' profiles */
	uint64_t dropped;    /* profiles over the limits, left out */
	uint64_t labels_cut; /* labels left out (30 at most) */
};
void push_item__fini(struct push_item *it);

/* Builds the item of series ser of type in [minute, minute + 60).
 * Returns 0 or -errno. */
int push_item__build(struct store *s, const char *type, const struct store_series *ser,
		     int64_t minute, struct push_item *it);

/* Encodes items as one push.v1.PushRequest; *out malloc'd. 0 or -errno. */
int push_req__encode(struct push_item *items, size_t n, uint8_t **out, size_t *len);

/* Pyroscope's name for a proffs type (cpu -> process_cpu, heap and
 * alloc -> memory, ...). Static string. */
const char *push__profile_name(const char *type);

#endif
