/*
 * unwind_walk.h - the user-stack walk of bpf/profile.bpf.c and
 * bpf/offcpu.bpf.c (BPF only, included once by each; the includer
 * defines `scratch`, its per-CPU struct prof_sample_ev, and the walk runs
 * in the context of the task it walks). Per frame: pc -> its mapping
 * (skipped while the pc stays in the last mapping) -> (device, inode,
 * pgoff) -> the file's rows (bpf/unwind.h) -> binary search -> rule ->
 * CFA, return address, rbp. The mapping comes from the mm's maple tree
 * (mt_lookup). Files known to have no unwind information and anonymous
 * executable memory (JIT) take a frame-pointer step; a file whose table
 * is not loaded yet ends the walk as PROF_UE_PENDING with the registers
 * and a copy of the stack, and user space finishes it.
 */
#ifndef PROFFS_BPF_UNWIND_WALK_H
#define PROFFS_BPF_UNWIND_WALK_H

#define VM_EXEC_FLAG 0x4ul

#include "bpf/maple_walk.h"

/* One chunk of the row space (bpf/unwind.h); user space creates them.
 * Values are struct unw_row: typed as their size because BTF holds an
 * inner map's value type only as a forward declaration. */
struct unw_chunk {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, UNW_CHUNK_ROWS);
	__type(key, __u32);
	__type(value, __u64);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* sized by user space before load */
	__type(key, __u32);
	__array(values, struct unw_chunk);
} unw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unw_rule);
} unw_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct unw_file_key);
	__type(value, struct unw_file);
} unw_files SEC(".maps");

enum { MAP_NONE, MAP_TABLE, MAP_FP, MAP_PENDING, MAP_HOTSPOT };

/* Set by the daemon (user space finishes such walks and marks the
 * processes it found no runtime in, RT_NATIVE_JIT): anonymous code of a
 * process without an rt_procs entry goes to user space. Off (the test
 * tools, the off-CPU program): frame pointers walk it. */
const volatile bool anon_wait = false;

/* The two shapes of mm_struct.mm_lock_seq (unwind_user): CO-RE picks the
 * one the running kernel has. */
struct mm_struct___seqc {
	struct {
		unsigned int sequence;
	} mm_lock_seq;
} __attribute__((preserve_access_index));
struct mm_struct___int {
	int mm_lock_seq;
} __attribute__((preserve_access_index));

struct walk {
	__u64 pc, sp, bp;
	__u64 lreg[6]; /* the leaf's rax, rdx, rcx, rbx, rsi, rdi (DWARF 0-5) */
	__u64 r13;     /* the leaf's: a HotSpot interpreter's bytecode pointer */
	struct v8_walk v8; /* a V8 process's JS frames (bpf/v8_walk.h) */
	/* the mapping that holds the current pc */
	__u64 vm_start, vm_end, vm_pgoff, vm_flags;
	__u32 base, nrows, kind;
	__u32 nk, n;
	__u8 end, exact, bp_ok;
	__u8 anon; /* the mapping is anonymous executable memory (JIT code) */
	__u8 anon_fp; /* frame pointers walk its anonymous code (an entry,
		       * not RT_SETTING_UP); else user space does */
	__u8 mc_ok;   /* the mapping cache may serve this walk (map_cache) */
	__u32 fdev;   /* the current mapping's file (its unw_files key) */
	__u64 fino;
	__u32 mc_seq; /* the mm's mm_lock_seq when the walk began */
	__u64 mc_mm;  /* the mm, as a number */
};

/*
 * The mappings this CPU's walks met lately. A walk crosses two to five
 * files, and looking one up in the maple tree and reading its vma, file
 * and inode cost ~0.7 us a time, most of a native walk's cost. An entry
 * holds what find_map read of a file's mapping, and is good while the
 * process's mm_lock_seq is what it was: every change to a process's
 * mappings (mmap, munmap, mprotect, mremap, brk, stack growth) holds
 * the mmap lock for writing, and its taking and release each move that
 * count (kernels with per-VMA locks: CONFIG_PER_VMA_LOCK; without it no
 * walk uses the cache). An odd count is a change under way: no caching.
 * The file's table itself is looked up again at each use (it may be
 * built, or evicted, since), and what walks anonymous code is decided
 * again at each use (it depends on the process's runtime state).
 */
