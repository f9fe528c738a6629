/*
 * unwinder.c - the table cache and the BPF maps (its worker thread is
 * worker.c's, the row space rows.c's).
 * One mutex guards the cache, the row allocator and the mmapped arrays'
 * contents; the worker drops it while it reads and compiles a file, so
 * the sampler thread waits at most for an install (a memcpy of rows).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sampler/unwind/table.h"
#include "sampler/unwind/unwinder_int.h"
#include "store/util/hmap.h"
#include "store/util/prom.h"
#include "store/util/util.h"

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

/* --- install / evict (lock held) --- */

void unw_drop_entry(struct unwinder *u, struct entry *e)
{
	struct unw_file_key k = { e->kdev, e->ino };

	bpf_map_delete_elem(u->files_fd, &k);
	if (e->state == E_TABLE) {
		unw_extent_free(u, e->base, e->nrows);
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
	unw_drop_entry(u, old);
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

void unw_set_state(struct unwinder *u, struct entry *e, int state)
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

int unw_install(struct unwinder *u, struct entry *e, const struct unw_table *t)
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
	while ((err = unw_extent_alloc(u, t->nrows, &base)) == -ENOSPC)
		if (evict_lru(u, e))
			break;
	if (!err && (err = unw_chunks_cover(u, base, t->nrows)))
		unw_extent_free(u, base, t->nrows);
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
		unw_extent_free(u, base, t->nrows);
		return err;
	}
	e->state = E_TABLE;
	e->base = base;
	e->nrows = t->nrows;
	u->st.tables++;
	u->st.rows += t->nrows;
	return 0;
}

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
			if (hmap__put(&u->files, fkey(e->kdev, e->ino), e) || unw_install(u, e, t)) {
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
	err = unw_extent_free(u, 0, u->o.max_rows);
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
	err = pthread_create(&u->thread, NULL, unw_worker, u);
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
		if (e->state == E_QUEUED && urgent && !e->urgent && unw_unqueue(u, e)) {
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
		unw_enqueue(u, e);
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

void unwinder__metrics(const struct unwinder_stats *st, struct buf *out)
{
	prom__family(out, "proffs_unwind_tables", PROM_GAUGE, "Files with unwind tables loaded, by kind.");
	prom__u64_by(out, "proffs_unwind_tables", "kind", "table", st->tables);
	prom__u64_by(out, "proffs_unwind_tables", "kind", "frame_pointers", st->fp_files);
	prom__u64_by(out, "proffs_unwind_tables", "kind", "failed", st->failed_files);
	prom__gauge(out, "proffs_unwind_rows", "Unwind table rows loaded.", st->rows);
	prom__gauge(out, "proffs_unwind_rules", "Distinct unwind rules loaded (shared by all tables).",
		    st->rules);
	prom__gauge(out, "proffs_unwind_table_bytes", "Bytes of unwind rows and rules in use.",
		    st->table_bytes);
	prom__gauge(out, "proffs_unwind_map_bytes",
		    "Bytes allocated for the unwind BPF maps (rules, files, row chunks).", st->map_bytes);
	prom__gauge(out, "proffs_unwind_row_chunks", "Row chunks of 256 KiB allocated for unwind tables.",
		    st->chunks);
	prom__gauge(out, "proffs_unwind_builds_queued", "Files waiting for their unwind table to be built.",
		    st->queued);
	prom__family(out, "proffs_unwind_builds_total", PROM_COUNTER,
		     "Unwind tables built, and freed (unused or for room).");
	prom__u64_by(out, "proffs_unwind_builds_total", "event", "built", st->built);
	prom__u64_by(out, "proffs_unwind_builds_total", "event", "freed", st->evicted);
	prom__u64_by(out, "proffs_unwind_builds_total", "event", "requester_exited", st->requester_gone);
	prom__family(out, "proffs_unwind_build_seconds_total", PROM_COUNTER,
		     "Time the worker spent building tables.");
	prom__f64(out, "proffs_unwind_build_seconds_total", NULL, 0, st->build_ns / 1e9);
}
