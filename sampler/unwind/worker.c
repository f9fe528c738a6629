/*
 * worker.c - the unwinder's worker thread: takes queued files, reads and
 * compiles their tables outside the lock (reader.c, table.c), installs
 * them (unwinder.c) and forgets idle ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "store/util/pidstat.h"
#include "store/util/safefile.h"
#include "sampler/unwind/reader.h"
#include "sampler/unwind/unwinder_int.h"
#include "store/util/util.h"

/* Opens the file behind a mapping: map_files survives deletion and sees
 * the process's mount namespace; else the path inside the process's root,
 * where the user controls every component (no symlink followed, no way
 * out of the root). Both through safefile, like the symbolizer: regular
 * files only, never a blocking open, refusals counted. No owner rule:
 * only the unwind rules of the file are used, nothing of its content
 * reaches the tree. The identity must match what was mapped. */
/* Whether st is the file e was mapped from. */
static bool entry_file(const struct entry *e, const struct stat *st)
{
	return unwinder__kdev(st->st_dev) == e->kdev && st->st_ino == e->ino;
}

static int open_mapped(const struct entry *e, const struct src *src)
{
	char p[128];
	struct stat st;
	bool moved = false;
	int fd, rfd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)src->pid, src->start,
		 src->end);
	fd = safefile__open(AT_FDCWD, p, false, false, SF_ELF, NULL, &st);
	if (fd >= 0 && !entry_file(e, &st)) {
		/* The range holds another file now (a library unloaded and
		 * another loaded where it was): the path may still be it. */
		close(fd);
		fd = -ESTALE;
		moved = true;
	}
	if (fd < 0 && fd != -ECANCELED && src->path && src->path[0] == '/') {
		snprintf(p, sizeof(p), "/proc/%d/root", (int)src->pid);
		rfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rfd < 0)
			return -errno;
		fd = safefile__open(rfd, src->path + 1, true, true, SF_ELF, NULL, &st);
		close(rfd);
		if (fd >= 0 && !entry_file(e, &st)) {
			close(fd);
			fd = -ESTALE; /* replaced on disk since it was mapped */
		}
	}
	/* Not the file's fault: the next process that maps it lends it. */
	return fd < 0 && moved ? -EAGAIN : fd;
}

/* Whether pid can no longer lend us its view of a file: it has exited,
 * it is a zombie (its mappings and root are gone, yet kill(pid, 0)
 * still succeeds until it is reaped: a short awk that asked first for
 * libc left libc without a table for 10-20 s, every node stack ending
 * `[unwind: no table]` at its libc frames), or it is on its way there:
 * between the start of its exit (PF_EXITING in its flags) and the zombie
 * its mappings and root go first, while its state still reads R or D
 * (the same libc failure came back in a full test run). */
#define PF_EXITING_FLAG 0x4u

static bool requester_gone(pid_t pid)
{
	struct pidstat st;
	int err;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	err = pidstat__read(pid, &st);
	if (err)
		return err == -ENOENT || err == -ESRCH;
	return st.state == 'Z' || st.state == 'X' || (st.flags & PF_EXITING_FLAG);
}

/* Takes e out of the queue; false when it is not in it (the worker has
 * it in hand). */
bool unw_unqueue(struct unwinder *u, struct entry *e)
{
	struct entry **pp = &u->q_head, *prev = NULL;

	for (; *pp && *pp != e; pp = &(*pp)->next_q)
		prev = *pp;
	if (!*pp)
		return false;
	*pp = e->next_q;
	if (u->q_tail == e)
		u->q_tail = prev;
	u->queued--;
	return true;
}

void unw_enqueue(struct unwinder *u, struct entry *e)
{
	e->next_q = NULL;
	if (u->q_tail)
		u->q_tail->next_q = e;
	else
		u->q_head = e;
	u->q_tail = e;
	u->queued++;
}

/* Big files (a compiler's 30 MB, half a second to build) wait behind the
 * small ones queued with them, so one cc1 does not hold up a fork storm. */
#define BIG_FILE (8 << 20)

/* What a reader needs to open the file e maps in src's process: its own
 * copies (an abandoned reader outlives both). */
struct open_ctx {
	struct entry e; /* kdev and ino: the identity to match */
	struct src src;
	char path[PATH_MAX];
};

static int open_ctx(void *arg)
{
	struct open_ctx *c = arg;

	c->src.path = c->path[0] ? c->path : NULL;
	return open_mapped(&c->e, &c->src);
}

/* Builds e's table from src (taken from e by the worker, ours to free).
 * The file is read on a reader thread (reader.h): a read that hangs is
 * abandoned after 2 s, counted as a timeout, and the file left without
 * a table until it is idle; the worker goes on with the next file. */
