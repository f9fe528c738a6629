/*
 * v8_walk.h - the V8 hook of the native walk (BPF only; bpf/v8.h has the
 * records, sampler/v8/v8walk.c is its twin in C: keep the two in step).
 *
 * How the native walk (bpf/unwind_walk.h, walk_step) calls it:
 *   - per sample, before the walk: v8_begin(&w->v8, set-up) (the
 *     process's rt_procs entry is copied, so frames need no lookup);
 *   - per frame, instead of the rbp step, when the frame's pc is in V8
 *     code (anonymous executable memory, or the builtins: v8_builtins()):
 *     end = v8_step(&w->v8, &regs, w->n - 1, builtins) (the frame's pc
 *     already stored as native frame w->n - 1);
 *   - after the walk: v8_emit(&w->v8, ev->frames, at) copies the JS
 *     frames into ev->frames[at...], two slots each (at: after the native
 *     frames, and after Python's if any).
 * v8_step does the rbp step itself from the one read it makes of the
 * frame (saved rbp and return address are in it; most frames come from
 * the window a frame below them read), so a JS frame costs the
 * JSFunction's read (and the Code's, for compiled code) and a share of a
 * window's: one to three reads; other V8 frames none or one. An
 * interpreted frame seen lately takes its SharedFunctionInfo from a
 * per-CPU cache instead (v8_fn_cache); the twin reads it each time, so
 * the two differ only in an SFI the collector moved since (its old
 * address), which names the same function or none (test_v8walk).
 *
 * V8_READ(dst, len, src) reads user memory; bpf_probe_read_user unless
 * the includer says otherwise.
 */
#ifndef PROFFS_BPF_V8_WALK_H
#define PROFFS_BPF_V8_WALK_H

#include "bpf/v8.h"

#ifndef V8_READ
#define V8_READ(dst, len, src) bpf_probe_read_user(dst, len, (const void *)(src))
#endif

/*
 * The stack window: a JS frame's read takes the rest of its page, up to
 * V8_WIN bytes, and the frames above it that fall inside are served from
 * that copy. A read of user memory costs ~100 ns whether it copies 56
 * bytes or a kilobyte; a busy node's ~14 V8 frames a sample took 14 such
 * reads, now ~3. Never past the frame's own page (unless the frame
 * straddles two): a page the frame is on is present, the next one may not
 * be, and a failed read costs a fault.
 */
#define V8_WIN 1024

struct v8_buf {
	__u64 fr[V8_FRAME_READ / 8];
	__u8 win[V8_WIN];
	__u8 jsf[V8_JSF_READ];
	__u8 code[V8_CODE_READ];
	__u8 sfi[V8_SFI_READ];
	struct v8_frame out[V8_MAX_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_buf);
} v8_scratch SEC(".maps");

/*
 * What this CPU's walks read of interpreted frames' JSFunctions lately:
 * (process, function, the frame's context and BytecodeArray slots) -> the
 * function's SharedFunctionInfo. A busy node's sample has ~12 JS frames,
 * most of them interpreted and the same sample after sample (the module
 * loader's under a script's main loop, a server's set-up), and the
 * JSFunction's read is ~100 ns a frame.
 *
 * Why a stale entry names nothing wrong: the record of a frame named from
 * here carries the stamp of the frame's own BytecodeArray (read from the
 * stack, never cached), and user space names the record only if the SFI
 * it reads at that address has that bytecode. The collector may move the
 * SFI while the function and its bytecode stay (a compaction of the SFI's
 * page alone); the cache then hands out the old address. Its old copy
 * still has that bytecode while intact, and user space's names, kept by
 * (address, stamp), named that address a moment before; once the memory
 * is reused, no other function's SFI points at this bytecode, so the
 * frame is [js: moved], counted. An entry serves V8_FN_TTL_NS at most, so
 * an old address is not handed out longer than a record waits to be
 * named. Compiled frames read their function each time: their record's
 * object is the Code, whose old copy would still span the pc with no
 * stamp from the stack to tell. Two ways a set, the newest in way 0.
 */
#define V8_FN_TTL_NS 1000000000ULL
#define V8_FN_CACHE_N 256

struct v8_fn_ent {
	__u64 jsf, ctx, ba; /* the key (jsf 0: empty) */
	__u64 sfi;
	__u64 born; /* bpf_ktime_get_ns() when read */
	__u32 tgid, pad;
};

struct v8_fn_cache {
	struct v8_fn_ent e[V8_FN_CACHE_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_fn_cache);
} v8_fn_cache SEC(".maps");

