/*
 * reader.c - unwind tables read on abandonable threads (reader.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/util/busguard.h"
#include "sampler/unwind/reader.h"
#include "store/util/util.h"

/* One read; shared by the worker and the reader until one lets go. */
struct job {
	pthread_mutex_t lock;
	pthread_cond_t done_cv;
	int refs;      /* 2 while both hold it */
	bool done;
	int cancel;    /* the compile gives up when set */
	int fd;        /* the file, while it is compiled */
	struct unw_read r;
	struct unw_read_result res;
};

static int nhung; /* abandoned readers still blocked; atomic */

int unw_read__hung(void)
{
	return __atomic_load_n(&nhung, __ATOMIC_RELAXED);
}

static void job_put(struct job *j)
{
	bool last;

	pthread_mutex_lock(&j->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (!last)
		return;
	unw_table__free(j->res.t);
	free(j->r.ctx);
	free((char *)j->r.debug_root);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->done_cv);
	free(j);
}

static int compile_now(void *p)
{
	struct job *j = p;

	return unw_table__compile(j->fd, j->r.debug_root, &j->cancel, &j->res.t);
}

static void read_now(struct job *j)
{
	struct stat st;
	int fd;

	if (j->r.delay_ns > 0)
		nanosleep(&(struct timespec){ j->r.delay_ns / 1000000000, j->r.delay_ns % 1000000000 }, NULL);
	fd = j->r.open(j->r.ctx);
	if (fd < 0) {
		j->res.open_err = fd;
		return;
	}
	if (j->r.big_bytes && !fstat(fd, &st) && (uint64_t)st.st_size > j->r.big_bytes)
		j->res.big = true;
	else {
		/* A SIGBUS of the file's mapping ends the read, not the daemon. */
		j->fd = fd;
		j->res.err = busguard__run(compile_now, j);
		if (j->res.err)
			j->res.t = NULL; /* half built: leaked, never freed */
	}
	close(fd);
}

static void *reader_main(void *arg)
{
	struct job *j = arg;
	bool hung;

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-unwread");
	read_now(j);
	pthread_mutex_lock(&j->lock);
	j->done = true;
	hung = j->res.hung;
	pthread_cond_signal(&j->done_cv);
	pthread_mutex_unlock(&j->lock);
	if (hung)
		__atomic_sub_fetch(&nhung, 1, __ATOMIC_RELAXED);
	job_put(j);
	return NULL;
}

static int64_t cpu_ns(clockid_t c)
{
	struct timespec ts;

	return clock_gettime(c, &ts) ? 0 : ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void unw_read__run(const struct unw_read *r, const int *stop, struct unw_read_result *out)
{
	struct job *j = calloc(1, sizeof(*j));
	int64_t t0 = now_mono_ns(), c0 = 0;
	pthread_t tid;
	clockid_t cpu;
	bool have_cpu;

	memset(out, 0, sizeof(*out));
	if (j) {
		j->r = *r;
		j->r.ctx = malloc(r->ctx_size);
		j->r.debug_root = r->debug_root ? strdup(r->debug_root) : NULL;
		if (!j->r.ctx || (r->debug_root && !j->r.debug_root)) {
			free(j->r.ctx);
			free((char *)j->r.debug_root);
			free(j);
			j = NULL;
		} else {
			memcpy(j->r.ctx, r->ctx, r->ctx_size);
		}
	}
	if (!j) {
		out->err = -ENOMEM;
		return;
	}
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->done_cv, NULL);
	j->refs = 2;
	if (pthread_create(&tid, NULL, reader_main, j)) {
		/* No thread: read here, as before there were readers. */
		j->refs = 1;
		read_now(j);
		*out = j->res;
		j->res.t = NULL;
		job_put(j);
		return;
	}
	have_cpu = !pthread_getcpuclockid(tid, &cpu);
	if (have_cpu)
		c0 = cpu_ns(cpu);
	pthread_detach(tid);
	pthread_mutex_lock(&j->lock);
	while (!j->done) {
		int64_t wall = now_mono_ns() - t0;
		struct timespec ts;

		if (__atomic_load_n(stop, __ATOMIC_RELAXED) || wall > UNW_READ_HARD_NS ||
		    (wall > UNW_READ_TIMEOUT_NS && (!have_cpu || cpu_ns(cpu) - c0 < UNW_READ_IDLE_CPU_NS))) {
			j->res.hung = true;
			j->cancel = 1;
			__atomic_add_fetch(&nhung, 1, __ATOMIC_RELAXED);
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&j->done_cv, &j->lock, &ts);
	}
	if (j->res.hung) {
		out->hung = true;
		out->err = -ETIMEDOUT;
	} else {
		*out = j->res;
		j->res.t = NULL; /* the caller's now */
	}
	pthread_mutex_unlock(&j->lock);
	job_put(j);
}
