/*
 * unwinder.c - the table cache, its worker thread and the BPF maps.
 * One mutex guards the cache, the row allocator and the mmapped arrays'
 * contents; the worker drops it while it reads and compiles a file, so
 * the sampler thread waits at most for an install (a memcpy of rows).
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

#include "sampler/proc/pidstat.h"
#include "sampler/proc/safefile.h"
#include "sampler/unwind/reader.h"
#include "sampler/unwind/table.h"
#include "sampler/unwind/unwinder.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

enum { E_QUEUED, E_TABLE, E_FP, E_NONE };

/* A table used this recently is never evicted for room (no thrashing
 * between two big files); a file refused for room is retried this late. */
#define EVICT_MIN_IDLE_NS (10 * 1000000000LL)
#define RETRY_NS (10 * 1000000000LL)

struct src {
	pid_t pid;
	uint64_t start, end; /* the mapping in that process */
	char *path;
};

struct entry {
	uint64_t kdev, ino;
	int state;
	uint32_t base, nrows;
	int64_t used_ns;
	int64_t failed_ns; /* E_NONE: when; retried RETRY_NS later, used or not */
	/* where to read it (E_QUEUED): the newest process that asked, the
	 * likeliest to be alive when the worker comes to it; pid 0 once the
	 * worker took it */
	struct src src;
	struct entry *next_q;
	bool deferred; /* a big file sent to the back of the queue once */
	bool urgent;   /* a parked sample waits for it: never deferred */
	bool too_big;  /* over the per-file cap: not retried until idle */
};

struct extent {
	uint32_t base, n;
};

struct unwinder {
	struct unwinder_opts o;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool started;
	bool ready; /* unwinder__start done: the worker may run */
	int stop; /* also read, unlocked, by a build in progress */
	struct hmap files; /* key(kdev, ino) -> struct entry * */
	struct entry *q_head, *q_tail;
	size_t queued;
	/* BPF maps */
	int files_fd;
	int chunks_fd;  /* the array of row chunks (bpf/unwind.h) */
	int chunk_fd[UNW_MAX_CHUNKS]; /* -1: not created */
	struct unw_row *rows; /* the whole row space reserved; chunks mapped in place */
	struct unw_rule *rules;
	size_t rows_len, rules_len;
	uint32_t nrules;
	struct hmap rule_ix; /* hash(rule) -> global index + 1 */
	struct extent *free;  /* free row extents, sorted by base */
	size_t nfree, capfree;
	struct unwinder_stats st;
};

static uint64_t fkey(uint64_t kdev, uint64_t ino)
{
	uint64_t k[2] = { kdev, ino };
	uint64_t h = hash64(k, sizeof(k), 0x0e1f);

	return h ? h : 1;
}

uint64_t unwinder__kdev(uint64_t dev)
{
	return ((uint64_t)major(dev) << 20) | minor(dev);
}

struct unwinder *unwinder__new(const struct unwinder_opts *o)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->o = *o;
	/* A JVM, two nodes and a compiler running take 1.9M rows (cc1 479k,
	 * node 372k, libjvm 231k); 1M once left node without a table on
	 * such a host. Chunks exist only while rows are in them, so the
	 * default is the most the walk allows. */
	if (!u->o.max_rows)
		u->o.max_rows = UNW_MAX_CHUNKS * UNW_CHUNK_ROWS;
	/* whole chunks, no more than the walk's chunk search covers */
	if (u->o.max_rows > UNW_MAX_CHUNKS * UNW_CHUNK_ROWS)
		u->o.max_rows = UNW_MAX_CHUNKS * UNW_CHUNK_ROWS;
	u->o.max_rows = (u->o.max_rows + UNW_CHUNK_ROWS - 1) & ~(UNW_CHUNK_ROWS - 1);
	if (!u->o.max_rules)
		u->o.max_rules = 1u << 14;
	if (!u->o.max_files)
		u->o.max_files = 4096;
	if (!u->o.idle_ns)
		u->o.idle_ns = 600 * 1000000000LL;
	u->files_fd = u->chunks_fd = -1;
	for (int i = 0; i < UNW_MAX_CHUNKS; i++)
		u->chunk_fd[i] = -1;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->wake, NULL);
	return u;
}

