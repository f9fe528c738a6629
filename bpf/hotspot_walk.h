/*
 * hotspot_walk.h - the HotSpot step of a user-stack walk (BPF only): for
 * a pc inside a JVM's code cache, find what runs there, write its record
 * (bpf/hotspot.h) and step to the caller. sampler/java/hswalk.c is its
 * twin in plain C and has the rules in prose; keep the two in step.
 *
 * How a walk uses it (the integration into bpf/unwind_walk.h):
 *   - once per sample, hs_begin(tgid, set-up): the process's set-up (its
 *     rt_procs entry, filled by user space) is copied to this CPU's
 *     scratch, and the record count reset;
 *   - in find_map, an anonymous executable pc for which hs_owns(pc) holds
 *     takes the HotSpot step instead of the frame-pointer step;
 *   - walk_step stores the pc in its frame slot as for any frame, then
 *     calls hs_step(&regs, leaf, index) with index = that slot's
 *     position among the user frames (0: the leaf): 0 steps regs to the
 *     caller; another value (an enum hs_end) ends the walk as a bad frame;
 *   - after the walk, hs_finish(ev, at) copies the records after the
 *     native frames and returns how many (two slots each).
 * A return address that leaves the code cache (into libjvm, a JNI
 * library, libc) goes back to the unwind tables with the rbp the step
 * restored.
 *
 * Cost per Java frame, in reads of the process's memory (~80 ns each on
 * these hosts): an interpreter frame 1 (its slots; its Method's
 * ConstMethod is cached per CPU), 2 the first time; a compiled or stub
 * frame 2 (the stamp that proves the per-CPU cache of its blob right,
 * the caller's words); a blob not cached yet costs its segment map bytes
 * (1-2), its header and, before JDK 23 (no kind byte), its name instead
 * of the stamp; a leaf pc not cached yet 16 bytes of its code.
 *
 * The includer may define HS_READ_USER(dst, size, src) before including
 * this file (tests read a stopped task's memory); the default is
 * bpf_probe_read_user.
 */
#ifndef PROFFS_BPF_HOTSPOT_WALK_H
#define PROFFS_BPF_HOTSPOT_WALK_H

#include "bpf/hotspot.h"

#ifndef HS_READ_USER
#define HS_READ_USER(dst, size, src) bpf_probe_read_user(dst, size, (const void *)(src))
#endif

/* Words read at once: an interpreter frame's slots (rbp-64 .. rbp+16),
 * or a compiled frame's saved rbp, return address and the words searched
 * above it. */
#define HS_WORDS 10

struct hs_scratch {
	struct hs_proc c;     /* this sample's JVM */
	__u32 tgid;
	__u8 blob[HS_BLOB_READ];
	__u8 code[16];	      /* the leaf's code around its pc */
	__u64 w[HS_WORDS];
	__u64 rec[2 * HS_MAX_FRAMES];
	__u32 n;	      /* records written */
	__u32 active;	      /* c is set: the sampled process is a JVM */
	__u32 epoch;	      /* the JVM's unload epoch (bpf/hotspot.h), */
	__u32 epoch_read;     /* read for this sample's first Java frame */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_scratch);
} hs_scratch SEC(".maps");

/* HotSpot steps by how they ended (enum hs_end), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HS_E_MAX);
	__type(key, __u32);
	__type(value, __u64);
} hs_ends SEC(".maps");

/*
 * What a blob says, cached per CPU by the code segment a pc lies in: a
 * walk through the same code again (the usual case: samples repeat)
 * skips the segment map, the blob's header and its name, and reads only
 * the 4 bytes that prove the blob is still the one cached (its compile
 * id, never reused; a stub's name pointer). Direct-mapped: one array
 * lookup, no locking; a collision only costs a miss.
 */
#define HS_CACHE_N 256

struct hs_facts {
	__u64 seg;	      /* the key: look >> seg_shift */
	__u64 blob, begin, end, deopt, verified;
	__u32 tgid;
	__u32 stamp;	      /* compile id, or the name pointer's low half */
	__u32 fs;	      /* frame size in bytes */
	__s32 fc;	      /* frame_complete_offset */
	__u32 type;	      /* HS_B_* */
	__u32 pad;
};

