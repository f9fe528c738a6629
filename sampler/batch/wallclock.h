/*
 * wallclock.h - the wall-clock time of a sample. The BPF program stamps
 * samples with bpf_ktime_get_ns (CLOCK_MONOTONIC); a sample belongs to the
 * minute its wall-clock time names (SPEC §2 Minutes), so user space adds
 * the offset CLOCK_REALTIME - CLOCK_MONOTONIC. The offset is re-read before
 * every drain of the ring, so a step of the wall clock (date -s, a VM
 * resumed, ntpdate) moves the minutes of the samples taken after it and
 * not of those before; a step is logged once, when it is first seen.
 *
 * Pure and single-threaded: the sampler thread owns its struct wallclock.
 */
#ifndef PROFFS_WALLCLOCK_H
#define PROFFS_WALLCLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* A change of the offset bigger than this is a step, not NTP's slewing
 * (at most 500 ppm: 0.5 ms a second) nor the jitter of reading two
 * clocks one after the other. */
#define WALLCLOCK_STEP_NS 50000000LL

struct wallclock {
	int64_t offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	bool valid;        /* one reading taken */
	uint64_t steps;    /* steps seen */
};

/* Takes a reading of both clocks (real_ns, mono_ns: read one right after
 * the other). Returns the step, new offset - old offset, when the change
 * is a step (it is then logged, once), else 0. */
int64_t wallclock__update(struct wallclock *w, int64_t real_ns, int64_t mono_ns);

/* Reads CLOCK_REALTIME and CLOCK_MONOTONIC and calls wallclock__update. */
int64_t wallclock__refresh(struct wallclock *w);

/* The wall-clock time of monotonic time mono_ns. */
static inline int64_t wallclock__wall(const struct wallclock *w, int64_t mono_ns)
{
	return mono_ns + w->offset_ns;
}

/* Start (Unix seconds, a multiple of 60) of the minute holding wall_ns;
 * floors for times before 1970 too. */
static inline int64_t minute_of_ns(int64_t wall_ns)
{
	int64_t s = wall_ns / 1000000000LL;

	if (wall_ns < 0 && s * 1000000000LL != wall_ns)
		s--;
	return s - (((s % 60) + 60) % 60);
}

#endif
