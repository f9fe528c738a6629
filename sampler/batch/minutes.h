/*
 * minutes.h - open batches, one per window of wall-clock time. A window
 * is a divisor of a minute (the drain interval, rounded down to one), and
 * a sample goes to the batch of the window its own time names, so a stored
 * block never spans two minutes (SPEC §2 Minutes), whatever the phase of
 * the daemon's start, a late record in the ring, or a step of the wall
 * clock.
 *
 * Not thread-safe: the sampler thread owns it.
 */
#ifndef PROFFS_MINUTES_H
#define PROFFS_MINUTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/batch/batch.h"

/* Windows open at once: two in steady state (the one just ended and the
 * one starting around a cut); more when the interval is longer than a
 * minute or the clock steps within one interval. */
#define MINUTES_SLOTS 16

struct minutes;

/*
 * period_ns: see batch__new. interval_ns: the drain interval; windows are
 * the largest divisor of 60 s not longer than it (60 s above a minute).
 * open_ns: wall-clock time sampling starts (no window starts before it).
 * NULL + errno on failure.
 */
struct minutes *minutes__new(int64_t period_ns, int64_t interval_ns, int64_t open_ns);
/* The same for batches of other sample types (batch__new_typed): types
 * and units are static, two strings each. */
struct minutes *minutes__new_typed(int64_t period_ns, const char *const types[2],
				   const char *const units[2], int64_t interval_ns, int64_t open_ns);
void minutes__free(struct minutes *m);

/* Window length chosen for interval_ns (see minutes__new). */
int64_t minutes__window_ns(int64_t interval_ns);

/*
 * The open batch of the window holding wall_ns, valid until the next
 * minutes__take. If MINUTES_SLOTS other windows are open (the clock stepped
 * again and again within one interval) the batch of the nearest open
 * window is returned and counted (minutes__counts): a sample is never
 * dropped for it. NULL + errno (ENOMEM) on failure.
 */
struct batch *minutes__batch(struct minutes *m, int64_t wall_ns);

/* A closed batch: the profile (the caller's, profile__free) and its
 * window, which lies inside one minute. */
struct minute_batch {
	struct profile *p;
	int64_t start_ns, duration_ns;
};

/*
 * Closes the open windows that end at or before cut_ns (every window when
 * all is set, the newest clipped to end at cut_ns) and fills out[0..*n)
 * with those that hold samples, oldest first. Returns 0 or -ENOMEM (what
 * was closed so far is in out; the rest stays open).
 */
int minutes__take(struct minutes *m, int64_t cut_ns, bool all,
		  struct minute_batch out[MINUTES_SLOTS], size_t *n);

/* Samples in open batches; samples filed under a nearby window. */
void minutes__counts(const struct minutes *m, uint64_t *open, uint64_t *misfiled);

#endif