/* The three caches below are each one per-CPU value (18, 6 and 6 KiB):
 * entries that are elements of their own (2,048 and 1,024 were) each
 * cost a miss on the element's pointer and one on the element, ~270 ns
 * a hit in this VM; a slot of one value ~70 ns (the rule cache's
 * figures, bpf/unwind_walk.h). */
struct hs_cache_v {
	struct hs_facts e[HS_CACHE_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_cache_v);
} hs_cache SEC(".maps");

/*
 * A Method's ConstMethod (what its bcp counts from, and its stamp),
 * cached per CPU by Method* and the unload epoch it was read in: an
 * interpreted frame then costs one read (of the epoch, once a sample).
 * A Method can be freed only with its class, which moves the epoch.
 */
#define HS_MCACHE_N 256

struct hs_mfacts {
	__u64 method, cm;
	__u32 tgid, epoch;
};

struct hs_mcache_v {
	struct hs_mfacts e[HS_MCACHE_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_mcache_v);
} hs_mcache SEC(".maps");

/*
 * How the leaf's frame stands at a pc (the instruction there: in a
 * prologue, an epilogue, or neither), cached per CPU by pc and the blob's
 * stamp: code does not change under a compile id, and reading it costs
 * the most of a leaf's reads (a data read of a code page).
 */
#define HS_LCACHE_N 256

struct hs_lfacts {
	__u64 pc;
	__u32 tgid, stamp;
	__u32 st, pad;
};

struct hs_lcache_v {
	struct hs_lfacts e[HS_LCACHE_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_lcache_v);
} hs_lcache SEC(".maps");

/* The first 8 bytes of the blob names that tell kinds apart before JDK
 * 23 (little-endian): "nmethod\0", "native n(method)", "vtable c(hunks)". */
#define HS_NAME_NMETHOD 0x00646f6874656d6eull
#define HS_NAME_NATIVE 0x6e2065766974616eull
#define HS_NAME_VTABLE 0x6320656c62617476ull

enum { HS_B_NMETHOD, HS_B_VTABLE, HS_B_STUB };
enum { HS_F_FULL, HS_F_FULL_BP, HS_F_NOTHING, HS_F_BP_PUSHED, HS_F_RBP_FRAME };

static __always_inline struct hs_scratch *hs_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&hs_scratch, &zero);
}

/* Sets the sample of process tgid up, p its set-up (its rt_procs entry's,
 * NULL when it runs no JVM): 1 when it is a JVM we walk. */
static __always_inline int hs_begin(__u32 tgid, const struct hs_proc *p)
{
	struct hs_scratch *s = hs_get();

	if (!s)
		return 0;
	s->n = 0;
	s->active = 0;
	if (!p)
		return 0;
	__builtin_memcpy(&s->c, p, sizeof(s->c));
	s->tgid = tgid;
	s->active = 1;
	s->epoch_read = 0;
	return 1;
}

/* Is addr in this sample's JVM's code cache? */
static __always_inline int hs_owns(__u64 addr)
{
	struct hs_scratch *s = hs_get();

	return s && s->active && addr >= s->c.code_lo && addr < s->c.code_hi;
}

static __always_inline void hs_count(__u32 end)
{
	__u64 *v = bpf_map_lookup_elem(&hs_ends, &end);

	if (v)
		*v += 1;
}

/* Fields of the blob buffer, at offsets the verifier sees bounded. */
static __always_inline __u64 hs_b64(const __u8 *b, int off)
{
	if (off < 0 || off > HS_BLOB_READ - 8)
		return 0;
	return *(const __u64 *)(b + off);
}

static __always_inline __u32 hs_b32(const __u8 *b, int off)
{
	if (off < 0 || off > HS_BLOB_READ - 4)
		return 0;
	return *(const __u32 *)(b + off);
}

static __always_inline __u16 hs_b16(const __u8 *b, int off)
{
	if (off < 0 || off > HS_BLOB_READ - 2)
		return 0;
	return *(const __u16 *)(b + off);
}

static __always_inline __u8 hs_b8(const __u8 *b, int off)
{
	if (off < 0 || off > HS_BLOB_READ - 1)
		return 0;
	return b[off];
}

static __always_inline int hs_in_cache(const struct hs_scratch *s, __u64 a)
{
	return a >= s->c.code_lo && a < s->c.code_hi;
}

/* The CodeBlob holding look (segment map, then the block's header);
 * 0 when none. */