int unwinder__size_maps(struct unwinder *u, struct bpf_map *rows, struct bpf_map *rules,
			struct bpf_map *files)
{
	int err = bpf_map__set_max_entries(rows, u->o.max_rows / UNW_CHUNK_ROWS);

	if (!err)
		err = bpf_map__set_max_entries(rules, u->o.max_rules);
	if (!err)
		err = bpf_map__set_max_entries(files, u->o.max_files);
	return err;
}

/* --- row extents --- */

/* Inserts the free extent (base, n) at position i. 0 or -ENOMEM. */
static int extent_insert(struct unwinder *u, size_t i, uint32_t base, uint32_t n)
{
	if (u->nfree == u->capfree) {
		size_t nc = u->capfree ? u->capfree * 2 : 64;
		struct extent *ne = realloc(u->free, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		u->free = ne;
		u->capfree = nc;
	}
	memmove(&u->free[i + 1], &u->free[i], (u->nfree - i) * sizeof(*u->free));
	u->free[i] = (struct extent){ base, n };
	u->nfree++;
	return 0;
}

/* First fit, lowest rows first (so tables pack into few chunks), where a
 * table of up to a chunk stays inside one and a bigger one starts a
 * chunk (the walk's search relies on both: bpf/unwind.h). */
static int extent_alloc(struct unwinder *u, uint32_t n, uint32_t *base)
{
	for (size_t i = 0; i < u->nfree; i++) {
		struct extent *f = &u->free[i];
		uint64_t s = f->base, end = (uint64_t)f->base + f->n;

		if (n <= UNW_CHUNK_ROWS) {
			if (s >> UNW_CHUNK_SHIFT != (s + n - 1) >> UNW_CHUNK_SHIFT)
				s = (s | (UNW_CHUNK_ROWS - 1)) + 1;
		} else {
			s = (s + UNW_CHUNK_ROWS - 1) & ~(uint64_t)(UNW_CHUNK_ROWS - 1);
		}
		if (s + n > end)
			continue;
		if (s + n < end && s > f->base) {
			/* the middle of the extent: its tail becomes another */
			if (extent_insert(u, i + 1, s + n, end - s - n))
				return -ENOMEM;
			f = &u->free[i];
			f->n = s - f->base;
		} else if (s > f->base) {
			f->n = s - f->base;
		} else {
			f->base += n;
			f->n -= n;
			if (!f->n) {
				memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
				u->nfree--;
			}
		}
		*base = s;
		return 0;
	}
	return -ENOSPC;
}

static int extent_free(struct unwinder *u, uint32_t base, uint32_t n)
{
	size_t i = 0;

	if (!n)
		return 0;
	while (i < u->nfree && u->free[i].base < base)
		i++;
	/* merge with the neighbours */
	if (i > 0 && u->free[i - 1].base + u->free[i - 1].n == base) {
		u->free[i - 1].n += n;
		if (i < u->nfree && base + n == u->free[i].base) {
			u->free[i - 1].n += u->free[i].n;
			memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
			u->nfree--;
		}
		return 0;
	}
	if (i < u->nfree && base + n == u->free[i].base) {
		u->free[i].base = base;
		u->free[i].n += n;
		return 0;
	}
	return extent_insert(u, i, base, n); /* -ENOMEM leaks the rows until restart */
}

/* --- row chunks (lock held) --- */

int unwinder__chunk_create(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unw_chunk", sizeof(__u32), sizeof(struct unw_row),
				UNW_CHUNK_ROWS, &o);

	return fd < 0 ? -errno : fd;
}

#define CHUNK_BYTES ((size_t)UNW_CHUNK_ROWS * sizeof(struct unw_row))
_Static_assert(sizeof(struct unw_row) == 8, "bpf/unwind_walk.h types a chunk's values as __u64");

