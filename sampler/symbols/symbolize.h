/*
 * symbolize.h - addresses to function names. Kernel addresses through
 * /proc/kallsyms (modules included); user addresses through the ELF file
 * backing the mapping (struct dso), cached by dev+inode and shared by
 * build id, so the cache outlives the processes that used a file; JIT code
 * through a process's perf map (/tmp/perf-PID.map inside its root).
 *
 * Files a process names are read by a loader thread, never by the thread
 * that drains samples (any local user controls them: a FIFO, a huge or
 * slow file must not stall sampling). Until a file is loaded its frames
 * stay unresolved (module+0xOFFSET); a load that does not finish within
 * SYM_LOAD_TIMEOUT_MS while using no CPU (a read that hangs) is abandoned
 * (counted, see safefile.h) and the loader replaced; its file's process
 * keeps those frames unresolved. Everything else is the sampler thread's: it owns the
 * symbolizer and is the only caller of these functions.
 */
#ifndef PROFFS_SYMBOLIZE_H
#define PROFFS_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/perfmap.h"
#include "store/db/store.h"

struct rtfile;
struct dwline;
struct goline;

/* A load waiting on I/O longer than this is abandoned. */
#define SYM_LOAD_TIMEOUT_MS 2000

/* Symbols of one ELF image, shared by every dso with its build id. */
struct symtab {
	struct elf_info elf;
	bool has_syms;
	size_t bytes;     /* what it holds (symbols, names, load table) */
	uint64_t used;    /* symbolizer's clock at its last lookup (sampler thread) */
	struct rtfile *rt; /* an interpreter: the detector's (symbolizer__set_detector), else NULL */
	void (*rt_free)(struct rtfile *rt);
	int glibc_minor;  /* a libc.so: N of its GLIBC_2.N, else 0 */
	/* Named from a separate debug file with DWARF (at most
	 * DWLINE_MAX_BYTES): its lines, read on the sampler thread only;
	 * dw_fd is the file they read. NULL: frames carry no line. */
	struct dwline *dw;
	int dw_fd;
	/* A Go binary named from its .gopclntab: its lines from the same
	 * table (goline.h), else NULL. */
	struct goline *go;
	bool dw_used; /* dw or go looked up in since the last symbolizer__trim */
};

/* Symbol tables held at most (bytes), least recently used dropped first
 * (symbolizer__trim); a dropped table is read again at its next use. */
#define SYM_CACHE_BYTES (8u << 20)
/* symbolizer__trim calls (about a second each) a table used stays. Longer
 * than a batch: a stack the batch has seen is not symbolized again
 * (sampler/batch/batch.c's memo), so a table in use by every sample of a
 * busy process may be looked up only once a batch; at 10 node's and
 * libc's tables were dropped and read again every batch (28 loads in 40
 * s with ten busy nodes, a quarter of the daemon's CPU). */
#define SYM_KEEP_CALLS 60

/* One file as seen through some mapping: identity and its symbols. */
struct dso {
	uint64_t dev, ino;
	char *path;         /* path from /proc/PID/maps (may end " (deleted)") */
	/* NULL until loaded or when it could not be read; written once by
	 * the loader (read it with dso__tab). */
	struct symtab *tab;
	int state;          /* DSO_NEW, DSO_QUEUED, DSO_DONE (atomic) */
	int tries;          /* loads that found nothing (the loader's) */
};

enum { DSO_NEW, DSO_QUEUED, DSO_DONE };

static inline struct symtab *dso__tab(const struct dso *d)
{
	return d ? __atomic_load_n(&d->tab, __ATOMIC_ACQUIRE) : NULL;
}

struct symbolizer;

struct symbolizer_stats {
	uint64_t dsos, symtabs, symbols, kernel_symbols;
	uint64_t hits, misses;
	uint64_t queued;    /* loads waiting for the loader */
	uint64_t loads;     /* loads done (files and perf maps) */
	uint64_t abandoned; /* loads abandoned after SYM_LOAD_TIMEOUT_MS */
	uint64_t perfmap_bytes; /* memory held by perf maps */
	uint64_t perfmap_reads; /* perf maps read and parsed */
	uint64_t symtab_bytes;  /* memory held by symbol tables */
	uint64_t evicted;       /* symbol tables dropped by symbolizer__trim */
};

/* Appends the symbol cache's and the loader's /prof/metrics lines for
 * st (symbolizer__stats) to out. */
struct buf;
void symbolizer__metrics(const struct symbolizer_stats *st, struct buf *out);

/* Returns a new symbolizer (kallsyms read now), or NULL with errno set.
 * debug_root: where separate debug files live (NULL = /usr/lib/debug). */
struct symbolizer *symbolizer__new(const char *debug_root);
void symbolizer__free(struct symbolizer *s);

/*
 * What the loader asks of every ELF file it reads besides its symbols:
 * whether it is an interpreter a runtime's walk reads (the profiler sets
 * sampler/runtime's rtfile__detect; the symbolizer itself knows no
 * runtime). detect's answer becomes the table's rt (size bytes, counted in
 * the table's), freed with the table by free. Set once, before the first
 * symbolizer__dso; d is copied, NULL unsets.
 */
struct symbolizer_detector {
	struct rtfile *(*detect)(int fd, const char *path, const struct elf_info *e);
	void (*free)(struct rtfile *rt);
	size_t size;
};
void symbolizer__set_detector(struct symbolizer *s, const struct symbolizer_detector *d);