static __always_inline __u64 hs_find_blob(struct hs_scratch *s, __u64 look)
{
	for (int i = 0; i < HS_MAX_HEAPS; i++) {
		__u64 lo = s->c.heaps[i].lo, seg;
		__u8 tag = 0;

		if (i >= s->c.nheaps)
			break;
		if (look < lo || look >= s->c.heaps[i].hi)
			continue;
		seg = (look - lo) >> (s->c.seg_shift & 63);
		for (int k = 0; k < HS_SEGMAP_HOPS; k++) {
			if (HS_READ_USER(&tag, 1, s->c.heaps[i].segmap + seg) || tag == 0xff ||
			    tag > seg)
				return 0;
			if (!tag)
				return lo + (seg << (s->c.seg_shift & 63)) + s->c.block_hdr;
			seg -= tag;
		}
		return 0;
	}
	return 0;
}

static __always_inline int hs_record(struct hs_scratch *s, __u64 r0, __u64 r1)
{
	__u32 n = s->n;

	if (n >= HS_MAX_FRAMES)
		return HS_E_TRUNC;
	s->rec[(2 * n) & (2 * HS_MAX_FRAMES - 1)] = r0;
	s->rec[(2 * n + 1) & (2 * HS_MAX_FRAMES - 1)] = r1;
	s->n = n + 1;
	return HS_E_OK;
}

/* The sample's unload epoch into s->epoch: read at its first Java frame
 * (unreadable: 0, which a moved epoch never matches). */
static __always_inline __u32 hs_epoch(struct hs_scratch *s)
{
	if (!s->epoch_read) {
		if (!s->c.epoch_addr || HS_READ_USER(&s->epoch, 4, s->c.epoch_addr))
			s->epoch = 0;
		s->epoch_read = 1;
	}
	return s->epoch;
}

/* The ConstMethod of method into *cm: cached per CPU by Method* and the
 * unload epoch (read, at its first Java frame, for the sample). 0, or
 * HS_E_INTERP when unreadable. */
static __always_inline int hs_const_method(struct hs_scratch *s, __u64 method, __u64 *cm)
{
	struct hs_mcache_v *mv;
	struct hs_mfacts *mf;
	__u32 key, zero = 0;

	hs_epoch(s);
	key = (__u32)(((method >> 3) ^ s->tgid) * 0x9e3779b1u) >> 24;
	mv = bpf_map_lookup_elem(&hs_mcache, &zero);
	mf = mv ? &mv->e[key & (HS_MCACHE_N - 1)] : 0;
	if (mf && mf->method == method && mf->tgid == s->tgid && mf->epoch == s->epoch) {
		*cm = mf->cm;
		return HS_E_OK;
	}
	if (HS_READ_USER(cm, 8, method + (__s64)s->c.m_const_method))
		return HS_E_INTERP;
	if (mf) {
		mf->method = method;
		mf->tgid = s->tgid;
		mf->epoch = s->epoch;
		mf->cm = *cm;
	}
	return HS_E_OK;
}

/*
 * A leaf in one of the interpreter's method entries whose frame does not
 * hold its Method* yet (sampler/java/hswalk.c's entry() is the twin and
 * has the entry's code). HotSpot enters a method (normal and native
 * entries, JDK 17 and 25 alike) with its Method* in rbx, the caller's sp
 * in r13 and the return address at [rsp]; it pops that into rax, pushes
 * the extra locals (native: 2 slots) as zeros, pushes rax back,
 * `push rbp; mov rbp, rsp`, then the sender sp, the last sp and at last
 * rbx into the frame's Method* slot. Until then the frame is read from
 * these registers:
 *   - rbp is the frame's already (the Method* slot still below sp:
 *     rsp <= rbp < rsp + 24): the return address at rbp+8, the caller's
 *     rbp at rbp, its sp at rbp-8 once pushed, else still r13;
 *   - before, r13 is the caller's sp, just above rsp (in a frame that
 *     runs bytecodes r13 is its bcp, never a stack address), and rbp the
 *     caller's: the return address is at [rsp] (before the pop, after the
 *     push back) or in rax (between; and after `push rbp`, which leaves
 *     rbp itself at [rsp]);
 * in both, rbx must hold a Method (its ConstMethod readable) and the
 * return address must lie in the code cache (every caller of the
 * interpreter runs there: the interpreter, the call stub, compiled code
 * through its c2i adapter). Returns an enum hs_end, or -1 when the frame
 * is not in that state (the rbp rules then).
 */
