// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu.bpf.c - off-CPU time, charged to the stack at which a thread
 * blocked. One program on tp_btf/sched_switch does two things per switch:
 *
 *  - for the thread leaving the CPU (prev, the current task), it notes in
 *    that thread's task storage when and why it left (sleep, disk,
 *    runqueue). Nothing else: the duration is not known yet, and most
 *    blocks are too short to be worth an unwind.
 *  - for the thread picked to run (next), it computes how long it was
 *    off. Under min_ns the block is only counted. Otherwise next's kernel
 *    stack, still frozen exactly where it called __schedule, is walked
 *    (bpf_get_task_stack) and sent as an OFFCPU_EV_SAMPLE record, and the
 *    thread's start entry is marked: its user part is owed.
 *
 * The user stack can only be read in the thread's own context (its memory,
 * its registers at kernel entry). A second program, on the rseq_update
 * tracepoint, runs there: the kernel notes every switch of a thread that
 * registered restartable sequences (glibc 2.35 on does for every thread)
 * and, on that thread's next return to user space, updates its rseq area
 * and fires rseq_update in its context, before any user instruction ran.
 * Its user stack is then still the one at which it entered the kernel: it
 * is walked and sent as OFFCPU_EV_USER; user space joins the two
 * (bpf/offcpu.h). A thread without rseq (static binaries, musl, Go
 * without cgo, glibc.pthread.rseq=0) never fires it: its blocks are sent
 * with kernel frames only, counted OFFCPU_CNT_NO_RSEQ.
 *
 * So an unwind is paid only for blocks that will be stored, and the only
 * cost added to a short block is one task storage lookup when the thread
 * goes back to user space. The start time lives per thread (task storage),
 * never per CPU: a thread usually wakes on another CPU than the one it
 * left (the per-CPU design's trap, OpenTelemetry ebpf-profiler #1348), and
 * it dies with its thread. Only tp_btf tracepoints are used: no kprobes
 * (a kernel without CONFIG_KPROBES, like some cloud builds), no fentry, no
 * sleepable program or callback (6.18's bpf_task_work was the first
 * design; a stable update refused its callback from sched_switch). Every
 * hook here exists since Linux 5.11 (task storage); DESIGN-NOTES.md has the
 * kernels tried.
 * Idle (pid 0), the daemon's own threads and, unless asked, kernel
 * threads are never recorded.
 */
#include "bpf/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/offcpu.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load (.rodata). */
const volatile __u32 self_tgid = 0;     /* the daemon: never recorded */
const volatile __u32 target_tgid = 0;   /* != 0: only this process (test tools) */
const volatile __u64 min_ns = 1000000;  /* shorter blocks are counted, not streamed */
const volatile __u32 state_mask = 7;    /* 1 << enum offcpu_state, per recorded state */
const volatile bool with_kthreads = false;
const volatile bool want_user = true;
const volatile bool want_kernel = true;
/* true: user stacks are walked with the files' unwind tables, the cpu
 * sampler's own maps (bpf/unwind_walk.h, shared by fd); false: the
 * kernel's frame-pointer walk. */
const volatile bool unwind_tables = false;

/* include/linux/sched.h; stable ABI in practice (exported to tracing). */
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_NOLOAD 0x400
#define PF_KTHREAD 0x00200000

struct start {
	__u64 ts;    /* bpf_ktime_get_ns at switch-out; 0 = nothing pending */
	__u32 state; /* enum offcpu_state */
	__u32 cpu;
	__u32 owed;  /* != 0: a long block's user part is owed (on_resume) */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct start);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 23); /* resized before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFFCPU_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* A record is too big for the BPF stack: build it here. The user part
 * (and bpf/unwind_walk.h, which writes its frames) uses scratch; the
 * kernel part, written at a context switch, its own kscratch: a switch on
 * this CPU in the middle of a user walk (a kernel that preempts the task
 * work) must not overwrite the record being walked. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_sample_ev);
} scratch SEC(".maps"), kscratch SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

/* Whose switches are recorded at all. */
static __always_inline bool wanted(struct task_struct *t)
{
	__u32 tgid = t->tgid;

	if (!t->pid) /* the idle task */
		return false;
	if (tgid == self_tgid)
		return false;
	if (target_tgid && tgid != target_tgid)
		return false;
	if (!with_kthreads && (t->flags & PF_KTHREAD))
		return false;
	return true;
}

