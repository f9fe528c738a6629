// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c - the on-CPU sampler. A perf_event program (cpu-clock, one
 * event per CPU) writes one record per sample into a ring buffer: who ran
 * (tgid, tid, cgroup, leader's comm) and both stacks. There is no in-kernel
 * aggregation, so no stack-id collisions and nothing to clear; user space
 * counts. Tracepoints on exec, fork and exit tell user space when process
 * info must be refreshed or aged out; exec records wake the reader at
 * once, the rest wait for its next poll (about every 250 ms).
 */
#include "bpf/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/profile.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load (.rodata). target_tgid != 0 samples only
 * that process (test tools). */
const volatile __u32 target_tgid = 0;
const volatile bool want_user = true;
const volatile bool want_kernel = true;
/* false: the kernel's frame-pointer walk (bpf_get_stack), as before the
 * unwinder, for comparison. */
const volatile bool unwind_tables = true;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* resized before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* A sample record is too big for the BPF stack: build it here. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_sample_ev);
} scratch SEC(".maps");

/* See wake_flag(). */
#define RT_WAKE_NS 5000000ULL
#define RT_SEEN_SETS 2048 /* two tags each: 16 KiB per CPU */
#define RT_SEEN_CHECK 16
#define RT_SIG_N 256
/* Ring space a stack copy must leave free: a poll's worth of plain
 * records of every CPU (~50 KiB at 99 Hz on 2 CPUs, most of them far
 * smaller than their 2 KiB worst case). */
#define PROF_RING_SPARE (64u << 10)

/* Per CPU: the runtime objects this CPU's records named lately (a 32-bit
 * tag of (process, object, stamp) in a two-way set), the chains of them
 * it checked lately (sig), and when it last woke the daemon for one it
 * had not. */
struct rt_seen {
	__u64 woke_ns;
	__u32 tag[2 * RT_SEEN_SETS];
	__u32 sig[RT_SIG_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rt_seen);
} rt_seen SEC(".maps");

/*
 * A runtime's frames are named later, by reading the objects the record
 * points at (function, code object, iseq, method). Those die with their
 * thread or process: a node worker frees its heap milliseconds after its
 * last JS frame, and a record that waited for the daemon's next poll (up
 * to 250 ms) named nothing then (short-lived workers: 83% of their
 * samples held [js: unreadable]). Waking the daemon for every runtime
 * sample cost it 4-6x its CPU (each wake finds its tables cold), so only
 * a record with an object this CPU has not seen lately wakes it, at most
 * once per RT_WAKE_NS per CPU: code the daemon named is in its cache and
 * needs no read. The leaf-most RT_SEEN_CHECK records are looked at (new
 * code shows first where it runs); a tag pushed out early costs a wake.
 * sig, when not 0, is those records folded into one word as the walk
 * wrote them (V8's: bpf/v8_walk.h): a chain this CPU checked lately had
 * each of its records tagged then, and one look replaces sixteen (a busy
 * node's wake check cost ~230 ns a sample, a native one's ~50).
 */
