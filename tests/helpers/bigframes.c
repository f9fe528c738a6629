/*
 * bigframes - burns CPU for argv[2] seconds (default 3) at the bottom of
 * a recursion argv[1] frames deep (default 80), each frame holding a
 * 1 KiB buffer it writes: a stack of ~90 KiB, more than a sample's stack
 * copy carries (bpf/unwind.h's UNW_STACK_COPY). Built without frame
 * pointers (HELPER_CFLAGS_bigframes): main;deepframe x N;burn.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void burn(double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink = sink * 31 + i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

/* The write after the call keeps it from being a tail call. */
__attribute__((noinline)) void deepframe(int n, double secs)
{
	volatile char buf[1024];

	memset((char *)buf, n, sizeof(buf));
	if (n > 1)
		deepframe(n - 1, secs);
	else
		burn(secs);
	sink += buf[7];
}

int main(int argc, char **argv)
{
	deepframe(argc > 1 ? atoi(argv[1]) : 80, argc > 2 ? atof(argv[2]) : 3);
	return 0;
}