static __always_inline void send_bytes(struct prof_sample_ev *ev, __u64 size)
{
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	if (bpf_ringbuf_output(&events, ev, size, BPF_RB_NO_WAKEUP))
		count(OFFCPU_CNT_RINGFULL, 1);
}

static __always_inline void send(struct prof_sample_ev *ev, long nframes)
{
	send_bytes(ev, __builtin_offsetof(struct prof_sample_ev, frames) + nframes * sizeof(__u64));
}

#include "bpf/runtime_walk.h"
#include "bpf/unwind_walk.h"

/*
 * The user stack of the current task, innermost first, into ev->frames
 * (max PROF_MAX_FRAMES), walked as bpf/profile.bpf.c walks a sample's:
 * the current task has not returned to user space since it blocked, so
 * its saved user registers (bpf_task_pt_regs, where unwind_user starts)
 * are where it blocked. Tables off: the kernel's frame-pointer walk,
 * which from a frameless leaf (libc's system call wrappers: every block)
 * loses the leaf's callers up to the last frame pointer. Returns the
 * number of frames, or -errno; sets ev->uend.
 */
static __noinline int user_stack(struct prof_sample_ev *ev, const struct rt_proc *rt)
{
	long n;

	if (!ev)
		return -22;
	if (unwind_tables)
		return unwind_user(ev, 0, rt);
	ev->uend = PROF_UE_FP;
	n = bpf_get_task_stack(bpf_get_current_task_btf(), ev->frames,
			       PROF_MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);
	if (n < 0)
		return n;
	return n / sizeof(__u64);
}

/* Runs in the thread's own context, on its way back to user space. */
static __always_inline void user_part(struct task_struct *task)
{
	struct prof_sample_ev *ev;
	__u32 zero = 0;
	long n, nu = 0;

	ev = bpf_map_lookup_elem(&scratch, &zero);
	if (!ev)
		return;
	ev->type = OFFCPU_EV_USER;
	ev->tgid = task->tgid;
	ev->tid = task->pid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->time_ns = bpf_ktime_get_ns();
	ev->period = 0;
	ev->flags = 0;
	ev->nkern = 0;
	ev->uend = PROF_UE_NONE;
	ev->ustack_len = 0;
	ev->nrt = 0;
	ev->rtend = 0;
	ev->rtkind = RT_NONE;
	BPF_CORE_READ_STR_INTO(&ev->comm, task, group_leader, comm);
	if (want_user && task->mm) {
		n = user_stack(ev, rt_of(task->tgid));
		if (n < 0) {
			count(OFFCPU_CNT_USTACK_ERR, 1);
			ev->flags |= PROF_F_UERR;
		} else {
			nu = n;
			if (nu >= PROF_MAX_FRAMES) {
				nu = PROF_MAX_FRAMES;
				ev->flags |= PROF_F_UTRUNC;
			}
		}
	}
	ev->nuser = nu;
	/* The frames of the thread's interpreter (Python, Ruby), if the cpu
	 * sampler set its process up (rt_procs is its map): where Python or
	 * Ruby code waits, not only the interpreter's loop. */
	if (want_user && task->mm && nu >= 0 && nu <= PROF_MAX_FRAMES)
		rt_walk(ev, rt_of(task->tgid), nu);
	/* A walk to finish in user space carries the stack copy. */
	if (ev->uend == PROF_UE_PENDING)
		send_bytes(ev, __builtin_offsetof(struct prof_sample_ev, ustack) +
				       (ev->ustack_len & 0x7fff));
	else
		send(ev, nu + 2 * (ev->nrt & 0xff));
}

/* Does t fire rseq_update on its way back to user space? Its rseq area
 * pointer is set while it is registered (a pointer up to 6.18; the field
 * that is not one is not read). */
static __always_inline bool has_rseq(struct task_struct *t)
{
	if (bpf_core_field_exists(t->rseq) && bpf_core_field_size(t->rseq) == sizeof(void *))
		return BPF_CORE_READ(t, rseq) != 0;
	return false;
}

