/*
 * pyproc.c - setting up the BPF walk of a Python process, and merging
 * what it walked into the native stack.
 *
 * Set-up is lazy and driven by samples: the symbol loader already reads
 * every file a sample touches, so it also tells whether the file is an
 * interpreter (pyfile__detect, once per file, cached with its symbols).
 * The first sample of a process that runs in such a file sets the walk
 * up: the load bias from the mapping, the interpreter's thread-state key
 * from its _PyRuntime (read from the process: the key is created at
 * start-up, so a process sampled before that waits and is looked at
 * again), and where glibc keeps that key's value for each thread. That
 * costs one process_vm_readv per Python process, none per sample.
 *
 * The merge keeps every native frame except the eval loop's, whose
 * place each group of Python frames takes (a group: the frames one C
 * call of _PyEval_EvalFrameDefault ran, newest first; BPF marks each
 * group's last frame). A stack whose native walk ended early (a marker)
 * gets the Python frames still unplaced before its marker, so nothing
 * walked is lost and nothing is invented; an eval frame left without a
 * group (the Python walk was cut) stays as it is.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/batch/stack.h"
#include "sampler/proc/procinfo.h"
#include "sampler/python/pycode.h"
#include "sampler/python/pyproc.h"
#include "sampler/ring/sampler.h"
#include "sampler/symbols/elfsym.h"
#include "store/util/util.h"

/* glibc 2.36 (x86-64): struct pthread's specific_1stblock, keys < 32:
 * the value of key k is at fsbase + TSD_BLOCK + 16 k + 8. */
#define GLIBC_TSD_MINOR 36
#define GLIBC_TSD_BLOCK 0x310
#define GLIBC_TSD_KEYS 32

/* A process whose interpreter is not initialised yet is looked at again
 * after this, doubling up to a second. */
#define WAIT_FIRST_NS (20 * 1000000LL)
#define WAIT_MAX_NS (1000 * 1000000LL)
/* ... that many times (about a minute) before giving up on it. */
#define WAIT_TRIES 64

/* A process none of whose frames ran in an interpreter file is looked at
 * again after this. */
#define LOOK_AGAIN_NS (100 * 1000000LL)

/* Bytes of display names one merge may write. */
#define NAMES_BYTES (64u << 10)

struct pyprocs {
	struct sampler *s;
	struct procs *ps;
	struct pycodes *codes;
	struct pyprocs_stats st;
	char names[NAMES_BYTES];
};

static const char *const marker_stale = "[python: code object freed]";
static const char *const marker_unreadable = "[python: unreadable]";

struct pyfile *pyfile__detect(int fd, const char *path, const struct elf_info *e)
{
	const char *b = strrchr(path, '/'), *env = getenv("PROFFS_PY_WITHHOLD");
	const struct elf_sym *cold;
	struct pyfile *pf;
	char v[16];
	int err;

	/* Cheap first: only a file with the eval loop among its functions. */
	if (!elfsym__find(e, "_PyEval_EvalFrameDefault")) {
		errno = ENOENT;
		return NULL;
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	err = pyinterp__read(fd, b ? b + 1 : path, &pf->pi);
	if (err == -ENOENT || err == -ENOEXEC || err == -ENOMEM) {
		free(pf);
		errno = -err;
		return NULL;
	}
	cold = elfsym__find(e, "_PyEval_EvalFrameDefault.cold");
	if (cold) {
		pf->cold = cold->addr;
		pf->cold_size = cold->size;
	}
	snprintf(v, sizeof(v), "3.%d", pf->pi.minor);
	if (err) {
		pf->status = err == -EOPNOTSUPP ? -EOPNOTSUPP : -EPROTO;
		snprintf(pf->why, sizeof(pf->why), "%s: %s", path, strerror(-err));
	} else if (env && !strcmp(env, v)) {
		pf->status = -EOPNOTSUPP;
		snprintf(pf->why, sizeof(pf->why), "%s: 3.%d withheld (PROFFS_PY_WITHHOLD)", path,
			 pf->pi.minor);
	} else if (!pf->pi.eval_frame) {
		pf->status = -EOPNOTSUPP;
		snprintf(pf->why, sizeof(pf->why), "%s: no _PyEval_EvalFrameDefault symbol", path);
	} else if (!(pf->l = pylayout__get(pf->pi.minor))) {
		pf->status = -EOPNOTSUPP;
		snprintf(pf->why, sizeof(pf->why), "%s: no layout for 3.%d", path, pf->pi.minor);
	} else if ((err = pylayout__check(pf->l, fd, &pf->pi, pf->why, sizeof(pf->why)))) {
		pf->status = -EPROTO;
		pf->l = NULL;
		if (!pf->why[0])
			snprintf(pf->why, sizeof(pf->why), "%s: %s", path, strerror(-err));
	}
	if (pf->status)
		pr_debug("python: %s", pf->why);
	return pf;
}

int pyfile__glibc_minor(int fd)
{
	Elf_Scn *scn = NULL;
	int best = -ENOENT;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t off = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_GNU_verdef)
			continue;
		d = elf_getdata(scn, NULL);
		/* sh_info: the number of definitions; each is bounded by the
		 * section's data (libelf checks vd_next and vda offsets). */
		for (unsigned i = 0; d && i < sh.sh_info && i < 4096; i++) {
			GElf_Verdef vd;
			GElf_Verdaux va;
			const char *name;
			int maj, min;

			if (!gelf_getverdef(d, (int)off, &vd) ||
			    !gelf_getverdaux(d, (int)(off + vd.vd_aux), &va))
				break;
			name = elf_strptr(elf, sh.sh_link, va.vda_name);
			if (name && sscanf(name, "GLIBC_%d.%d", &maj, &min) == 2 && maj == 2 &&
			    min > best)
				best = min;
			if (!vd.vd_next)
				break;
			off += vd.vd_next;
		}
	}
	elf_end(elf);
	return best;
}

