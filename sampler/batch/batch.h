/*
 * batch.h - the open batch: samples aggregated by (series labels, stack)
 * into a struct profile (store/profile.h) until the daemon hands it to
 * store__append() and starts the next one.
 *
 * Each sample's string labels are its series labels (comm, exe, pid,
 * unit, container, pod, namespace where known); values are samples/count
 * and cpu/nanoseconds (count * period), period type cpu/nanoseconds.
 * Not thread-safe: the sampler thread owns it.
 */
#ifndef PROFFS_BATCH_H
#define PROFFS_BATCH_H

#include <stdint.h>

#include "sampler/proc/procinfo.h"
#include "store/profile/profile.h"
#include "sampler/batch/stack.h"

struct batch;

/* period_ns: nanoseconds of CPU one sample stands for (1e9 / hz). */
struct batch *batch__new(int64_t period_ns);
void batch__free(struct batch *b);

/* Adds one sample of process p (may be NULL if unknown) with its
 * symbolized frames (leaf first) and the leader's comm at sample time.
 * Returns 0 or -ENOMEM. */
int batch__add(struct batch *b, struct proc *p, pid_t pid, const char *comm,
	       const struct frame *fr, int n);

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
