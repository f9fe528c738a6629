/*
 * bench.h - what the bench_* tools share: the clock they time with and
 * the order they sort times in.
 */
#ifndef PROFFS_TESTS_TOOLS_BENCH_H
#define PROFFS_TESTS_TOOLS_BENCH_H

#include <time.h>

/* CLOCK_MONOTONIC, in seconds. */
static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* qsort's comparison of doubles, ascending. */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
