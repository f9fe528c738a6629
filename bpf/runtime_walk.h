/*
 * runtime_walk.h - the language-runtime part of a sample, after its
 * native frames (bpf/runtime.h). BPF only; included by profile.bpf.c and
 * offcpu.bpf.c after their `scratch` and before bpf/unwind_walk.h
 * (rt_procs is the cpu sampler's; the offcpu object shares it by fd).
 */
#ifndef PROFFS_BPF_RUNTIME_WALK_H
#define PROFFS_BPF_RUNTIME_WALK_H

#include "bpf/runtime.h"

/* Set by user space before load (.rodata): the runtimes whose walks are
 * loaded, 1 << enum rt_kind each. The verifier drops the code of a walk
 * that is off, so a kernel that refuses one walk (sampler/ring/sampler.c
 * tries each) still loads the others; that runtime's frames stay native. */
const volatile __u32 rt_walks = ~0u;
#define RT_ON(k) (rt_walks & (1u << (k)))

/* Tests only (PROFFS_REFUSE, sampler/ring/kfeature.h): the parts named,
 * 1 << enum rt_kind for a runtime's walk, TEST_REFUSE_TABLES for the
 * unwind tables and TEST_REFUSE_OFFCPU for the off-CPU program, get an
 * instruction the verifier refuses (a read above the stack frame), so
 * the daemon's path on a kernel that refuses them runs here. */
const volatile __u32 test_refuse = 0;
#define TEST_REFUSAL(bit)                                                        \
	do {                                                                     \
		if (test_refuse & (bit))                                         \
			asm volatile("r0 = *(u64 *)(r10 + 8)" ::: "r0");        \
	} while (0)

/* Filled by user space per process it walks (or waits for): allocated as
 * entries come, not 1 MiB up front. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, RT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct rt_proc);
} rt_procs SEC(".maps");

#include "bpf/python_walk.h"
#include "bpf/ruby_walk.h"
/* The JVM's and V8's steps, which the native walk (bpf/unwind_walk.h,
 * included after this) takes for their code: they write their records. */
#include "bpf/hotspot_walk.h"
#include "bpf/v8_walk.h"

/* The process's runtime entry, NULL when it runs none we walk (one
 * lookup per sample, its pointer handed to the walks). */
static __always_inline struct rt_proc *rt_of(__u32 tgid)
{
	return bpf_map_lookup_elem(&rt_procs, &tgid);
}

/*
 * After the native walk: the frames of the interpreter rt runs (Python,
 * Ruby: walked now, from the thread's own state) into ev->frames from
 * slot at on, and ev->nrt, ev->rtend and ev->rtkind. A JVM's and V8's
 * records were written by the native walk itself. Returns the count.
 */
static __always_inline int rt_walk(struct prof_sample_ev *ev, struct rt_proc *rt, int at)
{
	int r = 0;

	if (!rt || (rt->kind != RT_PYTHON && rt->kind != RT_RUBY))
		return 0;
	if (rt->kind == RT_PYTHON) {
		if (!RT_ON(RT_PYTHON))
			return 0;
		TEST_REFUSAL(1u << RT_PYTHON);
		r = py_walk(ev, &rt->py, at);
	} else {
		if (!RT_ON(RT_RUBY))
			return 0;
		TEST_REFUSAL(1u << RT_RUBY);
		r = rb_walk(ev, &rt->rb, at);
	}
	ev->nrt = r & 0xffff;
	ev->rtend = (__u32)r >> 16;
	ev->rtkind = rt->kind;
	return ev->nrt;
}

/* A forked child runs the same interpreter at the same addresses: its
 * first samples walk it as its parent's do. */
static __always_inline void rt_fork(__u32 ptgid, __u32 ctgid)
{
	struct rt_proc *rt = bpf_map_lookup_elem(&rt_procs, &ptgid);

	if (rt)
		bpf_map_update_elem(&rt_procs, &ctgid, rt, BPF_ANY);
}

#endif
