/*
 * ruby_walk.h - the Ruby part of a sample (bpf/ruby.h has the records).
 * BPF only; included by bpf/runtime_walk.h, which finds the process's
 * struct rb_proc in rt_procs and calls rb_walk.
 *
 * Why this shape: the execution context (EC) is the sampled thread's
 * own, read from its TLS variable ruby_current_ec, so a thread that
 * sleeps or waits for the GVL shows its own frames, never the GVL
 * holder's. libruby's TLS is global-dynamic: the first walk of a process
 * goes through the thread's DTV (fsbase + 8 -> dtv[modid] -> the block);
 * an entry glibc did not malloc (to_free == 0) lies in the static TLS
 * image, at one fsbase-relative place for every thread, so the walk
 * keeps that offset in the process's entry and later samples read the
 * EC pointer in one read. A libruby loaded with dlopen keeps the DTV
 * walk (its blocks are per-thread mallocs).
 *
 * Per control frame: 24 bytes at ep - 16 (method entry, specval, flags)
 * and one word of the iseq or the method entry (the stamp's pointer):
 * two reads; the control frames themselves (pc, iseq, ep), which lie next
 * to each other, are read RB_BATCH at a time (a read costs ~130-350 ns
 * here whatever its size; what it copies costs little). Frames Ruby's
 * own backtrace skips (dummy frames, C blocks, an iseq without a pc) are
 * skipped here too and cost one.
 */
#ifndef PROFFS_BPF_RUBY_WALK_H
#define PROFFS_BPF_RUBY_WALK_H

#include "bpf/ruby.h"

#define RB_BATCH 8
#define RB_BUF (RB_BATCH * 64) /* RB_BATCH frames of a row's cfp_size (<= 64) */

struct rb_buf {
	__u8 b[RB_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rb_buf);
} rb_scratch SEC(".maps");

/* Ruby walks by how they ended (enum rb_end), and GC samples, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RB_END_MAX + 1);
	__type(key, __u32);
	__type(value, __u64);
} rb_ends SEC(".maps");

static __always_inline __u64 rb_u64(const __u8 *b, int off)
{
	if (off < 0 || off > RB_BUF - 8)
		return 0;
	return *(const __u64 *)(b + off);
}

static __always_inline int rb_read(void *dst, __u32 n, __u64 src)
{
	return bpf_probe_read_user(dst, n, (const void *)src) ? -1 : 0;
}

/* The sampled thread's EC, 0 when it has none, and its libruby TLS
 * block. Returns RB_END_OK, RB_END_IDLE or RB_END_READ. c is the map's
 * value: a static TLS offset found here is kept in it. */
static __always_inline int rb_ec(struct rb_proc *c, __u64 *ec, __u64 *block)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
	__u64 fsbase = BPF_CORE_READ(task, thread.fsbase), dtv = 0, len = 0, ent[2] = {};

	*ec = 0;
	if (!fsbase)
		return RB_END_READ;
	if (c->flags & RB_TLS_STATIC) {
		*block = fsbase + c->tls_off - c->dtpoff;
		if (rb_read(ec, 8, fsbase + c->tls_off))
			return RB_END_READ;
		return *ec ? RB_END_OK : RB_END_IDLE;
	}
	/* x86-64 TLS: the TCB's second word is the DTV; dtv[-1] is its
	 * length in entries, dtv[k] module k's {block, to_free}. */
	if (rb_read(&dtv, 8, fsbase + 8) || !dtv || rb_read(&len, 8, dtv - 16))
		return RB_END_READ;
	if (c->modid > len)
		return RB_END_IDLE; /* this thread's DTV predates libruby */
	if (rb_read(ent, 16, dtv + 16 * c->modid))
		return RB_END_READ;
	if (!ent[0] || ent[0] == ~0ull)
		return RB_END_IDLE; /* never allocated: the thread never ran Ruby */
	*block = ent[0];
	if (rb_read(ec, 8, ent[0] + c->dtpoff))
		return RB_END_READ;
	if (!ent[1]) {
		c->tls_off = (__s64)(ent[0] + c->dtpoff - fsbase);
		c->flags |= RB_TLS_STATIC;
	}
	return *ec ? RB_END_OK : RB_END_IDLE;
}

/* The walk's state between bpf_loop steps: scalars only. */
struct rb_walk_ctx {
	struct rb_proc c;
	__u64 cfp, end;
	__u64 buf_at, buf_end; /* the control frames rb_scratch holds */
	__u32 at, n, stop;
};

/* Stores one record at the walk's next slots; 0, or 1 when no room. */
static __always_inline int rb_put(struct rb_walk_ctx *w, struct prof_sample_ev *ev, __u64 addr,
				  __u64 pos)
{
	__u32 slot = w->at + 2 * w->n;

	if (slot > 2 * PROF_MAX_FRAMES - 2)
		return 1;
	/* Keep the checked value for the stores (the compiler would
	 * otherwise recompute it past the verifier's bounds). */
	asm volatile("" : "+r"(slot));
	slot &= 0xff;
	if (slot > 2 * PROF_MAX_FRAMES - 2)
		return 1;
	ev->frames[slot] = addr;
	ev->frames[slot + 1] = pos;
	w->n++;
	return 0;
}