/* JS walks by how they ended (enum v8_end), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, V8_END_MAX);
	__type(key, __u32);
	__type(value, __u64);
} v8_ends SEC(".maps");

/* The leaf-most records v8_emit folds into v8_walk.sig (profile.bpf.c's
 * wake check looks at as many). */
#define V8_SIG_RECORDS 16

/* Per sample (a member of the walk's state): scalars only. */
struct v8_walk {
	struct v8_proc c;
	__u32 on;  /* a V8 process */
	__u32 njs; /* frames in v8_scratch.out */
	__u32 end; /* enum v8_end */
	__u32 pad;
	__u64 win_lo, win_hi; /* what v8_scratch.win holds; win_hi 0: nothing */
	__u64 sig; /* v8_emit: the leaf-most records' identities, folded */
	__u64 now; /* the walk's start (bpf_ktime_get_ns) */
	__u32 tgid, pad2;
};

/* c: the process's set-up (its rt_procs entry's), NULL when it runs no V8;
 * now: the sample's clock reading (bpf_ktime_get_ns). */
static __always_inline void v8_begin(struct v8_walk *v, const struct v8_proc *c, __u64 now)
{
	v->on = 0;
	v->njs = 0;
	v->end = V8_END_NONE;
	v->win_hi = 0;
	v->sig = 0;
	if (!c)
		return;
	v->tgid = bpf_get_current_pid_tgid() >> 32;
	v->now = now;
	v->c = *c;
	v->on = 1;
	v->end = V8_END_OK;
}

/* Whether a pc at file offset off of the file (dev, ino) is in the
 * builtins. */
static __always_inline int v8_builtins(const struct v8_walk *v, __u32 dev, __u64 ino, __u64 off)
{
	return v->on && ino == v->c.blob_ino && dev == v->c.blob_dev && off >= v->c.blob_off &&
	       off - v->c.blob_off < v->c.blob_len;
}

static __always_inline int v8_heap_object(__u64 x)
{
	return (x & 3) == 1 && x > 4096;
}

/* The frame's slot at fp + off, from the frame's 56 bytes at fr. */
static __always_inline __u64 v8_slot(const __u64 *fr, int off)
{
	__u32 i;

	if (off < -V8_FRAME_BELOW)
		return 0;
	i = (__u32)(off + V8_FRAME_BELOW) >> 3;
	if (i >= V8_FRAME_READ / 8)
		return 0;
	return fr[i & 7];
}

static __always_inline __u64 v8_u64(const __u8 *p, __u32 off, __u32 size)
{
	if (off > size - 8)
		return 0;
	return *(const __u64 *)(p + (off & 63));
}

static __always_inline __u32 v8_u32(const __u8 *p, __u32 off, __u32 size)
{
	if (off > size - 4)
		return 0;
	return *(const __u32 *)(p + (off & 63));
}

/*
 * The len bytes at lo (len a constant, at most V8_FRAME_READ), from the
 * stack window: when they lie outside it, the window is taken again from
 * lo (to the end of lo's page, at most V8_WIN bytes). Returns them inside
 * b->win, or NULL when that read failed (the caller then reads what it
 * needs alone). Table steps of a V8 process use it too (v8_pair): node's
 * C++ frames under the JS ones lie as close together as V8's own.
 */
static __always_inline const __u64 *v8_win(struct v8_walk *v, struct v8_buf *b, __u64 lo, __u32 len)
{
	__u64 woff;

	if (lo < v->win_lo || lo + len > v->win_hi) {
		__u64 hi = ((lo + len - 1) | 4095) + 1, n;

		if (hi - lo > V8_WIN)
			hi = lo + V8_WIN;
		n = hi - lo;
		v->win_hi = 0;
		if (n < len || n > V8_WIN || V8_READ(b->win, n, lo))
			return 0;
		v->win_lo = lo;
		v->win_hi = hi;
	}
	woff = lo - v->win_lo;
	if (woff > V8_WIN - len)
		return 0;
	return (const __u64 *)(b->win + woff);
}

/*
 * A table step's saved rbp and return address (the 16 bytes at addr) in
 * a V8 process, through the window. Only there: CRuby's frames lie far
 * apart (vm_exec under rb_yield), and a window that serves one pair costs
 * more than the pair's own read (DESIGN-NOTES, "What a node sample costs
 * in BPF"). Returns 0 or -errno.
 */
