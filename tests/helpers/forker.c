/*
 * forker - forks N children (argv[1], default 200) one after another; each
 * renames itself "fkchild" (or argv[3]), burns MS milliseconds of CPU (argv[2],
 * default 50) in childWork() and exits. Short-lived processes like these
 * die before a profiler's next poll. At the end prints the children's
 * total CPU time in nanoseconds ("children_cpu_ns N") so a test can
 * compare it with what was sampled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

volatile unsigned long sink;

/* Burns ms of this process's CPU time (not wall time: the host is busy). */
__attribute__((noinline)) void childWork(int ms)
{
	double end = clock_s(CLOCK_PROCESS_CPUTIME_ID) + ms / 1000.0;

	touch();
	while (clock_s(CLOCK_PROCESS_CPUTIME_ID) < end)
		for (unsigned long i = 0; i < 20000; i++)
			sink = sink * 31 + i;
	sink++;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, ms = argc > 2 ? atoi(argv[2]) : 50;
	const char *name = argc > 3 ? argv[3] : "fkchild";
	struct rusage ru;

	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0)
			return 1;
		if (p == 0) {
			prctl(PR_SET_NAME, name);
			childWork(ms);
			_exit(0);
		}
		waitpid(p, NULL, 0);
	}
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("children_cpu_ns %lld\n",
	       (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
		       (long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL);
	return 0;
}
