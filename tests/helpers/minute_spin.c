/*
 * minute_spin - one busy thread from wall-clock second START to STOP
 * (Unix seconds), the main thread asleep. Writes to OUT, for each minute it
 * ran in, "MINUTE CPU_NS": the CPU time the busy thread got in that minute
 * (its own clock read at each minute boundary), so a test can tell a
 * sampler's error from a host too busy to give the thread a whole CPU.
 *
 *   minute_spin START STOP OUT
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long start_s, stop_s;
static long long minute_cpu[64], minute_at[64];
static int nmin;

static long long ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

__attribute__((noinline)) static unsigned long spin_step(unsigned long x)
{
	for (int i = 0; i < 10000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static void *busy(void *arg)
{
	volatile unsigned long sink = 0;
	long long cpu0 = ns(CLOCK_THREAD_CPUTIME_ID), now;
	long long minute = start_s / 60 * 60;

	(void)arg;
	while ((now = ns(CLOCK_REALTIME)) < stop_s * 1000000000LL) {
		if (now / 1000000000LL >= minute + 60 && nmin < 63) {
			long long c = ns(CLOCK_THREAD_CPUTIME_ID);

			minute_at[nmin] = minute;
			minute_cpu[nmin++] = c - cpu0;
			cpu0 = c;
			minute += 60;
		}
		sink = spin_step(sink);
	}
	minute_at[nmin] = minute;
	minute_cpu[nmin++] = ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t = { 0 };
	pthread_t th;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: minute_spin START STOP OUT\n");
		return 2;
	}
	start_s = atoll(argv[1]);
	stop_s = atoll(argv[2]);
	t.tv_sec = start_s;
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &t, NULL))
		;
	if (pthread_create(&th, NULL, busy, NULL))
		return 1;
	pthread_join(th, NULL);
	f = fopen(argv[3], "w");
	if (!f)
		return 1;
	for (int i = 0; i < nmin; i++)
		fprintf(f, "%lld %lld\n", minute_at[i], minute_cpu[i]);
	return fclose(f) ? 1 : 0;
}
