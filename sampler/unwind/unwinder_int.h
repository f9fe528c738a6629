/*
 * unwinder_int.h - the unwinder's inside, shared by unwinder.c (the table
 * cache, install and eviction, the sampler thread's requests), rows.c
 * (the BPF row space: extents and chunks) and worker.c (the thread that
 * reads and compiles files). Internal to sampler/unwind/.
 */
#ifndef PROFFS_UNWINDER_INT_H
#define PROFFS_UNWINDER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/unwind/table.h"
#include "sampler/unwind/unwinder.h"
#include "store/util/hmap.h"

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

/* One chunk's rows in bytes. */
#define CHUNK_BYTES ((size_t)UNW_CHUNK_ROWS * sizeof(struct unw_row))

/* rows.c, u->lock held. A free extent of n rows into *base (first fit,
 * lowest rows first); 0, or -ENOSPC. */
int unw_extent_alloc(struct unwinder *u, uint32_t n, uint32_t *base);
/* Rows [base, base + n) free again; 0 or -ENOMEM. */
int unw_extent_free(struct unwinder *u, uint32_t base, uint32_t n);
/* Makes sure the chunks under rows [base, base + n) exist. 0 or -errno. */
int unw_chunks_cover(struct unwinder *u, uint32_t base, uint32_t n);
/* Drops every chunk no table has a row in. */
void unw_chunks_trim(struct unwinder *u);

/* unwinder.c, u->lock held: e's rows freed and e forgotten; e's state
 * told to BPF; t installed as e's table (0, -E2BIG, -ENOSPC or -errno). */
void unw_drop_entry(struct unwinder *u, struct entry *e);
void unw_set_state(struct unwinder *u, struct entry *e, int state);
int unw_install(struct unwinder *u, struct entry *e, const struct unw_table *t);

/* worker.c, u->lock held: e queued for the worker (at the back), or taken
 * out of the queue (false: not in it, the worker has it in hand). */
void unw_enqueue(struct unwinder *u, struct entry *e);
bool unw_unqueue(struct unwinder *u, struct entry *e);
/* The worker thread: arg is the unwinder. */
void *unw_worker(void *arg);

#endif