static void build(struct unwinder *u, struct entry *e, struct src *src)
{
	struct unw_table *t = NULL;
	int64_t t0 = now_mono_ns();
	struct open_ctx oc = { .src = *src };
	struct unw_read_result res;
	int fd, err;

	oc.e.kdev = e->kdev;
	oc.e.ino = e->ino;
	if (src->path)
		snprintf(oc.path, sizeof(oc.path), "%s", src->path);
	struct unw_read rd = {
		.open = open_ctx, .ctx = &oc, .ctx_size = sizeof(oc), .debug_root = u->o.debug_root,
		.big_bytes = !e->deferred && !e->urgent ? BIG_FILE : 0,
		.delay_ns = u->o.delay_path && src->path && !strcmp(src->path, u->o.delay_path) ?
				    u->o.build_delay_ns : 0,
	};
	unw_read__run(&rd, &u->stop, &res);
	if (res.big) {
		pthread_mutex_lock(&u->lock);
		if (u->q_head) {
			e->deferred = true;
			if (!e->src.pid) { /* no newer asker: this one again */
				e->src = *src;
				src->path = NULL;
			}
			unw_enqueue(u, e);
			pthread_mutex_unlock(&u->lock);
			free(src->path);
			return;
		}
		pthread_mutex_unlock(&u->lock);
		rd.big_bytes = 0;
		rd.delay_ns = 0;
		unw_read__run(&rd, &u->stop, &res);
	}
	fd = res.open_err < 0 ? res.open_err : 0;
	err = fd < 0 ? fd : res.err;
	t = res.t;
	if (res.hung && !__atomic_load_n(&u->stop, __ATOMIC_RELAXED)) {
		safefile__refuse(SF_R_TIMEOUT, src->path ? src->path : "(unwind table)", 0, 0);
		pr_warn("unwind: reading %s (pid %d) hangs; abandoned", src->path ? src->path : "?",
			(int)src->pid);
	}
	t0 = now_mono_ns() - t0;
	if (!err)
		pr_debug("unwind: %s: %zu rows in %" PRId64 " ms", src->path, t->nrows, t0 / 1000000);
	pthread_mutex_lock(&u->lock);
	u->st.build_ns += t0;
	if (!err) {
		err = unw_install(u, e, t);
		if (!err)
			u->st.built++;
	}
	if (fd < 0 && (fd == -EAGAIN || requester_gone(src->pid))) {
		/* The process we were to read it through has exited (its
		 * map_files and root are gone), or no longer maps it where it
		 * did: not the file's fault. Read it through a process that
		 * asked since, or forget the entry so the next sample that
		 * needs it asks again. Keeping it as "no table" left libc
		 * unwalked for as long as anything used it, and a library
		 * loaded again and again (dlopen, dlclose) for 10 s. */
		pr_debug("unwind: %s: pid %d %s before we read it; %s", src->path, (int)src->pid,
			 fd == -EAGAIN ? "unmapped it" : "exited",
			 e->src.pid ? "read through a newer one" : "asked again on next use");
		u->st.requester_gone++;
		if (e->src.pid)
			unw_enqueue(u, e);
		else
			unw_drop_entry(u, e);
		pthread_mutex_unlock(&u->lock);
		free(src->path);
		return;
	}
	if (err == -ENODATA) {
		pr_debug("unwind: %s has no unwind information: frame pointers", src->path);
		unw_set_state(u, e, E_FP);
	} else if (err) {
		pr_debug("unwind: no table for %s (pid %d): %s", src->path, (int)src->pid, strerror(-err));
		/* A file whose read hung is not read again until idle. */
		e->too_big = err == -E2BIG || err == -EFBIG || res.hung;
		e->failed_ns = now_mono_ns();
		unw_set_state(u, e, E_NONE);
	} else if (t->unsupported) {
		pr_debug("unwind: %s: %u ranges use rules we do not implement", src->path, t->unsupported);
	}
	e->used_ns = now_mono_ns();
	free(e->src.path); /* a newer asker's, moot now */
	e->src = (struct src){ 0 };
	pthread_mutex_unlock(&u->lock);
	free(src->path);
	unw_table__free(t);
}

static void gc(struct unwinder *u, int64_t now)
{
	for (size_t i = 0; i < u->files.cap; i++) {
		struct entry *e = u->files.vals[i];

		if (!u->files.keys[i] || e->state == E_QUEUED || (e->kdev == UNW_VDSO_DEV && e->ino == UNW_VDSO_INO))
			continue;
		/* A failed file is retried by time since the failure: by idle
		 * time, a file in constant use (libc) would never be. */
		if (e->state == E_NONE && !e->too_big ? now - e->failed_ns > RETRY_NS
						      : now - e->used_ns > u->o.idle_ns) {
			unw_drop_entry(u, e);
			i--; /* deletion shifts the probe chain into this slot */
		}
	}
	unw_chunks_trim(u);
}

void *unw_worker(void *arg)
{
	struct unwinder *u = arg;
	int64_t last_gc = now_mono_ns();

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-unwind");

	pthread_mutex_lock(&u->lock);
	while (!u->stop) {
		struct entry *e = u->q_head;
		int64_t now = now_mono_ns();

		if (now - last_gc > 10 * 1000000000LL) {
			gc(u, now);
			last_gc = now;
		}
		if (!e) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 5;
			pthread_cond_timedwait(&u->wake, &u->lock, &ts);
			continue;
		}
		u->q_head = e->next_q;
		if (!u->q_head)
			u->q_tail = NULL;
		u->queued--;
		struct src src = e->src;

		e->src = (struct src){ 0 };
		pthread_mutex_unlock(&u->lock);
		build(u, e, &src);
		pthread_mutex_lock(&u->lock);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

/* The vDSO is the same image in every process: ours stands for theirs. */
