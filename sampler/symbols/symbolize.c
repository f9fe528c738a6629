/*
 * symbolize.c - kallsyms, the dso/symtab cache and perf maps.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/util/hmap.h"
#include "sampler/proc/safefile.h"
#include "sampler/proc/busguard.h"
#include "sampler/symbols/debugfile.h"
#include "store/util/prom.h"
#include "sampler/symbols/dwline.h"
#include "sampler/symbols/goline.h"
#include "sampler/symbols/kallsyms.h"
#include "sampler/python/pyproc.h"
#include "sampler/runtime/runtime.h"
#include "sampler/symbols/symbolize.h"
#include "store/util/util.h"

/* One load for the loader thread. */
struct job {
	struct job *next;
	bool perfmap;
	pid_t pid;
	/* a file: its dso, the path and extent of the mapping */
	struct dso *d;
	char *path;
	uint64_t start, end;
	/* a perf map request, and its result */
	struct perfmap_result r;
};

/* A loader thread. Abandoned when a load hangs: it then owns its job
 * alone and, when (if) the read returns, drops the result and exits. */
struct loader {
	struct symbolizer *s;
	struct job *cur;    /* in hand; guarded by s->lock */
	int64_t cur_ns;     /* when it took cur */
	int64_t cur_cpu_ns; /* the thread's CPU time then */
	clockid_t cpu;      /* the thread's CPU clock */
	bool abandoned;
};

/* A load past SYM_LOAD_TIMEOUT_MS that used less CPU than this waits on
 * I/O that does not come (a hung FUSE or NFS read) and is abandoned; one
 * that works (parsing, on a busy host) is given up to LOAD_HARD_NS. Its
 * work is bounded anyway by the size caps. */
#define LOAD_IDLE_CPU_NS (50 * 1000000LL)
#define LOAD_HARD_NS (10 * SYM_LOAD_TIMEOUT_MS * 1000000LL)

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		return 0;
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Loaders that may hang in a read at once; then loading stops. */
#define MAX_ABANDONED 4
/* Queued loads at most (one per dso, one per process's perf map). */
#define MAX_QUEUED 4096
/* Memory all loaded perf maps may hold together. */
#define PERFMAP_BUDGET (16u << 20)

/* Build ids whose debug file arrived, queued for the sampler thread. */
#define CHANGED_MAX 64

#define LOOK_SLOTS 2048

struct symbolizer {
	char *debug_root;
	char *debug_cache;            /* issue 30: debuginfod's cache, or NULL */
	struct symbolizer_hooks hooks; /* set before the loader starts */
	struct kallsyms *ksyms;
	struct elf_info vdso;
	bool has_vdso;
	struct hmap dsos;    /* hash(dev, ino) -> struct dso *; sampler thread */
	uint64_t hits, misses; /* sampler thread */
	uint64_t clock;        /* symbolizer__trim calls; sampler thread */
	bool dw_used;          /* a table's lines read since the last trim; sampler thread */
	/* Lookups lately, direct-mapped by (dso, offset): a busy process's
	 * frames repeat, and a lookup in a big table (node's: 100k symbols,
	 * 17 steps of a binary search through megabytes) was a tenth of the
	 * sampler thread's time. An entry holds while its dso has the same
	 * table and no table was dropped since (tabgen). Sampler thread. */
	struct look {
		const struct dso *d;
		const struct symtab *t;
		uint64_t off, gen;
		const char *name, *file;
		int line;
		bool line_done, has_line;
	} look[LOOK_SLOTS];
	uint64_t tabgen; /* tables dropped: bumped under lock by the sampler thread */

	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;  /* work queued, or stop */
	pthread_cond_t idle;  /* a job finished, or a loader exited */
	struct hmap symtabs;  /* hash(build id) -> struct symtab * */
	/* symtabs without a build id belong to their dso alone */
	struct job *head, *tail, *done; /* queue; finished perf map reads */
	size_t nqueued;
	struct loader *active; /* the loader taking jobs, NULL if none */
	int nloaders;          /* threads alive, abandoned ones included */
	bool stop;
	char changed[CHANGED_MAX][129]; /* symbolizer__symbols_changed's queue */
	size_t nchanged;
	uint64_t nsymbols, nsymtabs, loads, abandoned, perfmap_reads;
	/* Go binaries named from .gopclntab, by layout (1.16, 1.18, 1.20),
	 * and those whose table we do not read (unknown layout, damaged). */
	uint64_t go_read[3], go_refused;
	uint64_t perfmap_bytes, tab_bytes, evicted;
};

