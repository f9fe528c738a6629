/*
 * loader.c - the symbolizer's loader thread: reads ELF files (symbols,
 * lines, debug files) and perf maps off the sampler thread, one job at a
 * time from a queue; a watchdog abandons a read that hangs (a FUSE or NFS
 * file that never answers) and starts another loader.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/util/safefile.h"
#include "store/util/busguard.h"
#include "store/util/pidstat.h"
#include "sampler/symbols/debugfile.h"
#include "sampler/symbols/dwline.h"
#include "sampler/symbols/goline.h"
#include "sampler/symbols/glibc.h"
#include "sampler/symbols/symbolize_int.h"
#include "store/util/util.h"

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *loader_main(void *arg);

/* Starts a loader; s->lock held. */
static int start_loader(struct symbolizer *s)
{
	struct loader *l = calloc(1, sizeof(*l));
	pthread_attr_t a;
	pthread_t t;
	int err;

	if (!l)
		return -ENOMEM;
	l->s = s;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* libelf and our parsers need little stack. */
	pthread_attr_setstacksize(&a, 256 << 10);
	err = pthread_create(&t, &a, loader_main, l);
	pthread_attr_destroy(&a);
	if (err) {
		free(l);
		return -err;
	}
	s->active = l;
	s->nloaders++;
	return 0;
}

/* --- the loader thread's side --- */

/* Opens the file behind a mapping, preferring the view that survives
 * deletion (map_files: a magic link the kernel resolves to the mapped
 * file itself), else the path inside the process's root, where no
 * symlink is followed: the user controls every component of it. */
static int open_mapped(pid_t pid, const struct sf_cred *c, const char *path, uint64_t start,
		       uint64_t end)
{
	char p[128];
	int fd, rfd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	fd = safefile__open(AT_FDCWD, p, false, false, SF_ELF, c, NULL);
	if (fd >= 0 || fd == -ECANCELED || path[0] != '/')
		return fd;
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	rfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	fd = safefile__open(rfd, path + 1, true, true, SF_ELF, c, NULL);
	close(rfd);
	return fd;
}

/* Swaps in the symbols of a separate debug file found by build id: the
 * debug root's (root's: symlinks there are followed), else debuginfod's
 * cache (ours). Either must say it is of this build id (debugfile.h): a
 * stale or corrupt file names nothing. The binary's PT_LOADs stay (a
 * debug file's do not locate code in the file). Its DWARF, when small
 * enough, gives frames their lines (profile.pb's file and line, for
 * pprof -list); *dw_bytes gets what that holds. Returns where the file
 * was: 0 none, 1 the debug root, 2 the cache. */
static int load_debug(struct symbolizer *s, struct symtab *t, uint64_t *dw_bytes)
{
	const char *b = t->elf.build_id;
	struct elf_info d;
	char p[4200];
	int fd, where;

	if (t->elf.has_symtab || strlen(b) < 3)
		return 0;
	for (where = 1; where <= 2; where++) {
		if (where == 1)
			snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", s->debug_root, b, b + 2);
		else if (!s->debug_cache)
			break;
		else
			snprintf(p, sizeof(p), "%s/%s/debuginfo", s->debug_cache, b);
		fd = safefile__open(AT_FDCWD, p, where == 2, false, SF_DEBUG, NULL, NULL);
		if (fd < 0)
			continue;
		if (!debugfile__read(fd, b, &d)) {
			free(t->elf.syms);
			free(t->elf.strs);
			t->elf.syms = d.syms;
			t->elf.nsyms = d.nsyms;
			t->elf.strs = d.strs;
			t->elf.strs_len = d.strs_len;
			t->elf.has_symtab = true;
			d.syms = NULL;
			d.strs = NULL;
			elfsym__fini(&d);
			t->dw = dwline__open(fd, DWLINE_MAX_BYTES, dw_bytes);
			if (t->dw)
				t->dw_fd = fd;
			else
				close(fd);
			pr_debug("symbolize: symbols from %s%s", p, t->dw ? ", with lines" : "");
			return where;
		}
		close(fd);
	}
	return 0;
}

