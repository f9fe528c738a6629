/*
 * zeroread - spins reading /dev/zero for argv[1] seconds (default 10), so
 * most of its CPU time is in the kernel under read(): a profiler shows
 * kernel frames (_[k]) on top of main;readLoop.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];
volatile unsigned long sink;

__attribute__((noinline)) void readLoop(int fd, double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 16; i++)
			if (read(fd, buf, sizeof(buf)) < 0)
				exit(1);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	sink++;
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	readLoop(fd, argc > 1 ? atof(argv[1]) : 10);
	close(fd);
	return 0;
}
