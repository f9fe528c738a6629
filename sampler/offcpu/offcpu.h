/*
 * offcpu.h - loading bpf/offcpu.bpf.c (sched_switch + rseq_update)
 * and draining its ring buffer: one record per block of a thread that was
 * off CPU for at least the minimum, with the stack at which it blocked.
 */
#ifndef PROFFS_OFFCPU_H
#define PROFFS_OFFCPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/offcpu.h"
#include "sampler/unwind/unwinder.h"

/* Recorded by default: every state; blocks of at least 1 ms. */
#define OFFCPU_DEFAULT_STATES ((1u << OFFCPU_NSTATES) - 1)
#define OFFCPU_DEFAULT_MIN_NS 1000000ULL

struct offcpu;

struct offcpu_opts {
	pid_t target_tgid;  /* 0 = every process */
	pid_t self_tgid;    /* never recorded (the daemon); 0 = getpid() */
	uint64_t min_ns;    /* 0 = OFFCPU_DEFAULT_MIN_NS */
	unsigned states;    /* bit per enum offcpu_state; 0 = OFFCPU_DEFAULT_STATES */
	bool kthreads;      /* record kernel threads too */
	size_t ring_bytes;  /* 0 = 4 MiB */
	/* The cpu sampler's unwind tables (sampler__unwind_fds), borrowed for
	 * the lifetime of the offcpu: user stacks are walked with them, and
	 * a record whose walk ends PROF_UE_PENDING carries registers and a
	 * stack copy for pending__add. NULL: frame pointers. */
	const struct unwind_fds *unw;
	/* The cpu sampler's runtime processes (sampler__rt_procs_fd),
	 * shared so that blocked threads get their interpreter's frames too;
	 * -1: none. */
	int rt_procs_fd;
	/* The runtime walks the cpu sampler loaded (sampler__rt_walks): the
	 * same are loaded here. */
	uint32_t rt_walks;
	/* Called from offcpu__poll() per record, in ring order; the record
	 * (period = nanoseconds off CPU, state in flags) is only valid during
	 * the call. */
	void (*on_sample)(void *ctx, const struct prof_sample_ev *ev);
	void *ctx;
};

/* Loads and attaches. A kernel that refuses the program with the unwind
 * tables gets it with frame pointers; one that refuses that too, none
 * (sampler/ring/kfeature.h says each). Returns 0 or -errno with a logged
 * reason. */
int offcpu__open(struct offcpu **out, const struct offcpu_opts *o);
/* Drains the ring, waiting up to timeout_ms. Returns the number of
 * records handled or -errno. */
int offcpu__poll(struct offcpu *oc, int timeout_ms);
/* Sums the per-CPU counters (enum offcpu_counter). Returns 0 or -errno. */
int offcpu__counters(struct offcpu *oc, uint64_t out[OFFCPU_CNT_MAX]);

/* Off-CPU's figures for /prof/metrics: its BPF counters and the blocks
 * stored (the profiler's count). */
struct offcpu_stats {
	uint64_t samples; /* blocks aggregated into batches */
	uint64_t switches, short_blocks, short_ns, lost_ring_full, lost_nostorage, kstack_errors,
		ustack_errors;
};
/* Appends off-CPU's /prof/metrics lines for st to out. */
struct buf;
void offcpu__metrics(const struct offcpu_stats *st, struct buf *out);
/* The time (bpf_ktime_get_ns) of the oldest block whose user part is
 * awaited, or INT64_MAX: its minute is not complete until it is joined. */
int64_t offcpu__oldest(const struct offcpu *oc);
/* Detaches and frees; NULL is fine. */
void offcpu__close(struct offcpu *oc);

/* The `state` label of a record's flags: "sleep", "disk", "runqueue" (a
 * static string), or NULL for a state this version does not know. */
const char *offcpu__state_name(uint32_t flags);
/* Parses "sleep,disk,runqueue" (any subset, or "all") into a state mask.
 * Returns 0 or -EINVAL. */
int offcpu__parse_states(const char *s, unsigned *mask);

#endif
