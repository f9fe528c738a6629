/*
 * batch.h - the open batch: samples aggregated by (series labels, stack)
 * into a struct profile (store/profile/profile.h) until the daemon hands it to
 * store__append() and starts the next one.
 *
 * Each sample's string labels are its series labels (comm, exe, pid,
 * unit, container, pod, namespace where known); values are samples/count
 * and cpu/nanoseconds (count * period), period type cpu/nanoseconds.
 * Not thread-safe: the sampler thread owns it.
 */
#ifndef PROFFS_BATCH_H
#define PROFFS_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/proc/procinfo.h"
#include "store/profile/profile.h"
#include "sampler/batch/stack.h"

struct batch;

/* period_ns: nanoseconds of CPU one sample stands for (1e9 / hz). */
struct batch *batch__new(int64_t period_ns);
/* A batch of other sample types (e.g. events/count, offcpu/nanoseconds):
 * types and units are two static strings each; the second is the period
 * type. */
struct batch *batch__new_typed(int64_t period_ns, const char *const types[2],
			       const char *const units[2]);
void batch__free(struct batch *b);

/* Adds one sample of process p (may be NULL if unknown) with its
 * symbolized frames (leaf first) and the leader's comm at sample time.
 * Returns 0 or -ENOMEM. */
int batch__add(struct batch *b, struct proc *p, pid_t pid, const char *comm,
	       const struct frame *fr, int n);

/* Like batch__add with the sample's values given (one per sample type)
 * and, if key is not NULL, one more label key=value (e.g. offcpu's
 * state). Strings are copied. Returns 0 or -ENOMEM. */
int batch__add_values(struct batch *b, struct proc *p, pid_t pid, const char *comm,
		      const struct frame *fr, int n, const int64_t vals[2], const char *key,
		      const char *value);

/*
 * The memo (batch.c): key is two independent 64-bit hashes of everything
 * that decides a record's stack and labels, computed by the caller.
 * batch__memo_put remembers that the sample the last batch__add or
 * batch__add_values added (successfully) is key's, with tag (the
 * caller's, given back on a hit); call it only for a result that a later
 * equal record would get too. batch__memo_hit adds vals to key's sample
 * if this batch remembers one, and returns true with *tag. Cleared with
 * the batch (batch__take); bounded, a full memo remembers nothing more.
 * The key is not the record: a wrong hit needs two different records of
 * one batch to agree on both hashes, for the 16,384 keys a batch holds at
 * most about 16384^2 / 2^129, 2^-101 a batch.
 */
void batch__memo_put(struct batch *b, const uint64_t key[2], uint32_t tag);
bool batch__memo_hit(struct batch *b, const uint64_t key[2], const int64_t vals[2], uint32_t *tag);

/* The period one sample stands for (batch__new's period_ns). */
int64_t batch__period(const struct batch *b);

/* Samples in the open batch. */
uint64_t batch__count(const struct batch *b);

/*
 * Closes the open batch and starts the next. *out gets the profile (the
 * caller's, profile__free) or NULL when it holds no sample; its
 * time_nanos/duration_nanos are set to the window [start_ns, start_ns +
 * duration_ns) (CLOCK_REALTIME) the caller names: the batch does not know
 * which minute its samples belong to, the caller routes them. Returns 0 or
 * -ENOMEM (the open batch is then kept).
 */
int batch__take(struct batch *b, int64_t start_ns, int64_t duration_ns, struct profile **out);

#endif
