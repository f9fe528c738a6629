/*
 * qsortcb - a hot callback under libc's qsort, built without frame
 * pointers: main -> chainA -> chainB -> qsort -> (libc's msort frames) ->
 * cmpKeys. Every sample in cmpKeys should carry the whole chain: the
 * walk goes through libc's own code, which has no frame pointers either.
 * Optionally (argv[2] = "signal") a SIGPROF handler burns CPU too, so a
 * walk must continue through the signal trampoline into the interrupted
 * code.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define N 4096

volatile unsigned long sink;
static unsigned long keys[N];

__attribute__((noinline)) int cmpKeys(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	/* Enough work per call that cmpKeys, not qsort, holds the samples. */
	for (int i = 0; i < 40; i++) {
		x = x * 6364136223846793005UL + 1;
		y = y * 6364136223846793005UL + 1;
	}
	sink += x ^ y;
	return (*(const unsigned long *)a > *(const unsigned long *)b) -
	       (*(const unsigned long *)a < *(const unsigned long *)b);
}

__attribute__((noinline)) void chainB(void)
{
	for (int i = 0; i < N; i++)
		keys[i] = (unsigned long)rand() << 16 ^ rand();
	qsort(keys, N, sizeof(keys[0]), cmpKeys);
	sink++;
}

__attribute__((noinline)) void chainA(void)
{
	chainB();
	sink++;
}

__attribute__((noinline)) void handlerBurn(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void on_prof(int sig)
{
	handlerBurn();
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;

	if (argc > 2 && !strcmp(argv[2], "signal")) {
		struct itimerval it = { { 0, 2000 }, { 0, 2000 } };

		signal(SIGPROF, on_prof);
		setitimer(ITIMER_PROF, &it, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		chainA();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	sink++;
	return 0;
}