static int load_kallsyms(struct symbolizer *s)
{
	s->ksyms = kallsyms__load("/proc/kallsyms");
	if (!s->ksyms)
		return -errno;
	if (!kallsyms__count(s->ksyms))
		pr_warn("symbolize: no symbols in /proc/kallsyms (kptr_restrict?)");
	return 0;
}

/* Our own vDSO: its extent from /proc/self/maps, its image in memory. */
static void load_vdso(struct symbolizer *s)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t start, end;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) != 2)
			continue;
		s->has_vdso = !elfsym__read_mem((const void *)(uintptr_t)start, end - start, &s->vdso);
		break;
	}
	fclose(f);
}

const char *symbolizer__vdso(struct symbolizer *s, uint64_t off)
{
	uint64_t vaddr;
	const char *name = NULL;

	if (s->has_vdso && elfsym__off_to_vaddr(&s->vdso, off, &vaddr))
		name = elfsym__lookup(&s->vdso, vaddr);
	return name;
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

struct symbolizer *symbolizer__new(const char *debug_root)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->idle, NULL);
	s->debug_root = strdup(debug_root ? debug_root : "/usr/lib/debug");
	if (!s->debug_root) {
		err = -ENOMEM;
		goto err;
	}
	err = load_kallsyms(s);
	if (err)
		goto err;
	load_vdso(s);
	return s;
err:
	symbolizer__free(s);
	errno = -err;
	return NULL;
}

static void symtab__free(struct symtab *t)
{
	if (!t)
		return;
	elfsym__fini(&t->elf);
	rtfile__free(t->rt);
	if (t->dw) {
		dwline__close(t->dw);
		close(t->dw_fd);
	}
	goline__close(t->go);
	free(t);
}

/* Frees a counted table; s->lock held. */
static void uncount_free(struct symbolizer *s, struct symtab *t)
{
	s->nsymbols -= t->elf.nsyms;
	s->nsymtabs--;
	s->tab_bytes -= t->bytes;
	symtab__free(t);
}

static void job__free(struct symbolizer *s, struct job *j)
{
	if (!j)
		return;
	if (j->r.m)
		symbolizer__perfmap_free(s, j->r.m);
	free(j->path);
	free(j);
}

void symbolizer__free(struct symbolizer *s)
{
	struct timespec ts;
	struct job *j;

	if (!s)
		return;
	/* Loaders finish the job in hand (their reads stop at its deadline);
	 * one stuck in a read that never returns keeps pointers into s, so s
	 * is then left to the process's exit rather than freed under it. */
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 500 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (s->nloaders > 0)
		if (pthread_cond_timedwait(&s->idle, &s->lock, &ts) == ETIMEDOUT)
			break;
	if (s->nloaders > 0) {
		pthread_mutex_unlock(&s->lock);
		pr_warn("symbolize: a file read still hangs; leaving it to exit");
		return;
	}
	pthread_mutex_unlock(&s->lock);
	while ((j = s->head)) {
		s->head = j->next;
		job__free(s, j);
	}
	while ((j = s->done)) {
		s->done = j->next;
		job__free(s, j);
	}
	for (size_t i = 0; i < s->dsos.cap; i++) {
		struct dso *d = s->dsos.vals[i];

		if (!s->dsos.keys[i])
			continue;
		/* A symtab without build id is owned by its dso. */
		if (d->tab && !d->tab->elf.build_id[0])
			symtab__free(d->tab);
		free(d->path);
		free(d);
	}
	for (size_t i = 0; i < s->symtabs.cap; i++)
		if (s->symtabs.keys[i])
			symtab__free(s->symtabs.vals[i]);
	hmap__fini(&s->dsos);
	hmap__fini(&s->symtabs);
	elfsym__fini(&s->vdso);
	kallsyms__free(s->ksyms);
	free(s->debug_root);
	free(s->debug_cache);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr)
{
	return kallsyms__lookup(s->ksyms, addr);
}

