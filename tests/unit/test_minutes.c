/* test_minutes: samples reach the minute their own wall-clock time names.
 * A simulated sampler (monotonic sample times, a drain every 250 ms that
 * re-reads the clock offset, a cut every 10 s of wall time) runs through
 * a start at an odd phase, a wall clock stepped back 90 s, one stepped
 * forward 150 s, and NTP-like slewing; every block must lie inside one
 * minute, every minute must hold exactly the samples whose time names it,
 * nothing may be lost, and each step must be counted once. */
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/minutes.h"
#include "sampler/batch/wallclock.h"
#include "store/util/util.h"
#include "tests/test.h"

#define NS 1000000000LL
#define MAXMIN 64

struct sim {
	struct wallclock wc;
	struct minutes *m;
	int64_t base_min; /* minute index 0 of the counters below */
	int64_t want[MAXMIN], got[MAXMIN];
	uint64_t fed, taken, blocks, straddling, early;
	int64_t last_window_start;
};

static struct frame fr = { .addr = 0xffffffff81000000ULL, .name = "f", .kernel = true };

static int idx(struct sim *s, int64_t minute_s)
{
	int64_t i = (minute_s - s->base_min) / 60;

	return i >= 0 && i < MAXMIN ? (int)i : -1;
}

static void take(struct sim *s, int64_t cut, bool all)
{
	struct minute_batch out[MINUTES_SLOTS];
	size_t n = 0;

	if (minutes__take(s->m, cut, all, out, &n))
		s->early++; /* counted as a failure below */
	for (size_t i = 0; i < n; i++) {
		int64_t tot = profile__total(out[i].p, 0);
		int64_t m0 = minute_of_ns(out[i].start_ns);
		int64_t m1 = minute_of_ns(out[i].start_ns + out[i].duration_ns - 1);
		int k = idx(s, m0);

		if (m0 != m1 || out[i].duration_ns <= 0)
			s->straddling++;
		if (out[i].p->time_nanos != out[i].start_ns ||
		    out[i].p->duration_nanos != out[i].duration_ns)
			s->straddling++;
		if (k >= 0)
			s->got[k] += tot;
		s->taken += tot;
		s->blocks++;
		profile__free(out[i].p);
	}
}

