/*
 * truth - the ground-truth workload: main calls iterateLong() then
 * iterateShort(), both call iterate(n) with 10:1 work, forever (or for
 * argv[1] seconds). With frame pointers and no inlining, a correct
 * profiler attributes 10/11 = 90.9% of this process's samples to
 * main;iterateLong;iterate and 9.1% to main;iterateShort;iterate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Iterations of a unit: ~0.3 ms. Each cycle draws its unit at random
 * (0.5 to 1.5 of it, the same for both calls, so the work stays 10:1
 * cycle by cycle). A fixed cycle aliases with the sampling period: a
 * cycle of 40.4 ms under 99 Hz samples the same four phases for seconds,
 * and the shares then spread far wider than the binomial bands the tests
 * judge them by. A short cycle of random length makes samples taken a
 * tick apart independent. */
#define UNIT 200000UL

volatile unsigned long sink;

/* Called first by iterate() so that iterate is not a leaf: GCC sets up no
 * frame pointer in a leaf that needs no stack, and a frameless leaf hides
 * its caller from a frame-pointer walk. */
__attribute__((noinline)) void touch(void)
{
	__asm__ volatile("");
}

/* The volatile stores after each call keep the calls from becoming tail
 * calls (a tail call would drop the caller's frame). */
__attribute__((noinline)) void iterate(unsigned long n)
{
	unsigned long x;

	touch();
	x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void iterateLong(unsigned long unit)
{
	iterate(10 * unit);
	sink++;
}

__attribute__((noinline)) void iterateShort(unsigned long unit)
{
	iterate(unit);
	sink++;
}

/* A unit of UNIT / 2 to 3 * UNIT / 2 iterations (an LCG's high bits).
 * TRUTH_UNIT=N sets UNIT: an emulated CPU (tests/vm, 10-30 times slower)
 * would stretch a cycle past the sampling period, and samples a tick
 * apart would fall in one cycle's long phase (not independent draws). */
static unsigned long draw_unit(void)
{
	static uint64_t s;
	static unsigned long unit;

	if (!s) {
		const char *e = getenv("TRUTH_UNIT");

		s = ((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL)) | 1;
		unit = e && strtoul(e, NULL, 10) >= 2 ? strtoul(e, NULL, 10) : UNIT;
	}
	s = s * 6364136223846793005ULL + 1442695040888963407ULL;
	return unit / 2 + (unsigned long)((s >> 33) % unit);
}

static double secs_since(clockid_t c, const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec - t0->tv_sec + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* truth [SECS [MIN_CPU_SECS MAX_SECS]]: loops for at least SECS of wall
 * time (forever without arguments) and, on a busy host, on until it has
 * had MIN_CPU_SECS of CPU or MAX_SECS have passed. */
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0;
	double min_cpu = argc > 2 ? atof(argv[2]) : 0, max = argc > 3 ? atof(argv[3]) : 0;
	struct timespec t0, c0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	for (;;) {
		unsigned long unit = draw_unit();

		iterateLong(unit);
		iterateShort(unit);
		if (secs > 0) {
			double wall = secs_since(CLOCK_MONOTONIC, &t0);

			if (wall >= secs && (secs_since(CLOCK_PROCESS_CPUTIME_ID, &c0) >= min_cpu ||
					     (max > 0 && wall >= max)))
				break;
		}
	}
	sink++;
	return 0;
}
