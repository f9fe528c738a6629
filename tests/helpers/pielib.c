/*
 * pielib - a PIE executable that burns CPU in its own function pieBurn()
 * and, when given a shared library (argv[2]), in that library's
 * libBurn(void) too, alternating, for argv[1] seconds (default 10).
 * Tests symbolization with load bias: PIE text and a shared object
 * mapped at random addresses. Also run as a copy that is deleted while
 * it runs.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void touch(void)
{
	__asm__ volatile("");
}

__attribute__((noinline)) void pieBurn(void)
{
	touch();
	for (unsigned long i = 0; i < 20000000; i++)
		sink = sink * 31 + i;
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	void (*lib)(void) = NULL;
	struct timespec t0, t;

	if (argc > 2) {
		void *h = dlopen(argv[2], RTLD_NOW);

		if (!h || !(lib = (void (*)(void))dlsym(h, "libBurn"))) {
			fprintf(stderr, "pielib: %s\n", dlerror());
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pieBurn();
		if (lib)
			lib();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