static __always_inline int hs_entry(struct hs_scratch *s, struct hs_regs *r, __u32 index)
{
	__u64 ra, bp = r->bp, sender, cm = 0;
	__u64 mslot = 8 * (__u64)(-(__s64)s->c.if_method);

	if (r->bp >= r->sp && r->bp - r->sp < mslot) {
		/* the caller's rbp and the return address; the sender sp
		 * at rbp-8 once pushed (not read below sp, as the twin) */
		if (HS_READ_USER(s->w, 16, r->bp) ||
		    (r->bp - 8 >= r->sp && HS_READ_USER(&s->w[2], 8, r->bp - 8)))
			return HS_E_READ;
		ra = s->w[1];
		bp = s->w[0];
		sender = r->bp - 8 >= r->sp ? s->w[2] : r->r13;
		if (sender < r->bp + 16 || sender - (r->bp + 16) > HS_INTERP_MAX_FRAME)
			sender = r->bp + 16;
	} else if (r->r13 >= r->sp && r->r13 - r->sp <= HS_INTERP_MAX_FRAME) {
		ra = r->ax;
		if (r->r13 > r->sp) {
			if (HS_READ_USER(s->w, 8, r->sp))
				return HS_E_READ;
			if (s->w[0] != r->bp && hs_in_cache(s, s->w[0]))
				ra = s->w[0];
		}
		sender = r->r13;
	} else {
		return -1;
	}
	if (!hs_in_cache(s, ra) || !r->bx || (r->bx & 7) || hs_const_method(s, r->bx, &cm) || !cm ||
	    (cm & 7))
		return -1;
	r->pc = ra;
	r->sp = sender;
	r->bp = bp;
	return hs_record(s, hs_rec0(r->bx, HS_K_INTERP, HS_R_EXACT | HS_R_GUESSED, index),
			 hs_rec1(HS_BCI_NONE, hs_stamp((__u32)(cm >> 3), s->epoch)));
}

static __always_inline int hs_interp(struct hs_scratch *s, struct hs_regs *r, __u32 leaf,
				     __u32 index)
{
	int im = s->c.if_method + 8, ib = s->c.if_bcp + 8, is = s->c.if_sender_sp + 8;
	__u64 method, bcp, cm = 0, sender, code, bci = HS_BCI_NONE, ra, link;

	if (im < 0 || im > 7 || ib < 0 || ib > 7 || is < 0 || is > 7)
		return HS_E_INTERP;
	if (leaf) {
		int end = hs_entry(s, r, index);

		if (end >= 0)
			return end;
	}
	/* Slots rbp-64 .. rbp+8 in w[0..9]: w[8] the caller's rbp, w[9]
	 * the return address. */
	if (r->bp < r->sp || r->bp - r->sp > HS_INTERP_MAX_FRAME)
		return HS_E_INTERP;
	if (HS_READ_USER(s->w, 8 * HS_WORDS, r->bp - 64))
		return HS_E_READ;
	/* A leaf still building its frame (the entry's pushes): slots
	 * below sp are not written yet (the twin, reading a stack copied
	 * from sp, sees them as 0 too). */
	for (int i = 0; i < 8; i++)
		if (r->bp - 64 + 8 * (__u64)i < r->sp)
			s->w[i] = 0;
	method = s->w[im & 7];
	sender = s->w[is & 7];
	link = s->w[8];
	ra = s->w[9];
	bcp = leaf ? r->r13 : s->w[ib & 7];
	if (!method || hs_const_method(s, method, &cm))
		return HS_E_INTERP;
	code = cm + s->c.cm_size;
	if (leaf && !(bcp >= code && bcp - code < 0x10000))
		bcp = s->w[ib & 7];
	if (bcp >= code && bcp - code < 0x10000)
		bci = bcp - code;
	if (!ra)
		return HS_E_BAD_FRAME;
	if (leaf && (ra < s->c.code_lo || ra >= s->c.code_hi)) {
		/* An interpreter frame returns into the code cache; this one
		 * is not built yet (its entry runs before `enter`) and rbp is
		 * still its caller's: the call stub's, which keeps the
		 * callee's Method* where an interpreter frame keeps its own.
		 * So the leaf is that method, and the next frame the stub at
		 * its return address; r13 is the caller's sp. (hs_entry does
		 * this from rbx when the leaf's rax and rbx are known.) */
		sender = r->r13 > r->sp && r->r13 <= r->bp ? r->r13 : r->sp + 8;
		if (sender > r->bp)
			return HS_E_INTERP;
		r->pc = s->c.call_stub_ra;
		r->sp = sender;
		return hs_record(s, hs_rec0(method, HS_K_INTERP, HS_R_EXACT, index),
				 hs_rec1(HS_BCI_NONE, hs_stamp((__u32)(cm >> 3), s->epoch)));
	}
	if (sender < r->bp + 16 || sender - (r->bp + 16) > HS_INTERP_MAX_FRAME)
		sender = r->bp + 16;
	if (sender <= r->sp)
		return HS_E_BAD_FRAME;
	r->pc = ra;
	r->bp = link;
	r->sp = sender;
	return hs_record(s, hs_rec0(method, HS_K_INTERP, leaf ? HS_R_EXACT : 0, index),
			 hs_rec1((__u32)bci, hs_stamp((__u32)(cm >> 3), s->epoch)));
}

