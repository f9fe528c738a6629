/*
 * v8rt.c - V8 (Node.js) as a runtime of the pipeline (sampler/runtime/):
 * a file carrying V8 found by the loader (v8file__read, v8layout__init),
 * a process's set-up (where its embedded builtins are mapped), and its
 * samples' JS frames named (v8names__frame) in place of the native frames
 * that ran them.
 *
 * As with HotSpot, the native walk itself records the JS frames: V8 keeps
 * rbp as a frame pointer in the code it generates, so the walk steps
 * through builtins and JIT code by rbp and the hook (bpf/v8_walk.h)
 * writes one record per JS frame, tied to its native frame by index. The
 * merge replaces exactly those frames; JSEntry, C++ called from JS
 * (JSON.parse calling a reviver) and libuv stay where they ran.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/stack.h"
#include "sampler/proc/procinfo.h"
#include "sampler/runtime/rt_int.h"
#include "sampler/runtime/rtmemo.h"
#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/symbolize.h"
#include "sampler/unwind/twin.h"
#include "sampler/unwind/unwinder.h"
#include "sampler/v8/v8dispatch.h"
#include "sampler/v8/v8file.h"
#include "sampler/v8/v8layout.h"
#include "sampler/v8/v8name.h"
#include "sampler/v8/v8walk.h"
#include "store/util/util.h"

/* JS frames one record (optimized code with functions inlined into it)
 * expands to at most. */
#define V8RT_MAX_INLINE 32

/* What the loader read of a V8 file (rtfile.data). */
struct v8rtfile {
	struct v8file f;
	struct v8layout l;
};

#define CS_MAPS 8

/* Per process (in struct v8rt's procs): copies, so that a file's data
 * going with its last mapping never leaves a held sample without them. */
struct v8rtproc {
	struct v8rtfile vf;
	struct v8_proc bpf; /* its BPF set-up, for the pending walk */
	/* What a code-space object holding instructions (10.2: a Code;
	 * 11.3: an InstructionStream) starts with (each isolate, a worker
	 * thread's too, has its own map), and how far after its start the
	 * instructions begin: learnt from optimized frames named (0: none
	 * yet). See code_at(). */
	uint64_t cs_map[CS_MAPS];
	uint32_t cs_hdr;
	uint32_t learns; /* samples learnt from (bounded: a miss is not always new) */
};

/* Return addresses in code the function no longer points to (OSR code)
 * found in a Code object, direct-mapped. */
#define OSR_SLOTS 256
struct osr_slot {
	pid_t pid;
	uint32_t maps; /* maps known when it was looked up (a miss may not be one later) */
	uint64_t look, code;
};

struct v8rt {
	struct rt_head rt; /* names: a struct v8names; pdata: pid -> struct v8rtproc */
	struct rt_memo *memo; /* records named before (rtmemo.h) */
	/* one merge's */
	uint32_t index[V8_MAX_FRAMES];
	struct v8name_frame nf[V8RT_MAX_INLINE];
	struct v8rtproc *vp;
	uint64_t gen; /* the process image's (struct proc) */
	pid_t pid;
	const uint64_t *rec;
	struct rt_counts *cnt;
	struct osr_slot osr[OSR_SLOTS];
	uint64_t osr_named; /* frames named through code_at() */
	int nrec;
};

static const char *const marker_moved = "[js: moved]";
static const char *const marker_unreadable = "[js: unreadable]";

static int v8_detect(int fd, const char *path, const struct elf_info *e, struct rtfile *f)
{
	struct v8rtfile *vf;
	char why[96] = "";
	int err;

	/* Cheap first: only a file that defines v8::Isolate::New. */
	if (!elfsym__find(e, "_ZN2v87Isolate3NewERKNS0_12CreateParamsE"))
		return -ENOENT;
	vf = calloc(1, sizeof(*vf));
	if (!vf)
		return -ENOMEM;
	err = v8file__read(fd, &vf->f);
	if (err == -ENOENT || err == -ENOEXEC) {
		free(vf);
		return -ENOENT;
	}
	if (!err && !vf->f.code_lo)
		err = -EPROTO, snprintf(why, sizeof(why), "its builtins were not found");
	if (!err)
		err = v8layout__init(&vf->f, &vf->l, why, sizeof(why));
	if (!err && vf->l.jsf_dispatch && !vf->f.isolate_group)
		err = -EPROTO, snprintf(why, sizeof(why), "no IsolateGroup::default_isolate_group_ symbol");
	if (err) {
		f->status = err == -EOPNOTSUPP ? -EOPNOTSUPP : -EPROTO;
		snprintf(f->why, sizeof(f->why), "%.40s: V8 %d.%d.%d: %s", path, vf->f.major, vf->f.minor,
			 vf->f.build, why[0] ? why : strerror(-err));
	}
	f->data = vf;
	return 0;
}