/*
 * Issue 30's hooks (sampler/symbols/namer.h). debug_cache: a second place
 * for debug files, after the debug root, in debuginfod's layout
 * (<dir>/<build id>/debuginfo; NULL: none). file_read: called on the
 * loader thread for each file whose symbols it read (not for one whose
 * build id was loaded already): the file as /binaries records it (path
 * NULL when the process's root is not the host's), whether it has a
 * symbol table of its own, and where its debug file came from (0 none,
 * 1 the debug root, 2 the cache). It must not block; it is called with
 * the symbolizer's lock held. Set before the first sample (the loader
 * starts then); h is copied. h NULL removes file_read, and returns once
 * no call of it is in flight (the daemon's stop).
 */
struct symbolizer_hooks {
	const char *debug_cache;
	void (*file_read)(void *ctx, const struct store_binary *b, bool has_symtab, int debug);
	void *ctx;
};
int symbolizer__set_hooks(struct symbolizer *s, const struct symbolizer_hooks *h);

/* Symbols for build id bid may be found now (its debug file arrived):
 * a table of it read without a symbol table is dropped at the next
 * symbolizer__trim, so that its next sample reads it again. Any thread;
 * a request beyond the queue's room is dropped (the next is kept). */
void symbolizer__symbols_changed(struct symbolizer *s, const char *bid);

/* The source file and line of file offset off of d's file (the offset
 * symbolizer__lookup was given), when its symbols came from a debug file
 * with DWARF: *file is the table's (valid until the next
 * symbolizer__trim). Sampler thread. False when unknown. */
bool symbolizer__line(struct symbolizer *s, struct dso *d, uint64_t off, const char **file,
		      int *line);

/* Function name for a kernel address, or NULL. The string is the
 * symbolizer's and lives until symbolizer__free(). Sampler thread (it
 * fills the kernel table's name cache: sampler/symbols/kallsyms.h). */
const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr);

/*
 * The dso for the file mapped at [start, end) in pid with this dev/inode,
 * its symbols queued for loading on first use: through
 * /proc/PID/map_files (works for deleted and replaced binaries), else
 * /proc/PID/root/PATH (the process's mount namespace). Returns NULL only
 * on allocation failure; tab stays NULL until loaded, and for good when
 * the file cannot be read or is refused. Owned by the symbolizer.
 */
struct dso *symbolizer__dso(struct symbolizer *s, pid_t pid, uint64_t dev,
			    uint64_t ino, const char *path, uint64_t start,
			    uint64_t end);

/*
 * Drops the least recently used symbol tables while they hold more than
 * budget bytes (0: SYM_CACHE_BYTES), down to 3/4 of it; tables used within
 * the last SYM_KEEP_CALLS calls stay. Their files' dsos are loaded again at their next
 * sample. Call from the sampler thread between samples, about once a
 * second (each call is one tick of the clock lookups stamp): names handed
 * out by symbolizer__lookup before it may be freed by it.
 */
void symbolizer__trim(struct symbolizer *s, uint64_t budget);

/* Function name at file offset off of d, or NULL; counts hits/misses.
 * The string is the symbolizer's until the next symbolizer__trim. */
const char *symbolizer__lookup(struct symbolizer *s, struct dso *d, uint64_t off);

/* Function name at offset off of the vDSO (the same image in every
 * process of this kernel, so read once from our own), or NULL. */
const char *symbolizer__vdso(struct symbolizer *s, uint64_t off);

void symbolizer__stats(struct symbolizer *s, struct symbolizer_stats *st);

/* Waits until the loader has nothing queued or in hand, at most
 * timeout_ms. Returns 0 or -ETIMEDOUT. For tests. */
int symbolizer__drain(struct symbolizer *s, int timeout_ms);

/* Abandons a load that has run past SYM_LOAD_TIMEOUT_MS (a file on a
 * hung FUSE or network mount) and starts a new loader. Call it often. */
void symbolizer__watchdog(struct symbolizer *s);

/*
 * Queues a read of pid's perf map (/tmp/perf-NSPID.map in its root). size
 * and mtime_ns are those of the map the caller holds (-1: none): an
 * unchanged file is not read again. token identifies the request in the
 * result. Returns 0, -EBUSY (queue full: ask again later) or -ENOMEM.
 */
int symbolizer__perfmap_request(struct symbolizer *s, pid_t pid, uint64_t token, int64_t size,
				int64_t mtime_ns);

struct perfmap_result {
	pid_t pid;
	uint64_t token;
	struct perfmap *m;   /* the new map (the taker's), NULL if none */
	bool unchanged;      /* the file is the one the caller holds */
	int64_t size, mtime_ns;
};

/* Takes one finished perf map read; false when there is none. */
bool symbolizer__perfmap_take(struct symbolizer *s, struct perfmap_result *r);

/* Frees a perf map from the loader, returning its bytes to the budget. */
void symbolizer__perfmap_free(struct symbolizer *s, struct perfmap *m);

/* Reads pid's perf map now, on the calling thread (tests, fuzzing the
 * whole path): NULL with errno set when absent or refused. */
struct perfmap *perfmap__load(pid_t pid);

struct buf;
/* Appends the proffs_go_binaries_total family (Go binaries named from
 * their own function table, by layout). Any thread. */
void symbolizer__go_metrics(struct symbolizer *s, struct buf *out);

#endif