/* Whether p is `cmp qword [r15 + 8], 0`: a native wrapper's check for a
 * pending exception, after its `leave` (sampler/java/hswalk.c says more). */
static __always_inline int hs_pending_check(const __u8 *p)
{
	return p[0] == 0x49 && p[1] == 0x81 && p[2] == 0x7f && p[3] == 0x08 && !p[4] && !p[5] && !p[6] &&
	       !p[7];
}

/* JDK 25's wrapper after its leave: `test byte [r15 + x], 1` (the return
 * poll) and `cmp qword [r15 + 8], 0` in its imm8 form (hswalk.c). */
static __always_inline int hs_return_poll(const __u8 *q)
{
	return q[0] == 0x41 && q[1] == 0xf6 && q[2] == 0x47 && q[4] == 0x01;
}

static __always_inline int hs_pending_check8(const __u8 *q)
{
	return q[0] == 0x49 && q[1] == 0x83 && q[2] == 0x7f && q[3] == 0x08 && !q[4];
}

/* The leaf's frame state from s->code (the 16 bytes around its pc). */
static __always_inline int hs_leaf_state(const __u8 *b, int prologue)
{
	const __u8 *p = b + 8;

	if (prologue) {
		if (p[0] == 0x55 || (p[0] == 0x89 && p[1] == 0x84 && p[2] == 0x24))
			return HS_F_NOTHING;
		if (p[0] == 0x48 && (p[1] == 0x83 || p[1] == 0x81) && p[2] == 0xec)
			return b[7] == 0x55 || (b[5] == 0x48 && ((b[6] == 0x89 && b[7] == 0xe5) ||
							       (b[6] == 0x8b && b[7] == 0xec)))
				       ? HS_F_BP_PUSHED : HS_F_NOTHING;
		if (p[0] == 0x48 && ((p[1] == 0x89 && p[2] == 0xe5) || (p[1] == 0x8b && p[2] == 0xec)))
			return HS_F_BP_PUSHED;
		if (p[0] == 0x48 && p[1] == 0x89 && (p[2] == 0x6c || p[2] == 0xac) && p[3] == 0x24)
			return HS_F_FULL_BP;
		return HS_F_FULL;
	}
	if (p[0] == 0xc3)
		return HS_F_NOTHING;
	if (p[0] == 0x5d)
		return HS_F_BP_PUSHED;
	if (p[0] == 0xc9)
		return HS_F_RBP_FRAME;
	if (p[0] == 0x49 && p[1] == 0x3b && (p[2] == 0x67 || p[2] == 0xa7))
		return HS_F_NOTHING;
	if (p[0] == 0x0f && p[1] == 0x87 &&
	    ((b[1] == 0x49 && b[2] == 0x3b && b[3] == 0xa7) ||
	     (b[4] == 0x49 && b[5] == 0x3b && b[6] == 0x67)))
		return HS_F_NOTHING;
	if (b[7] == 0xc9 && hs_pending_check(p))
		return HS_F_NOTHING;
	if (p[0] == 0x0f && p[1] == 0x85 && hs_pending_check(b))
		return HS_F_NOTHING;
	if (b[7] == 0xc9 && hs_return_poll(p))
		return HS_F_NOTHING;
	if (p[0] == 0x74 && b[2] == 0xc9 && hs_return_poll(b + 3))
		return HS_F_NOTHING;
	if (hs_pending_check8(p) && p[5] == 0x0f && p[6] == 0x85 && p[7] == 0x01)
		return HS_F_NOTHING;
	if (p[0] == 0x0f && p[1] == 0x85 && p[2] == 0x01 && hs_pending_check8(b + 3))
		return HS_F_NOTHING;
	return HS_F_FULL;
}

