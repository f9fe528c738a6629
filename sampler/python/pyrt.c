/*
 * pyrt.c - CPython as a runtime of the pipeline (sampler/runtime/): the
 * set-up of a process's BPF walk and the merge of its Python frames.
 *
 * Set-up: the load bias from the mapping; the interpreter's thread-state
 * key from its _PyRuntime (read from the process: the key is created at
 * start-up, so a process looked at before that waits); where glibc keeps
 * that key's value for each thread (glibc 2.36's TSD block). One
 * process_vm_readv per Python process, none per sample.
 *
 * The merge keeps every native frame except the eval loop's, whose place
 * each group of Python frames takes (a group: the frames one C call of
 * _PyEval_EvalFrameDefault ran, newest first; BPF marks each group's last
 * frame). A stack whose native walk ended early (a marker) gets the
 * Python frames still unplaced before its marker, so nothing walked is
 * lost and nothing is invented; an eval frame left without a group (the
 * Python walk was cut) stays as it is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/stack.h"
#include "sampler/proc/procinfo.h"
#include "sampler/python/pycode.h"
#include "sampler/python/pyproc.h"
#include "sampler/runtime/rt_int.h"
#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/symbolize.h"
#include "store/util/util.h"

/* glibc 2.36 (x86-64): struct pthread's specific_1stblock, keys < 32:
 * the value of key k is at fsbase + TSD_BLOCK + 16 k + 8. */
#define GLIBC_TSD_MINOR 36
#define GLIBC_TSD_BLOCK 0x310
#define GLIBC_TSD_KEYS 32


struct pyrt {
	struct rt_head rt; /* names: a struct pycodes */
};

static const char *const marker_stale = "[python: code object freed]";
static const char *const marker_unreadable = "[python: unreadable]";

static int py_detect(int fd, const char *path, const struct elf_info *e, struct rtfile *f)
{
	struct pyfile *pf = pyfile__detect(fd, path, e);

	if (!pf)
		return errno == ENOENT ? -ENOENT : -ENOMEM;
	f->status = pf->status;
	snprintf(f->why, sizeof(f->why), "%s", pf->why);
	f->data = pf;
	return 0;
}

/* p's mapping of a file named libc.so*, or NULL. */
static const struct vma *libc_vma(const struct proc *p)
{
	for (size_t i = 0; p->maps && i < p->maps->n; i++) {
		const struct vma *v = &p->maps->v[i];
		const char *b = strrchr(v->path, '/');

		if (v->file && !strncmp(b ? b + 1 : v->path, "libc.so", 7))
			return v;
	}
	return NULL;
}

/*
 * The glibc of p, once its symbols are loaded: GLIBC_2.N's N; 0 while
 * they are not (loading, or a failed load the loader tries again); -1
 * when p maps no libc.so (static, musl) or one that is not glibc. "Maps
 * no libc" needs maps read after ran_ns, a time p was known to run
 * interpreter code (so ld.so was done): the maps read at exec predate
 * ld.so's mapping of libc.
 */
static int glibc_of(struct runtimes *rts, struct proc *p, int64_t ran_ns)
{
	const struct vma *v = libc_vma(p);
	const struct symtab *t;

	if (!v) {
		if (!rt__maps_fresh(rts, p, ran_ns))
			return 0; /* not re-read yet (its back-off): look again */
		v = libc_vma(p);
	}
	if (!v)
		return -1;
	v = rt__vma(rts, p, v->start);
	t = v ? dso__tab(v->dso) : NULL;
	/* Loading, or a load that failed (it is tried again): not known
	 * yet, never "not glibc". */
	if (!t)
		return 0;
	return t->glibc_minor ? t->glibc_minor : -1;
}

static int py_setup(void *st, struct runtimes *rts, struct proc *p, const struct vma *v,
		    const struct symtab *t, struct rt_proc *c)
{
	const struct pyfile *pf = t->rt->data;
	const struct pylayout *l = pf->l;
	struct {
		int32_t init;
		uint32_t key;
	} tss;
	struct py_proc *py = &c->py;
	uint64_t bias;
	int g, err;

	(void)st;
	if (!rt__bias(v, t, &bias))
		return RTS_FAILED;
	/* The key first: once the interpreter made it, ld.so has mapped
	 * every library, so maps read from now on show libc if there is
	 * one (set-up may start from the maps read at exec, before ld.so). */
	err = rt__read(p->pid, pf->pi.runtime + bias + (uint64_t)l->rt_tss_key, &tss, sizeof(tss));
	if (err || tss.init != 1)
		return RTS_WAIT; /* not initialised yet (or gone: the wait ends with it) */
	if (!p->rt.aux)
		p->rt.aux = (uint64_t)now_mono_ns(); /* when it was seen initialised */
	g = glibc_of(rts, p, (int64_t)p->rt.aux); /* v is invalid after this */
	if (g == 0)
		return RTS_WAIT; /* libc's symbols are not loaded (yet) */
	if (g != GLIBC_TSD_MINOR) {
		pr_debug("python: pid %d: glibc 2.%d, TSD layout unknown", (int)p->pid, g);
		return RTS_TLS;
	}
	if (tss.key >= GLIBC_TSD_KEYS) {
		pr_debug("python: pid %d: TSS key %u past glibc's first block", (int)p->pid, tss.key);
		return RTS_TLS;
	}
	py->tsd_off = GLIBC_TSD_BLOCK + 16ull * tss.key + 8;
	py->minor = (uint8_t)l->minor;
	py->ts_frame = l->ts_frame;
	py->ts_cframe = l->ts_cframe;
	py->cframe_current_frame = l->cframe_current_frame;
	py->fr_code = l->fr_code;
	py->fr_previous = l->fr_previous;
	py->fr_instr = l->fr_instr;
	py->fr_is_entry = l->fr_is_entry;
	py->fr_owner = l->fr_owner;
	py->co_firstlineno = l->co_firstlineno;
	py->co_filename = l->co_filename;
	py->co_name = l->co_name;
	py->co_code_adaptive = l->co_code_adaptive;
	/* Every field must lie in the bytes BPF reads at once. */
	if (l->fr_code + 8 > PY_FRAME_READ || l->fr_previous + 8 > PY_FRAME_READ ||
	    l->fr_instr + 8 > PY_FRAME_READ + 4 || l->fr_owner >= PY_FRAME_READ ||
	    l->co_filename - l->co_firstlineno + 8 > PY_CODE_READ ||
	    l->co_name - l->co_firstlineno + 8 > PY_CODE_READ ||
	    l->co_filename < l->co_firstlineno || l->co_name < l->co_firstlineno)
		return RTS_LAYOUT;
	p->rt.layout = l;
	p->rt.anchor_lo[0] = pf->pi.eval_frame + bias;
	p->rt.anchor_hi[0] = p->rt.anchor_lo[0] + pf->pi.eval_frame_size;
	if (pf->cold) {
		p->rt.anchor_lo[1] = pf->cold + bias;
		p->rt.anchor_hi[1] = p->rt.anchor_lo[1] + pf->cold_size;
	}
	return RTS_WALKED;
}