#define MAP_CACHE_N 8

struct map_cache_ent {
	__u64 mm, start, end, pgoff, flags, dev, ino;
	__u32 tgid, seq;
	__u32 anon, pad;
};

struct map_cache {
	__u32 next, pad;
	struct map_cache_ent e[MAP_CACHE_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct map_cache);
} map_cache SEC(".maps");

/* The walk's state lives here, not on the stack: with the runtimes'
 * steps below it, offcpu's chain of calls (its task work, the walk's
 * loop, HotSpot's step) went past BPF's 512 bytes of stack. One per CPU
 * and per program object: a program does not nest with itself. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} walk_state SEC(".maps");

/*
 * The rules this CPU's walks found lately, by (file, offset): a return
 * address is the same each time its call runs, and each lookup in a
 * file's rows is a binary search of up to 22 steps over a table of up to
 * megabytes (0.8-1.2 us a lookup here, most of it cache and TLB misses).
 * What rule holds at an offset is a property of the file, so an entry
 * needs no other check than its key; it holds the rule itself (a copy:
 * the rules array is megabytes of pages, each first touch a TLB and a
 * cache miss, ~75 ns a step). Small on purpose: one per-CPU value of
 * 10 KiB stays in the caches, where 2,048 entries of their own cost
 * ~270 ns a hit. Two ways a set: direct-mapped, the ~27 return addresses
 * a busy node's two threads use each sample had two in one slot more
 * often than not (the birthday bound: 1 - e^(-27*27/512) ~ 76%), which
 * then pushed each other out every sample: 8.6% of its table steps
 * missed, 1.2 searches (~1 us) a sample. With two ways: 0.36%.
 */
#define RULE_CACHE_N 256

struct rule_cache_ent {
	__u64 ino; /* 0: empty (no file has inode 0) */
	__u32 dev, off;
	struct unw_rule r; /* the rule itself: a hit reads no rules page */
};

struct rule_cache {
	struct rule_cache_ent e[RULE_CACHE_N];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rule_cache);
} rule_cache SEC(".maps");

/* Points w at the mapping holding addr. Returns 0 or the walk's end.
 * This and table_step are global BPF functions: the verifier checks each
 * once, not at every state the walk's loop reaches them in (with the
 * HotSpot and V8 steps beside them the program passed its bound). */
__noinline int find_map(struct walk *w, __u64 addr)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	struct vm_area_struct *vma;
	struct unw_file_key key = {};
	struct unw_file *uf;
	struct map_cache *mc;
	struct file *f;
	__u32 zero = 0;

	if (!w) /* (a global function's pointer may be NULL to the verifier) */
		return PROF_UE_BAD_FRAME;
	if (!mm)
		return PROF_UE_BAD_PC;
	mc = w->mc_ok ? bpf_map_lookup_elem(&map_cache, &zero) : 0;
	if (mc) {
		__u32 tgid = task->tgid;

		for (int i = 0; i < MAP_CACHE_N; i++) {
			struct map_cache_ent *e = &mc->e[i];

			if (e->tgid != tgid || e->seq != w->mc_seq || e->mm != w->mc_mm ||
			    addr < e->start || addr >= e->end)
				continue;
			w->vm_start = e->start;
			w->vm_end = e->end;
			w->vm_pgoff = e->pgoff;
			w->vm_flags = e->flags;
			w->anon = e->anon;
			key.dev = e->dev;
			key.ino = e->ino;
			if (e->anon)
				goto anon;
			goto file;
		}
	}
	vma = mt_lookup(mm, addr);
	if (!vma)
		return PROF_UE_BAD_PC;
	w->vm_start = BPF_CORE_READ(vma, vm_start);
	w->vm_end = BPF_CORE_READ(vma, vm_end);
	if (addr < w->vm_start || addr >= w->vm_end) {
		w->vm_start = w->vm_end = 0;
		return PROF_UE_BAD_PC;
	}
	w->vm_pgoff = BPF_CORE_READ(vma, vm_pgoff);
	w->vm_flags = BPF_CORE_READ(vma, vm_flags);
	f = BPF_CORE_READ(vma, vm_file);
	w->anon = !f;
	if (f) {
		key.ino = BPF_CORE_READ(f, f_inode, i_ino);
		key.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	} else if ((__u64)BPF_CORE_READ(mm, context.vdso) == w->vm_start) {
		key.dev = UNW_VDSO_DEV;
		key.ino = UNW_VDSO_INO;
		/* Its table counts from the image's start; the vma's pgoff is
		 * not a file offset. */
		w->vm_pgoff = 0;
		w->anon = 0;
	}
	if (mc) {
		struct map_cache_ent *e = &mc->e[mc->next & (MAP_CACHE_N - 1)];

		mc->next++;
		e->mm = w->mc_mm;
		e->start = w->vm_start;
		e->end = w->vm_end;
		e->pgoff = w->vm_pgoff;
		e->flags = w->vm_flags;
		e->dev = key.dev;
		e->ino = key.ino;
		e->tgid = task->tgid;
		e->seq = w->mc_seq;
		e->anon = w->anon;
	}
	if (w->anon) {
anon:
		/* anonymous code: a JVM's code cache, or another JIT's; a
		 * runtime still setting up, or a process user space has
		 * not looked at since: its code for user space to walk */
		w->kind = RT_ON(RT_HOTSPOT) && hs_owns(addr) ? MAP_HOTSPOT : w->anon_fp ? MAP_FP : MAP_PENDING;
		return 0;
	}
