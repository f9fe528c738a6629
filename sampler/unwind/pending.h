/*
 * pending.h - samples whose BPF walk stopped at a file without a loaded
 * table (PROF_UE_PENDING, carrying registers and a copy of the stack).
 * The twin finishes them as soon as the tables exist; until then they
 * wait here, bounded in number and time, so a short-lived process keeps
 * its first samples. Sampler thread only.
 */
#ifndef PROFFS_SAMPLER_UNWIND_PENDING_H
#define PROFFS_SAMPLER_UNWIND_PENDING_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/profile.h"
#include "sampler/proc/procinfo.h"
#include "sampler/unwind/unwinder.h"

struct pending;

/* Borrowed u and ps must outlive it. NULL on allocation failure. */
struct pending *pending__new(struct unwinder *u, struct procs *ps);
void pending__free(struct pending *pq);

struct twin_regs;
struct twin_mem;
struct twin_map;

/* What the walks ask of the runtimes (sampler/runtime/, wired in by the
 * profiler, so that unwind/ includes nothing of it). */
struct pending_rt {
	/* The step of p's runtime through a frame of a JVM's code cache or
	 * V8's code, as the BPF walk takes it (runtimes__twin_step). */
	int (*step)(void *ctx, struct proc *p, struct twin_regs *r, const struct twin_mem *mem,
		    const struct twin_map *m, int index, uint64_t rec[2]);
	/* p's anonymous code was walked by frame pointers with fresh maps
	 * (runtimes__mark_native). */
	void (*mark_native)(void *ctx, struct proc *p);
	void *ctx;
};

/* The runtimes' hooks (copied; NULL: none, anonymous code stays native). */
void pending__set_runtimes(struct pending *pq, const struct pending_rt *rt);

/* Asks for the tables of every file p maps (e.g. right after exec). */
void pending__request_maps(struct pending *pq, struct proc *p);

typedef void (*pending_done_fn)(void *ctx, struct proc *p, const struct prof_sample_ev *ev);

/*
 * Finishes ev (size bytes as received) now if its tables are there, and
 * calls done with the completed record (valid during the call); else
 * keeps a copy and calls done later from pending__drain(). Returns 1 when
 * done was called, 0 when parked, -ENOMEM (ev then goes to done as is).
 */
int pending__add(struct pending *pq, struct proc *p, const struct prof_sample_ev *ev, size_t size,
		 pending_done_fn done, void *ctx);

/* Finishes parked samples whose tables are ready, and those older than
 * the wait bound with what they have (PROF_UE_NO_TABLE). */
void pending__drain(struct pending *pq, int64_t now_ns, pending_done_fn done, void *ctx);

/* The BPF time (bpf_ktime_get_ns) of the oldest sample parked here, or
 * INT64_MAX when none is: the minutes from then on are not complete
 * until it is stored. */
int64_t pending__oldest(const struct pending *pq);

struct pending_stats {
	uint64_t finished, expired, dropped; /* dropped: no room to park */
	uint64_t parked;
};
void pending__stats(struct pending *pq, struct pending_stats *st);
/* Appends the walks finished in user space, by outcome, to out. */
struct buf;
void pending__metrics(const struct pending_stats *st, struct buf *out);

#endif
