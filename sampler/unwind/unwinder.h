/*
 * unwinder.h - the unwind tables of every file the sampled processes map,
 * keyed by (device, inode) and shared by all of them: built by a worker
 * thread (never on the path that drains samples), written into the BPF
 * maps of bpf/unwind_walk.h (mmapped arrays), and freed when no sample
 * has touched them for a while. The sampler thread asks for tables and
 * reads them to finish walks with the twin (sampler/unwind/twin.h).
 */
#ifndef PROFFS_SAMPLER_UNWIND_UNWINDER_H
#define PROFFS_SAMPLER_UNWIND_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/unwind/twin.h"

struct bpf_map;
struct unwinder;

/* The descriptors of the maps a BPF program walks user stacks with
 * (bpf/unwind_walk.h): row chunks, rules, files. */
struct unwind_fds {
	int rows, rules, files;
};

struct unwinder_opts {
	const char *debug_root; /* separate debug files; NULL = /usr/lib/debug */
	uint32_t max_rows;      /* rows of all tables; 0 = UNW_MAX_CHUNKS chunks (4M rows, 32 MiB) */
	uint32_t max_rules;     /* distinct rules; 0 = 1 << 14 */
	uint32_t max_files;     /* files with a table; 0 = 4096 */
	int64_t idle_ns;        /* free a table no sample touched this long; 0 = 10 min */
	/* Makes a row chunk (unwinder__chunk_create) for a process that may
	 * no longer create BPF maps itself; NULL: none. Returns an fd, the
	 * unwinder's, or -errno. */
	int (*chunk_fd)(void *ctx);
	void *chunk_ctx;
	/* tests: builds of this one file first wait build_delay_ns (a slow disk) */
	const char *delay_path;
	int64_t build_delay_ns;
};

struct unwinder_stats {
	uint64_t tables;       /* files with rows loaded */
	uint64_t fp_files;     /* files without unwind info (frame pointers) */
	uint64_t failed_files; /* files whose table could not be built */
	uint64_t rows, rules;  /* in use */
	uint64_t table_bytes;  /* rows + rules in use */
	uint64_t map_bytes;    /* the BPF maps' allocated size: rules, files, row chunks */
	uint64_t chunks;       /* row chunks allocated (bpf/unwind.h) */
	uint64_t built, evicted, build_ns;
	uint64_t requester_gone; /* builds given up: the process to read through exited */
	uint64_t queued;       /* builds waiting */
};

/* Creates one chunk of the row space (bpf/unwind.h): an mmapable array
 * map of UNW_CHUNK_ROWS rows. Needs CAP_BPF. Returns an fd, the caller's,
 * or -errno. */
int unwinder__chunk_create(void);

/* Returns an unwinder (no thread yet) or NULL with errno set. */
struct unwinder *unwinder__new(const struct unwinder_opts *o);
/* Before the BPF object loads: sizes its unwind maps. 0 or -errno. */
int unwinder__size_maps(struct unwinder *u, struct bpf_map *rows, struct bpf_map *rules,
			struct bpf_map *files);
/* After load: maps the arrays and loads the vDSO's table. The maps must
 * outlive unwinder__free(). Requests queue up until unwinder__run().
 * 0 or -errno. */
int unwinder__start(struct unwinder *u, struct bpf_map *rows, struct bpf_map *rules,
		    struct bpf_map *files);
/* Starts the table builder thread, once (later calls do nothing). Call it
 * from the thread whose capabilities the builder should have: the daemon
 * drops its own after load and mount, and a thread keeps what it had when
 * it was created. NULL or not started: nothing. 0 or -errno. */
int unwinder__run(struct unwinder *u);
/* Stops the worker and frees everything (NULL is fine). */
void unwinder__free(struct unwinder *u);

/* The kernel's encoding of a device number from glibc's dev_t. */
uint64_t unwinder__kdev(uint64_t dev);

/*
 * Asks for the table of the file (kdev, ino) that pid maps at
 * [start, end) from path; returns at once. urgent: a sample waits for
 * it (built before earlier requests). The state right now: TWIN_TABLE,
 * TWIN_FP, TWIN_WAIT (being built) or TWIN_NOTABLE.
 */
enum twin_kind unwinder__request(struct unwinder *u, pid_t pid, uint64_t kdev, uint64_t ino,
				 const char *path, uint64_t start, uint64_t end, bool urgent);

/* Readers of tables (twin walks) hold the lock across the walk: the
 * worker must not move rows under them. */
void unwinder__lock(struct unwinder *u);
void unwinder__unlock(struct unwinder *u);
/* Under the lock: fills m's kind and table pointers for the file (not
 * its start/end/pgoff). Returns 0, or -ENOENT when the file was never
 * requested (m->kind is then TWIN_NOTABLE). */
int unwinder__lookup_locked(struct unwinder *u, uint64_t kdev, uint64_t ino,
			     struct twin_map *m);
/* Marks the file's table used now (a sample walked through it). */
void unwinder__touch_locked(struct unwinder *u, uint64_t kdev, uint64_t ino, int64_t now_ns);

/* Thread-safe snapshot. */
void unwinder__stats(struct unwinder *u, struct unwinder_stats *st);

/* Appends the unwind tables' /prof/metrics lines for st to out. */
struct buf;
void unwinder__metrics(const struct unwinder_stats *st, struct buf *out);

#endif
