/*
 * offcpu_truth - ground-truth workloads for the offcpu type.
 *
 *   offcpu_truth sleeper SECS one thread: per cycle, waitLong() sleeps
 *                900 ms and waitShort() 100 ms (nanosleep), for SECS; then
 *                prints the seconds it slept. waitLong gets 90.0% of the
 *                program's off-CPU time, all of it state=sleep, and the
 *                total is the wall time.
 *   offcpu_truth waits SECS   two threads:
 *       waiter:  waitPipe() blocks in read() on a pipe, waitMutex() on a
 *                pthread mutex the holder keeps for 100 ms (state=sleep),
 *                waitVfork() in vfork() while the child sleeps 50 ms
 *                (uninterruptible: state=disk);
 *       holder:  takes the mutex, tells the waiter through the pipe,
 *                keeps it 100 ms, lets go, then 100 ms later writes
 *                again.
 *                At the end it prints the waiter's own measure of the
 *                time it spent in each wait (wall clock around the call):
 *                "mutex=S pipe=S vfork=S" in seconds.
 *   offcpu_truth spin SECS    two threads spinning in spinA()/spinB(); run
 *                under `taskset -c N`, each waits for the CPU about half
 *                of the time (state=runqueue).
 *   offcpu_truth sleep SECS   one thread that only sleeps (100 ms naps)
 *                for SECS, then prints the seconds it slept.
 *
 * For a frame-pointer walk (glibc has none): the function that calls into
 * libc is a frame-pointer frame whose own frame the walk skips (its rbp is
 * still live in the frameless libc leaf, so the walk continues at its
 * return address). Each wait therefore calls libc through a one-line
 * wrapper (nap, lockIt, readIt, forkIt) so that waitLong & co. stay on
 * the stack; the volatile stores after calls prevent tail calls.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int sink;
static volatile int stop;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int p1[2], p2[2];
static double in_mutex, in_pipe, in_vfork; /* the waiter's own measure */

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
	sink++;
}

__attribute__((noinline)) void waitLong(void)
{
	nap(900);
	sink++;
}

__attribute__((noinline)) void waitShort(void)
{
	nap(100);
	sink++;
}

__attribute__((noinline)) static void lockIt(void)
{
	pthread_mutex_lock(&mu);
	sink++;
}

__attribute__((noinline)) void waitMutex(void)
{
	lockIt();
	pthread_mutex_unlock(&mu);
	sink++;
}

__attribute__((noinline)) static void readIt(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		stop = 1;
	sink++;
}

__attribute__((noinline)) void waitPipe(int fd)
{
	readIt(fd);
	sink++;
}

__attribute__((noinline)) static void forkIt(void)
{
	/* The parent waits uninterruptibly until the child exits; the child
	 * shares our memory, so it only makes raw system calls. */
	struct timespec ts = { 0, 50000000L };
	pid_t pid = vfork();

	if (pid == 0) {
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	sink++;
}

__attribute__((noinline)) void waitVfork(void)
{
	forkIt();
	sink++;
}

__attribute__((noinline)) static void *waiterMain(void *arg)
{
	while (!stop) {
		double a = now(), b, c, d, e;

		waitPipe(p1[0]); /* until the holder has the mutex */
		b = now();
		waitMutex();
		c = now();
		waitPipe(p2[0]);
		d = now();
		waitVfork();
		e = now();
		in_pipe += (b - a) + (d - c);
		in_mutex += c - b;
		in_vfork += e - d;
	}
	sink++;
	return NULL;
}

__attribute__((noinline)) void holdLock(void)
{
	nap(100);
	sink++;
}

__attribute__((noinline)) static void *holderMain(void *arg)
{
	while (!stop) {
		pthread_mutex_lock(&mu);
		if (write(p1[1], "x", 1) != 1)
			break;
		holdLock();
		pthread_mutex_unlock(&mu);
		nap(100);
		if (write(p2[1], "y", 1) != 1)
			break;
	}
	/* Unblock a waiter stuck in a read. */
	close(p1[1]);
	close(p2[1]);
	return NULL;
}

__attribute__((noinline)) void spinA(void)
{
	while (!stop)
		sink++;
}

__attribute__((noinline)) void spinB(void)
{
	while (!stop)
		sink++;
}

__attribute__((noinline)) static void *spinMain(void *arg)
{
	if (arg)
		spinB();
	else
		spinA();
	sink++;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	double secs, t0;
	int n = 0;

	if (argc != 3 || (secs = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: offcpu_truth sleeper|waits|spin|sleep SECS\n");
		return 2;
	}
	t0 = now();
	if (!strcmp(argv[1], "sleeper")) {
		double slept = 0;

		while (now() - t0 < secs) {
			double a = now();

			waitLong();
			waitShort();
			slept += now() - a;
		}
		printf("%.6f\n", slept);
		return 0;
	}
	if (!strcmp(argv[1], "sleep")) {
		double slept = 0;

		while (now() - t0 < secs) {
			double a = now();

			nap(100);
			slept += now() - a;
		}
		printf("%.6f\n", slept);
		return 0;
	}
	if (!strcmp(argv[1], "waits")) {
		if (pipe(p1) || pipe(p2))
			return 1;
		pthread_create(&t[n++], NULL, waiterMain, NULL);
		pthread_create(&t[n++], NULL, holderMain, NULL);
	} else if (!strcmp(argv[1], "spin")) {
		pthread_create(&t[n++], NULL, spinMain, NULL);
		pthread_create(&t[n++], NULL, spinMain, (void *)1);
	} else {
		fprintf(stderr, "offcpu_truth: unknown mode '%s'\n", argv[1]);
		return 2;
	}
	while (now() - t0 < secs)
		usleep(100000);
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	if (!strcmp(argv[1], "waits"))
		printf("mutex=%.6f pipe=%.6f vfork=%.6f\n", in_mutex, in_pipe, in_vfork);
	return 0;
}