/* next ran again after delta ns off CPU in `state`: its kernel part now,
 * its user part on its return to user space. */
static __always_inline void record(struct task_struct *next, __u64 now, __u64 delta,
				   struct start *st)
{
	struct prof_sample_ev *ev;
	__u32 zero = 0, tid = next->pid;
	long n, nk = 0;
	bool user = want_user && next->mm;

	ev = bpf_map_lookup_elem(&kscratch, &zero);
	if (!ev)
		return;
	ev->type = OFFCPU_EV_SAMPLE;
	ev->tgid = next->tgid;
	ev->tid = tid;
	ev->cpu = st->cpu;
	ev->cgroup_id = 0; /* known from the user part, or 0 */
	ev->time_ns = now;
	ev->period = delta;
	ev->flags = (st->state << OFFCPU_STATE_SHIFT) & OFFCPU_STATE_MASK;
	ev->nuser = 0;
	ev->uend = PROF_UE_NONE;
	ev->ustack_len = 0;
	BPF_CORE_READ_STR_INTO(&ev->comm, next, group_leader, comm);
	if (want_kernel) {
		/* next is not running: its stack is as it left it. */
		n = bpf_get_task_stack(next, ev->frames, PROF_MAX_FRAMES * sizeof(__u64), 0);
		if (n < 0) {
			count(OFFCPU_CNT_KSTACK_ERR, 1);
			ev->flags |= PROF_F_KERR;
		} else {
			nk = n / sizeof(__u64);
			if (nk >= PROF_MAX_FRAMES) {
				nk = PROF_MAX_FRAMES;
				ev->flags |= PROF_F_KTRUNC;
			}
		}
	}
	if (nk < 0 || nk > PROF_MAX_FRAMES) /* for the verifier */
		nk = 0;
	ev->nkern = nk;
	/* A second long block before the thread got back to user space
	 * is owed the same user part: one record serves both. */
	if (user && has_rseq(next)) {
		st->owed = 1;
		ev->flags |= OFFCPU_F_USER_NEXT;
	} else if (user) {
		count(OFFCPU_CNT_NO_RSEQ, 1);
	}
	send(ev, nk);
	count(OFFCPU_CNT_RECORDED, 1);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct start *st;
	__u64 now = bpf_ktime_get_ns(), delta;
	__u32 state;

	TEST_REFUSAL(TEST_REFUSE_OFFCPU);
	if (wanted(prev)) {
		/* Preempted (or yielding) threads stay runnable: they wait
		 * for a CPU, whatever state they were about to enter. */
		if (preempt || !prev_state)
			state = OFFCPU_RUNQUEUE;
		else if (prev_state & TASK_NOLOAD) /* TASK_IDLE: waiting for work */
			goto next;
		else if (prev_state & TASK_UNINTERRUPTIBLE)
			state = OFFCPU_DISK;
		else if (prev_state & TASK_INTERRUPTIBLE)
			state = OFFCPU_SLEEP;
		else /* stopped, traced, dead */
			goto next;
		if (!(state_mask & (1u << state)))
			goto next;
		count(OFFCPU_CNT_SWITCHES, 1);
		st = bpf_task_storage_get(&starts, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st) {
			count(OFFCPU_CNT_MAPFULL, 1);
			goto next;
		}
		st->ts = now;
		st->state = state;
		st->cpu = bpf_get_smp_processor_id();
	}
next:
	if (!next->pid)
		return 0;
	st = bpf_task_storage_get(&starts, next, 0, 0);
	if (!st || !st->ts)
		return 0;
	delta = now - st->ts;
	st->ts = 0;
	if (delta < min_ns) {
		count(OFFCPU_CNT_SHORT, 1);
		count(OFFCPU_CNT_SHORT_NS, delta);
		return 0;
	}
	record(next, now, delta, st);
	return 0;
}

/* The current thread goes back to user space after a switch (see the
 * head of this file). Most calls find nothing owed. */
SEC("tp_btf/rseq_update")
int BPF_PROG(on_resume, struct task_struct *t)
{
	struct start *st = bpf_task_storage_get(&starts, t, 0, 0);

	if (!st || !st->owed)
		return 0;
	st->owed = 0;
	user_part(t);
	return 0;
}
