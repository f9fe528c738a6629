/*
 * profile.h - the records bpf/profile.bpf.c sends to user space through the
 * ring buffer, and the indexes of its loss counters. Shared by the BPF
 * program and sampler/; it must compile in both (no libc types: the BPF
 * side gets __u32/__u64 from vmlinux.h, user space from linux/types.h).
 */
#ifndef PROFFS_BPF_PROFILE_H
#define PROFFS_BPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "bpf/unwind.h"
#include "bpf/runtime.h"

/* The kernel caps callchains at kernel.perf_event_max_stack (127 by
 * default); asking for more buys nothing. */
#define PROF_MAX_FRAMES 127
#define PROF_COMM_LEN 16

enum prof_event_type {
	PROF_EV_SAMPLE = 1,
	PROF_EV_EXEC = 2, /* the process replaced its image: refresh its info */
	PROF_EV_EXIT = 3, /* the thread group is gone: age its info out */
	PROF_EV_FORK = 4, /* a new process (not a thread): inherits the parent's maps */
};

/* Flags of a sample. */
#define PROF_F_KTRUNC 1u  /* kernel stack hit the depth cap */
#define PROF_F_UTRUNC 2u  /* user stack hit the depth cap */
#define PROF_F_KERR 4u    /* bpf_get_stack failed for the kernel stack */
#define PROF_F_UERR 8u    /* ... for the user stack */
#define PROF_F_UEXACT 16u /* PROF_UE_PENDING: uregs' pc is exact (leaf or signal) */
#define PROF_F_UCUT 32u   /* PROF_UE_PENDING: the stack copy, taken page by page,
			   * stops short of the stack's end: it goes on past it */

/* How a user stack walk ended (bpf/profile.bpf.c, or the user-space twin
 * that finishes PROF_UE_PENDING walks). */
enum prof_uend {
	PROF_UE_NONE = 0,   /* no user stack (kernel thread, or not asked) */
	PROF_UE_ROOT,       /* the outermost frame (_start, clone, clone3) */
	PROF_UE_FP_END,     /* a frame-pointer chain (or return address) ended in 0 */
	PROF_UE_TRUNC,      /* hit PROF_MAX_FRAMES */
	PROF_UE_PENDING,    /* a file's table is not loaded: uregs + ustack carry on */
	PROF_UE_NO_TABLE,   /* ... and user space could not get one in time */
	PROF_UE_NO_RULE,    /* the file's unwind info does not cover the address */
	PROF_UE_BAD_FRAME,  /* a read failed, the stack went backwards, or a rule we lack */
	PROF_UE_BAD_PC,     /* a return address outside every executable mapping */
	PROF_UE_NO_VMA,     /* the mapping lookup failed (mmap lock busy) */
	PROF_UE_FP,         /* the frame-pointer walk of bpf_get_stack (tables off) */
	PROF_UE_MAX,
};

/* Every record starts with this. */
struct prof_hdr {
	__u32 type;
	__u32 tgid;
};

/* A sample: the header, then nkern kernel frames, then nuser user frames
 * (innermost first each), then nrt frames of the process's language
 * runtime (rtkind: struct py_frame, rb_frame; two slots each, newest
 * first), so the record is as long as its stacks. */
struct prof_sample_ev {
	__u32 type;
	__u32 tgid;
	__u32 tid;
	__u32 cpu;
	__u64 cgroup_id;
	__u64 time_ns; /* bpf_ktime_get_ns */
	__u64 period;  /* the perf event's current sample period (ns for cpu-clock) */
	char comm[PROF_COMM_LEN]; /* the thread group leader's name */
	__u16 nkern, nuser;
	__u32 flags;
	__u8 uend;         /* enum prof_uend */
	__u8 rtend;        /* how the runtime's walk ended (enum py_end, rb_end) */
	__u16 nrt;         /* runtime frames after the native ones */
	__u8 rtkind;       /* enum rt_kind of those frames */
	__u8 pad;
	__u16 ustack_len;  /* bytes of ustack (PROF_UE_PENDING only) */
	__u64 uregs[3];    /* PROF_UE_PENDING: pc, sp, bp of the last frame */
	__u64 frames[2 * PROF_MAX_FRAMES]; /* and the runtime frames' slots */
	/* PROF_UE_PENDING only (the record then holds all of frames[]):
	 * the user stack from uregs[1] up, at most to its mapping's end. */
	__u8 ustack[UNW_STACK_COPY];
};

/* Frame slots a record uses: native frames, then two per runtime frame. */
static inline __u32 prof_sample_slots(const struct prof_sample_ev *ev)
{
	return (__u32)ev->nkern + ev->nuser + 2u * ev->nrt;
}

/* exec, exit and fork. For fork, tgid is the child and ppid the parent. */
struct prof_task_ev {
	__u32 type;
	__u32 tgid;
	__u32 ppid;
	__u32 pad;
	__u64 cgroup_id;
	char comm[PROF_COMM_LEN];
};

/* Indexes into the per-CPU counters map. */
enum prof_counter {
	PROF_CNT_SAMPLES, /* samples taken (idle excluded) */
	PROF_CNT_IDLE,    /* samples of the idle task, counted only */
	PROF_CNT_RINGFULL,/* records dropped: ring buffer full */
	PROF_CNT_KSTACK_ERR,
	PROF_CNT_USTACK_ERR,
	PROF_CNT_KTRUNC,  /* kernel stacks truncated at the depth cap */
	PROF_CNT_UTRUNC,  /* user stacks truncated at the depth cap */
	PROF_CNT_EVENTS_LOST, /* exec/exit/fork events dropped */
	/* What samples cost the program, by the runtime of the process
	 * sampled (enum rt_kind, RT_NONE for native; PROF_COST_KINDS slots
	 * each): ns from the sample's clock reading to its record's output,
	 * and samples. */
	PROF_CNT_COST_NS,
	PROF_CNT_COST_N = PROF_CNT_COST_NS + 5,
	PROF_CNT_MAX = PROF_CNT_COST_N + 5,
};
#define PROF_COST_KINDS 5 /* RT_NKINDS (bpf/runtime.h) */

#endif