/* Puts reserved address space back where chunk c was mapped. */
static void chunk_unmap(struct unwinder *u, uint32_t c)
{
	mmap((char *)u->rows + c * CHUNK_BYTES, CHUNK_BYTES, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* Creates chunk c, maps it at its place in the row space and hands it to
 * the walk. Creating a map takes CAP_BPF, which the daemon gives up once
 * it is up: then the helper that kept it makes one (o.chunk_fd). */
static int chunk_add(struct unwinder *u, uint32_t c)
{
	int fd = unwinder__chunk_create(), err;

	if ((fd == -EPERM || fd == -EACCES) && u->o.chunk_fd)
		fd = u->o.chunk_fd(u->o.chunk_ctx);
	if (fd < 0)
		return fd;
	if (mmap((char *)u->rows + c * CHUNK_BYTES, CHUNK_BYTES, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	if (bpf_map_update_elem(u->chunks_fd, &c, &fd, BPF_ANY)) {
		err = -errno;
		goto err_unmap;
	}
	u->chunk_fd[c] = fd;
	return 0;
err_unmap:
	chunk_unmap(u, c);
err_close:
	close(fd);
	return err;
}

/* Gives chunk c back. A walk that still holds it keeps it alive (the
 * kernel frees it after an RCU grace period); its file's entry in
 * unw_files is gone already, so no new walk looks for it. */
static void chunk_drop(struct unwinder *u, uint32_t c)
{
	bpf_map_delete_elem(u->chunks_fd, &c);
	chunk_unmap(u, c);
	close(u->chunk_fd[c]);
	u->chunk_fd[c] = -1;
}

/* Makes sure the chunks under rows [base, base + n) exist. 0 or -errno. */
static int chunks_cover(struct unwinder *u, uint32_t base, uint32_t n)
{
	for (uint32_t c = base >> UNW_CHUNK_SHIFT; c <= (base + n - 1) >> UNW_CHUNK_SHIFT; c++) {
		int err = u->chunk_fd[c] < 0 ? chunk_add(u, c) : 0;

		if (err)
			return err;
	}
	return 0;
}

/* Drops every chunk no table has a row in. */
static void chunks_trim(struct unwinder *u)
{
	for (size_t i = 0; i < u->nfree; i++) {
		uint64_t c = ((uint64_t)u->free[i].base + UNW_CHUNK_ROWS - 1) >> UNW_CHUNK_SHIFT;
		uint64_t end = ((uint64_t)u->free[i].base + u->free[i].n) >> UNW_CHUNK_SHIFT;

		for (; c < end; c++)
			if (u->chunk_fd[c] >= 0)
				chunk_drop(u, c);
	}
}

/* --- install / evict (lock held) --- */

static void drop_entry(struct unwinder *u, struct entry *e)
{
	struct unw_file_key k = { e->kdev, e->ino };

	bpf_map_delete_elem(u->files_fd, &k);
	if (e->state == E_TABLE) {
		extent_free(u, e->base, e->nrows);
		u->st.tables--;
		u->st.rows -= e->nrows;
		u->st.evicted++;
	} else if (e->state == E_FP) {
		u->st.fp_files--;
	} else if (e->state == E_NONE) {
		u->st.failed_files--;
	}
	hmap__del(&u->files, fkey(e->kdev, e->ino));
	free(e->src.path);
	free(e);
}

/* Frees the least recently used table (not keep). Returns 0 or -ENOSPC. */
static int evict_lru(struct unwinder *u, const struct entry *keep)
{
	struct entry *old = NULL;

	for (size_t i = 0; i < u->files.cap; i++) {
		struct entry *e = u->files.vals[i];

		/* (the vDSO's table cannot be rebuilt: it never goes) */
		if (!u->files.keys[i] || e == keep || e->state != E_TABLE ||
		    (e->kdev == UNW_VDSO_DEV && e->ino == UNW_VDSO_INO) ||
		    now_mono_ns() - e->used_ns < EVICT_MIN_IDLE_NS)
			continue;
		if (!old || e->used_ns < old->used_ns)
			old = e;
	}
	if (!old)
		return -ENOSPC;
	pr_debug("unwind: evicting the table of %" PRIu64 ":%" PRIu64 " (%u rows) for room",
		 old->kdev, old->ino, old->nrows);
	drop_entry(u, old);
	return 0;
}

static long rule_index(struct unwinder *u, const struct unw_rule *r)
{
	uint64_t h = hash64(r, sizeof(*r), 0x7e1e);
	uintptr_t v;

	h = h ? h : 1;
	/* Linear probing on the hash key itself: equal hashes, check bytes. */
	for (int probe = 0; probe < 64; probe++, h = h + 0x9e3779b97f4a7c15ull ? h + 0x9e3779b97f4a7c15ull : 1) {
		v = (uintptr_t)hmap__get(&u->rule_ix, h);
		if (!v) {
			if (u->nrules >= u->o.max_rules)
				return -ENOSPC;
			if (hmap__put(&u->rule_ix, h, (void *)(uintptr_t)(u->nrules + 1)))
				return -ENOMEM;
			u->rules[u->nrules] = *r;
			return u->nrules++;
		}
		if (!memcmp(&u->rules[v - 1], r, sizeof(*r)))
			return v - 1;
	}
	return -ENOSPC;
}

static void set_state(struct unwinder *u, struct entry *e, int state)
{
	struct unw_file_key k = { e->kdev, e->ino };
	struct unw_file f = { .kind = state == E_FP ? UNW_FILE_FP : UNW_FILE_NONE };

	e->state = state;
	if (state == E_FP)
		u->st.fp_files++;
	else
		u->st.failed_files++;
	bpf_map_update_elem(u->files_fd, &k, &f, BPF_ANY);
}

static int install(struct unwinder *u, struct entry *e, const struct unw_table *t)
{
	struct unw_file_key k = { e->kdev, e->ino };
	struct unw_file f = { .kind = UNW_FILE_TABLE };
	uint32_t *map, base;
	int err;

	/* One file may not take more than half the room, nor more chunks
	 * than the walk searches (gcc's cc1 has 479k rows, libLLVM 949k). */
	if (t->nrows > u->o.max_rows / 2 || t->nrows > UNW_FILE_CHUNKS * UNW_CHUNK_ROWS)
		return -E2BIG;
	map = malloc(t->nrules * sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (size_t i = 0; i < t->nrules; i++) {
		long ix = rule_index(u, &t->rules[i]);

		if (ix < 0) {
			free(map);
			return (int)ix;
		}
		map[i] = ix;
	}
	while ((err = extent_alloc(u, t->nrows, &base)) == -ENOSPC)
		if (evict_lru(u, e))
			break;
	if (!err && (err = chunks_cover(u, base, t->nrows)))
		extent_free(u, base, t->nrows);
	if (err) {
		free(map);
		return err;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		u->rows[base + i].off = t->rows[i].off;
		u->rows[base + i].rule = map[t->rows[i].rule];
	}
	free(map);
	f.base = base;
	f.nrows = t->nrows;
	if (bpf_map_update_elem(u->files_fd, &k, &f, BPF_ANY)) {
		err = -errno;
		extent_free(u, base, t->nrows);
		return err;
	}
	e->state = E_TABLE;
	e->base = base;
	e->nrows = t->nrows;
	u->st.tables++;
	u->st.rows += t->nrows;
	return 0;
}

/* --- the worker --- */

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
static bool unqueue(struct unwinder *u, struct entry *e)
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

static void enqueue(struct unwinder *u, struct entry *e)
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
			enqueue(u, e);
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
		err = install(u, e, t);
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
			enqueue(u, e);
		else
			drop_entry(u, e);
		pthread_mutex_unlock(&u->lock);
		free(src->path);
		return;
	}
	if (err == -ENODATA) {
		pr_debug("unwind: %s has no unwind information: frame pointers", src->path);
		set_state(u, e, E_FP);
	} else if (err) {
		pr_debug("unwind: no table for %s (pid %d): %s", src->path, (int)src->pid, strerror(-err));
		/* A file whose read hung is not read again until idle. */
		e->too_big = err == -E2BIG || err == -EFBIG || res.hung;
		e->failed_ns = now_mono_ns();
		set_state(u, e, E_NONE);
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
			drop_entry(u, e);
			i--; /* deletion shifts the probe chain into this slot */
		}
	}
	chunks_trim(u);
}

static void *worker(void *arg)
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
static void load_vdso(struct unwinder *u)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t start, end;
	struct unw_table *t;
	struct entry *e;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) != 2)
			continue;
		if (unw_table__compile_mem((const void *)(uintptr_t)start, end - start, &t))
			break;
		e = calloc(1, sizeof(*e));
		if (e) {
			e->kdev = UNW_VDSO_DEV;
			e->ino = UNW_VDSO_INO;
			e->used_ns = now_mono_ns();
			if (hmap__put(&u->files, fkey(e->kdev, e->ino), e) || install(u, e, t)) {
				hmap__del(&u->files, fkey(e->kdev, e->ino));
				free(e);
			}
		}
		unw_table__free(t);
		break;
	}
	fclose(f);
}