/* The frame size rule; nm: the return address must be in the code
 * cache, else searched for further up. */
static __always_inline int hs_full(struct hs_scratch *s, struct hs_regs *r, __u64 fs, int keep_bp,
				   int nm, __u32 *flags)
{
	__u64 sender = r->sp + fs;

	if (HS_READ_USER(s->w, 8 * (HS_RA_SEARCH + 1), sender - 16))
		return HS_E_READ;
	for (int k = 0; k < HS_RA_SEARCH; k++) {
		__u64 ra = s->w[(k + 1) & 7];

		if (!hs_in_cache(s, ra) && (nm || k))
			continue;
		if (k)
			*flags |= HS_R_GUESSED;
		r->pc = ra;
		if (!keep_bp)
			r->bp = s->w[k & 7];
		r->sp = sender + 8 * (__u64)k;
		return HS_E_OK;
	}
	return HS_E_BAD_FRAME;
}

static __always_inline int hs_pushed(struct hs_scratch *s, struct hs_regs *r, int pushed,
				     int check)
{
	__u64 ra;

	if (HS_READ_USER(s->w, 16, r->sp))
		return HS_E_READ;
	ra = s->w[pushed & 1];
	if (!ra || (check && !hs_in_cache(s, ra)))
		return HS_E_BAD_FRAME;
	r->pc = ra;
	if (pushed)
		r->bp = s->w[0];
	r->sp += pushed ? 16 : 8;
	return HS_E_OK;
}

static __always_inline int hs_rbp_frame(struct hs_scratch *s, struct hs_regs *r)
{
	if (r->bp < r->sp || r->bp - r->sp > HS_INTERP_MAX_FRAME)
		return HS_E_BAD_FRAME;
	if (HS_READ_USER(s->w, 16, r->bp))
		return HS_E_READ;
	if (!s->w[1])
		return HS_E_BAD_FRAME;
	r->pc = s->w[1];
	r->sp = r->bp + 16;
	r->bp = s->w[0];
	return HS_E_OK;
}

/* The blob holding look and what the step needs of it, read afresh: 0
 * or an enum hs_end. */
static __always_inline int hs_blob_facts(struct hs_scratch *s, __u64 look, struct hs_facts *f)
{
	__u32 n = s->c.blob_read;
	__u64 name, addr;

	addr = hs_find_blob(s, look);
	if (!addr)
		return HS_E_NO_BLOB;
	if (n > HS_BLOB_READ)
		n = HS_BLOB_READ;
	asm volatile("" : "+r"(n));
	if (n < 8 || n > HS_BLOB_READ || HS_READ_USER(s->blob, n, addr))
		return HS_E_READ;
	f->blob = addr;
	f->begin = hs_b64(s->blob, s->c.cb_code_begin);
	f->end = hs_b64(s->blob, s->c.cb_code_end);
	if (s->c.flags & HS_P_CODE_OFFSETS) {
		f->begin = addr + (__u32)f->begin;
		f->end = addr + (__u32)f->end;
	}
	if (look < f->begin || look >= f->end)
		return HS_E_BAD_BLOB;
	f->fs = 8 * (__s32)hs_b32(s->blob, s->c.cb_frame_size);
	f->fc = s->c.flags & HS_P_FC16 ? (__s16)hs_b16(s->blob, s->c.cb_frame_complete)
				       : (__s32)hs_b32(s->blob, s->c.cb_frame_complete);
	if (f->fs > HS_MAX_FRAME_SIZE)
		return HS_E_BAD_BLOB;
	name = hs_b64(s->blob, s->c.cb_name);
	if (s->c.flags & HS_P_KIND) {
		__u8 k = hs_b8(s->blob, s->c.cb_kind);

		f->type = k == s->c.kind_nmethod ? HS_B_NMETHOD
			  : k == s->c.kind_vtable ? HS_B_VTABLE
						  : HS_B_STUB;
	} else {
		__u64 nm8 = 0;

		if (HS_READ_USER(&nm8, 8, name))
			return HS_E_READ;
		f->type = nm8 == HS_NAME_NMETHOD || nm8 == HS_NAME_NATIVE ? HS_B_NMETHOD
			  : nm8 == HS_NAME_VTABLE			  ? HS_B_VTABLE
									  : HS_B_STUB;
	}
	if (f->type == HS_B_NMETHOD) {
		f->deopt = s->c.flags & HS_P_CODE_OFFSETS
				   ? addr + (__s32)hs_b32(s->blob, s->c.nm_deopt)
				   : hs_b64(s->blob, s->c.nm_deopt);
		f->stamp = hs_b32(s->blob, s->c.nm_compile_id);
		if (f->fs < 16)
			return HS_E_BAD_BLOB;
	} else {
		f->deopt = 0;
		f->stamp = (__u32)name;
	}
	f->verified = s->c.flags & HS_P_CODE_OFFSETS ? f->begin + hs_b16(s->blob, s->c.nm_verified)
						     : hs_b64(s->blob, s->c.nm_verified);
	return HS_E_OK;
}