/* One control frame: returns 1 to stop. */
static long rb_step(__u32 i, void *arg)
{
	struct rb_walk_ctx *w = arg;
	struct prof_sample_ev *ev;
	__u64 pc, iseq, ep, env[3], word = 0, fl;
	struct rb_buf *b;
	__u32 zero = 0, flags;

	if (w->cfp >= w->end) {
		w->stop = RB_END_OK;
		return 1;
	}
	ev = bpf_map_lookup_elem(&scratch, &zero);
	b = bpf_map_lookup_elem(&rb_scratch, &zero);
	if (!ev || !b) {
		w->stop = RB_END_READ;
		return 1;
	}
	if (w->at + 2 * w->n > 2 * PROF_MAX_FRAMES - 2) {
		w->stop = RB_END_TRUNC;
		return 1;
	}
	if (w->cfp < w->buf_at || w->cfp + w->c.cfp_size > w->buf_end) {
		/* the next RB_BATCH frames (fewer before the end), else this one */
		__u64 len = w->end - w->cfp;

		if (len > (__u64)RB_BATCH * w->c.cfp_size)
			len = (__u64)RB_BATCH * w->c.cfp_size;
		if (len > RB_BUF)
			len = RB_BUF;
		if (len < w->c.cfp_size || len < RB_CFP_READ || rb_read(b->b, len, w->cfp)) {
			len = RB_CFP_READ;
			if (rb_read(b->b, RB_CFP_READ, w->cfp)) {
				w->stop = RB_END_READ;
				return 1;
			}
		}
		w->buf_at = w->cfp;
		w->buf_end = w->cfp + len;
	}
	{
		int o = (int)(w->cfp - w->buf_at);

		if (o < 0 || o > RB_BUF - 64)
			o = RB_BUF; /* (rb_u64 reads 0 past the buffer) */
		pc = rb_u64(b->b, o + w->c.cfp_pc);
		iseq = rb_u64(b->b, o + w->c.cfp_iseq);
		ep = rb_u64(b->b, o + w->c.cfp_ep);
	}
	w->cfp += w->c.cfp_size;
	/* ep[-2] method entry or cref, ep[-1] specval, ep[0] flags */
	if (rb_read(env, sizeof(env), ep - 16)) {
		w->stop = RB_END_READ;
		return 1;
	}
	flags = (__u32)env[2];
	fl = flags & RB_ENV_FLAG_FINISH ? RB_FRAME_FINISH : 0;
	if ((flags & RB_ENV_MAGIC_MASK) == RB_MAGIC_CFUNC) {
		if (!env[0] || (env[0] & RB_FRAME_FLAGS) || rb_read(&word, 8, env[0] + w->c.me_def)) {
			w->stop = RB_END_READ;
			return 1;
		}
		if (rb_put(w, ev, env[0] | RB_FRAME_CFUNC | fl, (__u64)rb_stamp(word) << 32))
			goto trunc;
	} else if (iseq && pc && !(flags & RB_ENV_FLAG_CFRAME)) {
		if ((iseq & RB_FRAME_FLAGS) || rb_read(&word, 8, iseq + w->c.iseq_body)) {
			w->stop = RB_END_READ;
			return 1;
		}
		if (rb_put(w, ev, iseq | fl, (__u32)pc | (__u64)rb_stamp(word) << 32))
			goto trunc;
	}
	return 0;
trunc:
	w->stop = RB_END_TRUNC;
	return 1;
}

/*
 * Writes the sampled thread's Ruby frames into ev->frames from slot at
 * on (two slots each, struct rb_frame, newest first; a GC marker first
 * when the GC runs), c being its process's entry in rt_procs (the map's
 * value: a static TLS offset found is kept in it). Returns the records
 * written | enum rb_end << 16.
 */
static __noinline int rb_walk(struct prof_sample_ev *ev, struct rb_proc *c, int at)
{
	struct rb_walk_ctx w = {};
	struct rb_buf *b;
	__u32 zero = 0, gc = 0, key;
	__u64 ec = 0, block = 0, th = 0, brb = 1, *v, stack, size;

	if (!ev || !c || at < 0 || at > 2 * PROF_MAX_FRAMES)
		return 0;
	b = bpf_map_lookup_elem(&rb_scratch, &zero);
	if (!b)
		return 0;
	w.at = at;
	w.stop = rb_ec(c, &ec, &block);
	w.c = *c;
	/* The GC runs, and this thread holds the GVL (not in a blocking
	 * region): it is this thread's GC. */
	if (w.stop == RB_END_OK && c->gc_flags && !rb_read(&gc, 4, c->gc_flags) &&
	    (gc & c->gc_mask) && !rb_read(&th, 8, block + c->th_dtpoff) && th &&
	    !rb_read(&brb, 8, th + c->th_blocking) && !brb) {
		key = RB_CNT_GC;
		v = bpf_map_lookup_elem(&rb_ends, &key);
		if (v)
			*v += 1;
		rb_put(&w, ev, RB_FRAME_GC, 0);
	}
	if (w.stop == RB_END_OK) {
		if (rb_read(b->b, 24, ec)) {
			w.stop = RB_END_READ;
		} else {
			stack = rb_u64(b->b, w.c.ec_vm_stack);
			size = rb_u64(b->b, w.c.ec_vm_stack_size);
			w.cfp = rb_u64(b->b, w.c.ec_cfp);
			/* The oldest control frame is the thread's dummy. */
			w.end = stack + 8 * (size & 0xfffffff) - w.c.cfp_size;
			if (!stack || !w.cfp || w.cfp >= w.end)
				w.stop = RB_END_IDLE;
		}
	}
	if (w.stop == RB_END_OK) {
		w.stop = RB_END_MAX; /* unless a step says how it ended */
		bpf_loop(RB_MAX_FRAMES, rb_step, &w, 0);
		if (w.stop == RB_END_MAX)
			w.stop = w.cfp >= w.end ? RB_END_OK : RB_END_TRUNC;
	}
	key = w.stop;
	v = bpf_map_lookup_elem(&rb_ends, &key);
	if (v)
		*v += 1;
	return (int)(w.n | w.stop << 16);
}

#endif