static void *map_array(struct bpf_map *m, size_t *len)
{
	size_t sz = (size_t)bpf_map__max_entries(m) * ((bpf_map__value_size(m) + 7) & ~7u);
	long pg = sysconf(_SC_PAGESIZE);
	void *p;

	sz = (sz + pg - 1) / pg * pg;
	p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);
	if (p == MAP_FAILED)
		return NULL;
	*len = sz;
	return p;
}

int unwinder__start(struct unwinder *u, struct bpf_map *rows, struct bpf_map *rules,
		    struct bpf_map *files)
{
	int err;

	u->files_fd = bpf_map__fd(files);
	u->chunks_fd = bpf_map__fd(rows);
	/* Address space only: chunks are mapped into it as they are made,
	 * so a table over several chunks is one array to user space. */
	u->rows_len = (size_t)u->o.max_rows * sizeof(struct unw_row);
	u->rows = mmap(NULL, u->rows_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (u->rows == MAP_FAILED) {
		u->rows = NULL;
		return -errno;
	}
	u->rules = map_array(rules, &u->rules_len);
	if (!u->rules)
		return -errno;
	/* rules[0]: no information (the zeroed rule) */
	u->nrules = 1;
	err = extent_free(u, 0, u->o.max_rows);
	if (err)
		return err;
	load_vdso(u);
	u->ready = true;
	return 0;
}

int unwinder__run(struct unwinder *u)
{
	int err;

	if (!u || !u->ready || u->started)
		return 0;
	err = pthread_create(&u->thread, NULL, worker, u);
	if (err)
		return -err;
	u->started = true;
	return 0;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->started) {
		pthread_mutex_lock(&u->lock);
		__atomic_store_n(&u->stop, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&u->wake);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
	}
	for (size_t i = 0; i < u->files.cap; i++) {
		struct entry *e = u->files.vals[i];

		if (!u->files.keys[i])
			continue;
		free(e->src.path);
		free(e);
	}
	for (int c = 0; c < UNW_MAX_CHUNKS; c++)
		if (u->chunk_fd[c] >= 0)
			close(u->chunk_fd[c]);
	hmap__fini(&u->files);
	hmap__fini(&u->rule_ix);
	if (u->rows)
		munmap(u->rows, u->rows_len);
	if (u->rules)
		munmap(u->rules, u->rules_len);
	free(u->free);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->wake);
	free(u);
}

