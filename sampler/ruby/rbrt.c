/*
 * rbrt.c - CRuby as a runtime of the pipeline (sampler/runtime/): a
 * libruby found by the loader (rbproc__detect), a process's set-up
 * (rbproc__setup), and its samples' Ruby frames named (rbcodes__name) and
 * put in place of the rb_vm_exec frames that ran them (rbmerge).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/stack.h"
#include "sampler/proc/procinfo.h"
#include "sampler/ruby/rbcode.h"
#include "sampler/ruby/rbproc.h"
#include "sampler/runtime/rt_int.h"
#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/symbolize.h"
#include "store/util/prom.h"
#include "store/util/util.h"


struct rbrt {
	struct rt_head rt; /* names: a struct rbcodes */
	struct rbname nm[RB_MAX_FRAMES + 1];
	struct rbm_item items[STACK_MAX_FRAMES];
	uint8_t kind[2 * PROF_MAX_FRAMES];
	bool drop[2 * PROF_MAX_FRAMES]; /* native frames of the VM's loop */
};

static int rb_detect(int fd, const char *path, const struct elf_info *e, struct rtfile *f)
{
	struct rbinfo *ri;
	int err;

	/* Cheap first: only a file with the VM's entry among its functions. */
	if (!elfsym__find(e, "rb_vm_exec"))
		return -ENOENT;
	ri = calloc(1, sizeof(*ri));
	if (!ri)
		return -ENOMEM;
	err = rbproc__detect(fd, path, ri);
	if (err) {
		free(ri);
		return err;
	}
	f->status = ri->status;
	snprintf(f->why, sizeof(f->why), "%s", ri->why);
	f->data = ri;
	return 0;
}

static int rb_setup(void *st, struct runtimes *rts, struct proc *p, const struct vma *v,
		    const struct symtab *t, struct rt_proc *c)
{
	const struct rbinfo *ri = t->rt->data;
	uint64_t bias, symbols;
	int err;

	(void)st;
	(void)rts;
	if (!rt__bias(v, t, &bias))
		return RTS_FAILED;
	err = rbproc__setup(p->pid, &ri->rf, ri->l, bias, &c->rb, &symbols);
	switch (err) {
	case 0:
		break;
	case -EAGAIN:
		return RTS_WAIT;
	case -EOPNOTSUPP:
		pr_debug("ruby: pid %d: a TLS model we do not walk", (int)p->pid);
		return RTS_TLS;
	case -EPROTO:
		return RTS_LAYOUT;
	default:
		return RTS_WAIT; /* unreadable now: gone, or not mapped yet */
	}
	p->rt.layout = ri->l;
	p->rt.aux = symbols;
	p->rt.anchor_lo[0] = ri->rf.vm_exec + bias;
	p->rt.anchor_hi[0] = p->rt.anchor_lo[0] + ri->rf.vm_exec_size;
	return RTS_WALKED;
}

/* The Ruby record i named into *o; names go to r->text. */
static void name_frame(struct rbrt *r, const struct rbname *nm, struct frame *o, struct rt_counts *cnt)
{
	const char *name = nm->kind == RBN_GC || nm->kind == RBN_STALE || nm->kind == RBN_UNREADABLE
				   ? NULL
				   : rt_text__display(&r->rt.text, rbcode__display, nm->label, nm->path);

	if (nm->kind == RBN_GC) { /* the GC's time: a marker counted nowhere */
		memset(o, 0, sizeof(*o));
		o->marker = true;
		o->addr = nm->addr;
		o->name = RBNAME_GC;
		return;
	}
	if (!name) {
		rt__marker(o, nm->addr, nm->kind == RBN_STALE, RBNAME_STALE, RBNAME_UNREADABLE, cnt);
		return;
	}
	memset(o, 0, sizeof(*o));
	o->addr = nm->addr;
	o->name = name;
	o->rt = true;
	o->sysname = nm->label;
	/* The file as Ruby reports it: its <internal:PATH> stays so. */
	o->file = nm->realpath && *nm->realpath && strncmp(nm->path, "<internal:", 10) ? nm->realpath : nm->path;
	o->line = nm->line;
	cnt->frames++;
}

