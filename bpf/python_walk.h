/*
 * python_walk.h - the Python part of a sample (bpf/python.h has the
 * records). Included by bpf/runtime_walk.h, which finds the process's
 * struct py_proc in rt_procs and calls py_walk.
 *
 * Why this shape: the thread state is the sampled thread's own, read
 * through its pthread TSD slot (fsbase + tsd_off), so a thread that
 * released the GIL (hashing, sleeping in C) shows its own frames, never
 * the GIL holder's. Each frame costs two reads of user memory: the frame
 * (PY_FRAME_READ bytes, every field we use at once) and the code object's
 * fields the stamp is made of. Offsets come from the map, so fields are
 * picked out of a per-CPU buffer with bounded offsets the verifier can
 * check; a row whose offsets do not fit is refused by user space.
 */
#ifndef PROFFS_BPF_PYTHON_WALK_H
#define PROFFS_BPF_PYTHON_WALK_H

#include "bpf/python.h"

#define PY_BUF 128

struct py_buf {
	__u8 fr[PY_BUF];
	__u8 co[PY_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_buf);
} py_scratch SEC(".maps");

/* Python walks by how they ended (enum py_end), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PY_END_MAX);
	__type(key, __u32);
	__type(value, __u64);
} py_ends SEC(".maps");

static __always_inline __u64 py_u64(const __u8 *b, int off)
{
	if (off < 0 || off > PY_BUF - 8)
		return 0;
	return *(const __u64 *)(b + off);
}

static __always_inline __u32 py_u32(const __u8 *b, int off)
{
	if (off < 0 || off > PY_BUF - 4)
		return 0;
	return *(const __u32 *)(b + off);
}

static __always_inline __u8 py_u8(const __u8 *b, int off)
{
	if (off < 0 || off > PY_BUF - 1)
		return 0;
	return b[off];
}

/* The newest frame of the sampled thread, 0 when it has none. Returns
 * PY_END_OK, PY_END_IDLE or PY_END_READ. */
static __always_inline int py_top(const struct py_proc *c, __u64 *frame)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), ts = 0, cf = 0;

	*frame = 0;
	if (!fsbase || bpf_probe_read_user(&ts, sizeof(ts), (void *)(fsbase + c->tsd_off)))
		return PY_END_READ;
	if (!ts)
		return PY_END_IDLE; /* this thread never ran Python */
	if (c->ts_cframe >= 0) {
		if (bpf_probe_read_user(&cf, sizeof(cf), (void *)(ts + c->ts_cframe)))
			return PY_END_READ;
		if (!cf)
			return PY_END_IDLE;
		if (bpf_probe_read_user(frame, sizeof(*frame), (void *)(cf + c->cframe_current_frame)))
			return PY_END_READ;
	} else if (bpf_probe_read_user(frame, sizeof(*frame), (void *)(ts + c->ts_frame))) {
		return PY_END_READ;
	}
	return *frame ? PY_END_OK : PY_END_IDLE;
}

/* The walk's state between bpf_loop steps: scalars only (the maps are
 * looked up again in each step; per-CPU array lookups are inlined). */
struct py_walk_ctx {
	struct py_proc c;
	__u64 frame;
	__u32 at, npy, end;
};

/* One frame: returns 1 to stop. */
static long py_step(__u32 i, void *arg)
{
	struct py_walk_ctx *w = arg;
	struct prof_sample_ev *ev;
	__u64 code, prev, fn, nm, instr = PY_INSTR_NONE, entry = 0;
	__u32 zero = 0, slot;
	struct py_buf *b;
	__s32 fl;

	if (!w->frame) {
		w->end = PY_END_OK;
		return 1;
	}
	ev = bpf_map_lookup_elem(&scratch, &zero);
	b = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!ev || !b) {
		w->end = PY_END_READ;
		return 1;
	}
	slot = w->at + 2 * w->npy;
	if (slot > 2 * PROF_MAX_FRAMES - 2) {
		w->end = PY_END_TRUNC;
		return 1;
	}
	/* Keep the checked value for the stores below (the compiler would
	 * otherwise recompute it past the verifier's bounds). */
	asm volatile("" : "+r"(slot));
	slot &= 0xff;
	if (slot > 2 * PROF_MAX_FRAMES - 2)
		return 1;
	if (bpf_probe_read_user(b->fr, PY_FRAME_READ, (void *)w->frame)) {
		w->end = PY_END_READ;
		return 1;
	}
	code = py_u64(b->fr, w->c.fr_code);
	prev = py_u64(b->fr, w->c.fr_previous);
	/* 3.12+: a frame owned by the C stack is a shim between two eval
	 * loops: the frame before it was its loop's first. */
	if (w->c.minor >= 12 && py_u8(b->fr, w->c.fr_owner) == 3) {
		if (w->npy) {
			__u32 e = w->at + 2 * (w->npy - 1);

			asm volatile("" : "+r"(e));
			if (e < 2 * PROF_MAX_FRAMES)
				ev->frames[e & 0xff] |= PY_FRAME_ENTRY;
		}
		w->frame = prev;
		return 0;
	}
	if (!code ||
	    bpf_probe_read_user(b->co, PY_CODE_READ, (void *)(code + w->c.co_firstlineno))) {
		w->end = PY_END_READ;
		return 1;
	}
	fl = (__s32)py_u32(b->co, 0);
	fn = py_u64(b->co, w->c.co_filename - w->c.co_firstlineno);
	nm = py_u64(b->co, w->c.co_name - w->c.co_firstlineno);
	if (w->c.minor == 10) {
		__s32 lasti = (__s32)py_u32(b->fr, w->c.fr_instr);

		if (lasti >= 0)
			instr = (__u64)lasti * 2;
		entry = PY_FRAME_ENTRY; /* one eval call per frame */
	} else {
		__u64 p = py_u64(b->fr, w->c.fr_instr), base = code + w->c.co_code_adaptive;

		if (p >= base && p - base < (1u << 30))
			instr = p - base;
		if (w->c.minor == 11 && py_u8(b->fr, w->c.fr_is_entry))
			entry = PY_FRAME_ENTRY;
	}
	ev->frames[slot] = (code & ~1ull) | entry;
	ev->frames[slot + 1] = instr | (__u64)py_stamp(fn, nm, fl) << 32;
	w->npy++;
	w->frame = prev;
	return 0;
}

/*
 * Writes the sampled thread's Python frames into ev->frames from slot at
 * on (two slots each), c being its process's entry in rt_procs. Returns
 * the frames written | enum py_end << 16.
 */
static __noinline int py_walk(struct prof_sample_ev *ev, const struct py_proc *c, int at)
{
	struct py_walk_ctx w = {};
	__u64 *v;

	if (!ev || !c || at < 0 || at > 2 * PROF_MAX_FRAMES)
		return 0;
	w.c = *c;
	w.at = at;
	w.end = py_top(c, &w.frame);
	if (w.end == PY_END_OK) {
		w.end = PY_END_TRUNC; /* unless a step says otherwise */
		bpf_loop(PY_MAX_FRAMES, py_step, &w, 0);
		/* Steps that ended on a shim or a frame leave the end open. */
		if (w.end == PY_END_TRUNC && !w.frame)
			w.end = PY_END_OK;
	}
	v = bpf_map_lookup_elem(&py_ends, &w.end);
	if (v)
		*v += 1;
	return (int)(w.npy | w.end << 16);
}

#endif