static enum twin_kind kind_of(const struct entry *e)
{
	switch (e->state) {
	case E_TABLE:
		return TWIN_TABLE;
	case E_FP:
		return TWIN_FP;
	case E_QUEUED:
		return TWIN_WAIT;
	default:
		return TWIN_NOTABLE;
	}
}

enum twin_kind unwinder__request(struct unwinder *u, pid_t pid, uint64_t kdev, uint64_t ino,
				 const char *path, uint64_t start, uint64_t end, bool urgent)
{
	uint64_t k = fkey(kdev, ino);
	struct entry *e;
	enum twin_kind kind;

	pthread_mutex_lock(&u->lock);
	e = hmap__get(&u->files, k);
	if (e) {
		kind = kind_of(e);
		/* Queued at exec, behind other files (or sent back for its
		 * size), and now a sample is parked for it: first in line. A
		 * burst of new interpreters otherwise filled the park while
		 * their libpython waited its turn. */
		if (e->state == E_QUEUED && urgent && !e->urgent && unqueue(u, e)) {
			e->urgent = true;
			e->next_q = u->q_head;
			u->q_head = e;
			if (!u->q_tail)
				u->q_tail = e;
			u->queued++;
			pthread_cond_signal(&u->wake);
		}
		if (e->state == E_QUEUED && e->src.pid != pid) {
			/* The newest asker: the likeliest to be alive when the
			 * worker reads the file (a shell's children come and go). */
			char *np = strdup(path ? path : "");

			if (np) {
				free(e->src.path);
				e->src = (struct src){ pid, start, end, np };
			}
		}
		goto out;
	}
	kind = TWIN_NOTABLE;
	/* A bound on the queue: a fork storm of new binaries waits its turn. */
	if (u->queued >= 256 || !u->started)
		goto out;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out;
	e->kdev = kdev;
	e->ino = ino;
	e->state = E_QUEUED;
	e->src = (struct src){ pid, start, end, strdup(path ? path : "") };
	e->used_ns = now_mono_ns();
	if (!e->src.path || hmap__put(&u->files, k, e)) {
		free(e->src.path);
		free(e);
		goto out;
	}
	e->urgent = urgent;
	if (urgent && u->q_head) { /* a sample waits for it */
		e->next_q = u->q_head;
		u->q_head = e;
		u->queued++;
	} else {
		enqueue(u, e);
	}
	pthread_cond_signal(&u->wake);
	kind = TWIN_WAIT;
out:
	pthread_mutex_unlock(&u->lock);
	return kind;
}

