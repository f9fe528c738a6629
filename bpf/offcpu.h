/*
 * offcpu.h - what bpf/offcpu.bpf.c shares with sampler/offcpu/: the record
 * type, how a record's flags carry the thread's state, and the indexes of
 * its counters. A record is a struct prof_sample_ev (bpf/profile.h) so the
 * cpu sampler's symbolization takes it as it is; `period` holds the time
 * off CPU in nanoseconds and `time_ns` the moment the thread ran again.
 */
#ifndef PROFFS_BPF_OFFCPU_H
#define PROFFS_BPF_OFFCPU_H

#include "bpf/profile.h"

/* Not PROF_EV_* values: the two programs have separate ring buffers, but
 * a record that strays into the wrong reader must not pass for a sample.
 *
 * A block comes in two records, because its two stacks can only be read in
 * two places. OFFCPU_EV_SAMPLE is written when the thread is picked to run
 * again (in the context of the thread it replaces): the duration, state
 * and kernel stack (frozen where it blocked); nuser = 0. OFFCPU_EV_USER is
 * written in the thread's own context on its next return to user space
 * (the rseq_update tracepoint):
 * its user stack (nkern = 0), which is the same for every block since its
 * last return to user space. User space joins each SAMPLE with the next
 * USER record of the same tid. A SAMPLE whose flags lack
 * OFFCPU_F_USER_NEXT (kernel threads) is complete as it is. */
#define OFFCPU_EV_SAMPLE 0x100u
#define OFFCPU_EV_USER 0x101u
#define OFFCPU_F_USER_NEXT (1u << 20)

/* Why the thread left the CPU; bits 24..27 of the record's flags. */
enum offcpu_state {
	OFFCPU_SLEEP = 0,    /* TASK_INTERRUPTIBLE: waits, locks, sockets, pipes, sleeps */
	OFFCPU_DISK = 1,     /* TASK_UNINTERRUPTIBLE: I/O, page faults, vfork */
	OFFCPU_RUNQUEUE = 2, /* preempted while runnable: waiting for a CPU */
	OFFCPU_NSTATES,
};
#define OFFCPU_STATE_SHIFT 24
#define OFFCPU_STATE_MASK (0xfu << OFFCPU_STATE_SHIFT)

/* Indexes into the per-CPU counters map. */
enum offcpu_counter {
	OFFCPU_CNT_SWITCHES,  /* switch-outs seen (idle and excluded threads not counted) */
	OFFCPU_CNT_RECORDED,  /* blocks long enough to unwind and stream */
	OFFCPU_CNT_SHORT,     /* blocks under the minimum: counted only */
	OFFCPU_CNT_SHORT_NS,  /* ... and their nanoseconds */
	OFFCPU_CNT_RINGFULL,  /* records dropped: ring buffer full */
	OFFCPU_CNT_MAPFULL,   /* switch-outs not remembered: start map full */
	OFFCPU_CNT_KSTACK_ERR,
	OFFCPU_CNT_USTACK_ERR,
	OFFCPU_CNT_NO_RSEQ,   /* long blocks of threads without rseq: no user part */
	OFFCPU_CNT_MAX,
};

#endif