static __always_inline int v8_pair(struct v8_walk *v, __u64 *pair, __u64 addr)
{
	__u32 zero = 0;
	struct v8_buf *b = bpf_map_lookup_elem(&v8_scratch, &zero);
	const __u64 *p = b ? v8_win(v, b, addr, 16) : 0;

	if (p) {
		pair[0] = p[0];
		pair[1] = p[1];
		return 0;
	}
	return bpf_probe_read_user(pair, 16, (const void *)addr);
}

/* A frame's registers, as the step reads and leaves them. */
struct v8_regs {
	__u64 pc, sp, bp;
};

/*
 * The rbp step of the frame at r->bp whose pc is in V8 code (builtins:
 * in the builtins, else JIT code), index its place among the user frames: records a JS frame when the frame runs one
 * (v8walk__frame says how), then r becomes the caller's. Returns 0 or the
 * walk's end (enum prof_uend). A global BPF function: verified once, not
 * at every place the native walk's loop may reach it (with the HotSpot
 * step beside it, the program was past the verifier's bounds).
 */
__noinline int v8_step(struct v8_walk *v, struct v8_regs *r, __u32 index, __u32 builtins)
{
	__u32 zero = 0, n;
	struct v8_buf *b = bpf_map_lookup_elem(&v8_scratch, &zero);
	__u64 fp, jsf, ctx, sfi = 0, code = 0, start, ba, bo, ra, nfp, lo;
	const __u64 *fr;
	__u64 *pc, *sp, *bp;
	__u32 size, kind, type = 0, off = 0, stamp = 0;
	__u64 obj = 0;

	if (!b || !v || !r)
		return PROF_UE_BAD_FRAME;
	pc = &r->pc;
	sp = &r->sp;
	bp = &r->bp;
	fp = *bp;
	if (fp == 0)
		return PROF_UE_FP_END;
	if (fp < *sp)
		return PROF_UE_BAD_FRAME;
	lo = fp - V8_FRAME_BELOW;
	fr = v8_win(v, b, lo, V8_FRAME_READ);
	if (!fr) { /* (a window that failed: the frame alone) */
		if (V8_READ(b->fr, V8_FRAME_READ, lo))
			return PROF_UE_BAD_FRAME;
		fr = b->fr;
	}
	ra = fr[V8_FRAME_BELOW / 8 + 1];
	nfp = fr[V8_FRAME_BELOW / 8];
	jsf = v8_slot(fr, v->c.fp_function);
	ctx = v8_slot(fr, v->c.fp_context);
	if (v8_heap_object(ctx) && v8_heap_object(jsf)) {
		int hit = 0;
		struct v8_fn_cache *fc = 0;
		struct v8_fn_ent *e = 0;

		ba = bo = 0;
		if (builtins) {
			ba = v8_slot(fr, v->c.fp_bytecode_array);
			bo = v8_slot(fr, v->c.fp_bytecode_offset);
			if (v8_heap_object(ba) && !(bo & 1))
				fc = bpf_map_lookup_elem(&v8_fn_cache, &zero);
		}
		if (fc) {
			__u64 h = (jsf ^ ctx * 0x9e3779b97f4a7c15ULL ^ ba * 0xc2b2ae3d27d4eb4fULL ^ v->tgid) *
				  0xff51afd7ed558ccdULL;
			__u32 set = (__u32)(h >> 57) & (V8_FN_CACHE_N / 2 - 1);

			for (int way = 0; way < 2; way++) {
				e = &fc->e[2 * set + way];
				if (e->jsf == jsf && e->ctx == ctx && e->ba == ba && e->tgid == v->tgid &&
				    v->now - e->born < V8_FN_TTL_NS) {
					hit = 1;
					sfi = e->sfi;
					break;
				}
			}
			if (!hit) {
				fc->e[2 * set + 1] = fc->e[2 * set];
				e = &fc->e[2 * set];
			}
		}
		if (!hit) {
			if (V8_READ(b->jsf, V8_JSF_READ, jsf - 1 + v->c.jsf_read_off)) {
				v->end = V8_END_READ;
				if (e)
					e->jsf = 0;
				goto step;
			}
			sfi = v8_u64(b->jsf, v->c.jsf_shared, V8_JSF_READ);
			code = v8_u64(b->jsf, v->c.jsf_code, V8_JSF_READ);
			if (e) {
				e->jsf = v8_heap_object(sfi) ? jsf : 0;
				e->ctx = ctx;
				e->ba = ba;
				e->sfi = sfi;
				e->born = v->now;
				e->tgid = v->tgid;
			}
		}
		if (!v8_heap_object(sfi))
			goto step;
		if (builtins) {
			if (v8_heap_object(ba) && !(bo & 1)) {
				type = V8_FT_INTERP;
				obj = sfi;
				off = (__u32)(bo >> 32);
				stamp = v8_stamp(ba, 0);
			}
		} else if (v->c.dispatch_base) {
			__u64 w1;

			/* (13+: the function's Code through its dispatch entry) */
			if (V8_READ(&w1, 8, V8_DISPATCH_ENTRY(v->c.dispatch_base, code) + 8)) {
				v->end = V8_END_READ;
				goto step;
			}
			code = V8_DISPATCH_CODE(w1);
		}
		if (!builtins && v8_heap_object(code)) {
			if (V8_READ(b->code, V8_CODE_READ, code - 1 + v->c.code_read_off)) {
				v->end = V8_END_READ;
				goto step;
			}
			start = v->c.code_start >= 0 ? v8_u64(b->code, (__u32)v->c.code_start, V8_CODE_READ)
						     : code - 1 + v->c.code_start_inline;
			size = v8_u32(b->code, v->c.code_size, V8_CODE_READ);
			kind = (v8_u32(b->code, v->c.code_flags, V8_CODE_READ) >> (v->c.kind_shift & 31)) &
			       v->c.kind_mask;
			if (*pc >= start && *pc - start < size) {
				int base = kind == v->c.kind_baseline;

				type = base ? V8_FT_BASELINE : V8_FT_OPT;
				obj = base ? sfi : code;
				off = (__u32)(*pc - start);
				stamp = v8_stamp(base ? code : sfi, (__u64)size << 8 | kind);
			}
		}
		if (!type) { /* (a cached SFI never comes here: its frame is interpreted) */
			if (V8_READ(b->sfi, V8_SFI_READ, sfi - 1 + v->c.sfi_read_off)) {
				v->end = V8_END_READ;
				goto step;
			}
			type = V8_FT_FUNC;
			obj = sfi;
			stamp = v8_stamp(v8_u64(b->sfi, v->c.sfi_script, V8_SFI_READ),
					 v8_u64(b->sfi, v->c.sfi_name, V8_SFI_READ));
		}
		n = v->njs;
		if (n >= V8_MAX_FRAMES) {
			v->end = V8_END_TRUNC;
			goto step;
		}
		b->out[n & (V8_MAX_FRAMES - 1)].obj = V8_OBJ(obj, type, index);
		b->out[n & (V8_MAX_FRAMES - 1)].off = off;
		b->out[n & (V8_MAX_FRAMES - 1)].stamp = stamp;
		v->njs = n + 1;
	}
step:
	if (ra == 0)
		return PROF_UE_FP_END;
	*sp = fp + 16;
	*bp = nfp;
	*pc = ra;
	return 0;
}

