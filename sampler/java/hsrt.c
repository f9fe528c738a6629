/*
 * hsrt.c - HotSpot as a runtime of the pipeline (sampler/runtime/): a
 * libjvm found by the loader (jvmfile__read), a JVM's set-up from its own
 * tables (hsvm__open), and its samples' Java frames named (hsnames__frames)
 * in place of the code-cache frames the native walk stepped through.
 *
 * Unlike Python's and Ruby's, these frames are not walked after the
 * native stack: the native walk itself takes HotSpot's step for a pc in
 * the code cache (bpf/hotspot_walk.h) and writes one record per frame,
 * tied to its native frame by index. So the merge replaces exactly those
 * frames; every native frame between them (libjvm, a JNI library, libc)
 * stays where it ran.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/stack.h"
#include "sampler/java/hsname.h"
#include "sampler/java/hsvm.h"
#include "sampler/java/hswalk.h"
#include "sampler/java/jvmfile.h"
#include "sampler/proc/procinfo.h"
#include "sampler/runtime/rt_int.h"
#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/symbolize.h"
#include "sampler/unwind/twin.h"
#include "store/util/util.h"

/* Looks at a JVM whose layout check fails before it counts as failed
 * (the looks back off from 5 ms: the last after ~0.3 s). */
#define HS_PROTO_LOOKS 7


struct hsrt {
	struct rt_head rt; /* names: a struct hsnames; pdata: pid -> struct hsvm */
	/* one merge's */
	uint32_t index[HS_MAX_FRAMES];
	struct hsjframe jf[HSNAME_MAX_INLINE];
	struct proc *p;
	const struct hsvm *vm;
	const uint64_t *rec;
	struct rt_counts *cnt;
};

static const char *const marker_unreadable = "[java: unreadable]";

static int hs_detect(int fd, const char *path, const struct elf_info *e, struct rtfile *f)
{
	struct jvmfile *jf;
	int err;

	/* Cheap first: only a file that defines the JNI entry. */
	if (!elfsym__find(e, "JNI_CreateJavaVM"))
		return -ENOENT;
	jf = calloc(1, sizeof(*jf));
	if (!jf)
		return -ENOMEM;
	err = jvmfile__read(fd, jf);
	if (err == -ENOENT || err == -ENOEXEC) {
		free(jf);
		return -ENOENT;
	}
	if (err) {
		f->status = -EPROTO;
		snprintf(f->why, sizeof(f->why), "%s: its VM tables cannot be read: %s", path, strerror(-err));
	}
	f->data = jf;
	return 0;
}

static int hs_setup(void *st, struct runtimes *rts, struct proc *p, const struct vma *v,
		    const struct symtab *t, struct rt_proc *c)
{
	struct hsrt *r = st;
	const struct jvmfile *jf = t->rt->data;
	struct hsmem mem = { hsmem__pid_read, &p->pid };
	struct hsvm *vm;
	uint64_t bias;
	char why[160] = "";
	int err;

	(void)rts;
	if (!rt__bias(v, t, &bias))
		return RTS_FAILED;
	vm = calloc(1, sizeof(*vm));
	if (!vm)
		return RTS_FAILED;
	err = hsvm__open(&mem, jf, bias, vm, why, sizeof(why));
	if (err) {
		free(vm);
		if (why[0])
			pr_debug("java: pid %d: %s", (int)p->pid, why);
		/* A JVM caught starting (50 at once) is still writing what
		 * we check: a table entry without its name, a code heap
		 * whose segment map is not reserved yet. Its first looks'
		 * failures are looked at again, later ones are final. */
		if (err == -EPROTO && p->rt.tries < HS_PROTO_LOOKS)
			return RTS_WAIT;
		return err == -EAGAIN ? RTS_WAIT : err == -EOPNOTSUPP ? RTS_UNSUPPORTED :
		       err == -EPROTO ? RTS_LAYOUT : RTS_WAIT;
	}
	c->hs = vm->bpf;
	p->rt.layout = NULL; /* the VM is in r->rt.pdata, by pid */
	if (rt_pdata__put(&r->rt.pdata, p->pid, vm))
		return RTS_FAILED;
	return RTS_WALKED;
}

