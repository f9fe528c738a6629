/*
 * fixedwork - a fixed amount of CPU-bound work (argv[1] million loop
 * iterations, default 2000), for timing a workload with and without the
 * profiler running (scripts/bench/sampler.sh).
 */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void touch(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void work(unsigned long n)
{
	unsigned long x = sink;

	touch();
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

int main(int argc, char **argv)
{
	unsigned long m = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;

	for (unsigned long i = 0; i < m; i++)
		work(1000000);
	return 0;
}