static uint64_t dso_key(uint64_t dev, uint64_t ino, const char *path)
{
	uint64_t k[2] = { dev, ino };
	uint64_t h = hash64(k, sizeof(k), 0x5eed);

	/* Files without an inode (rare) are told apart by path. */
	if (!ino && path)
		h = hash64(path, strlen(path), h);
	return h ? h : 1;
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
 * truncated, its FUSE server gone) an -EIO (sampler/proc/busguard.h). */
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

	if (safefile__cred(j->pid, &c, NULL)) {
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
	t->rt = rtfile__detect(fd, j->path, &t->elf);
	/* glibc by what it defines, not by its file's name (a table is
	 * shared by build id, whatever path first brought it). */
	if (elfsym__find(&t->elf, "gnu_get_libc_version")) {
		int m = pyfile__glibc_minor(fd);

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
			   (t->rt ? sizeof(*t->rt) : 0) + (t->dw ? dw_bytes : 0);
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

	err = safefile__cred(pid, &c, &nspid);
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
	started = safefile__started_ns(pid);
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
			uncount_free(s, t); /* nobody else holds it */
		/* A file is read through the process that mapped it; a
		 * short-lived one (a fork storm's child) may be gone before
		 * the loader gets to it. Then the next process seen mapping
		 * the file asks again, a few times at most. */
		if (!l->abandoned)
			__atomic_store_n(&j->d->state,
					 !t && ++j->d->tries < DSO_MAX_TRIES ? DSO_NEW : DSO_DONE,
					 __ATOMIC_RELEASE);
		job__free(NULL, j);
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
		job__free(s, j);
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

/* --- the sampler thread's side --- */

/* Queues j; false when the queue is full or nobody would run it. */
static bool enqueue(struct symbolizer *s, struct job *j)
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

struct dso *symbolizer__dso(struct symbolizer *s, pid_t pid, uint64_t dev, uint64_t ino,
			    const char *path, uint64_t start, uint64_t end)
{
	uint64_t k = dso_key(dev, ino, path);
	struct dso *d = hmap__get(&s->dsos, k);
	struct job *j;

	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		d->dev = dev;
		d->ino = ino;
		d->path = strdup(path);
		if (!d->path || hmap__put(&s->dsos, k, d)) {
			free(d->path);
			free(d);
			return NULL;
		}
	}
	if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != DSO_NEW)
		return d;
	j = calloc(1, sizeof(*j));
	if (!j)
		return d;
	j->pid = pid;
	j->d = d;
	j->path = strdup(path);
	j->start = start;
	j->end = end;
	__atomic_store_n(&d->state, DSO_QUEUED, __ATOMIC_RELEASE);
	if (!j->path || !enqueue(s, j)) {
		/* Asked again at its next sample. */
		__atomic_store_n(&d->state, DSO_NEW, __ATOMIC_RELEASE);
		job__free(NULL, j);
	}
	return d;
}

static int by_used(const void *a, const void *b)
{
	const struct symtab *x = *(struct symtab *const *)a, *y = *(struct symtab *const *)b;

	if (x->used != y->used)
		return (x->used > y->used) - (x->used < y->used);
	return (x > y) - (x < y); /* copies of one table side by side */
}

/* Drops table t: every dso holding it is read again at its next sample.
 * s->lock held; sampler thread (symbolizer__trim says why it is safe). */
static void drop_table(struct symbolizer *s, struct symtab *t)
{
	for (size_t k = 0; k < s->dsos.cap; k++) {
		struct dso *d = s->dsos.keys[k] ? s->dsos.vals[k] : NULL;

		if (d && d->tab == t) {
			__atomic_store_n(&d->tab, NULL, __ATOMIC_RELEASE);
			d->tries = 0;
			__atomic_store_n(&d->state, DSO_NEW, __ATOMIC_RELEASE);
		}
	}
	if (t->elf.build_id[0]) {
		uint64_t bk = hash64(t->elf.build_id, strlen(t->elf.build_id), 0xb1d);

		hmap__del(&s->symtabs, bk ? bk : 1);
	}
	s->tabgen++; /* lookups remembered may name from t */
	uncount_free(s, t);
}

/* Tables of build ids whose debug file arrived, read without a symbol
 * table: dropped (once their dsos are done loading), so their next
 * sample reads them again and load_debug finds the file. s->lock held. */
static void apply_changed(struct symbolizer *s)
{
	size_t keep = 0;

	for (size_t i = 0; i < s->nchanged; i++) {
		const char *b = s->changed[i];
		uint64_t bk = hash64(b, strlen(b), 0xb1d);
		struct symtab *t = hmap__get(&s->symtabs, bk ? bk : 1);
		bool busy = false;

		if (!t || t->elf.has_symtab)
			continue;
		for (size_t k = 0; k < s->dsos.cap && !busy; k++) {
			struct dso *d = s->dsos.keys[k] ? s->dsos.vals[k] : NULL;

			busy = d && d->tab == t && d->state != DSO_DONE;
		}
		if (busy) { /* a load holds it: next time */
			memmove(s->changed[keep++], b, sizeof(s->changed[0]));
			continue;
		}
		pr_debug("symbolize: %s: debug file arrived; its table is read again", b);
		drop_table(s, t);
	}
	s->nchanged = keep;
}

