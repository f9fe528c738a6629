/*
 * deep - burns CPU at the bottom of a recursion DEPTH frames deep
 * (argv[1], default 100) for argv[2] seconds (default 10). Its comm is
 * "deepDEPTH" so two depths can run side by side. Every recurse() frame
 * has a frame pointer and is no tail call, so a frame-pointer walk sees
 * all of them: main;recurse x DEPTH;burn.
 */
#include <stdlib.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>

#include "workload.h"

volatile unsigned long sink;
static double secs = 10;

/* Not a leaf (touch), so it keeps its frame pointer. */
__attribute__((noinline)) void burn(void)
{
	double end = clock_s(CLOCK_MONOTONIC) + secs;

	touch();
	while (clock_s(CLOCK_MONOTONIC) < end)
		for (unsigned long i = 0; i < 1000000; i++)
			sink = sink * 31 + i;
}

__attribute__((noinline)) void recurse(int n)
{
	if (n > 1)
		recurse(n - 1);
	else
		burn();
	sink++; /* no tail call */
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 100;
	char name[16];

	if (argc > 2)
		secs = atof(argv[2]);
	snprintf(name, sizeof(name), "deep%d", depth);
	prctl(PR_SET_NAME, name);
	recurse(depth);
	return 0;
}
