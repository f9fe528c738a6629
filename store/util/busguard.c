/*
 * busguard.c - SIGBUS of a guarded read becomes -EIO (busguard.h).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "store/util/busguard.h"

static __thread sigjmp_buf *guard;
static unsigned long caught;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (guard) {
		sigjmp_buf *j = guard;

		guard = NULL;
		__atomic_add_fetch(&caught, 1, __ATOMIC_RELAXED);
		siglongjmp(*j, 1);
	}
	/* Not a guarded read: what SIGBUS always did. */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

int busguard__run(int (*fn)(void *ctx), void *ctx)
{
	sigjmp_buf j;
	int r;

	pthread_once(&once, install);
	if (sigsetjmp(j, 1))
		return -EIO;
	guard = &j;
	r = fn(ctx);
	guard = NULL;
	return r;
}

unsigned long busguard__caught(void)
{
	return __atomic_load_n(&caught, __ATOMIC_RELAXED);
}
