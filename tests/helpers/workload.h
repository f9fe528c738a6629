/*
 * workload.h - what the C workloads of tests/helpers/ share (included by
 * name from beside them: the helpers are built one file each).
 */
#ifndef PROFFS_TESTS_HELPERS_WORKLOAD_H
#define PROFFS_TESTS_HELPERS_WORKLOAD_H

#include <time.h>

/* Called first by a burner so that it is not a leaf: GCC sets up no
 * frame pointer in a leaf that needs no stack, and a frameless leaf hides
 * its caller from a frame-pointer walk. */
__attribute__((noinline)) void touch(void)
{
	__asm__ volatile("");
}

/* Clock c's time in seconds. */
static double clock_s(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

#endif