/* Is native frame f (index i: 0 is the leaf) in p's eval loop? */
static bool is_eval(const struct proc *p, const struct frame *f, int i)
{
	uint64_t a;

	if (f->kernel || f->marker || f->rt || !f->addr)
		return false;
	a = i ? f->addr - 1 : f->addr; /* a return address: the call is before it */
	return (a >= p->rt.anchor_lo[0] && a < p->rt.anchor_hi[0]) ||
	       (a >= p->rt.anchor_lo[1] && a < p->rt.anchor_hi[1]);
}

/* One Python frame named into *o; names go to r->text. */
static void name_frame(struct pyrt *r, struct proc *p, const struct py_frame *pf, struct frame *o,
		       struct rt_counts *cnt)
{
	const struct pycode *pc = NULL;
	uint64_t code = pf->code & ~PY_FRAME_ENTRY;
	int err = pycodes__get((struct pycodes *)r->rt.names, p->pid, p->rt.layout, code, pf->stamp, &pc);
	const char *name = err ? NULL : rt_text__display(&r->rt.text, pyproc__display_name, pc->qualname, pc->filename);
	int32_t line = 0;

	if (!name) {
		rt__marker(o, code, err == -ESTALE, marker_stale, marker_unreadable, cnt);
		return;
	}
	memset(o, 0, sizeof(*o));
	o->addr = code;
	o->name = name;
	/* The cache's strings live until its next get (which may evict
	 * this entry for the next frame's): copied, as far as they fit. */
	o->sysname = rt_text__keep(&r->rt.text, pc->qualname);
	o->file = rt_text__keep(&r->rt.text, pc->filename);
	if (!o->sysname || !o->file) {
		o->name = marker_unreadable;
		o->marker = true;
		o->sysname = o->file = NULL;
		cnt->unreadable++;
		return;
	}
	o->rt = true;
	o->start_line = pc->firstlineno;
	pycode__line(pc, pf->instr, &line);
	o->line = line;
	cnt->frames++;
}

static int py_merge(void *st, struct proc *p, const struct prof_sample_ev *ev,
		    const struct frame *fr, int n, struct frame *out, int max, struct rt_counts *cnt)
{
	struct pyrt *r = st;
	const struct py_frame *py = (const struct py_frame *)(const void *)&ev->frames[ev->nkern + ev->nuser];
	int k = 0, m = 0, npy = ev->nrt;

	r->rt.text.used = 0;

	for (int i = 0; i < n && m < max; i++) {
		bool eval = is_eval(p, &fr[i], i - ev->nkern);
		bool end = fr[i].marker && !fr[i].kernel;

		if ((eval || end) && k < npy) {
			/* One group for an eval frame; all that is left before
			 * a marker that ends the user stack. */
			do {
				name_frame(r, p, &py[k], &out[m++], cnt);
			} while (m < max && ++k < npy && (end || !(py[k - 1].code & PY_FRAME_ENTRY)));
			if (eval)
				continue;
		}
		if (m < max)
			out[m++] = fr[i];
	}
	while (k < npy && m < max)
		name_frame(r, p, &py[k++], &out[m++], cnt);
	return m;
}

static uint64_t py_name_errors(void *st)
{
	struct pycodes_stats s;

	pycodes__stats((struct pycodes *)((struct pyrt *)st)->rt.names, &s);
	return s.err_read + s.err_string + s.table_big + s.table_bad;
}

static const char *const py_ends[PY_END_MAX] = {
	[PY_END_OK] = "complete", [PY_END_IDLE] = "no_python_frames",
	[PY_END_TRUNC] = "truncated", [PY_END_READ] = "read_failed",
};

const struct rt_ops rt_python_ops = {
	.name = "python",
	.kind = RT_PYTHON,
	.ends = py_ends,
	.ends_map = "py_ends",
	.nends = PY_END_MAX,
	.stale_reason = "code_object_freed",
	.detect = py_detect,
	.file_free = free,
	.state_size = sizeof(struct pyrt),
	.names_new = pycodes__view_new,
	.names_free = pycodes__view_free,
	.setup = py_setup,
	.merge = py_merge,
	.name_errors = py_name_errors,
};