/* Is the cached f still its blob's (and does it hold look)? One read of
 * the stamp where it lives. */
static __always_inline int hs_facts_hold(struct hs_scratch *s, const struct hs_facts *f)
{
	__u32 v = 0;
	int off = f->type == HS_B_NMETHOD ? s->c.nm_compile_id : s->c.cb_name;

	if (off < 0 || off > HS_BLOB_READ - 4 || HS_READ_USER(&v, 4, f->blob + off))
		return 0;
	return v == f->stamp;
}

static __always_inline int hs_blob_step(struct hs_scratch *s, struct hs_regs *r, __u32 leaf,
					__u32 index, __u64 look)
{
	__u64 pc = r->pc, sp0 = r->sp, seg = look >> (s->c.seg_shift & 63);
	__u32 flags = leaf ? HS_R_EXACT : 0, kind, key, zero = 0;
	struct hs_facts fresh = {}, *f = &fresh, *c;
	struct hs_cache_v *cv;
	int st = HS_F_FULL, err;

	key = (__u32)((seg ^ s->tgid) * 0x9e3779b1u) >> 24;
	cv = bpf_map_lookup_elem(&hs_cache, &zero);
	c = cv ? &cv->e[key & (HS_CACHE_N - 1)] : 0;
	if (c && c->seg == seg && c->tgid == s->tgid && look >= c->begin && look < c->end &&
	    hs_facts_hold(s, c))
		f = c;
#ifdef HS_CACHE_STATS
	HS_CACHE_STATS(f == c);
#endif
	if (f == &fresh) {
		err = hs_blob_facts(s, look, f);
		if (err)
			return err;
		if (c) {
			f->seg = seg;
			f->tgid = s->tgid;
			__builtin_memcpy(c, f, sizeof(*c));
		}
	}
	if (f->type == HS_B_NMETHOD) {
		kind = HS_K_COMPILED;
		if (!leaf && pc == f->deopt) {
			__u64 orig = 0;
			__s32 oo = 0;

			/* the original pc's slot: one more read, deoptimized
			 * frames only */
			if (!HS_READ_USER(&oo, 4, f->blob + (s->c.nm_orig_pc & 0x7fff)) &&
			    !HS_READ_USER(&orig, 8, r->sp + oo) && orig >= f->begin && orig < f->end) {
				pc = orig;
				flags |= HS_R_DEOPT;
			}
		}
	} else {
		kind = HS_K_STUB;
	}
	if (leaf && f->type == HS_B_VTABLE) {
		st = HS_F_NOTHING;
	} else if (leaf && f->type == HS_B_NMETHOD && r->pc < f->verified) {
		st = HS_F_NOTHING;
	} else if (leaf && (f->fs || f->fc > 0)) {
		struct hs_lcache_v *lv = bpf_map_lookup_elem(&hs_lcache, &zero);
		struct hs_lfacts *lf;

		key = (__u32)((pc ^ s->tgid) * 0x9e3779b1u) >> 24;
		lf = lv ? &lv->e[key & (HS_LCACHE_N - 1)] : 0;
		if (lf && lf->pc == pc && lf->tgid == s->tgid && lf->stamp == f->stamp) {
			st = (int)lf->st;
		} else {
			if (HS_READ_USER(s->code, 16, r->pc - 8))
				return HS_E_READ;
			st = hs_leaf_state(s->code, f->fc > 0 && r->pc < f->begin + (__u64)f->fc);
			if (lf) {
				lf->pc = pc;
				lf->tgid = s->tgid;
				lf->stamp = f->stamp;
				lf->st = (__u32)st;
			}
		}
	}
	if (st != HS_F_FULL)
		flags |= HS_R_GUESSED;
	if (!f->fs && st == HS_F_FULL) {
		if (leaf && !(r->bp >= r->sp && r->bp - r->sp < 4096)) {
			st = HS_F_NOTHING;
			flags |= HS_R_GUESSED;
		} else {
			st = HS_F_RBP_FRAME;
		}
	}
	if (st == HS_F_NOTHING)
		err = hs_pushed(s, r, 0, f->type == HS_B_NMETHOD);
	else if (st == HS_F_BP_PUSHED)
		err = hs_pushed(s, r, 1, f->type == HS_B_NMETHOD);
	else if (st == HS_F_RBP_FRAME)
		err = hs_rbp_frame(s, r);
	else
		err = hs_full(s, r, f->fs, st == HS_F_FULL_BP, f->type == HS_B_NMETHOD, &flags);
	if (err)
		return err;
	if (r->sp <= sp0 || !r->pc)
		return HS_E_BAD_FRAME;
	return hs_record(s, hs_rec0(f->blob, kind, flags, index),
			 hs_rec1((__u32)(pc - f->begin),
				 kind == HS_K_COMPILED ? hs_stamp(f->stamp, hs_epoch(s)) : f->stamp));
}

