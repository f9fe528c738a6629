/*
 * pingpong - a context-switch-heavy workload for the offcpu benchmark: two
 * threads pass a byte back and forth over two pipes ROUNDS times; each
 * pass blocks one thread and wakes the other. Pinned to one CPU (taskset),
 * every pass is a direct switch between the two. Prints the wall seconds
 * and the process's context switches (voluntary + involuntary).
 * usage: pingpong ROUNDS [SPIN]: SPIN loop iterations of work by the
 * first thread between passes (default 0), for fewer switches a second.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds, spin;
static volatile long sink;

static void *pong(void *arg)
{
	char c;

	for (long i = 0; i < rounds; i++)
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			exit(1);
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	pthread_t t;
	char c = 'x';

	if (argc < 2 || argc > 3 || (rounds = atol(argv[1])) <= 0 || (argc == 3 && (spin = atol(argv[2])) < 0)) {
		fprintf(stderr, "usage: pingpong ROUNDS [SPIN]\n");
		return 2;
	}
	if (pipe(ab) || pipe(ba))
		return 1;
	pthread_create(&t, NULL, pong, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < rounds; i++) {
		for (long k = 0; k < spin; k++)
			sink += k;
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	getrusage(RUSAGE_SELF, &ru);
	printf("%.6f %ld\n", t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9,
	       ru.ru_nvcsw + ru.ru_nivcsw);
	return 0;
}
