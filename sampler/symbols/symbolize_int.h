/*
 * symbolize_int.h - the symbolizer's inside, shared by its two files:
 * symbolize.c (the sampler thread's side: the file cache, lookups,
 * trimming, perf map requests) and loader.c (the loader thread that reads
 * ELF files and perf maps, its queue and its watchdog). Nothing outside
 * sampler/symbols/ includes it.
 */
#ifndef PROFFS_SYMBOLIZE_INT_H
#define PROFFS_SYMBOLIZE_INT_H

#include <pthread.h>
#include <time.h>

#include "store/util/hmap.h"
#include "sampler/symbols/kallsyms.h"
#include "sampler/symbols/symbolize.h"

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
	struct symbolizer_detector detector; /* set before the first lookup */
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

/* Frees table t (NULL: nothing); the caller owns it and no dso holds it. */
void symtab__free(struct symtab *t);

/* Frees a table counted in s's totals; s->lock held. */
void symbolizer__uncount_free(struct symbolizer *s, struct symtab *t);

/* Frees job j and the perf map it holds (s: whose budget it was counted
 * in; NULL if not yet counted). */
void symbolizer__job_free(struct symbolizer *s, struct job *j);

/* Queues j for the loader thread (started on first use); the queue then
 * owns it. False when the queue is full or no loader can run: j stays the
 * caller's. */
bool symbolizer__enqueue(struct symbolizer *s, struct job *j);

#endif