static __always_inline __u64 wake_flag(const struct prof_sample_ev *ev, __u64 sig)
{
	__u32 zero = 0, base = (__u32)ev->nkern + ev->nuser, nrt = ev->nrt & 0xff;
	/* The JITs' records say which native frame they replace (bpf/v8.h,
	 * bpf/hotspot.h): not the object's identity. With it, one JS chain
	 * under a leaf one builtin deeper was all new (a busy node woke the
	 * daemon for 9% of its samples, 17 times a second). */
	__u64 keep = ev->rtkind == RT_V8 ? V8_OBJ_IDENT_MASK : ev->rtkind == RT_HOTSPOT ? ~(0xffull << 56) : ~0ull;
	struct rt_seen *sn;
	bool fresh = false;

	if (!nrt)
		return BPF_RB_NO_WAKEUP;
	sn = bpf_map_lookup_elem(&rt_seen, &zero);
	if (!sn)
		return BPF_RB_NO_WAKEUP;
	if (sig) {
		__u64 h = (sig ^ ev->tgid) * 0xff51afd7ed558ccdULL;
		__u32 i = (__u32)(h >> 56) & (RT_SIG_N - 1), tag = (__u32)h | 1;

		if (sn->sig[i] == tag)
			return BPF_RB_NO_WAKEUP;
		sn->sig[i] = tag;
	}
	for (__u32 i = 0; i < RT_SEEN_CHECK && i < nrt; i++) {
		__u32 k = base + 2 * i, set, tag;
		__u64 h;

		if (k + 1 >= 2 * PROF_MAX_FRAMES)
			break;
		k &= 0xff; /* for the verifier: frames[] is followed by ustack[] */
		h = ((ev->frames[k] & keep) ^ (ev->frames[k + 1] >> 32 << 32 | ev->tgid)) * 0x9e3779b97f4a7c15ULL;
		/* A product's low bits see only the low bits of what was
		 * multiplied: without the fold, records of one object under
		 * other flags or stamps (slot 0's top bits, slot 1's high half)
		 * all fell in one set and pushed each other out (a busy JVM: 30%
		 * of its samples woke the daemon; 224 tags in all). */
		h ^= h >> 32;
		set = (__u32)(h >> 20) & (RT_SEEN_SETS - 1);
		tag = (__u32)(h >> 32) | 1;
		if (sn->tag[2 * set] == tag || sn->tag[2 * set + 1] == tag)
			continue;
		sn->tag[2 * set + 1] = sn->tag[2 * set];
		sn->tag[2 * set] = tag;
		fresh = true;
	}
	if (!fresh || ev->time_ns - sn->woke_ns < RT_WAKE_NS)
		return BPF_RB_NO_WAKEUP;
	sn->woke_ns = ev->time_ns;
	return BPF_RB_FORCE_WAKEUP;
}

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

#include "bpf/runtime_walk.h"
#include "bpf/unwind_walk.h"

_Static_assert(RT_SEEN_CHECK == V8_SIG_RECORDS, "the wake check and V8's chain signature cover the same records");

/*
 * The user stack, innermost first, into ev->frames[nk...] (max
 * PROF_MAX_FRAMES): with the files' unwind tables (bpf/unwind_walk.h), or
 * the kernel's frame-pointer walk when tables are off. Returns the number
 * of frames, or -errno.
 */