void unwinder__lock(struct unwinder *u)
{
	pthread_mutex_lock(&u->lock);
}

void unwinder__unlock(struct unwinder *u)
{
	pthread_mutex_unlock(&u->lock);
}

int unwinder__lookup_locked(struct unwinder *u, uint64_t kdev, uint64_t ino, struct twin_map *m)
{
	struct entry *e = hmap__get(&u->files, fkey(kdev, ino));

	m->rows = NULL;
	m->nrows = 0;
	m->rules = u->rules;
	m->nrules = u->nrules;
	if (!e) {
		m->kind = TWIN_NOTABLE;
		return -ENOENT;
	}
	m->kind = kind_of(e);
	if (e->state == E_TABLE) {
		m->rows = u->rows + e->base;
		m->nrows = e->nrows;
	}
	return 0;
}

void unwinder__touch_locked(struct unwinder *u, uint64_t kdev, uint64_t ino, int64_t now_ns)
{
	struct entry *e = hmap__get(&u->files, fkey(kdev, ino));

	if (e && e->state != E_QUEUED)
		e->used_ns = now_ns;
}

void unwinder__stats(struct unwinder *u, struct unwinder_stats *st)
{
	pthread_mutex_lock(&u->lock);
	*st = u->st;
	st->rules = u->nrules;
	st->table_bytes = st->rows * sizeof(struct unw_row) + st->rules * sizeof(struct unw_rule);
	st->chunks = 0;
	for (int c = 0; c < UNW_MAX_CHUNKS; c++)
		st->chunks += u->chunk_fd[c] >= 0;
	st->map_bytes = st->chunks * CHUNK_BYTES + u->rules_len +
			(uint64_t)u->o.max_files * (sizeof(struct unw_file_key) + sizeof(struct unw_file) + 64);
	st->queued = u->queued;
	pthread_mutex_unlock(&u->lock);
}