static int v8_state_init(void *st)
{
	return (((struct v8rt *)st)->memo = rt_memo__new()) ? 0 : -ENOMEM;
}

static void v8_state_fini(void *st)
{
	rt_memo__free(((struct v8rt *)st)->memo);
}

static int rd64(pid_t pid, uint64_t a, uint64_t *v)
{
	return rt__read(pid, a, v, sizeof(*v));
}

static int rd32(pid_t pid, uint64_t a, uint32_t *v)
{
	return rt__read(pid, a, v, sizeof(*v));
}

/* The dispatch table's base (13+), for v8dispatch__find: the IsolateGroup
 * pointer's runtime address (pie: biased by the file's first mapping). */
static int dispatch_table(const struct proc *p, const struct vma *v, const struct v8rtfile *vf, uint64_t *base)
{
	uint64_t at = vf->f.isolate_group;

	if (vf->f.pie) {
		uint64_t bias = 0;

		for (size_t i = 0; p->maps && i < p->maps->n && !bias; i++)
			if (p->maps->v[i].ino == v->ino && p->maps->v[i].dev == v->dev && !p->maps->v[i].pgoff)
				bias = p->maps->v[i].start;
		if (!bias)
			return -EAGAIN;
		at += bias;
	}
	return v8dispatch__find(p->pid, &vf->l, at, base);
}

static int v8_setup(void *st, struct runtimes *rts, struct proc *p, const struct vma *v,
		    const struct symtab *t, struct rt_proc *c)
{
	struct v8rt *r = st;
	const struct v8rtfile *vf = t->rt->data;
	struct v8rtproc *vp;
	uint64_t base = 0;
	int err;

	(void)rts;
	if (vf->l.jsf_dispatch && (err = dispatch_table(p, v, vf, &base))) {
		pr_debug("js: pid %d: no dispatch table yet: %s", (int)p->pid, strerror(-err));
		return err == -EAGAIN ? RTS_WAIT : RTS_FAILED;
	}
	/* The builtins by the file's offsets: wherever V8 maps them (12+:
	 * a copy per isolate, beside its JIT code) */
	if (v8layout__proc(&vf->l, vf->f.code_off, vf->f.code_hi - vf->f.code_lo, unwinder__kdev(v->dev), v->ino,
			   &c->v8))
		return RTS_LAYOUT;
	c->v8.dispatch_base = base;
	vp = calloc(1, sizeof(*vp));
	if (!vp)
		return RTS_FAILED;
	vp->vf = *vf;
	vp->bpf = c->v8;
	p->rt.layout = NULL; /* in r->rt.pdata, by pid */
	if (rt_pdata__put(&r->rt.pdata, p->pid, vp))
		return RTS_FAILED;
	return RTS_WALKED;
}

/*
 * Code the function no longer points to.
 *
 * A JS frame whose pc lies in JIT code that is not its function's current
 * code (on-stack replacement: a long loop compiled while it ran, or code
 * deoptimized but still on the stack) reaches us as V8_FT_FUNC: the
 * function, with no position. V8 finds the Code for such a pc through its
 * heap's page structures; we find it as V8 lays code out: every object of
 * the code space that holds instructions starts on a code-aligned address
 * with the same map word, and its instructions follow a fixed header. So
 * the nearest such start at or below the pc is the object's, and it
 * counts only if the Code it names (11.3: the InstructionStream's back
 * pointer, checked against the Code's own instruction start) has the pc
 * within its instructions; the namer then checks the stamp (its function
 * is the frame's) as for any optimized frame. Nothing found: the frame
 * stays a function without a line, never another's.
 */
#define CODE_ALIGN 32		   /* instructions start 32- or 64-byte aligned on x64 */
#define CODE_SCAN (256u << 10)	   /* a code-space page: an object never spans two */
#define CODE_READ 4096
#define HDR_READ 128		   /* a Code's header, as far as refine() reads it */

static void add_map(struct v8rtproc *vp, uint64_t map, uint32_t hdr)
{
	int i;

	if (vp->cs_hdr && vp->cs_hdr != hdr)
		return; /* one build, one header */
	for (i = 0; i < CS_MAPS && vp->cs_map[i] && vp->cs_map[i] != map; i++)
		;
	if (i < CS_MAPS && !vp->cs_map[i]) {
		vp->cs_map[i] = map;
		vp->cs_hdr = hdr;
	}
}

