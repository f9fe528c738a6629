/*
 * runtime_walk.h - the language-runtime part of a sample, after its
 * native frames (bpf/runtime.h). BPF only; included by profile.bpf.c and
 * offcpu.bpf.c after their `scratch` (rt_procs is the cpu sampler's; the
 * offcpu object shares it by fd).
 */
#ifndef PROFFS_BPF_RUNTIME_WALK_H
#define PROFFS_BPF_RUNTIME_WALK_H

#include "bpf/runtime.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RT_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct rt_proc);
} rt_procs SEC(".maps");

#include "bpf/python_walk.h"
#include "bpf/ruby_walk.h"

/*
 * Writes the frames of the runtime process tgid runs (if user space set
 * it up) into ev->frames from slot at on, and sets ev->nrt, ev->rtend and
 * ev->rtkind. Returns the count written.
 */
static __always_inline int rt_walk(struct prof_sample_ev *ev, __u32 tgid, int at)
{
	struct rt_proc *rt = bpf_map_lookup_elem(&rt_procs, &tgid);
	int r = 0;

	ev->nrt = 0;
	ev->rtend = 0;
	ev->rtkind = RT_NONE;
	if (!rt)
		return 0;
	if (rt->kind == RT_PYTHON)
		r = py_walk(ev, &rt->py, at);
	else if (rt->kind == RT_RUBY)
		r = rb_walk(ev, &rt->rb, at);
	else
		return 0;
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