struct pyprocs *pyprocs__new(struct sampler *s, struct procs *ps)
{
	struct pyprocs *pp = calloc(1, sizeof(*pp));

	if (!pp)
		return NULL;
	pp->s = s;
	pp->ps = ps;
	pp->codes = pycodes__new(0);
	if (!pp->codes) {
		free(pp);
		return NULL;
	}
	return pp;
}

void pyprocs__free(struct pyprocs *pp)
{
	if (!pp)
		return;
	pycodes__free(pp->codes);
	free(pp);
}

static int rmem(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EFAULT;
}

static void enter(struct pyprocs *pp, struct proc *p, int state)
{
	static const char *const names[PYP_MAX] = {
		[PYP_WALKED] = "walked", [PYP_UNSUPPORTED] = "unsupported",
		[PYP_LAYOUT] = "layout check failed", [PYP_TLS] = "unknown TLS layout",
		[PYP_FAILED] = "failed",
	};

	p->py.state = (uint8_t)state;
	pp->st.procs[state]++;
	pr_debug("python: pid %d (%s): %s after %d looks", (int)p->pid, p->comm,
		 names[state] ? names[state] : "?", p->py.tries + 1);
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
 * when p maps no libc.so (static, musl) or one that is not glibc.
 *
 * "Maps no libc" needs maps read after p ran interpreter code: the maps
 * read at exec (or 10 ms later) may predate ld.so's mapping of libc, and
 * samples that land in a mapping we know never ask for them again. ld.so
 * maps every needed library before any of their code runs, so maps read
 * after p's first sample in the interpreter are whole. Until then they
 * are read again here (which invalidates vma pointers: see pyprocs__see).
 */
static int glibc_of(struct pyprocs *pp, struct proc *p)
{
	const struct vma *v = libc_vma(p);
	const struct symtab *t;

	if (!v && p->maps_ns <= p->py.seen_ns) {
		procs__refresh(pp->ps, p, true, false);
		if (p->maps_ns <= p->py.seen_ns)
			return 0; /* not re-read yet (its back-off): look again */
		v = libc_vma(p);
	}
	if (!v)
		return -1;
	v = procs__vma(pp->ps, p, v->start);
	t = v ? dso__tab(v->dso) : NULL;
	/* Loading, or a load that failed (it is tried again): not known
	 * yet, never "not glibc". */
	if (!t)
		return 0;
	return t->glibc_minor ? t->glibc_minor : -1;
}

static void wait_more(struct proc *p, int64_t now_ns)
{
	int64_t d = WAIT_FIRST_NS << (p->py.tries < 6 ? p->py.tries : 6);

	p->py.state = PYP_WAIT;
	p->py.tries++;
	p->py.next_ns = now_ns + (d < WAIT_MAX_NS ? d : WAIT_MAX_NS);
}

/* Sets up the walk of p, whose interpreter file is mapped by v. */
static void setup(struct pyprocs *pp, struct proc *p, const struct vma *v, const struct symtab *t,
		  int64_t now_ns)
{
	const struct pyfile *pf = t->py;
	const struct pylayout *l = pf->l;
	struct {
		int32_t init;
		uint32_t key;
	} tss;
	struct py_proc c = { 0 };
	uint64_t va, bias;
	int g, err;

	if (pf->status) {
		enter(pp, p, pf->status == -EOPNOTSUPP ? PYP_UNSUPPORTED : PYP_LAYOUT);
		return;
	}
	if (!elfsym__off_to_vaddr(&t->elf, v->pgoff, &va)) {
		enter(pp, p, PYP_FAILED);
		return;
	}
	bias = v->start - va;
	if (!p->py.seen_ns)
		p->py.seen_ns = now_ns;
	g = glibc_of(pp, p); /* v is invalid after this */
	if (g == 0) {
		/* libc's symbols are not loaded (yet): look again. */
		if (p->py.tries >= WAIT_TRIES || p->exit_ns)
			enter(pp, p, PYP_FAILED);
		else
			wait_more(p, now_ns);
		return;
	}
	if (g != GLIBC_TSD_MINOR) {
		pr_debug("python: pid %d: glibc 2.%d, TSD layout unknown", (int)p->pid, g);
		enter(pp, p, PYP_TLS);
		return;
	}
	err = rmem(p->pid, pf->pi.runtime + bias + (uint64_t)l->rt_tss_key, &tss, sizeof(tss));
	if (err || tss.init != 1) {
		/* Not initialised yet (or gone: the wait ends with it). */
		if (p->py.tries >= WAIT_TRIES || p->exit_ns)
			enter(pp, p, PYP_FAILED);
		else
			wait_more(p, now_ns);
		return;
	}
	if (tss.key >= GLIBC_TSD_KEYS) {
		pr_debug("python: pid %d: TSS key %u past glibc's first block", (int)p->pid, tss.key);
		enter(pp, p, PYP_TLS);
		return;
	}
	c.tsd_off = GLIBC_TSD_BLOCK + 16ull * tss.key + 8;
	c.minor = (uint8_t)l->minor;
	c.ts_frame = l->ts_frame;
	c.ts_cframe = l->ts_cframe;
	c.cframe_current_frame = l->cframe_current_frame;
	c.fr_code = l->fr_code;
	c.fr_previous = l->fr_previous;
	c.fr_instr = l->fr_instr;
	c.fr_is_entry = l->fr_is_entry;
	c.fr_owner = l->fr_owner;
	c.co_firstlineno = l->co_firstlineno;
	c.co_filename = l->co_filename;
	c.co_name = l->co_name;
	c.co_code_adaptive = l->co_code_adaptive;
	/* Every field must lie in the bytes BPF reads at once. */
	if (l->fr_code + 8 > PY_FRAME_READ || l->fr_previous + 8 > PY_FRAME_READ ||
	    l->fr_instr + 8 > PY_FRAME_READ + 4 || l->fr_owner >= PY_FRAME_READ ||
	    l->co_filename - l->co_firstlineno + 8 > PY_CODE_READ ||
	    l->co_name - l->co_firstlineno + 8 > PY_CODE_READ ||
	    l->co_filename < l->co_firstlineno || l->co_name < l->co_firstlineno) {
		enter(pp, p, PYP_LAYOUT);
		return;
	}
	err = sampler__py_set(pp->s, p->pid, &c);
	if (err) {
		pr_debug("python: pid %d: cannot set its walk up: %s", (int)p->pid, strerror(-err));
		enter(pp, p, PYP_FAILED);
		return;
	}
	p->py.l = l;
	p->py.eval_lo = pf->pi.eval_frame + bias;
	p->py.eval_hi = p->py.eval_lo + pf->pi.eval_frame_size;
	if (pf->cold) {
		p->py.cold_lo = pf->cold + bias;
		p->py.cold_hi = p->py.cold_lo + pf->cold_size;
	}
	enter(pp, p, PYP_WALKED);
}

void pyprocs__see(struct pyprocs *pp, struct proc *p, const struct frame *fr, int n,
		  int64_t now_ns)
{
	if (!p || p->exit_ns)
		return;
	if ((p->py.state != PYP_UNKNOWN && p->py.state != PYP_WAIT) || now_ns < p->py.next_ns)
		return;
	for (int i = 0; i < n; i++) {
		const struct vma *v = fr[i].vma;
		const struct symtab *t;

		if (fr[i].kernel || fr[i].marker || !v || !v->file || !v->dso)
			continue;
		t = dso__tab(v->dso);
		if (t && t->py) {
			setup(pp, p, v, t, now_ns);
			return;
		}
	}
	/* None here (a process that is not Python, or a sample outside its
	 * interpreter, or its file still loading): not every sample of it
	 * needs this loop on the drain path. */
	p->py.next_ns = now_ns + LOOK_AGAIN_NS;
}

void pyprocs__forget(struct pyprocs *pp, pid_t pid)
{
	pycodes__forget(pp->codes, pid);
}

/* Is native frame f (index i: 0 is the leaf) in p's eval loop? */
static bool is_eval(const struct proc *p, const struct frame *f, int i)
{
	uint64_t a;

	if (f->kernel || f->marker || f->python || !f->addr)
		return false;
	a = i ? f->addr - 1 : f->addr; /* a return address: the call is before it */
	return (a >= p->py.eval_lo && a < p->py.eval_hi) ||
	       (a >= p->py.cold_lo && a < p->py.cold_hi);
}

void pyproc__display_name(const char *qualname, const char *path, char *out, size_t cap)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	const char *f = NULL, *s;

	for (size_t i = 0; i < 2 && !f; i++)
		if ((s = strstr(path, roots[i])))
			f = s + strlen(roots[i]);
	/* The standard library: .../lib/python3.N/ */
	for (s = path; !f && (s = strstr(s, "/lib/python")); s++) {
		const char *d = s + strlen("/lib/python");

		while ((*d >= '0' && *d <= '9') || *d == '.')
			d++;
		if (*d == '/' && d > s + strlen("/lib/python"))
			f = d + 1;
	}
	if (!f) {
		s = strrchr(path, '/');
		f = s ? s + 1 : path;
	}
	snprintf(out, cap, "%s (%s)", qualname, *f ? f : path);
}