/* Learns the map and header of the object holding Code object code's
 * (untagged) instructions. */
static void learn(struct v8rtproc *vp, pid_t pid, uint64_t code)
{
	const struct v8layout *l = &vp->vf.l;
	static const uint32_t hdrs[] = { 16, 32, 64, 96, 128 };
	uint64_t start, w[2];

	if (l->code_start_ptr < 0) {
		if (!rd64(pid, code, &w[0]) && w[0])
			add_map(vp, w[0], (uint32_t)l->code_start_inline);
		return;
	}
	if (rd64(pid, code + (uint64_t)l->code_start_ptr, &start))
		return;
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		if (start < hdrs[i] || rt__read(pid, start - hdrs[i], w, sizeof(w)))
			continue;
		if (w[1] == (code | 1) && w[0]) { /* its back pointer: the Code, tagged */
			add_map(vp, w[0], hdrs[i]);
			return;
		}
	}
}

static bool is_map(const struct v8rtproc *vp, uint64_t w)
{
	for (int i = 0; i < CS_MAPS && vp->cs_map[i]; i++)
		if (vp->cs_map[i] == w)
			return true;
	return false;
}

/* The Code object (untagged) whose instructions hold look, or 0. */
static uint64_t code_at(const struct v8rtproc *vp, pid_t pid, uint64_t look)
{
	const struct v8layout *l = &vp->vf.l;
	uint64_t buf[CODE_READ / 8], x = 0, code, start, from = 0;
	uint32_t size;
	bool have = false;

	if (!vp->cs_map[0] || look < CODE_SCAN)
		return 0;
	/* Candidate instruction starts s, code-aligned, from look down; the
	 * object would start cs_hdr bytes before. */
	for (uint64_t s = look & ~(uint64_t)(CODE_ALIGN - 1); !x && look - s < CODE_SCAN; s -= CODE_ALIGN) {
		uint64_t at = s - vp->cs_hdr;

		if (!have || at < from) {
			from = (at & ~(uint64_t)(CODE_READ - 1));
			if (rt__read(pid, from, buf, sizeof(buf)))
				return 0;
			have = true;
		}
		if (is_map(vp, buf[(at - from) / 8]))
			x = at;
	}
	if (!x)
		return 0;
	if (l->code_start_ptr < 0) {
		code = x;
		start = x + vp->cs_hdr;
	} else {
		uint64_t back;

		if (rd64(pid, x + 8, &back) || (back & 3) != 1 ||
		    rd64(pid, back - 1 + (uint64_t)l->code_start_ptr, &start) || start != x + vp->cs_hdr)
			return 0;
		code = back - 1;
	}
	if (rd32(pid, code + (uint64_t)l->code_size, &size) || look < start || look - start >= size)
		return 0;
	return code;
}

/* Learns from the optimized frames of this sample (the same thread, so
 * the same isolate as a frame refine() missed). True if a map was new. */
#define LEARN_MAX 256
static uint32_t nmaps(const struct v8rtproc *vp)
{
	uint32_t n = 0;

	while (n < CS_MAPS && vp->cs_map[n])
		n++;
	return n;
}

static bool learn_sample(struct v8rt *r)
{
	uint32_t had = nmaps(r->vp);
	int tried = 0;

	if (r->vp->learns >= LEARN_MAX)
		return false;
	r->vp->learns++;
	for (int j = 0; j < r->nrec && tried < 4; j++)
		if (V8_OBJ_TYPE(r->rec[2 * j]) == V8_FT_OPT) {
			learn(r->vp, r->pid, V8_OBJ_ADDR(r->rec[2 * j]));
			tried++;
		}
	return nmaps(r->vp) > had;
}

/* Record fr (V8_FT_FUNC) again as the optimized or baseline frame whose
 * code holds native frame nf's pc, if it is found. */
