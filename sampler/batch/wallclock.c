/*
 * wallclock.c - monotonic sample times to wall-clock minutes.
 */
#include <time.h>

#include "sampler/batch/wallclock.h"
#include "store/util/util.h"

int64_t wallclock__update(struct wallclock *w, int64_t real_ns, int64_t mono_ns)
{
	int64_t off = real_ns - mono_ns, step;

	if (!w->valid) {
		w->offset_ns = off;
		w->valid = true;
		return 0;
	}
	step = off - w->offset_ns;
	/* Small changes are followed silently: the offset tracks slewing. */
	w->offset_ns = off;
	if (step > -WALLCLOCK_STEP_NS && step < WALLCLOCK_STEP_NS)
		return 0;
	w->steps++;
	pr_warn("sampler: the wall clock stepped %s by %.3f s; samples from now on go to the minutes their new time names",
		step > 0 ? "forward" : "back", (step > 0 ? step : -step) / 1e9);
	return step;
}

int64_t wallclock__refresh(struct wallclock *w)
{
	struct timespec r, m;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return wallclock__update(w, r.tv_sec * 1000000000LL + r.tv_nsec,
				 m.tv_sec * 1000000000LL + m.tv_nsec);
}