static int rb_merge(void *st, struct proc *p, const struct prof_sample_ev *ev,
		    const struct frame *fr, int n, struct frame *out, int max, struct rt_counts *cnt)
{
	struct rbrt *r = st;
	const struct rb_frame *rec = (const struct rb_frame *)(const void *)&ev->frames[ev->nkern + ev->nuser];
	int m = ev->nrt < RB_MAX_FRAMES + 1 ? ev->nrt : RB_MAX_FRAMES + 1, k, o = 0;

	r->rt.text.used = 0;

	if (n > (int)sizeof(r->kind))
		n = sizeof(r->kind);
	for (int i = 0; i < n; i++) {
		const struct frame *f = &fr[i];
		uint64_t a = f->addr - (i > ev->nkern ? 1 : 0); /* a return address: its call */

		r->kind[i] = RBM_NATIVE;
		if (f->marker && !f->kernel)
			r->kind[i] = RBM_MARKER;
		else if (!f->kernel && !f->marker && a >= p->rt.anchor_lo[0] && a < p->rt.anchor_hi[0])
			r->kind[i] = RBM_ANCHOR;
	}
	/* The VM's loop (vm_exec_core, static in libruby, so unnamed) runs
	 * the Ruby code rb_vm_exec's frames stand for: the native frame
	 * right under an anchor, unnamed and in the same file, is that loop,
	 * and goes with its anchor. Kept, a Ruby method's own time read as
	 * libruby+0x... and `pprof -top` blamed that for everything. */
	for (int i = 1; i < n; i++)
		r->drop[i - 1] = r->kind[i] == RBM_ANCHOR && r->kind[i - 1] == RBM_NATIVE &&
				 !fr[i - 1].name && !fr[i - 1].kernel && fr[i - 1].vma &&
				 fr[i - 1].vma == fr[i].vma;
	if (n)
		r->drop[n - 1] = false;
	rbcodes__name((struct rbcodes *)r->rt.names, p->pid, p->rt.layout, p->rt.aux, rec, m, r->nm);
	k = rbmerge(r->kind, n, rec, m, r->items, max < STACK_MAX_FRAMES ? max : STACK_MAX_FRAMES);
	for (int i = 0; i < k && o < max; i++) {
		const struct rbm_item *it = &r->items[i];

		if (it->ruby == 0 && r->drop[it->i])
			continue;
		if (it->ruby == 0)
			out[o++] = fr[it->i];
		else if (it->ruby == 2)
			name_frame(r, &(struct rbname){ .kind = RBN_GC }, &out[o++], cnt);
		else
			name_frame(r, &r->nm[it->i], &out[o++], cnt);
	}
	return o;
}

static uint64_t rb_name_errors(void *st)
{
	struct rbcodes_stats s;

	rbcodes__stats((struct rbcodes *)((struct rbrt *)st)->rt.names, &s);
	return s.err_read + s.err_object + s.no_lines;
}

static void rb_extra_metrics(struct buf *out, const uint64_t *extra)
{
	prom__counter(out, "proffs_ruby_gc_samples_total",
		      "Samples of Ruby threads taken while their GC ran (a [ruby: gc] frame).", extra[0]);
}

static const char *const rb_ends[RB_END_MAX] = {
	[RB_END_OK] = "complete", [RB_END_IDLE] = "no_ruby_frames",
	[RB_END_TRUNC] = "truncated", [RB_END_READ] = "read_failed",
};

const struct rt_ops rt_ruby_ops = {
	.name = "ruby",
	.kind = RT_RUBY,
	.ends = rb_ends,
	.ends_map = "rb_ends",
	.nends = RB_END_MAX,
	.nextra = 1, /* RB_CNT_GC */
	.stale_reason = "object_freed",
	.detect = rb_detect,
	.file_free = free,
	.state_size = sizeof(struct rbrt),
	.names_new = rbcodes__view_new,
	.names_free = rbcodes__view_free,
	.setup = rb_setup,
	.merge = rb_merge,
	.name_errors = rb_name_errors,
	.extra_metrics = rb_extra_metrics,
};