static bool refine(struct v8rt *r, struct v8_frame *fr, const struct frame *nf, bool ret)
{
	const struct v8layout *l = &r->vp->vf.l;
	uint64_t look, code, start, sfi = V8_OBJ_ADDR(fr->obj) | 1;
	struct osr_slot *s;
	uint32_t size, flags, kind;
	bool base;

	if (!nf || !nf->vma || nf->vma->file || nf->addr < 4096)
		return false;
	look = ret ? nf->addr - 1 : nf->addr;
	s = &r->osr[(look ^ (uint64_t)r->pid * 0x9e3779b97f4a7c15ull) >> 4 & (OSR_SLOTS - 1)];
	if (s->pid == r->pid && s->look == look && (s->code || s->maps == nmaps(r->vp))) {
		code = s->code;
	} else {
		code = code_at(r->vp, r->pid, look);
		if (!code && learn_sample(r))
			code = code_at(r->vp, r->pid, look);
		*s = (struct osr_slot){ r->pid, nmaps(r->vp), look, code };
	}
	if (!code)
		return false;
	/* the header's fields in one read (they lie within its first bytes) */
	{
		int64_t hi = l->code_size + 4 > l->code_flags + 4 ? l->code_size + 4 : l->code_flags + 4;
		uint8_t hdr[HDR_READ];

		if (l->code_start_ptr >= 0 && l->code_start_ptr + 8 > hi)
			hi = l->code_start_ptr + 8;
		if (l->code_size < 0 || l->code_flags < 0 || hi > HDR_READ ||
		    rt__read(r->pid, code, hdr, (size_t)hi))
			return false;
		if (l->code_start_ptr >= 0)
			memcpy(&start, hdr + l->code_start_ptr, 8);
		else
			start = code + (uint64_t)l->code_start_inline;
		memcpy(&size, hdr + l->code_size, 4);
		memcpy(&flags, hdr + l->code_flags, 4);
	}
	kind = (flags >> l->kind_shift) & l->kind_mask;
	base = kind == l->kind_baseline;
	fr->obj = V8_OBJ(base ? sfi : code | 1, base ? V8_FT_BASELINE : V8_FT_OPT, V8_OBJ_INDEX(fr->obj));
	fr->off = (uint32_t)(nf->addr - start);
	fr->stamp = v8_stamp(base ? code | 1 : sfi, (uint64_t)size << 8 | kind);
	return true;
}

/* Record i's JS frames (rt__merge_indexed's namer). */
static int name_rec(void *ctx, int i, bool ret, const struct frame *nf, struct frame *out, int max)
{
	struct v8rt *r = ctx;
	struct v8_frame fr = { .obj = r->rec[2 * i], .off = (uint32_t)r->rec[2 * i + 1],
			       .stamp = (uint32_t)(r->rec[2 * i + 1] >> 32) };
	uint64_t unsettled = r->cnt->unsettled, key[2];
	bool cut = false;
	int n;

	/* Named before: the record without the native frame it replaces
	 * (its depth), with the pc of a frame named by its code's address */
	{
		struct {
			uint64_t obj, off, pc, gen;
			int32_t pid, ret;
		} k = { fr.obj & ~(0xffull << 48), r->rec[2 * i + 1],
			V8_OBJ_TYPE(fr.obj) == V8_FT_FUNC && nf ? nf->addr : 0, r->gen, r->pid, ret };

		hash64_pair(&k, sizeof(k), 0x76387265, 0x6d656d6f, key);
		if (max > 0 && (n = rt_memo__get(r->memo, key, out, max)) >= 0) {
			r->cnt->frames += (uint64_t)n;
			return n;
		}
	}
	if (V8_OBJ_TYPE(fr.obj) == V8_FT_FUNC) {
		struct v8_frame f2 = fr;

		/* named as found, or as the function it is */
		if (refine(r, &f2, nf, ret) &&
		    (n = v8names__frame((struct v8names *)r->rt.names, r->pid, &r->vp->vf.l, &r->vp->vf.f, v8name__read_pid,
					(void *)(intptr_t)r->pid, &f2, ret, r->nf, V8RT_MAX_INLINE)) > 0) {
			r->osr_named++;
			fr = f2;
			goto named;
		}
		/* the function alone; its code may be found once more is learnt */
		if (r->vp->learns < LEARN_MAX)
			r->cnt->unsettled++;
	}
	n = v8names__frame((struct v8names *)r->rt.names, r->pid, &r->vp->vf.l, &r->vp->vf.f, v8name__read_pid,
			   (void *)(intptr_t)r->pid, &fr, ret, r->nf, V8RT_MAX_INLINE);
named:

	if (max <= 0)
		return 0;
	if (n < 0) {
		rt__marker(out, V8_OBJ_ADDR(fr.obj), n == -ESTALE, marker_moved, marker_unreadable, r->cnt);
		return 1;
	}
	if (n > max)
		n = max, cut = true;
	for (int k = 0; k < n; k++) {
		const struct v8name_frame *j = &r->nf[k];
		struct frame *o = &out[k];

		memset(o, 0, sizeof(*o));
		/* a location per function and line: the SharedFunctionInfo
		 * (or the Code) and the line make the address */
		o->addr = (j->fn ? j->fn : V8_OBJ_ADDR(fr.obj)) + (uint64_t)(j->line > 0 ? j->line : 0);
		/* The cache's strings live until its next call: copied. */
		o->name = rt_text__display(&r->rt.text, v8name__display, j->name, j->path);
		o->sysname = rt_text__keep(&r->rt.text, j->name);
		o->file = rt_text__keep(&r->rt.text, j->path);
		if (!o->name || !o->sysname || !o->file) {
			memset(o, 0, sizeof(*o));
			o->marker = true;
			o->name = marker_unreadable;
			r->cnt->unreadable++;
			continue;
		}
		o->rt = true;
		o->line = j->line;
		o->start_line = j->start_line;
		r->cnt->frames++;
	}
	/* kept when final: every frame named, none cut, nothing to learn */
	if (r->cnt->unsettled == unsettled && !cut) {
		int k = 0;

		while (k < n && !out[k].marker)
			k++;
		if (k == n)
			rt_memo__put(r->memo, key, out, n);
	}
	return n;
}