/* Record i's Java frames (rt__merge_indexed's namer). */
static int name_rec(void *ctx, int i, bool ret, const struct frame *nf, struct frame *out, int max)
{
	struct hsrt *r = ctx;
	struct hsmem mem = { hsmem__pid_read, &r->p->pid };
	int n = hsnames__frames((struct hsnames *)r->rt.names, r->p->pid, &mem, r->vm, r->rec[2 * i], r->rec[2 * i + 1], r->jf,
				HSNAME_MAX_INLINE);

	(void)ret;
	(void)nf;
	if (max <= 0)
		return 0;
	if (n < 0) {
		rt__marker(out, r->rec[2 * i] & HS_ADDR_MASK, n == -ESTALE, HSNAME_FREED, marker_unreadable, r->cnt);
		return 1;
	}
	if (n > max)
		n = max;
	for (int k = 0; k < n; k++) {
		const struct hsjframe *j = &r->jf[k];
		struct frame *o = &out[k];

		memset(o, 0, sizeof(*o));
		/* (a location per method and line: the Method or nmethod, and
		 * the bci, make the address) */
		o->addr = (r->rec[2 * i] & HS_ADDR_MASK) + (uint64_t)(j->bci + 1);
		/* The cache's strings live until its next call: copied. */
		o->name = rt_text__keep(&r->rt.text, j->name);
		o->sysname = rt_text__keep(&r->rt.text, j->sysname);
		o->file = rt_text__keep(&r->rt.text, j->file);
		if (!o->name || !o->sysname || !o->file) {
			o->marker = true;
			o->name = marker_unreadable;
			r->cnt->unreadable++;
			continue;
		}
		o->rt = true;
		o->line = j->line;
		r->cnt->frames++;
	}
	return n;
}

static int hs_merge(void *st, struct proc *p, const struct prof_sample_ev *ev,
		    const struct frame *fr, int n, struct frame *out, int max, struct rt_counts *cnt)
{
	struct hsrt *r = st;
	int nrec = ev->nrt < HS_MAX_FRAMES ? ev->nrt : HS_MAX_FRAMES;

	r->vm = rt_pdata__get(&r->rt.pdata, p->pid);
	if (!r->vm)
		return rt__copy(fr, n, out, max);
	r->p = p;
	r->rec = (const uint64_t *)&ev->frames[ev->nkern + ev->nuser];
	r->cnt = cnt;
	r->rt.text.used = 0;
	for (int i = 0; i < nrec; i++)
		r->index[i] = (uint32_t)(r->rec[2 * i] >> 56);
	return rt__merge_indexed(ev, fr, n, r->index, nrec, name_rec, r, out, max);
}

/* The BPF step (bpf/hotspot_walk.h's hotspot_step) for the pending walk. */
static int hs_twin_step(void *st, struct proc *p, struct twin_regs *r, const struct twin_mem *mem,
			const struct twin_map *map, int index, uint64_t rec[2])
{
	const struct hsvm *vm = rt_pdata__get(&((struct hsrt *)st)->rt.pdata, p->pid);
	struct rt_twin_mem tm = { p->pid, mem };
	struct hsmem m = { rt__twin_read, &tm };
	struct hs_regs hr = { r->pc, r->sp, r->bp_ok ? r->bp : 0, 0, 0, 0 };
	uint64_t look = r->pc - (r->exact ? 0 : 1);

	if (!vm || map->kind != TWIN_FP || !hswalk__owns(&vm->bpf, look))
		return 0;
	/* (the leaf's r13, rax and rbx are not handed over: the
	 * interpreter's bcp comes from its frame slot, and a leaf in a
	 * method entry is read by the rbp rules) */
	if (hswalk__step(&m, &vm->bpf, &hr, index == 0 && r->exact, (uint32_t)index, rec))
		return -PROF_UE_BAD_FRAME;
	r->pc = hr.pc;
	r->sp = hr.sp;
	r->bp = hr.bp;
	r->bp_ok = true;
	r->exact = false;
	return 2;
}

static uint64_t hs_name_errors(void *st)
{
	struct hsnames_stats s;

	hsnames__stats((struct hsnames *)((struct hsrt *)st)->rt.names, &s);
	return s.err_read + s.err_bad;
}

static const char *const hs_ends[HS_E_MAX] = {
	[HS_E_OK] = "ok", [HS_E_NO_BLOB] = "no_code_blob", [HS_E_BAD_BLOB] = "bad_code_blob",
	[HS_E_READ] = "read_failed", [HS_E_BAD_FRAME] = "bad_frame", [HS_E_INTERP] = "bad_interpreter_frame",
	[HS_E_TRUNC] = "no_room",
};

const struct rt_ops rt_hotspot_ops = {
	.name = "java",
	.ends_what = "steps",
	.kind = RT_HOTSPOT,
	.ends = hs_ends,
	.ends_map = "hs_ends",
	.nends = HS_E_MAX,
	.stale_reason = "code_freed",
	.detect = hs_detect,
	.file_free = free,
	.state_size = sizeof(struct hsrt),
	.names_new = hsnames__view_new,
	.names_free = hsnames__view_free,
	.setup = hs_setup,
	.merge = hs_merge,
	.name_errors = hs_name_errors,
	.twin_step = hs_twin_step,
};