file:
	w->fdev = (__u32)key.dev;
	w->fino = key.ino;
	uf = bpf_map_lookup_elem(&unw_files, &key);
	if (!uf) {
		w->kind = MAP_PENDING;
		return 0;
	}
	w->kind = uf->kind == UNW_FILE_TABLE ? MAP_TABLE : uf->kind == UNW_FILE_FP ? MAP_FP : MAP_NONE;
	w->base = uf->base;
	w->nrows = uf->nrows;
	return 0;
}

static __always_inline int read_u64(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* Two adjacent words (a saved rbp and the return address above it): one
 * read, not two. A read of user memory costs ~150 ns on these hosts,
 * most of a frame's step; what it copies costs little. Two reads when
 * the pair straddles an unreadable page, so either word fails alone. */
static __always_inline int read_pair(__u64 *lo, __u64 *hi, __u64 addr)
{
	__u64 p[2];

	if (!bpf_probe_read_user(p, sizeof(p), (const void *)addr)) {
		*lo = p[0];
		*hi = p[1];
		return 0;
	}
	return read_u64(hi, addr + 8) || read_u64(lo, addr);
}

static __always_inline int fp_step(struct walk *w)
{
	__u64 ra, nbp;

	if (!w->bp_ok || w->bp == 0)
		return PROF_UE_FP_END;
	if (w->bp < w->sp || read_pair(&nbp, &ra, w->bp))
		return PROF_UE_BAD_FRAME;
	if (ra == 0)
		return PROF_UE_FP_END;
	w->sp = w->bp + 16;
	w->bp = nbp;
	w->pc = ra;
	w->exact = 0;
	return 0;
}

__noinline int table_step(struct walk *w, __u64 look)
{
	__u64 off, cfa = 0, ra = 0, v, pair[2];
	__u32 lo, hi, c, clast, first, idx, zero = 0, slot;
	struct rule_cache_ent *rc;
	struct rule_cache *rcs;
	struct unw_rule *r;
	struct unw_row *row;
	void *chunk;

	if (!w)
		return PROF_UE_BAD_FRAME;
	off = look - w->vm_start + (w->vm_pgoff << 12);
	lo = w->base;
	hi = w->base + w->nrows;

	if (off > 0xffffffffull || !w->nrows)
		return PROF_UE_NO_RULE;
	slot = (__u32)(((off ^ w->fino * 0x9e3779b97f4a7c15ULL ^ w->fdev) * 0xff51afd7ed558ccdULL) >> 52);
	rcs = bpf_map_lookup_elem(&rule_cache, &zero);
	rc = 0;
	if (rcs) {
		__u32 set = slot & (RULE_CACHE_N / 2 - 1);
		struct rule_cache_ent *e0 = &rcs->e[2 * set], *e1 = &rcs->e[2 * set + 1];

		for (int way = 0; way < 2; way++) {
			rc = way ? e1 : e0;
			if (rc->ino && rc->ino == w->fino && rc->off == (__u32)off && rc->dev == w->fdev) {
				r = &rc->r;
				goto apply;
			}
		}
		/* the newest in way 0, the one it displaces in way 1 */
		*e1 = *e0;
		rc = e0;
	}
	/* A table over several chunks starts at a chunk's first row: its
	 * chunk for off is the last whose first row is at most off. */
	c = lo >> UNW_CHUNK_SHIFT;
	clast = (hi - 1) >> UNW_CHUNK_SHIFT;
	for (int i = 0; i < 6 && c < clast; i++) {
		__u32 m = c + (clast - c + 1) / 2;

		chunk = bpf_map_lookup_elem(&unw_rows, &m);
		if (!chunk)
			return PROF_UE_BAD_FRAME;
		row = (struct unw_row *)bpf_map_lookup_elem(chunk, &zero);
		if (!row)
			return PROF_UE_BAD_FRAME;
		if (row->off <= (__u32)off)
			c = m;
		else
			clast = m - 1;
	}
	chunk = bpf_map_lookup_elem(&unw_rows, &c);
	if (!chunk)
		return PROF_UE_BAD_FRAME;
	/* from here on, indexes into the chunk */
	lo = lo > c << UNW_CHUNK_SHIFT ? lo - (c << UNW_CHUNK_SHIFT) : 0;
	hi = hi - (c << UNW_CHUNK_SHIFT);
	if (hi > UNW_CHUNK_ROWS)
		hi = UNW_CHUNK_ROWS;
	first = lo;
	for (int i = 0; i < 16 && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		row = (struct unw_row *)bpf_map_lookup_elem(chunk, &mid);
		if (!row)
			return PROF_UE_BAD_FRAME;
		if (row->off <= (__u32)off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first)
		return PROF_UE_NO_RULE;
	idx = lo - 1;
	row = (struct unw_row *)bpf_map_lookup_elem(chunk, &idx);
	if (!row)
		return PROF_UE_BAD_FRAME;
	idx = row->rule;
	r = bpf_map_lookup_elem(&unw_rules, &idx);
	if (!r)
		return PROF_UE_BAD_FRAME;
	if (rc) {
		rc->ino = w->fino;
		rc->dev = w->fdev;
		rc->off = (__u32)off;
		rc->r = *r;
		r = &rc->r;
	}
apply:
	switch (r->cfa) {
	case UNW_CFA_SP:
		cfa = w->sp + (__s64)r->cfa_off;
		break;
	case UNW_CFA_BP:
		if (!w->bp_ok)
			return PROF_UE_BAD_FRAME;
		cfa = w->bp + (__s64)r->cfa_off;
		break;
	case UNW_CFA_PLT:
		cfa = w->sp + (__s64)r->cfa_off + ((w->pc & 15) >= r->arg ? 8 : 0);
		break;
	case UNW_CFA_DEREF_SP:
		if (read_u64(&cfa, w->sp + (__s64)r->cfa_off))
			return PROF_UE_BAD_FRAME;
		break;
	case UNW_CFA_NONE:
		return PROF_UE_NO_RULE;
	default:
		return PROF_UE_BAD_FRAME;
	}
	/* The common frame: rbp saved just below the return address (in a
	 * V8 process through the stack window its JS frames use). */
	if (r->ra == UNW_RA_CFA && r->bp == UNW_BP_CFA && r->bp_off + 8 == r->ra_off &&
	    cfa + (__s64)r->bp_off >= w->sp) {
		v = cfa + (__s64)r->bp_off;
		if (RT_ON(RT_V8) && w->v8.on ? !v8_pair(&w->v8, pair, v) : !bpf_probe_read_user(pair, sizeof(pair), (const void *)v)) {
			w->bp = pair[0];
			w->bp_ok = 1;
			ra = pair[1];
			goto done;
		}
	}
	switch (r->ra) {
	case UNW_RA_UNDEF:
		return PROF_UE_ROOT;
	case UNW_RA_CFA:
		if (read_u64(&ra, cfa + (__s64)r->ra_off))
			return PROF_UE_BAD_FRAME;
		break;
	case UNW_RA_SP:
		if (read_u64(&ra, w->sp + (__s64)r->ra_off))
			return PROF_UE_BAD_FRAME;
		break;
	case UNW_RA_REG:
		/* Only the leaf's registers are known. */
		if (w->n != 1 || r->arg > 5)
			return PROF_UE_BAD_FRAME;
		ra = w->lreg[r->arg & 7];
		break;
	default:
		return PROF_UE_BAD_FRAME;
	}
	switch (r->bp) {
	/* A slot below sp was popped into rbp already: rbp is kept. An
	 * unreadable saved rbp leaves rbp unknown; the walk goes on
	 * (sampler/unwind/twin.c says why). */
	case UNW_BP_CFA:
	case UNW_BP_SP:
		v = (r->bp == UNW_BP_CFA ? cfa : w->sp) + (__s64)r->bp_off;
		if (v < w->sp)
			break;
		w->bp_ok = !read_u64(&v, v);
		w->bp = w->bp_ok ? v : 0;
		break;
	case UNW_BP_UNDEF:
		w->bp_ok = 0;
		break;
	}
done:
	/* Unwinding climbs the stack; a signal frame may switch stacks. */
	if (!(r->flags & UNW_R_SIGNAL) && cfa < w->sp)
		return PROF_UE_BAD_FRAME;
	if (ra == 0)
		return PROF_UE_FP_END;
	w->sp = cfa;
	w->pc = ra;
	w->exact = r->flags & UNW_R_SIGNAL ? 1 : 0;
	return 0;
}

/* A frame in a JVM's code cache (bpf/hotspot_walk.h): HotSpot's own
 * step, which writes the frame's record. */
static __always_inline int hotspot_step(struct walk *w, __u64 look)
{
	struct hs_regs r = { w->pc, w->sp, w->bp_ok ? w->bp : 0, w->r13, w->lreg[0], w->lreg[3] };

	if (!RT_ON(RT_HOTSPOT) || !hs_owns(look))
		return fp_step(w);
	if (hs_step(&r, w->n == 1 && w->exact, w->n - 1))
		return PROF_UE_BAD_FRAME;
	w->pc = r.pc;
	w->sp = r.sp;
	w->bp = r.bp;
	w->bp_ok = 1;
	w->exact = 0;
	return 0;
}

static long walk_step(__u64 i, void *data)
{
	struct prof_sample_ev *ev;
	__u32 zero = 0, slot;
	/* (bpf_loop's context must be on the stack: the state is looked up
	 * again, an inlined array access) */
	struct walk *w = bpf_map_lookup_elem(&walk_state, &zero);
	__u64 look;
	int end, blt;

	(void)data;
	if (!w)
		return 1;

	if (w->n >= PROF_MAX_FRAMES) {
		w->end = PROF_UE_TRUNC;
		return 1;
	}
	look = w->pc - (w->exact ? 0 : 1);
	if (look < w->vm_start || look >= w->vm_end) {
		end = find_map(w, look);
		if (end) {
			w->end = end;
			return 1;
		}
	}
	if (!(w->vm_flags & VM_EXEC_FLAG)) {
		w->end = PROF_UE_BAD_PC;
		return 1;
	}
	ev = bpf_map_lookup_elem(&scratch, &zero);
	if (!ev)
		return 1;
	slot = w->nk + w->n;
	if (slot >= 2 * PROF_MAX_FRAMES)
		return 1;
	ev->frames[slot] = w->pc;
	w->n++;
	/* V8 code (its JIT's, or builtins linked without CFI): the rbp step,
	 * reading the frame's JS function on the way. */
	blt = RT_ON(RT_V8) && !w->anon && v8_builtins(&w->v8, w->fdev, w->fino, look - w->vm_start + (w->vm_pgoff << 12));
	if (RT_ON(RT_V8) && w->v8.on && (w->anon || blt)) {
		struct v8_regs vr = { w->pc, w->sp, w->bp };

		end = v8_step(&w->v8, &vr, w->n - 1, blt);
		w->pc = vr.pc;
		w->sp = vr.sp;
		w->bp = vr.bp;
		w->bp_ok = 1;
		w->exact = 0;
	} else if (w->kind == MAP_TABLE)
		end = table_step(w, look);
	else if (w->kind == MAP_HOTSPOT)
		end = hotspot_step(w, look);
	else if (w->kind == MAP_FP)
		end = fp_step(w);
	else if (w->kind == MAP_PENDING)
		end = PROF_UE_PENDING;
	else
		end = PROF_UE_NO_TABLE;
	if (end) {
		w->end = end;
		return 1;
	}
	return 0;
}

/*
 * The stack from sp, page by page, when a copy of it whole failed: a
 * stack holds pages never touched (a big local buffer a frame skipped
 * over: HotSpot's Threads::create_vm has 8 KiB of them), which a BPF
 * program cannot fault in. Such a page holds zeros, and a failed
 * bpf_probe_read_user leaves zeros in its place, so the copy goes on past
 * it: the frames above it (create_vm's caller, node's start-up under V8's
 * Invoke) are still walked. At most len bytes; the tail of the last page
 * past whole pages is left out (the bounds the verifier needs), and then
 * PROF_F_UCUT says the stack goes on past the copy.
 */
static __always_inline void copy_pages(struct prof_sample_ev *ev, __u64 sp, __u64 len)
{
	__u64 off = 4096 - (sp & 4095);

	if (off > len)
		return;
	bpf_probe_read_user(ev->ustack, off & 4095 ? off & 4095 : 4096, (const void *)sp);
	for (int i = 0; i < UNW_STACK_COPY / 4096; i++) {
		__u64 o = off;

		if (off + 4096 > len)
			break;
		/* The bound where the verifier sees it: clang would fold it
		 * into the loop's, which 6.1's verifier cannot follow. */
		barrier_var(o);
		if (o > UNW_STACK_COPY - 4096)
			break;
		bpf_probe_read_user(ev->ustack + o, 4096, (const void *)(sp + o));
		off = o + 4096;
	}
	ev->ustack_len = off;
	if (off < len)
		ev->flags |= PROF_F_UCUT;
}

/*
 * Walks the current task's user stack into ev->frames[nk...]. Returns the
 * number of frames; sets ev->uend (and on PROF_UE_PENDING, uregs, ustack
 * and ustack_len). rt: the process's runtime entry (bpf/runtime_walk.h),
 * or NULL: a JVM's or V8's frames are walked by their own step and their
 * records written after the native frames (ev->nrt, rtend, rtkind).
 */
static __noinline int unwind_begin(struct prof_sample_ev *ev, int nk, const struct rt_proc *rt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct mm_struct *mm;
	__u32 zero = 0;
	struct walk *wp = bpf_map_lookup_elem(&walk_state, &zero);

	if (!ev || !wp)
		return -1;
	__builtin_memset(wp, 0, sizeof(*wp));

	/* (direct loads: bpf_task_pt_regs gives a trusted pointer, and a
	 * helper call per register cost ~0.4 us a sample) */
	wp->pc = regs->ip;
	wp->sp = regs->sp;
	wp->bp = regs->bp;
	wp->lreg[0] = regs->ax;
	wp->lreg[1] = regs->dx;
	wp->lreg[2] = regs->cx;
	wp->lreg[3] = regs->bx;
	wp->lreg[4] = regs->si;
	wp->lreg[5] = regs->di;
	wp->r13 = regs->r13;
	wp->bp_ok = 1;
	wp->exact = 1;
	wp->nk = nk;
	wp->anon_fp = rt ? rt->kind != RT_SETTING_UP : !anon_wait;
	TEST_REFUSAL(TEST_REFUSE_TABLES);
	mm = task->mm;
	/* The map cache is checked against the mm's write sequence: a
	 * seqcount from 6.13 (odd while written), an int bumped at each
	 * write unlock from 6.4 (with per-VMA locks), none before. */
	if (bpf_core_field_exists(((struct mm_struct___seqc *)mm)->mm_lock_seq.sequence) && mm) {
		wp->mc_mm = (__u64)mm;
		wp->mc_seq = BPF_CORE_READ((struct mm_struct___seqc *)mm, mm_lock_seq.sequence);
		wp->mc_ok = !(wp->mc_seq & 1);
	} else if (bpf_core_field_exists(((struct mm_struct___int *)mm)->mm_lock_seq) && mm) {
		wp->mc_mm = (__u64)mm;
		wp->mc_seq = BPF_CORE_READ((struct mm_struct___int *)mm, mm_lock_seq);
		wp->mc_ok = 1;
	}
	if (RT_ON(RT_HOTSPOT)) {
		TEST_REFUSAL(1u << RT_HOTSPOT);
		hs_begin(task->tgid, rt && rt->kind == RT_HOTSPOT ? &rt->hs : 0);
	}
	wp->v8.on = 0;
	if (RT_ON(RT_V8)) {
		TEST_REFUSAL(1u << RT_V8);
		v8_begin(&wp->v8, rt && rt->kind == RT_V8 ? &rt->v8 : 0, ev->time_ns);
	}
	return 0;
}

/* After the walk: the runtime's records, and what a walk to finish in
 * user space carries. Returns the number of native frames. */
static __noinline int unwind_end(struct prof_sample_ev *ev, int nk, const struct rt_proc *rt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct walk *wp = bpf_map_lookup_elem(&walk_state, &zero);
	__u64 top = 0, len;
	__u32 at, nr;

	if (!ev || !wp)
		return 0;
	ev->uend = wp->end;
	ev->ustack_len = 0;
	/* The JVM's or V8's records, after the native frames. */
	at = (__u32)nk + wp->n;
	if (RT_ON(RT_HOTSPOT) && at <= 2 * PROF_MAX_FRAMES && rt && rt->kind == RT_HOTSPOT) {
		nr = hs_finish(ev->frames, at, 2 * PROF_MAX_FRAMES);
		ev->nrt = nr;
		ev->rtend = nr ? RT_END_OK : RT_END_IDLE;
		ev->rtkind = RT_HOTSPOT;
	} else if (RT_ON(RT_V8) && at <= 2 * PROF_MAX_FRAMES && rt && rt->kind == RT_V8) {
		nr = v8_emit(&wp->v8, ev->frames, at);
		ev->nrt = nr;
		ev->rtend = wp->v8.end == V8_END_TRUNC ? RT_END_TRUNC : wp->v8.end == V8_END_READ ? RT_END_READ :
			    nr ? RT_END_OK : RT_END_IDLE;
		ev->rtkind = RT_V8;
	}
	if (wp->end == PROF_UE_PENDING) {
		ev->uregs[0] = wp->pc;
		ev->uregs[1] = wp->sp;
		ev->uregs[2] = wp->bp_ok ? wp->bp : 0;
		if (wp->exact)
			ev->flags |= PROF_F_UEXACT;
		struct vm_area_struct *vma = task->mm ? mt_lookup(task->mm, wp->sp) : 0;

		if (vma)
			top = BPF_CORE_READ(vma, vm_end);
		if (top > wp->sp && BPF_CORE_READ(vma, vm_start) <= wp->sp) {
			len = top - wp->sp;
			if (len > UNW_STACK_COPY)
				len = UNW_STACK_COPY;
			if (!bpf_probe_read_user(ev->ustack, len, (const void *)wp->sp))
				ev->ustack_len = len;
			else
				copy_pages(ev, wp->sp, len);
		}
	}
	return wp->n;
}

/*
 * The walk in three calls, so that no big frame is live under the loop's
 * callback: a kernel before 6.13 adds every frame of the call chain
 * (on_sample, user_stack, walk_step, find_map or hs_step) into one 512
 * byte stack, and 6.12 refused 544.
 */
static __always_inline int unwind_user(struct prof_sample_ev *ev, int nk, const struct rt_proc *rt)
{
	if (unwind_begin(ev, nk, rt))
		return 0;
	bpf_loop(PROF_MAX_FRAMES + 1, walk_step, NULL, 0);
	return unwind_end(ev, nk, rt);
}

/* After unwind_user: the signature of the sample's runtime records
 * (bpf/v8_walk.h, V8 only), or 0 when it has none. */
static __always_inline __u64 unwind_rt_sig(const struct prof_sample_ev *ev)
{
	__u32 zero = 0;
	struct walk *w;

	if (ev->rtkind != RT_V8 || !ev->nrt)
		return 0;
	w = bpf_map_lookup_elem(&walk_state, &zero);
	return w && w->v8.on ? w->v8.sig : 0;
}

#endif
