/*
 * procinfo.h - what the sampler knows about each process: comm, exe,
 * cgroup path, labels and executable mappings. Filled from /proc when a
 * process is first seen, refreshed on exec, inherited on fork (so a child
 * that dies before /proc could be read still resolves through its
 * parent's mappings) and kept for a grace period after exit, because
 * samples reach user space up to one poll interval late.
 * Not thread-safe: the sampler thread owns it.
 */
#ifndef PROFFS_PROCINFO_H
#define PROFFS_PROCINFO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/proc/labels.h"
#include "sampler/proc/rtproc.h"
#include "sampler/symbols/symbolize.h"

struct vma {
	uint64_t start, end, pgoff, dev, ino;
	char *path;      /* "" for anonymous memory; " (deleted)" stripped */
	struct dso *dso; /* resolved on first use, owned by the symbolizer */
	bool file;       /* backed by a file (path starts with '/') */
};

/* Executable mappings, sorted by start; shared by fork until exec. */
struct maps {
	int refs;
	bool capped; /* the process has more mappings than we read */
	size_t n;
	struct vma *v;
};

struct proc {
	pid_t pid;
	char comm[16];
	char *labels[LBL_MAX]; /* malloc'd values or NULL */
	uint64_t gen;          /* bumped whenever labels change */
	struct maps *maps;
	struct perfmap *perfmap;     /* from the symbolizer's loader */
	int64_t pm_size, pm_mtime_ns; /* of the file perfmap was read from */
	uint64_t pm_token;           /* a read in flight, 0 if none */
	int64_t maps_ns, perfmap_ns; /* monotonic time of the last read (request) */
	int64_t maps_gap_ns;         /* wait at least this long before re-reading */
	int64_t exit_ns;             /* 0 while alive */
	bool own_maps;               /* read from its own /proc (not inherited) */
	int64_t reread_ns;           /* maps read at exec: read again then (0: no) */
	uint8_t reread_stage;        /* which of the PROCS_REREADS reads that is */
	uint64_t cg_id;              /* the cgroup whose unified-hierarchy line gave
	                              * its labels; 0: read them again at exec */
	struct rtproc rt;            /* its interpreter (rtproc.h; sampler/runtime/'s) */
};

struct procs;

struct procs_opts {
	struct symbolizer *sym; /* borrowed */
	struct labeler *lab;    /* borrowed */
	int64_t grace_ns;       /* keep exited processes this long; 0 = 10 s */
	/* Called with a process whose maps were just read, at exec and
	 * after (NULL: none): an interpreter ld.so mapped since shows now.
	 * It must not free p. */
	void (*maps_read)(void *ctx, struct proc *p);
	void *maps_ctx;
};

struct procs *procs__new(const struct procs_opts *o);
void procs__free(struct procs *ps);

/* The process pid, read from /proc on first sight. comm (the leader's,
 * from the sample) and cgroup_id stand in when /proc is already gone.
 * Returns NULL only on allocation failure. Owned by ps. */
struct proc *procs__get(struct procs *ps, pid_t pid, const char *comm, uint64_t cgroup_id);

/* The process pid if it is known, else NULL (nothing is read). */
struct proc *procs__find(struct procs *ps, pid_t pid);

void procs__exec(struct procs *ps, pid_t pid, const char *comm, uint64_t cgroup_id);
void procs__fork(struct procs *ps, pid_t pid, pid_t ppid, const char *comm, uint64_t cgroup_id);
void procs__exit(struct procs *ps, pid_t pid);

/* The mapping holding addr with its dso resolved, or NULL if unmapped.
 * Never re-reads anything, so pointers into the maps taken earlier stay
 * valid until the next procs__refresh(). */
struct vma *procs__vma(struct procs *ps, struct proc *p, uint64_t addr);

/* A JIT symbol from the process's perf map, or NULL. Same lifetime. */
const char *procs__jit_symbol(struct procs *ps, struct proc *p, uint64_t addr);

/* When procs__refresh asks for a process's perf map. */
enum procs_pm {
	PROCS_PM_NO,
	PROCS_PM_SOON, /* at most once a second */
	/* JIT code a runtime's walk named already (a JVM's, V8's): the perf
	 * map only names what it left, so while the process has none,
	 * looking for one is every 30 s, not every second (the loader's
	 * check cost a JVM-heavy host ~10% of the daemon's CPU) */
	PROCS_PM_LAZY,
};

/* Re-reads the maps of a live process after a lookup missed (soon after
 * exec, as the loader maps libraries, then backing off to once a second):
 * new code (dlopen) or maps only borrowed from the parent; and asks the
 * symbolizer's loader for its perf map (as pm says; read again only when
 * its size or mtime changed) - JIT code. Invalidates earlier vma pointers
 * of p. */
void procs__refresh(struct procs *ps, struct proc *p, bool maps, enum procs_pm pm);

/* Installs the perf maps the loader has read since the last call.
 * Invalidates earlier JIT symbol pointers. */
void procs__collect(struct procs *ps);

/* Drops processes that exited more than the grace period ago. */
void procs__gc(struct procs *ps);

/*
 * Maps read at exec predate the libraries ld.so maps next; a process that
 * lives 50 ms may be gone before a sample asks for them again. So each
 * exec schedules more reads: PROCS_REREAD_NS after it, then 100 ms and 1 s
 * after that while the process lives (on a busy host ld.so outlasted the
 * 10 ms, and a process that then blocked for 20 s and exited right after
 * waking had its off-CPU stack's libc frames unnamed: CI, stop 51). This
 * does the reads that are due and returns the milliseconds until the next
 * one (-1: none), for the caller's poll timeout. Sampler thread.
 */
#define PROCS_REREAD_NS (10 * 1000000LL)
#define PROCS_REREADS 3
int procs__reread_due(struct procs *ps, int64_t now_ns);

/* True once a maps read went through the kernel's PROCMAP_QUERY (Linux
 * 6.11 and later) rather than the text of /proc/PID/maps. */
bool procs__maps_by_query(void);

/* Processes tracked (alive or in their grace period). */
size_t procs__count(struct procs *ps);

#endif