int main(void)
{
	struct sim s = { 0 };
	const int hz = 99;
	const int64_t period = NS / hz;
	/* The wall clock starts at second 53 of a minute (an odd phase);
	 * monotonic time starts at an arbitrary value. */
	int64_t mono = 1000 * NS + 12345, offset = 1700000000LL * NS + 53 * NS + 7 - mono;
	int64_t next_sample = mono, cut, steps_seen;
	int64_t end = mono + 6 * 60 * NS;

	s.base_min = minute_of_ns(mono + offset) - 5 * 60;
	wallclock__update(&s.wc, mono + offset, mono);
	s.m = minutes__new(period, 10 * NS, mono + offset);
	CHECK(s.m != NULL, "minutes__new");
	CHECK(minutes__window_ns(10 * NS) == 10 * NS && minutes__window_ns(7 * NS) == 6 * NS &&
	      minutes__window_ns(300 * NS) == 60 * NS, "windows divide a minute: 10s->10s, 7s->6s, 300s->60s");
	cut = ((mono + offset) / (10 * NS) + 1) * 10 * NS;
	for (int it = 0; mono < end; mono += 250 * 1000000LL, it++) {
		int64_t wall;

		/* The simulated clock: steps exactly at drain points (between
		 * drains the real sampler cannot tell when a step happened),
		 * and slews 1 ms per drain in between. */
		if (it == 400) /* 100 s in */
			offset -= 90 * NS;
		else if (it == 880) /* 220 s in */
			offset += 150 * NS;
		else
			offset += 1000000;
		wallclock__update(&s.wc, mono + offset, mono);
		/* Samples taken since the last drain, filed by the offset read
		 * now (the clock did not change between them and now). */
		for (; next_sample < mono; next_sample += period) {
			int64_t t = next_sample + offset;
			struct batch *b = minutes__batch(s.m, wallclock__wall(&s.wc, next_sample));
			int k = idx(&s, minute_of_ns(t));

			if (!b || batch__add(b, NULL, 42, "busy", &fr, 1))
				s.early++;
			if (k >= 0)
				s.want[k]++;
			s.fed++;
		}
		wall = mono + offset;
		if (wall >= cut + 100 * 1000000LL) {
			take(&s, cut, false);
			cut = (wall / (10 * NS) + 1) * 10 * NS;
		} else if (cut - wall > 20 * NS) {
			take(&s, cut, false);
			cut = (wall / (10 * NS) + 1) * 10 * NS;
		}
	}
	take(&s, mono + offset, true);
	steps_seen = s.wc.steps;
	/* Re-reading the same clock again is not a new step. */
	wallclock__update(&s.wc, mono + offset, mono);
	wallclock__update(&s.wc, mono + offset + 2000000, mono + 1000000);

	CHECK(s.fed == s.taken, "nothing lost: %llu samples fed, %llu stored",
	      (unsigned long long)s.fed, (unsigned long long)s.taken);
	CHECK(s.straddling == 0, "every block lies inside one minute and carries its window (%llu did not)",
	      (unsigned long long)s.straddling);
	CHECK(steps_seen == 2 && s.wc.steps == 2, "two steps counted once each (saw %llu, then %llu)",
	      (unsigned long long)steps_seen, (unsigned long long)s.wc.steps);
	CHECK(s.early == 0, "every add and take succeeded");
	{
		int bad = 0, nonzero = 0;

		for (int i = 0; i < MAXMIN; i++) {
			if (s.want[i] != s.got[i]) {
				bad++;
				printf("     minute %d: want %lld got %lld\n", i, (long long)s.want[i],
				       (long long)s.got[i]);
			}
			nonzero += s.want[i] > 0;
		}
		CHECK(bad == 0 && nonzero >= 6, "each of %d minutes holds exactly the samples its time names", nonzero);
	}
	{
		uint64_t open, misfiled;

		minutes__counts(s.m, &open, &misfiled);
		CHECK(open == 0 && misfiled == 0, "no sample left open or misfiled (%llu, %llu)",
		      (unsigned long long)open, (unsigned long long)misfiled);
	}

	/* A minute boundary mid-interval: a 10 s cut schedule started at
	 * second 55 must not file 5 s of the next minute under this one. */
	{
		struct minutes *m = minutes__new(period, 10 * NS, 55 * NS);
		struct minute_batch out[MINUTES_SLOTS];
		size_t n = 0;
		int64_t t;

		for (t = 55 * NS; t < 65 * NS; t += period)
			batch__add(minutes__batch(m, t), NULL, 1, "x", &fr, 1);
		minutes__take(m, 60 * NS, false, out, &n);
		CHECK(n == 1 && out[0].start_ns == 55 * NS && out[0].duration_ns == 5 * NS &&
		      llabs(profile__total(out[0].p, 0) - 5 * hz) <= 1,
		      "the cut at the minute closes [55 s, 60 s) with 5 s of samples (%zu blocks, %lld samples)",
		      n, n ? (long long)profile__total(out[0].p, 0) : -1LL);
		for (size_t i = 0; i < n; i++)
			profile__free(out[i].p);
		minutes__take(m, 65 * NS, true, out, &n);
		CHECK(n == 1 && out[0].start_ns == 60 * NS && llabs(profile__total(out[0].p, 0) - 5 * hz) <= 1,
		      "the rest is the next minute's (%zu blocks)", n);
		for (size_t i = 0; i < n; i++)
			profile__free(out[i].p);
		minutes__free(m);
	}
	/* Typed windows (offcpu): the same cut, batches of the given types. */
	{
		static const char *const types[] = { "events", "offcpu" };
		static const char *const units[] = { "count", "nanoseconds" };
		struct minutes *m = minutes__new_typed(0, types, units, 10 * NS, 55 * NS);
		struct minute_batch out[MINUTES_SLOTS];
		const int64_t v[2] = { 1, 2 * NS };
		size_t n = 0;

		batch__add_values(minutes__batch(m, 59 * NS), NULL, 1, "x", &fr, 1, v, "state", "sleep");
		batch__add_values(minutes__batch(m, 61 * NS), NULL, 1, "x", &fr, 1, v, "state", "sleep");
		minutes__take(m, 70 * NS, true, out, &n);
		CHECK(n == 2 && out[0].start_ns == 55 * NS && out[0].duration_ns == 5 * NS &&
		      out[1].start_ns == 60 * NS && profile__total(out[0].p, 1) == 2 * NS &&
		      !strcmp(out[1].p->strs[out[1].p->sample_types[1].type], "offcpu"),
		      "typed windows: an offcpu block on each side of the minute, of type offcpu (%zu blocks)",
		      n);
		for (size_t i = 0; i < n; i++)
			profile__free(out[i].p);
		minutes__free(m);
	}
	CHECK(minute_of_ns(-1) == -60 && minute_of_ns(59 * NS) == 0 && minute_of_ns(60 * NS) == 60,
	      "minute_of_ns floors");
	minutes__free(s.m);
	return test_done();
}