static __noinline int user_stack(struct bpf_perf_event_data *ctx, struct prof_sample_ev *ev,
				 int nk, const struct rt_proc *rt)
{
	long n;

	if (!ev || nk < 0 || nk > PROF_MAX_FRAMES)
		return -22;
	if (unwind_tables)
		return unwind_user(ev, nk, rt);
	ev->uend = PROF_UE_FP;
	n = bpf_get_stack(ctx, &ev->frames[nk], PROF_MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);
	if (n < 0)
		return n;
	return n / sizeof(__u64);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct task_struct *task;
	struct prof_sample_ev *ev;
	struct rt_proc *rt = 0;
	long n, nk = 0, nu = 0;
	__u64 size;

	if (tid == 0) { /* the idle task: counted, never streamed */
		count(PROF_CNT_IDLE);
		return 0;
	}
	if (target_tgid && tgid != target_tgid)
		return 0;
	count(PROF_CNT_SAMPLES);
	ev = bpf_map_lookup_elem(&scratch, &zero);
	if (!ev)
		return 0;
	task = (struct task_struct *)bpf_get_current_task_btf();
	ev->type = PROF_EV_SAMPLE;
	ev->tgid = tgid;
	ev->tid = tid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->time_ns = bpf_ktime_get_ns();
	ev->period = ctx->sample_period;
	ev->flags = 0;
	ev->uend = PROF_UE_NONE;
	ev->rtend = 0;
	ev->nrt = 0;
	ev->rtkind = RT_NONE;
	ev->ustack_len = 0;
	BPF_CORE_READ_STR_INTO(&ev->comm, task, group_leader, comm);

	/* Only a sample taken in the kernel has a kernel stack: the helper
	 * cost ~0.75 us a sample to say so of one taken in user code. */
	if (want_kernel && ctx->regs.ip >= 0xffff800000000000ull) {
		n = bpf_get_stack(ctx, ev->frames, PROF_MAX_FRAMES * sizeof(__u64), 0);
		if (n < 0) {
			count(PROF_CNT_KSTACK_ERR);
			ev->flags |= PROF_F_KERR;
		} else {
			nk = n / sizeof(__u64);
			if (nk >= PROF_MAX_FRAMES) {
				nk = PROF_MAX_FRAMES;
				count(PROF_CNT_KTRUNC);
				ev->flags |= PROF_F_KTRUNC;
			}
		}
	}
	/* Kernel threads have no user stack; asking would count as an error. */
	if (want_user && BPF_CORE_READ(task, mm)) {
		if (nk < 0 || nk > PROF_MAX_FRAMES) /* for the verifier */
			nk = 0;
		rt = want_user ? rt_of(tgid) : 0;
		n = user_stack(ctx, ev, nk, rt);
		if (n < 0) {
			count(PROF_CNT_USTACK_ERR);
			ev->flags |= PROF_F_UERR;
		} else {
			nu = n;
			if (nu >= PROF_MAX_FRAMES) {
				nu = PROF_MAX_FRAMES;
				count(PROF_CNT_UTRUNC);
				ev->flags |= PROF_F_UTRUNC;
			}
		}
	}
	ev->nkern = nk;
	ev->nuser = nu;
	if (want_user && nk >= 0 && nu >= 0 && nk + nu <= 2 * PROF_MAX_FRAMES)
		rt_walk(ev, rt, nk + nu);
	size = __builtin_offsetof(struct prof_sample_ev, frames) +
	       (nk + nu + 2 * (ev->nrt & 0xff)) * sizeof(__u64);
	/* A walk to finish in user space carries the stack copy, if the ring
	 * has room for it; else (a burst of walks into files whose tables are
	 * not built yet, as when the daemon starts and knows none) the sample
	 * still counts, its stack ending in the file it had no table for. */
	if (ev->uend == PROF_UE_PENDING) {
		__u64 copy = __builtin_offsetof(struct prof_sample_ev, ustack) + (ev->ustack_len & 0x7fff);

		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + copy + PROF_RING_SPARE <=
		    bpf_ringbuf_query(&events, BPF_RB_RING_SIZE))
			size = copy;
		else
			ev->uend = PROF_UE_NO_TABLE;
	}
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	if (bpf_ringbuf_output(&events, ev, size, wake_flag(ev, unwind_rt_sig(ev))))
		count(PROF_CNT_RINGFULL);
	/* (one more clock read a sample: what a runtime's walk costs, told
	 * apart from native samples taken in the same seconds) */
	{
		__u32 k = rt && rt->kind < PROF_COST_KINDS ? rt->kind : RT_NONE;

		count_n(PROF_CNT_COST_NS + k, bpf_ktime_get_ns() - ev->time_ns);
		count(PROF_CNT_COST_N + k);
	}
	return 0;
}

static __always_inline void task_event(__u32 type, __u32 tgid, __u32 ppid,
				       struct task_struct *task, __u64 wake)
{
	struct prof_task_ev *ev;

	if (target_tgid && tgid != target_tgid && ppid != target_tgid)
		return;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count(PROF_CNT_EVENTS_LOST);
		return;
	}
	ev->type = type;
	ev->tgid = tgid;
	ev->ppid = ppid;
	ev->pad = 0;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	BPF_CORE_READ_STR_INTO(&ev->comm, task, group_leader, comm);
	bpf_ringbuf_submit(ev, wake);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	/* Its old interpreter (if any) is gone with the old image. */
	bpf_map_delete_elem(&rt_procs, &tgid);
	/* A new image must be read from /proc before a short-lived process
	 * is gone: wake the reader now. */
	task_event(PROF_EV_EXEC, tgid, 0, p, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	/* Fires per thread; only the group's end matters. */
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (BPF_CORE_READ(p, pid) != tgid)
		return 0;
	bpf_map_delete_elem(&rt_procs, &tgid);
	task_event(PROF_EV_EXIT, tgid, 0, p, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ctgid = BPF_CORE_READ(child, tgid), ptgid = BPF_CORE_READ(parent, tgid);

	/* Threads share their process's info already. */
	if (BPF_CORE_READ(child, pid) != ctgid)
		return 0;
	rt_fork(ptgid, ctgid);
	/* A child is a copy of its parent (known to user space): no hurry. */
	task_event(PROF_EV_FORK, ctgid, ptgid, child, BPF_RB_NO_WAKEUP);
	return 0;
}