static int v8_merge(void *st, struct proc *p, const struct prof_sample_ev *ev,
		    const struct frame *fr, int n, struct frame *out, int max, struct rt_counts *cnt)
{
	struct v8rt *r = st;
	int nrec = ev->nrt < V8_MAX_FRAMES ? ev->nrt : V8_MAX_FRAMES;

	r->vp = rt_pdata__get(&r->rt.pdata, p->pid);
	if (!r->vp)
		return rt__copy(fr, n, out, max);
	r->pid = p->pid;
	r->gen = p->gen;
	/* no frame of the memo is held between merges */
	rt_memo__trim(r->memo);
	r->rec = (const uint64_t *)&ev->frames[ev->nkern + ev->nuser];
	r->cnt = cnt;
	r->rt.text.used = 0;
	r->nrec = nrec;
	for (int i = 0; i < nrec; i++)
		r->index[i] = V8_OBJ_INDEX(r->rec[2 * i]);
	return rt__merge_indexed(ev, fr, n, r->index, nrec, name_rec, r, out, max);
}

/* The BPF hook (bpf/v8_walk.h) for the pending walk: the record only;
 * the native step (rbp: JIT code, or the builtins' frame-pointer rule)
 * follows. */
static int v8_twin_step(void *st, struct proc *p, struct twin_regs *r, const struct twin_mem *mem,
			const struct twin_map *m, int index, uint64_t rec[2])
{
	const struct v8rtproc *vp = rt_pdata__get(&((struct v8rt *)st)->rt.pdata, p->pid);
	struct rt_twin_mem tm = { p->pid, mem };
	uint64_t look = r->pc - (r->exact ? 0 : 1), nfp, ra;
	struct v8_frame f;
	bool blt = vp && v8walk__builtins(&vp->bpf, m, look);

	if (!vp || !r->bp_ok || !(m->kind == TWIN_FP || blt))
		return 0;
	if (v8walk__frame(&vp->bpf, r->pc, blt, r->bp, (unsigned)index, rt__twin_read, &tm, &f, &nfp, &ra) <=
	    0)
		return 0;
	rec[0] = f.obj;
	rec[1] = (uint64_t)f.stamp << 32 | f.off;
	return 1;
}

static uint64_t v8_name_errors(void *st)
{
	struct v8names_stats s;

	v8names__stats((struct v8names *)((struct v8rt *)st)->rt.names, &s);
	return s.err_read + s.err_type;
}

static const char *const v8_ends_names[V8_END_MAX] = {
	[V8_END_OK] = "complete", [V8_END_TRUNC] = "truncated", [V8_END_READ] = "read_failed",
};

const struct rt_ops rt_v8_ops = {
	.name = "js",
	.kind = RT_V8,
	.ends = v8_ends_names,
	.ends_map = "v8_ends",
	.nends = V8_END_MAX,
	.stale_reason = "object_moved",
	.detect = v8_detect,
	.file_free = free,
	.state_size = sizeof(struct v8rt),
	.names_new = v8names__view_new,
	.names_free = v8names__view_free,
	.state_init = v8_state_init,
	.state_fini = v8_state_fini,
	.setup = v8_setup,
	.merge = v8_merge,
	.name_errors = v8_name_errors,
	.twin_step = v8_twin_step,
};