/*
 * One HotSpot frame at r->pc (hs_owns holds for it): its record, and r
 * stepped to the caller. A global function: the verifier checks it once,
 * not once per path of the walk that calls it (inside the unwinder's
 * bpf_loop callback a static one took the whole program past a million
 * instructions; global, the sampler's program verifies in 504k, 389k
 * without it). leaf: r->pc was interrupted there (r->r13 is
 * live), not a return address. index: the frame's position among the
 * sample's user frames. Returns HS_E_OK (also when the frame was
 * unwound without a record: HS_E_TRUNC, counted) or an enum hs_end
 * (counted in hs_ends either way); r may be partly changed on an error.
 */
__noinline int hs_step(struct hs_regs *r, __u32 leaf, __u32 index)
{
	struct hs_scratch *s = hs_get();
	__u64 look;
	int end;

	if (!s || !r)
		return HS_E_READ;
	look = leaf ? r->pc : r->pc - 1;
	if (!s->active || !hs_in_cache(s, look))
		end = HS_E_NOT_JAVA;
	else if (look >= s->c.interp_lo && look < s->c.interp_hi)
		end = hs_interp(s, r, leaf, index);
	else
		end = hs_blob_step(s, r, leaf, index, look);
	hs_count((__u32)end);
	/* Out of record room: the frame was unwound all the same. */
	return end == HS_E_TRUNC ? HS_E_OK : end;
}

/*
 * Copies the sample's records to frames[at ...] (two slots each, as
 * many as fit in cap slots) and returns how many records it copied.
 */
static __always_inline __u32 hs_finish(__u64 *frames, __u32 at, __u32 cap)
{
	struct hs_scratch *s = hs_get();
	__u32 n;

	if (!s || !s->active)
		return 0;
	n = s->n;
	if (n > HS_MAX_FRAMES)
		n = HS_MAX_FRAMES;
	for (__u32 i = 0; i < HS_MAX_FRAMES; i++) {
		__u32 d = at + 2 * i;

		if (i >= n || d + 2 > cap)
			return i;
		if (d > cap - 2)
			return i;
		/* A bound the verifier sees on the register the stores use
		 * (cap <= 256 slots): hidden from the compiler, which would
		 * drop the mask. */
		asm volatile("" : "+r"(d));
		d &= 0xff;
		if (d > 254)
			return i;
		frames[d] = s->rec[(2 * i) & (2 * HS_MAX_FRAMES - 1)];
		frames[d + 1] = s->rec[(2 * i + 1) & (2 * HS_MAX_FRAMES - 1)];
	}
	return n;
}

#endif