/* One Python frame of ev (index k) named into *o; names go to pp->names
 * at *used. Returns false when it is a marker instead. */
static void name_frame(struct pyprocs *pp, struct proc *p, const struct py_frame *pf,
		       struct frame *o, size_t *used)
{
	const struct pycode *pc = NULL;
	uint64_t code = pf->code & ~PY_FRAME_ENTRY;
	int err = pycodes__get(pp->codes, p->pid, p->py.l, code, pf->stamp, &pc);
	int32_t line = 0;
	size_t room = NAMES_BYTES - *used;

	memset(o, 0, sizeof(*o));
	o->addr = code;
	if (err || room < 64) {
		o->marker = true;
		o->name = err == -ESTALE ? marker_stale : marker_unreadable;
		if (err == -ESTALE)
			pp->st.stale++;
		else
			pp->st.unreadable++;
		return;
	}
	pyproc__display_name(pc->qualname, pc->filename, pp->names + *used, room);
	o->name = pp->names + *used;
	*used += strlen(o->name) + 1;
	o->python = true;
	o->sysname = pc->qualname;
	o->file = pc->filename;
	o->start_line = pc->firstlineno;
	pycode__line(pc, pf->instr, &line);
	o->line = line;
	pp->st.frames++;
}

int pyprocs__merge(struct pyprocs *pp, struct proc *p, const struct prof_sample_ev *ev,
		   const struct frame *fr, int n, struct frame *out, int max)
{
	const struct py_frame *py;
	int k = 0, m = 0, npy = ev->npy;
	size_t used = 0;

	if (!p || p->py.state != PYP_WALKED || !npy || !p->py.l) {
		if (n > max)
			n = max;
		memcpy(out, fr, (size_t)n * sizeof(*fr));
		return n;
	}
	py = (const struct py_frame *)(const void *)&ev->frames[ev->nkern + ev->nuser];
	for (int i = 0; i < n && m < max; i++) {
		bool eval = is_eval(p, &fr[i], i - ev->nkern);
		bool end = fr[i].marker && !fr[i].kernel;

		if ((eval || end) && k < npy) {
			/* One group for an eval frame; all that is left before
			 * a marker that ends the user stack. */
			do {
				name_frame(pp, p, &py[k], &out[m++], &used);
			} while (m < max && ++k < npy && (end || !(py[k - 1].code & PY_FRAME_ENTRY)));
			if (eval)
				continue;
		}
		if (m < max)
			out[m++] = fr[i];
	}
	while (k < npy && m < max)
		name_frame(pp, p, &py[k++], &out[m++], &used);
	return m;
}

void pyprocs__stats(struct pyprocs *pp, struct pyprocs_stats *st)
{
	struct pycodes_stats cs;

	*st = pp->st;
	pycodes__stats(pp->codes, &cs);
	st->name_hits = cs.hits;
	st->name_misses = cs.misses;
	st->name_errors = cs.err_read + cs.err_string + cs.table_big + cs.table_bad;
	st->name_bytes = cs.bytes;
}