/* After the walk: the JS frames into frames[at...] (a record's
 * 2 * PROF_MAX_FRAMES slots), two each, as far as there is room. Returns
 * how many; counts the walk's end. */
static __always_inline int v8_emit(struct v8_walk *v, __u64 *frames, __u32 at)
{
	__u32 zero = 0, n = 0;
	struct v8_buf *b = bpf_map_lookup_elem(&v8_scratch, &zero);
	__u64 *cnt;

	if (!v->on || !b)
		return 0;
	for (__u32 j = 0; j < V8_MAX_FRAMES; j++) {
		__u32 s = at + 2 * j;

		if (j >= v->njs)
			break;
		if (s > 2 * PROF_MAX_FRAMES - 2) {
			v->end = V8_END_TRUNC;
			break;
		}
		/* A bound the verifier sees on the register the stores use:
		 * the compiler, knowing s <= 252 already, would drop a mask. */
		asm volatile("" : "+r"(s));
		s &= 0xff;
		if (s > 2 * PROF_MAX_FRAMES - 2) {
			v->end = V8_END_TRUNC;
			break;
		}
		frames[s] = b->out[j].obj;
		frames[s + 1] = (__u64)b->out[j].stamp << 32 | b->out[j].off;
		/* What the wake check keys a record on: the object and type
		 * (not the native frame's index) and the stamp (not the
		 * position). */
		if (j < V8_SIG_RECORDS)
			v->sig = (v->sig ^ (b->out[j].obj & V8_OBJ_IDENT_MASK) ^ (__u64)b->out[j].stamp << 32) *
				 0x9e3779b97f4a7c15ull + j;
		n++;
	}
	cnt = bpf_map_lookup_elem(&v8_ends, &v->end);
	if (cnt)
		*cnt += 1;
	return (int)n;
}

#endif