void symbolizer__symbols_changed(struct symbolizer *s, const char *bid)
{
	pthread_mutex_lock(&s->lock);
	if (s->nchanged < CHANGED_MAX && strlen(bid) < sizeof(s->changed[0]))
		snprintf(s->changed[s->nchanged++], sizeof(s->changed[0]), "%s", bid);
	pthread_mutex_unlock(&s->lock);
}

int symbolizer__set_hooks(struct symbolizer *s, const struct symbolizer_hooks *h)
{
	static const struct symbolizer_hooks none;
	char *dc = h && h->debug_cache ? strdup(h->debug_cache) : NULL;

	if (h && h->debug_cache && !dc)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	/* The cache path stays while a loader may be reading it: freed with
	 * s, or when replaced by another. */
	if (dc) {
		free(s->debug_cache);
		s->debug_cache = dc;
	}
	s->hooks = h ? *h : none;
	s->hooks.debug_cache = s->debug_cache;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/*
 * Why this is safe: lookups and dso states are the sampler thread's, and
 * so is this call; a table is dropped only from dsos the loader is done
 * with (DSO_DONE), and a load in flight that found the same build id
 * takes it again under the lock (dso_load), so no thread keeps a pointer
 * to a freed table. Frames' names do not outlive the sample they were
 * looked up for (the batch copies them).
 */
void symbolizer__trim(struct symbolizer *s, uint64_t budget)
{
	struct symtab **cand = NULL;
	size_t n = 0, cap = 0;
	uint64_t keep_from;

	s->clock++;
	budget = budget ? budget : SYM_CACHE_BYTES;
	keep_from = s->clock > SYM_KEEP_CALLS ? s->clock - SYM_KEEP_CALLS : 0;
	pthread_mutex_lock(&s->lock);
	if (s->tab_bytes <= budget)
		goto out;
	/* Distinct tables of finished dsos, not used lately. */
	for (size_t i = 0; i < s->dsos.cap; i++) {
		struct dso *d = s->dsos.keys[i] ? s->dsos.vals[i] : NULL;
		struct symtab *t = d ? d->tab : NULL;

		if (!t || t->used >= keep_from || d->state != DSO_DONE || t->bytes == 0)
			continue;
		if (n == cap) {
			struct symtab **g = realloc(cand, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				goto out;
			cand = g;
		}
		cand[n++] = t; /* a table of several dsos comes more than once */
	}
	if (n)
		qsort(cand, n, sizeof(*cand), by_used);
	for (size_t i = 0; i < n && s->tab_bytes > budget / 4 * 3; i++) {
		struct symtab *t = cand[i];

		if (i && cand[i - 1] == t)
			continue;
		drop_table(s, t);
		s->evicted++;
	}
out:
	/* Lines are read on this thread only: none is being read now. */
	for (size_t i = 0; s->dw_used && i < s->dsos.cap; i++) {
		struct dso *d = s->dsos.keys[i] ? s->dsos.vals[i] : NULL;
		struct symtab *t = d ? d->tab : NULL;

		if (t && t->dw_used) {
			t->dw_used = false;
			dwline__unmap(t->dw);
			goline__unmap(t->go);
		}
	}
	s->dw_used = false;
	apply_changed(s);
	pthread_mutex_unlock(&s->lock);
	free(cand);
}

/* The remembered lookup of (d, off) in t, fresh or not. */
static struct look *look_slot(struct symbolizer *s, const struct dso *d, uint64_t off)
{
	return &s->look[hash_pair64((uint64_t)(uintptr_t)d, off) & (LOOK_SLOTS - 1)];
}

static bool look_holds(const struct symbolizer *s, const struct look *e, const struct dso *d,
		       const struct symtab *t, uint64_t off)
{
	return e->d == d && e->t == t && e->off == off && e->gen == s->tabgen;
}

const char *symbolizer__lookup(struct symbolizer *s, struct dso *d, uint64_t off)
{
	struct symtab *t = dso__tab(d);
	const char *name = NULL;
	struct look *e;
	uint64_t vaddr;

	if (!t) {
		s->misses++;
		return NULL;
	}
	t->used = s->clock;
	e = look_slot(s, d, off);
	if (look_holds(s, e, d, t, off)) {
		name = e->name;
	} else {
		if (elfsym__off_to_vaddr(&t->elf, off, &vaddr))
			name = elfsym__lookup(&t->elf, vaddr);
		*e = (struct look){ .d = d, .t = t, .off = off, .gen = s->tabgen, .name = name };
	}
	if (name)
		s->hits++;
	else
		s->misses++;
	return name;
}

bool symbolizer__line(struct symbolizer *s, struct dso *d, uint64_t off, const char **file,
		      int *line)
{
	struct symtab *t = dso__tab(d);
	struct look *e;
	uint64_t vaddr;
	bool ok;

	if (!t || (!t->dw && !t->go))
		return false;
	e = look_slot(s, d, off);
	if (look_holds(s, e, d, t, off) && e->line_done) {
		*file = e->file;
		*line = e->line;
		return e->has_line;
	}
	ok = elfsym__off_to_vaddr(&t->elf, off, &vaddr) &&
	     (t->dw ? dwline__lookup(t->dw, vaddr, file, line) : goline__lookup(t->go, vaddr, file, line));
	t->dw_used = s->dw_used = true;
	if (look_holds(s, e, d, t, off)) {
		e->line_done = true;
		e->has_line = ok;
		e->file = ok ? *file : NULL;
		e->line = ok ? *line : 0;
	}
	return ok;
}

void symbolizer__stats(struct symbolizer *s, struct symbolizer_stats *st)
{
	st->dsos = s->dsos.len;
	st->kernel_symbols = kallsyms__count(s->ksyms);
	st->hits = s->hits;
	st->misses = s->misses;
	pthread_mutex_lock(&s->lock);
	st->symtabs = s->nsymtabs;
	st->symbols = s->nsymbols;
	st->queued = s->nqueued;
	st->loads = s->loads;
	st->abandoned = s->abandoned;
	st->perfmap_bytes = s->perfmap_bytes;
	st->perfmap_reads = s->perfmap_reads;
	st->symtab_bytes = s->tab_bytes;
	st->evicted = s->evicted;
	pthread_mutex_unlock(&s->lock);
}

int symbolizer__perfmap_request(struct symbolizer *s, pid_t pid, uint64_t token, int64_t size,
				int64_t mtime_ns)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->perfmap = true;
	j->pid = pid;
	j->r.pid = pid;
	j->r.token = token;
	j->r.size = size;
	j->r.mtime_ns = mtime_ns;
	if (!enqueue(s, j)) {
		free(j);
		return -EBUSY;
	}
	return 0;
}

bool symbolizer__perfmap_take(struct symbolizer *s, struct perfmap_result *r)
{
	struct job *j;

	pthread_mutex_lock(&s->lock);
	j = s->done;
	if (j)
		s->done = j->next;
	pthread_mutex_unlock(&s->lock);
	if (!j)
		return false;
	*r = j->r;
	j->r.m = NULL;
	job__free(s, j);
	return true;
}

void symbolizer__perfmap_free(struct symbolizer *s, struct perfmap *m)
{
	if (!m)
		return;
	if (s) {
		pthread_mutex_lock(&s->lock);
		s->perfmap_bytes -= perfmap__bytes(m);
		pthread_mutex_unlock(&s->lock);
	}
	perfmap__free(m);
}

void symbolizer__go_metrics(struct symbolizer *s, struct buf *out)
{
	static const char *const layouts[3] = { "1.16", "1.18", "1.20" };
	uint64_t r[3], bad;

	pthread_mutex_lock(&s->lock);
	memcpy(r, s->go_read, sizeof(r));
	bad = s->go_refused;
	pthread_mutex_unlock(&s->lock);
	prom__family(out, "proffs_go_binaries_total", PROM_COUNTER,
		     "Go binaries whose functions were named from their own table (.gopclntab), by the "
		     "table's layout (the first Go version that writes it); unknown: a layout not read, or a "
		     "damaged table (their frames stay module+0x).");
	for (int k = 0; k < 3; k++)
		prom__u64_by(out, "proffs_go_binaries_total", "layout", layouts[k], r[k]);
	prom__u64_by(out, "proffs_go_binaries_total", "layout", "unknown", bad);
}