/* Whether pid's root is the host's: its paths then name the files
 * /binaries can open again later. */
static bool host_root(pid_t pid)
{
	struct stat a, b;
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	return !stat(p, &a) && !stat("/", &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Tells the hooks what was read (issue 30: /binaries, names found later). */
static void report_read(struct symbolizer *s, const struct job *j, const struct sf_cred *c,
			const struct stat *st, const struct symtab *t, bool own_symtab, int debug)
{
	struct store_binary b = { .uid = c->uid, .gid = c->gid, .dev = st->st_dev,
				  .ino = st->st_ino, .size = (uint64_t)st->st_size,
				  .mtime_ns = st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec };
	size_t plen = strlen(j->path);

	if (!store__build_id_ok(t->elf.build_id))
		return;
	snprintf(b.build_id, sizeof(b.build_id), "%s", t->elf.build_id);
	for (size_t i = 0; i < t->elf.nloads && b.nloads < STORE_BIN_LOADS; i++, b.nloads++) {
		b.loads[b.nloads].vaddr = t->elf.loads[i].vaddr;
		b.loads[b.nloads].off = t->elf.loads[i].off;
		b.loads[b.nloads].filesz = t->elf.loads[i].filesz;
	}
	/* A path names the file only in the host's root and while it is not
	 * deleted; otherwise it is kept for the loads alone. */
	b.path = j->path;
	if (j->path[0] == '/' && !(plen > 10 && !strcmp(j->path + plen - 10, " (deleted)")) &&
	    host_root(j->pid))
		b.flags |= STORE_BIN_HOST;
	/* Under the lock: symbolizer__set_hooks(s, NULL) returns only when no
	 * call is in flight, so the daemon may then free what ctx names. */
	pthread_mutex_lock(&s->lock);
	if (s->hooks.file_read)
		s->hooks.file_read(s->hooks.ctx, &b, own_symtab, debug);
	pthread_mutex_unlock(&s->lock);
}

/* Loads the symbols of j->d. Returns the symtab for it or NULL; with
 * s->lock held on return. */
/* elfsym__read of a file a user controls, its SIGBUS (the file
 * truncated, its FUSE server gone) an -EIO (store/util/busguard.h). */
struct elf_read_ctx {
	int fd;
	bool syms;
	struct elf_info *e;
};

static int elf_read_now(void *p)
{
	struct elf_read_ctx *c = p;

	return elfsym__read(c->fd, c->syms, c->e);
}

static int elf_read(int fd, bool syms, struct elf_info *e)
{
	struct elf_read_ctx c = { fd, syms, e };

	return busguard__run(elf_read_now, &c);
}

static struct symtab *dso_load(struct symbolizer *s, struct job *j)
{
	struct elf_info hdr;
	struct symtab *t = NULL;
	struct sf_cred c;
	struct stat st;
	uint64_t bk = 0, dw_bytes = 0;
	bool cached = false;
	int fd, err;

	if (pidstat__cred(j->pid, &c, NULL)) {
		pthread_mutex_lock(&s->lock);
		return NULL; /* gone: whose file it was is unknown */
	}
	fd = open_mapped(j->pid, &c, j->path, j->start, j->end);
	if (fd < 0) {
		pr_debug("symbolize: cannot open %s of pid %d: %s", j->path, (int)j->pid,
			 strerror(-fd));
		pthread_mutex_lock(&s->lock);
		return NULL;
	}
	if (fstat(fd, &st))
		memset(&st, 0, sizeof(st));
	/* Headers first: a known build id means the symbols are cached. */
	err = elf_read(fd, false, &hdr);
	if (err) {
		if (err != -ENOMEM)
			safefile__refuse(SF_R_FORMAT, j->path, st.st_dev, st.st_ino);
		goto out;
	}
	if (hdr.build_id[0]) {
		bk = hash64(hdr.build_id, strlen(hdr.build_id), 0xb1d);
		bk = bk ? bk : 1;
		pthread_mutex_lock(&s->lock);
		cached = hmap__get(&s->symtabs, bk) != NULL;
		pthread_mutex_unlock(&s->lock);
	}
	elfsym__fini(&hdr);
	/* Taken again under the lock at out: symbolizer__trim may free
	 * it meanwhile (then this load found nothing and is retried). */
	if (cached)
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	err = elf_read(fd, true, &t->elf);
	if (err) {
		if (err == -EFBIG)
			safefile__refuse(SF_R_TOO_BIG, j->path, st.st_dev, st.st_ino);
		else if (err != -ENOMEM)
			safefile__refuse(SF_R_FORMAT, j->path, st.st_dev, st.st_ino);
		free(t);
		t = NULL;
		goto out;
	}
	if (t->elf.corrupt)
		safefile__refuse(SF_R_FORMAT, j->path, st.st_dev, st.st_ino);
	/* Go's lines come from the table its names came from. */
	if (t->elf.go_size && !(t->go = goline__open(fd, t->elf.go_off, t->elf.go_size, t->elf.go_text)))
		pr_debug("symbolize: %s: cannot map its Go table for lines: %s", j->path, strerror(errno));
	if (t->elf.go_layout || t->elf.go_refused) {
		const char *gl = t->elf.go_layout;
		int k = !gl ? -1 : !strcmp(gl, "1.16") ? 0 : !strcmp(gl, "1.18") ? 1 : 2;

		pthread_mutex_lock(&s->lock);
		if (k < 0)
			s->go_refused++;
		else
			s->go_read[k]++;
		pthread_mutex_unlock(&s->lock);
		if (k < 0)
			pr_debug("symbolize: %s: a Go function table we do not read; its frames stay unnamed", j->path);
	}
	{
		bool own = t->elf.has_symtab;
		int debug = load_debug(s, t, &dw_bytes);

		report_read(s, j, &c, &st, t, own, debug);
	}
	t->has_syms = t->elf.nsyms > 0;
	/* The walker's facts about a file come with its symbols: whether it
	 * is an interpreter, and a libc's version (its TLS layout). */
	if (s->detector.detect) {
		t->rt = s->detector.detect(fd, j->path, &t->elf);
		t->rt_free = s->detector.free;
	}
	/* glibc by what it defines, not by its file's name (a table is
	 * shared by build id, whatever path first brought it). */
	if (elfsym__find(&t->elf, "gnu_get_libc_version")) {
		int m = glibc__minor(fd);

		t->glibc_minor = m > 0 ? m : 0;
	}
out:
	close(fd);
	pthread_mutex_lock(&s->lock);
	if (cached)
		return hmap__get(&s->symtabs, bk);
	if (t)
		t->bytes = t->elf.nsyms * sizeof(*t->elf.syms) + t->elf.strs_len +
			   t->elf.nloads * sizeof(*t->elf.loads) + sizeof(*t) +
			   (t->rt ? s->detector.size : 0) + (t->dw ? dw_bytes : 0);
	if (t && bk && hmap__get(&s->symtabs, bk) != t) {
		struct symtab *old = hmap__get(&s->symtabs, bk);

		if (old) { /* another loader got there first */
			symtab__free(t);
			return old;
		}
		if (hmap__put(&s->symtabs, bk, t)) {
			symtab__free(t);
			return NULL;
		}
		s->nsymbols += t->elf.nsyms;
		s->nsymtabs++;
		s->tab_bytes += t->bytes;
	} else if (t && !bk) {
		s->nsymbols += t->elf.nsyms;
		s->nsymtabs++;
		s->tab_bytes += t->bytes;
	}
	return t;
}

#define STALE_SLACK_NS (2 * 1000000000LL)

/* Reads pid's perf map into r, unless it is the file r->size and
 * r->mtime_ns describe on entry (-1: none), which sets r->unchanged.
 * Returns 0 or -errno. s (NULL: no budget) holds the perf map budget. */
static int perfmap_read(struct symbolizer *s, pid_t pid, int64_t deadline_ns,
			struct perfmap_result *r)
{
	char p[64];
	struct sf_cred c;
	struct stat st;
	size_t len, nlong = 0;
	char *buf;
	pid_t nspid;
	int64_t mtime, started;
	int fd, rfd, err;

	err = pidstat__cred(pid, &c, &nspid);
	if (err)
		return err;
	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	rfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	snprintf(p, sizeof(p), "tmp/perf-%d.map", (int)nspid);
	fd = safefile__open(rfd, p, true, true, SF_PERFMAP, &c, &st);
	close(rfd);
	if (fd < 0)
		return fd;
	mtime = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	/* A map last written before the process started is a dead process's
	 * whose pid this one got: its names are not this process's code. (The
	 * start is known to the second.) */
	started = pidstat__started_ns(pid);
	if (started > 0 && mtime < started - STALE_SLACK_NS) {
		safefile__refuse(SF_R_STALE, p, st.st_dev, st.st_ino);
		close(fd);
		return -ENOENT;
	}
	if (r->size == (int64_t)st.st_size && r->mtime_ns == mtime) {
		r->unchanged = true;
		close(fd);
		return 0;
	}
	r->size = st.st_size;
	r->mtime_ns = mtime;
	if (s) {
		pthread_mutex_lock(&s->lock);
		err = s->perfmap_bytes + (uint64_t)st.st_size > PERFMAP_BUDGET ? -EFBIG : 0;
		pthread_mutex_unlock(&s->lock);
		if (err) {
			safefile__refuse(SF_R_TOO_BIG, p, st.st_dev, st.st_ino);
			close(fd);
			return err;
		}
	}
	err = safefile__read_all(fd, SF_PERFMAP_MAX, deadline_ns, &buf, &len);
	close(fd);
	if (!err)
		err = perfmap__parse(buf, len, deadline_ns, &r->m, &nlong);
	if (err == -EFBIG)
		safefile__refuse(SF_R_TOO_BIG, p, st.st_dev, st.st_ino);
	else if (err == -ETIMEDOUT)
		safefile__refuse(SF_R_TIMEOUT, p, st.st_dev, st.st_ino);
	if (nlong)
		safefile__refuse(SF_R_LINE, p, st.st_dev, st.st_ino);
	if (!err && s) {
		pthread_mutex_lock(&s->lock);
		s->perfmap_bytes += perfmap__bytes(r->m);
		s->perfmap_reads++;
		pthread_mutex_unlock(&s->lock);
	}
	return err;
}

struct perfmap *perfmap__load(pid_t pid)
{
	struct perfmap_result r = { .size = -1, .mtime_ns = -1 };
	int err = perfmap_read(NULL, pid, now_mono_ns() + SYM_LOAD_TIMEOUT_MS * 1000000LL, &r);

	if (err) {
		errno = -err;
		return NULL;
	}
	return r.m;
}

/* Loads of one file that found nothing before it counts as unreadable. */
#define DSO_MAX_TRIES 4

static void run_job(struct symbolizer *s, struct loader *l, struct job *j)
{
	int64_t deadline = now_mono_ns() + SYM_LOAD_TIMEOUT_MS * 1000000LL;

	if (!j->perfmap) {
		struct symtab *t = dso_load(s, j); /* returns with the lock held */

		if (!l->abandoned && t)
			__atomic_store_n(&j->d->tab, t, __ATOMIC_RELEASE);
		else if (l->abandoned && t && !t->elf.build_id[0])
			symbolizer__uncount_free(s, t); /* nobody else holds it */
		/* A file is read through the process that mapped it; a
		 * short-lived one (a fork storm's child) may be gone before
		 * the loader gets to it. Then the next process seen mapping
		 * the file asks again, a few times at most. */
		if (!l->abandoned)
			__atomic_store_n(&j->d->state,
					 !t && ++j->d->tries < DSO_MAX_TRIES ? DSO_NEW : DSO_DONE,
					 __ATOMIC_RELEASE);
		symbolizer__job_free(NULL, j);
		return;
	}
	int err = perfmap_read(s, j->pid, deadline, &j->r);

	if (err) {
		j->r.unchanged = false;
		j->r.m = NULL;
	}
	pthread_mutex_lock(&s->lock);
	if (l->abandoned) {
		pthread_mutex_unlock(&s->lock);
		symbolizer__job_free(s, j);
		pthread_mutex_lock(&s->lock);
		return;
	}
	j->next = s->done;
	s->done = j;
}

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	struct symbolizer *s = l->s;

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-loader");

	if (pthread_getcpuclockid(pthread_self(), &l->cpu))
		l->cpu = CLOCK_THREAD_CPUTIME_ID; /* reads as ours: never idle */
	pthread_mutex_lock(&s->lock);
	while (!l->abandoned && !s->stop) {
		struct job *j = s->head;

		if (!j) {
			pthread_cond_wait(&s->wake, &s->lock);
			continue;
		}
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		s->nqueued--;
		l->cur = j;
		l->cur_ns = now_mono_ns();
		l->cur_cpu_ns = clock_ns(l->cpu);
		pthread_mutex_unlock(&s->lock);
		run_job(s, l, j); /* returns with the lock held */
		l->cur = NULL;
		s->loads++;
		pthread_cond_broadcast(&s->idle);
	}
	s->nloaders--;
	if (s->active == l)
		s->active = NULL;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	free(l);
	return NULL;
}

/* --- the queue and the watchdog: the sampler thread's calls --- */

bool symbolizer__enqueue(struct symbolizer *s, struct job *j)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	/* Started on first use, by the sampler thread: a thread inherits its
	 * creator's capabilities, and the daemon drops its own before that
	 * thread starts. Again once every hung loader has come back. */
	if (!s->active && !s->nloaders && !s->stop && start_loader(s))
		pr_warn("symbolize: cannot start the loader thread");
	ok = s->active && s->nqueued < MAX_QUEUED;
	if (ok) {
		j->next = NULL;
		if (s->tail)
			s->tail->next = j;
		else
			s->head = j;
		s->tail = j;
		s->nqueued++;
		pthread_cond_signal(&s->wake);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void symbolizer__watchdog(struct symbolizer *s)
{
	struct loader *l;

	pthread_mutex_lock(&s->lock);
	l = s->active;
	int64_t wall = l && l->cur ? now_mono_ns() - l->cur_ns : 0;
	if (wall > SYM_LOAD_TIMEOUT_MS * 1000000LL &&
	    (wall > LOAD_HARD_NS || clock_ns(l->cpu) - l->cur_cpu_ns < LOAD_IDLE_CPU_NS)) {
		struct job *j = l->cur;

		l->abandoned = true;
		s->active = NULL;
		s->abandoned++;
		safefile__refuse(SF_R_TIMEOUT, j->perfmap ? "perf map" : j->path, 0, 0);
		pr_debug("symbolize: a read for pid %d hangs; abandoned", (int)j->pid);
		/* The dso stays unresolved: its process loses its symbols. */
		if (!j->perfmap)
			__atomic_store_n(&j->d->state, DSO_DONE, __ATOMIC_RELEASE);
		if (s->nloaders <= MAX_ABANDONED && start_loader(s))
			pr_warn("symbolize: cannot start a loader thread");
		else if (!s->active)
			pr_warn("symbolize: %d file reads hang; no more symbols are loaded",
				s->nloaders);
	}
	pthread_mutex_unlock(&s->lock);
}

int symbolizer__drain(struct symbolizer *s, int timeout_ms)
{
	int64_t end = now_mono_ns() + timeout_ms * 1000000LL;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	while (s->head || (s->active && s->active->cur)) {
		if (now_mono_ns() > end) {
			err = -ETIMEDOUT;
			break;
		}
		pthread_mutex_unlock(&s->lock);
		usleep(1000);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}
