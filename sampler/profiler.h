/*
 * profiler.h - the sampling pipeline in one object: BPF sampler ->
 * process info -> symbolization -> the open batch. The daemon's sampler
 * thread drives it (poll, take); any thread may read its stats.
 */
#ifndef PROFFS_PROFILER_H
#define PROFFS_PROFILER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/profile.h"
#include "sampler/offcpu/offcpu.h"
#include "sampler/symbols/symbolize.h"
#include "sampler/unwind/pending.h"
#include "sampler/unwind/unwinder.h"
#include "sampler/batch/minutes.h"
#include "store/profile/profile.h"

struct buf;
struct symbolizer;

struct profiler_opts {
	int hz;                  /* 0 = 19 */
	pid_t target_tgid;       /* 0 = every process */
	const char *cgroup_root; /* NULL = the cgroup2 mount */
	const char *pods_root;   /* NULL = /var/log/pods */
	int64_t interval_ns;     /* drain interval; 0 = 10 s (see minutes__new) */
	/* --offcpu: the offcpu type (sampler/offcpu/); 0s mean its defaults */
	bool offcpu;
	uint64_t offcpu_min_ns;
	unsigned offcpu_states;
	/* makes an unwind row chunk once the daemon cannot (unwinder_opts) */
	int (*unw_chunk_fd)(void *ctx);
	void *unw_chunk_ctx;
};

struct profiler_stats {
	uint64_t samples;      /* samples aggregated into batches */
	uint64_t memo_hits;    /* ... of them (and off-CPU blocks) added as a record seen before */
	uint64_t bpf_samples;  /* samples the BPF program took (idle excluded) */
	uint64_t idle;
	uint64_t lost_ring_full, lost_events, kstack_errors, ustack_errors;
	uint64_t ktruncated, utruncated;
	uint64_t uends[PROF_UE_MAX];   /* user stacks by how their walk ended */
	uint64_t lost_nomem;   /* dropped in user space: allocation failed */
	uint64_t procs;
	int ncpus;
	/* Each module's own figures, copied whole: a counter added to one is
	 * added to its stats struct and its __metrics function only. */
	struct unwinder_stats unw;     /* zero when unwinding with frame pointers */
	struct pending_stats pend;
	struct symbolizer_stats sym;
	struct offcpu_stats off;       /* all 0 without --offcpu */
};

struct profiler;

/* Loads BPF and attaches (see sampler__open for errors). */
int profiler__open(struct profiler **out, const struct profiler_opts *o);
/* Handles what the ring holds, waiting up to timeout_ms. Returns the
 * number of records or -errno. Sampler thread only. */
int profiler__poll(struct profiler *pr, int timeout_ms);
/* The daemon's stop, before its last take: walks parked for a table get
 * up to budget_ns to finish (the builder keeps going), then the rest are
 * finished with what they have (PROF_UE_NO_TABLE), so the last batch
 * holds every sample taken (a process started seconds before the stop
 * has most of its samples parked). Sampler thread only. */
void profiler__settle(struct profiler *pr, int64_t budget_ns);
/* Closes the open windows that end by wall-clock time cut_ns, or all of
 * them (see minutes__take): out[0..*n) gets one profile per window that
 * holds samples, each the caller's. Sampler thread only. */
int profiler__take(struct profiler *pr, int64_t cut_ns, bool all,
		   struct minute_batch out[MINUTES_SLOTS], size_t *n);

/*
 * The wall-clock time (ns) of the oldest sample or block still held
 * (a walk parked for its unwind table, an off-CPU block awaiting its user
 * part), or INT64_MAX: it will be stored in its own window later, so no
 * minute from then on is complete yet. Sampler thread only.
 */
int64_t profiler__held_since(struct profiler *pr);

/* Steps of the wall clock seen so far. Sampler thread only. */
uint64_t profiler__clock_steps(struct profiler *pr);

/* profiler__take for offcpu's windows (none without --offcpu); an
 * off-CPU interval is in the window of its end. Sampler thread only. */
int profiler__take_offcpu(struct profiler *pr, int64_t cut_ns, bool all,
			  struct minute_batch out[MINUTES_SLOTS], size_t *n);
/* Ends a profiler__poll's wait now (once: the daemon's stop). Any thread. */
void profiler__wake(struct profiler *pr);
/* A consistent snapshot of the figures; thread-safe. */
void profiler__stats(struct profiler *pr, struct profiler_stats *st);
/* Appends the sampler's /prof/metrics lines and each of its modules'
 * (symbols, off-CPU when offcpu, files refused, unwinding, the language
 * runtimes, kernel features) from the last snapshot. Any thread. */
struct buf;
void profiler__metrics(struct profiler *pr, bool offcpu, struct buf *out);
/* Appends the language runtimes' /prof/metrics lines (each writes its
 * own: sampler/runtime/runtime.h) and what samples cost the BPF program
 * by runtime (sampler__cost_metrics). Any thread. */
void profiler__runtime_metrics(struct profiler *pr, struct buf *out);
/* Is off-CPU time recorded (asked for, and the kernel took it)? */
bool profiler__has_offcpu(const struct profiler *pr);
void profiler__close(struct profiler *pr);

/* The pipeline's symbolizer (issue 30: the daemon sets its hooks and
 * tells it of debug files that arrive). Owned by pr. */
struct symbolizer *profiler__symbolizer(struct profiler *pr);

#endif
