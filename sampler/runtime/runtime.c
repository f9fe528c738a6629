/*
 * runtime.c - the pipeline every language runtime goes through (see
 * runtime.h): which runtime a file is, when a process is set up, the
 * merge dispatch, the metrics.
 *
 * When to set a process up. BPF can walk a process only once its entry
 * is in rt_procs, and the interpreter must be initialised for set-up to
 * read what it needs (CPython's thread-state key, CRuby's VM). Samples
 * alone drove this before: the first drained sample of a process showing
 * the interpreter. But the drain comes every 250 ms, and a 0.3 s script's
 * samples all come in one drain, after it ended: none of them had
 * interpreter frames. So set-up starts from the maps read at exec and 10
 * ms later (the exec record wakes the reader at once), and a process
 * whose interpreter file is still being read by the symbol loader, or not
 * initialised yet, is put on a watch list the poll loop's timer serves
 * (5 ms, doubling), for its first two seconds; after that, samples (at
 * most one look per 100 ms of sample time) and a backoff to a second.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/batch/stack.h"
#include "sampler/proc/procinfo.h"
#include "sampler/ring/sampler.h"
#include "sampler/runtime/rt_int.h"
#include "sampler/runtime/rtcache.h"
#include "sampler/runtime/runtime.h"
#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/symbolize.h"
#include "sampler/unwind/twin.h"
#include "store/util/prom.h"
#include "store/util/util.h"

static const struct rt_ops *const ops_of[RT_NKINDS] = {
	[RT_PYTHON] = &rt_python_ops,
	[RT_RUBY] = &rt_ruby_ops,
	[RT_HOTSPOT] = &rt_hotspot_ops,
	[RT_V8] = &rt_v8_ops,
};

/* A process not initialised yet is looked at after this, doubling up to
 * WAIT_MAX_NS, WAIT_TRIES times (about a minute) before giving up. */
#define WAIT_FIRST_NS (5 * 1000000LL)
#define WAIT_MAX_NS (1000 * 1000000LL)
#define WAIT_TRIES 70
/* A process none of whose sampled frames ran in an interpreter file is
 * looked at again after this much of its samples' time. */
#define LOOK_AGAIN_NS (100 * 1000000LL)
/* The watch list: processes to look at on the timer, from their exec. */
#define WATCH_MAX 1024
#define WATCH_NS (2000 * 1000000LL)
/* Extra counters a runtime's ends map holds at most. */
#define RT_MAX_ENDS 16

struct watch {
	pid_t pid;
	int64_t due_ns, until_ns;
};

/* What /prof/metrics shows of one runtime (a snapshot). */
struct rt_snap {
	uint64_t procs[RTS_MAX];
	uint64_t ends[RT_MAX_ENDS];
	struct rt_counts cnt;
	struct rt_cache_stats cache;
};

struct runtimes {
	struct sampler *s;
	struct procs *ps;
	const struct rt_ops *const *ops; /* by kind: ops_of, or a test's */
	void *st[RT_NKINDS];
	struct rtcache *names; /* every runtime's objects read (rtcache.h) */
	uint64_t procs[RT_NKINDS][RTS_MAX]; /* processes that reached each state */
	struct rt_counts cnt[RT_NKINDS];
	struct watch watch[WATCH_MAX];
	size_t nwatch;
	bool busy; /* in a set-up: a maps read it makes is not looked at */
	pthread_mutex_t lock; /* guards snap */
	struct rt_snap snap[RT_NKINDS];
};

/* ---- per file ---- */

struct rtfile *rtfile__detect(int fd, const char *path, const struct elf_info *e)
{
	for (int k = 1; k < RT_NKINDS; k++) {
		struct rtfile *f = calloc(1, sizeof(*f));
		int err;

		if (!f)
			return NULL;
		f->kind = (uint8_t)k;
		err = ops_of[k]->detect(fd, path, e, f);
		if (!err) {
			if (f->status)
				pr_debug("%s: %s", ops_of[k]->name, f->why);
			return f;
		}
		free(f);
		if (err != -ENOENT) {
			pr_debug("%s: %s: %s", ops_of[k]->name, path, strerror(-err));
			break;
		}
	}
	errno = ENOENT;
	return NULL;
}

void rtfile__free(struct rtfile *f)
{
	if (!f)
		return;
	if (f->kind < RT_NKINDS && ops_of[f->kind] && f->data)
		ops_of[f->kind]->file_free(f->data);
	free(f);
}

/* ---- helpers for the runtimes ---- */

int rt__read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EFAULT;
}

int rt__twin_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct rt_twin_mem *t = ctx;
	const struct twin_mem *m = t->stack;

	/* The stack as it was when sampled: the live one has moved on. */
	if (m && addr >= m->base && addr - m->base <= m->len && n <= m->len - (addr - m->base)) {
		memcpy(buf, m->buf + (addr - m->base), n);
		return 0;
	}
	return rt__read(t->pid, addr, buf, n);
}

bool rt__maps_fresh(struct runtimes *rts, struct proc *p, int64_t since_ns)
{
	if (p->maps_ns > since_ns)
		return true;
	procs__refresh(rts->ps, p, true, PROCS_PM_NO);
	return p->maps_ns > since_ns;
}

struct vma *rt__vma(struct runtimes *rts, struct proc *p, uint64_t addr)
{
	return procs__vma(rts->ps, p, addr);
}

bool rt__bias(const struct vma *v, const struct symtab *t, uint64_t *bias)
{
	uint64_t va;

	if (!elfsym__off_to_vaddr(&t->elf, v->pgoff, &va))
		return false;
	*bias = v->start - va;
	return true;
}

/* ---- one merge's frames ---- */

const char *rt_text__keep(struct rt_text *t, const char *s)
{
	size_t len = strlen(s ? s : "") + 1;
	char *d;

	if (t->used + len > RT_TEXT_BYTES)
		return NULL;
	d = t->buf + t->used;
	memcpy(d, s ? s : "", len);
	t->used += len;
	return d;
}

const char *rt_text__display(struct rt_text *t, rt_display_fn display, const char *name, const char *file)
{
	size_t room = RT_TEXT_BYTES - t->used;
	char *d = t->buf + t->used;

	if (room < 64)
		return NULL;
	display(name, file, d, room);
	t->used += strlen(d) + 1;
	return d;
}

void rt__marker(struct frame *o, uint64_t addr, bool stale, const char *stale_name,
		const char *unreadable, struct rt_counts *cnt)
{
	memset(o, 0, sizeof(*o));
	o->marker = true;
	o->addr = addr;
	o->name = stale ? stale_name : unreadable;
	if (stale)
		cnt->stale++;
	else
		cnt->unreadable++;
}

int rt__copy(const struct frame *fr, int n, struct frame *out, int max)
{
	if (n > max)
		n = max;
	if (n > 0)
		memcpy(out, fr, (size_t)n * sizeof(*fr));
	return n > 0 ? n : 0;
}

/* ---- per-process data ---- */

void *rt_pdata__get(const struct rt_pdata *d, pid_t pid)
{
	return hmap__get(&d->live, (uint64_t)pid + 1);
}

/* Frees what has been dead long enough. */
static void pdata_gc(struct rt_pdata *d, int64_t now)
{
	size_t w = 0;

	for (size_t i = 0; i < d->ndead; i++) {
		if (d->dead[i].free_ns <= now)
			free(d->dead[i].data);
		else
			d->dead[w++] = d->dead[i];
	}
	d->ndead = w;
}

void rt_pdata__forget(struct rt_pdata *d, pid_t pid)
{
	void *old = hmap__get(&d->live, (uint64_t)pid + 1);
	int64_t now = now_mono_ns();

	pdata_gc(d, now);
	if (!old)
		return;
	hmap__del(&d->live, (uint64_t)pid + 1);
	if (d->ndead == d->capdead) {
		size_t nc = d->capdead ? 2 * d->capdead : 16;
		struct rt_dead *nd = realloc(d->dead, nc * sizeof(*nd));

		if (!nd) {
			/* no room to wait: a late sample of pid, if any, goes unnamed */
			free(old);
			return;
		}
		d->dead = nd;
		d->capdead = nc;
	}
	d->dead[d->ndead++] = (struct rt_dead){ old, now + RT_PDATA_GRACE_NS };
}

int rt_pdata__put(struct rt_pdata *d, pid_t pid, void *data)
{
	rt_pdata__forget(d, pid);
	if (hmap__put(&d->live, (uint64_t)pid + 1, data)) {
		free(data);
		return -ENOMEM;
	}
	return 0;
}

void rt_pdata__free(struct rt_pdata *d)
{
	hmap__drain(&d->live, hmap__free_val, NULL);
	for (size_t i = 0; i < d->ndead; i++)
		free(d->dead[i].data);
	free(d->dead);
	memset(d, 0, sizeof(*d));
}

/* ---- the merge of records tied to native frames ---- */

int rt__merge_indexed(const struct prof_sample_ev *ev, const struct frame *fr, int n,
		      const uint32_t *index, int nrec, rt_name_fn name, void *ctx,
		      struct frame *out, int max)
{
	int u0 = 0, m = 0;
	bool *used = calloc(nrec ? (size_t)nrec : 1, sizeof(*used));

	(void)ev;
	if (!used)
		return rt__copy(fr, n, out, max);
	/* The user frames start after the kernel's (and their marker). */
	while (u0 < n && fr[u0].kernel)
		u0++;
	for (int i = 0; i < n && m < max; i++) {
		bool took = false, end = fr[i].marker && !fr[i].kernel;

		if (end) /* records tied to no frame walked go before the marker */
			for (int k = 0; k < nrec && m < max; k++)
				if (!used[k]) {
					used[k] = true;
					m += name(ctx, k, true, NULL, out + m, max - m);
				}
		if (i >= u0 && !fr[i].marker) {
			uint32_t u = (uint32_t)(i - u0);

			for (int k = 0; k < nrec && m < max; k++) {
				if (used[k] || index[k] != u)
					continue;
				used[k] = true;
				took = true;
				m += name(ctx, k, u > 0, &fr[i], out + m, max - m);
			}
		}
		if (!took && m < max)
			out[m++] = fr[i];
	}
	for (int k = 0; k < nrec && m < max; k++)
		if (!used[k])
			m += name(ctx, k, true, NULL, out + m, max - m);
	free(used);
	return m;
}

/* ---- set-up ---- */

struct runtimes *runtimes__new(struct sampler *s, struct procs *ps)
{
	return runtimes__new_with(s, ps, ops_of);
}

struct runtimes *runtimes__new_with(struct sampler *s, struct procs *ps,
				    const struct rt_ops *const ops[RT_NKINDS])
{
	struct runtimes *rts = calloc(1, sizeof(*rts));

	if (!rts)
		return NULL;
	rts->ops = ops;
	rts->s = s;
	rts->ps = ps;
	pthread_mutex_init(&rts->lock, NULL);
	rts->names = rtcache__new(0);
	for (int k = 1; k < RT_NKINDS; k++) {
		const struct rt_ops *o = rts->ops[k];
		struct rt_head *st = rts->names ? calloc(1, o->state_size) : NULL;

		rts->st[k] = st;
		if (!st || !(st->names = o->names_new(rts->names)) || (o->state_init && o->state_init(st))) {
			runtimes__free(rts);
			errno = ENOMEM;
			return NULL;
		}
	}
	return rts;
}

void runtimes__free(struct runtimes *rts)
{
	if (!rts)
		return;
	for (int k = 1; k < RT_NKINDS; k++) {
		const struct rt_ops *o = rts->ops[k];
		struct rt_head *st = rts->st[k];

		if (!st)
			continue;
		if (o->state_fini)
			o->state_fini(st);
		if (st->names)
			o->names_free(st->names);
		rt_pdata__free(&st->pdata);
		free(st);
	}
	rtcache__free(rts->names);
	pthread_mutex_destroy(&rts->lock);
	free(rts);
}

static void enter(struct runtimes *rts, struct proc *p, int state)
{
	static const char *const names[RTS_MAX] = {
		[RTS_WALKED] = "walked", [RTS_UNSUPPORTED] = "unsupported",
		[RTS_LAYOUT] = "layout check failed", [RTS_TLS] = "unknown TLS layout",
		[RTS_FAILED] = "failed",
	};

	p->rt.state = (uint8_t)state;
	rts->procs[p->rt.kind][state]++;
	pr_debug("%s: pid %d (%s): %s after %d looks, %lld ms after the first", rts->ops[p->rt.kind]->name,
		 (int)p->pid, p->comm, names[state] ? names[state] : "?", p->rt.tries + 1,
		 (long long)(now_mono_ns() - p->rt.seen_ns) / 1000000);
}

/* Puts p on the timer's list, due at due_ns (an entry it has is moved). */
static void watch(struct runtimes *rts, struct proc *p, int64_t due_ns, int64_t until_ns)
{
	size_t i;

	for (i = 0; i < rts->nwatch && rts->watch[i].pid != p->pid; i++)
		;
	if (i == rts->nwatch) {
		if (rts->nwatch == WATCH_MAX)
			return; /* samples will look at it */
		rts->nwatch++;
		rts->watch[i].until_ns = until_ns;
	}
	rts->watch[i].pid = p->pid;
	rts->watch[i].due_ns = due_ns;
}

/* p waits for its interpreter to initialise: look again later. */
static void wait_more(struct runtimes *rts, struct proc *p, int64_t now_ns)
{
	int64_t d = WAIT_FIRST_NS << (p->rt.tries < 8 ? p->rt.tries : 8);

	p->rt.state = RTS_WAIT;
	p->rt.tries++;
	p->rt.next_ns = now_ns + (d < WAIT_MAX_NS ? d : WAIT_MAX_NS);
	watch(rts, p, p->rt.next_ns, p->rt.next_ns);
}

/* p's entry in rt_procs (NULL: none). Any write replaces a mark of
 * runtimes__mark_native. */
static int rt_set(struct runtimes *rts, struct proc *p, const struct rt_proc *c)
{
	p->rt.native = false;
	return rts->s ? sampler__rt_set(rts->s, p->pid, c) : 0;
}

void runtimes__mark_native(struct runtimes *rts, struct proc *p)
{
	if (!rts || !p || p->rt.native || p->rt.setting_up || p->rt.state == RTS_WALKED ||
	    p->exit_ns)
		return;
	/* A full map leaves it unmarked: user space goes on walking its
	 * anonymous code, which costs a stack copy a sample, not a frame. */
	if (!rt_set(rts, p, &(struct rt_proc){ .kind = RT_NATIVE_JIT }))
		p->rt.native = true;
}

/* Sets up p, whose interpreter file t (runtime t->rt->kind) v maps. */
static void setup(struct runtimes *rts, struct proc *p, const struct vma *v,
		  const struct symtab *t, int64_t now_ns)
{
	const struct rtfile *f = t->rt;
	struct rt_proc c = { .kind = f->kind };
	int state, err;
	bool was;

	p->rt.kind = f->kind;
	if (!p->rt.seen_ns)
		p->rt.seen_ns = now_ns;
	if (f->status) {
		enter(rts, p, f->status == -EOPNOTSUPP ? RTS_UNSUPPORTED : RTS_LAYOUT);
		return;
	}
	was = rts->busy;
	rts->busy = true;
	state = rts->ops[f->kind]->setup(rts->st[f->kind], rts, p, v, t, &c); /* v invalid now */
	rts->busy = was;
	if (state == RTS_WAIT && !(p->rt.tries >= WAIT_TRIES || p->exit_ns)) {
		/* A runtime whose frames the native walk steps (a JVM's, V8's):
		 * its code met before the set-up waits for it (pending.c). */
		if (rts->ops[f->kind]->twin_step && !p->rt.setting_up &&
		    !rt_set(rts, p, &(struct rt_proc){ .kind = RT_SETTING_UP }))
			p->rt.setting_up = true;
		wait_more(rts, p, now_ns);
		return;
	}
	if (state == RTS_WAIT)
		state = RTS_FAILED;
	if (state == RTS_WALKED && (err = rt_set(rts, p, &c))) {
		pr_debug("%s: pid %d: cannot set its walk up: %s", rts->ops[f->kind]->name, (int)p->pid,
			 strerror(-err));
		state = RTS_FAILED;
	}
	if (state != RTS_WALKED && p->rt.setting_up)
		rt_set(rts, p, NULL);
	p->rt.setting_up = false;
	enter(rts, p, state);
}

/* The interpreter file among p's maps (whose symbols are loaded), or
 * NULL; *loading: some file's symbols are still being read. */
static const struct vma *interp_vma(struct runtimes *rts, struct proc *p, const struct symtab **tab,
				    bool *loading)
{
	*loading = false;
	for (size_t i = 0; p->maps && i < p->maps->n; i++) {
		const struct vma *v = procs__vma(rts->ps, p, p->maps->v[i].start); /* resolves its dso */
		const struct symtab *t;

		if (!v || !v->file || !v->dso)
			continue;
		t = dso__tab(v->dso);
		if (t && t->rt) {
			*tab = t;
			return v;
		}
		if (__atomic_load_n(&v->dso->state, __ATOMIC_ACQUIRE) != DSO_DONE)
			*loading = true;
	}
	return NULL;
}

/* Looks at p's maps for an interpreter; true when p needs no more looks
 * from the maps (set up, refused, or no interpreter and nothing loading). */
static bool look_at_maps(struct runtimes *rts, struct proc *p, int64_t now_ns)
{
	const struct symtab *t = NULL;
	const struct vma *v;
	bool loading;

	if (p->exit_ns || (p->rt.state != RTS_UNKNOWN && p->rt.state != RTS_WAIT))
		return true;
	v = interp_vma(rts, p, &t, &loading);
	if (v) {
		setup(rts, p, v, t, now_ns);
		return p->rt.state != RTS_WAIT;
	}
	/* Until a file's symbols are read we cannot tell a runtime's from
	 * any other (libjvm's take ~0.3 s, longer while the loader is busy):
	 * meanwhile code outside files (a JIT's) waits for the answer as it
	 * does for a set-up, not walked by frame pointers, unnamed. A
	 * process without such code is not affected. */
	if (loading && !p->rt.setting_up &&
	    !rt_set(rts, p, &(struct rt_proc){ .kind = RT_SETTING_UP }))
		p->rt.setting_up = true;
	else if (!loading && p->rt.setting_up) {
		rt_set(rts, p, NULL);
		p->rt.setting_up = false;
	}
	return !loading;
}

void runtimes__maps(struct runtimes *rts, struct proc *p, int64_t now_ns)
{
	/* Not from within a set-up, which may read the maps itself. */
	if (!rts || !p || rts->busy)
		return;
	rts->busy = true;
	if (!look_at_maps(rts, p, now_ns) && p->rt.state == RTS_UNKNOWN)
		watch(rts, p, now_ns + WAIT_FIRST_NS, now_ns + WATCH_NS);
	rts->busy = false;
}

int runtimes__due(struct runtimes *rts, int64_t now_ns)
{
	struct watch due[64];
	int64_t next = INT64_MAX;
	size_t w = 0, nd = 0;

	if (!rts)
		return -1;
	/* The due entries out first: a look may put its process back on
	 * the list (wait_more). */
	for (size_t i = 0; i < rts->nwatch; i++) {
		if (rts->watch[i].due_ns <= now_ns && nd < sizeof(due) / sizeof(due[0]))
			due[nd++] = rts->watch[i];
		else
			rts->watch[w++] = rts->watch[i];
	}
	rts->nwatch = w;
	for (size_t i = 0; i < nd; i++) {
		struct proc *p = procs__find(rts->ps, due[i].pid);

		if (!p || look_at_maps(rts, p, now_ns) || p->rt.state == RTS_WAIT)
			continue;
		/* No interpreter yet, some of its files still loading. */
		if (now_ns + WAIT_FIRST_NS < due[i].until_ns) {
			watch(rts, p, now_ns + WAIT_FIRST_NS, due[i].until_ns);
		} else if (p->rt.setting_up && p->rt.state == RTS_UNKNOWN) {
			/* Past the watch: its code is walked as before. */
			rt_set(rts, p, NULL);
			p->rt.setting_up = false;
		}
	}
	for (size_t i = 0; i < rts->nwatch; i++)
		if (rts->watch[i].due_ns < next)
			next = rts->watch[i].due_ns;
	if (next == INT64_MAX)
		return -1;
	return next <= now_ns ? 0 : (int)((next - now_ns + 999999) / 1000000);
}

bool runtimes__wants_look(const struct runtimes *rts, const struct proc *p, int64_t now_ns)
{
	return rts && p && !p->exit_ns && (p->rt.state == RTS_UNKNOWN || p->rt.state == RTS_WAIT) &&
	       now_ns >= p->rt.next_ns;
}

void runtimes__see(struct runtimes *rts, struct proc *p, const struct frame *fr, int n,
		   int64_t now_ns)
{
	if (!runtimes__wants_look(rts, p, now_ns))
		return;
	for (int i = 0; i < n; i++) {
		const struct vma *v = fr[i].vma;
		const struct symtab *t;

		if (fr[i].kernel || fr[i].marker || !v || !v->file || !v->dso)
			continue;
		t = dso__tab(v->dso);
		if (t && t->rt) {
			setup(rts, p, v, t, now_ns);
			return;
		}
	}
	/* None here (not an interpreter, or a sample outside it, or its file
	 * still loading): not every sample needs this loop on the drain. */
	p->rt.next_ns = now_ns + LOOK_AGAIN_NS;
}

/* ---- merge, forget ---- */

int runtimes__twin_step(struct runtimes *rts, struct proc *p, struct twin_regs *r,
			const struct twin_mem *mem, const struct twin_map *m, int index, uint64_t rec[2])
{
	int k = p ? p->rt.kind : RT_NONE;

	if (!rts || !p || p->rt.state != RTS_WALKED || k <= RT_NONE || k >= RT_NKINDS ||
	    !rts->ops[k]->twin_step)
		return 0;
	return rts->ops[k]->twin_step(rts->st[k], p, r, mem, m, index, rec);
}

int runtimes__merge(struct runtimes *rts, struct proc *p, const struct prof_sample_ev *ev,
		    const struct frame *fr, int n, struct frame *out, int max, struct rt_merged *m)
{
	int k = p ? p->rt.kind : RT_NONE;
	struct rt_counts before, *c;

	*m = (struct rt_merged){ 0 };
	if (!rts || !p || p->rt.state != RTS_WALKED || !ev->nrt || ev->rtkind != k || k <= RT_NONE ||
	    k >= RT_NKINDS)
		return rt__copy(fr, n, out, max);
	c = &rts->cnt[k];
	before = *c;
	n = rts->ops[k]->merge(rts->st[k], p, ev, fr, n, out, max, c);
	m->kind = (uint8_t)k;
	m->frames = (uint32_t)(c->frames - before.frames);
	m->unsure = c->stale != before.stale || c->unreadable != before.unreadable ||
		    c->unsettled != before.unsettled;
	return n;
}

void runtimes__count(struct runtimes *rts, const struct rt_merged *m)
{
	if (rts && m->kind > RT_NONE && m->kind < RT_NKINDS)
		rts->cnt[m->kind].frames += m->frames;
}

void runtimes__forget(struct runtimes *rts, pid_t pid)
{
	if (!rts)
		return;
	rtcache__forget(rts->names, pid);
	for (int k = 1; k < RT_NKINDS; k++)
		rt_pdata__forget(&((struct rt_head *)rts->st[k])->pdata, pid);
}

/* ---- metrics ---- */

void runtimes__update(struct runtimes *rts)
{
	struct rt_snap snap[RT_NKINDS];

	if (!rts)
		return;
	memset(snap, 0, sizeof(snap));
	for (int k = 1; k < RT_NKINDS; k++) {
		const struct rt_ops *o = rts->ops[k];

		memcpy(snap[k].procs, rts->procs[k], sizeof(snap[k].procs));
		snap[k].cnt = rts->cnt[k];
		sampler__rt_ends(rts->s, o->ends_map, snap[k].ends,
				 (size_t)(o->nends + o->nextra) < RT_MAX_ENDS ? (size_t)(o->nends + o->nextra)
									      : RT_MAX_ENDS);
		const struct rtview *v = ((struct rt_head *)rts->st[k])->names;
		struct rtcache_stats cs;

		rtcache__stats(rts->names, (unsigned)k, &cs);
		snap[k].cache = (struct rt_cache_stats){ v->hits, v->misses, o->name_errors(rts->st[k]), cs.bytes };
	}
	pthread_mutex_lock(&rts->lock);
	memcpy(rts->snap, snap, sizeof(snap));
	pthread_mutex_unlock(&rts->lock);
}

static void metric_name(char *out, size_t cap, const char *rt, const char *what)
{
	snprintf(out, cap, "proffs_%s_%s", rt, what);
}

void runtimes__metrics(struct runtimes *rts, struct buf *out)
{
	static const char *const states[RTS_MAX] = {
		[RTS_WALKED] = "walked", [RTS_UNSUPPORTED] = "unsupported_version",
		[RTS_LAYOUT] = "layout_check_failed", [RTS_TLS] = "unknown_tls",
		[RTS_FAILED] = "failed",
	};
	struct rt_snap snap[RT_NKINDS];
	char name[96], help[160];

	if (!rts)
		return;
	pthread_mutex_lock(&rts->lock);
	memcpy(snap, rts->snap, sizeof(snap));
	pthread_mutex_unlock(&rts->lock);
	for (int k = 1; k < RT_NKINDS; k++) {
		const struct rt_ops *o = rts->ops[k];
		const struct rt_snap *x = &snap[k];

		metric_name(name, sizeof(name), o->name, "processes_total");
		snprintf(help, sizeof(help), "Processes found running %s, by what their set-up came to.",
			 o->name);
		prom__family(out, name, PROM_COUNTER, help);
		for (int i = 0; i < RTS_MAX; i++)
			if (states[i])
				prom__u64_by(out, name, "state", states[i], x->procs[i]);
		metric_name(name, sizeof(name), o->name, o->ends_what ? "steps_total" : "walks_total");
		snprintf(help, sizeof(help), "%s %s, by how they ended.", o->name,
			 o->ends_what ? "steps of the native walk through its code" : "walks of sampled threads");
		prom__family(out, name, PROM_COUNTER, help);
		for (int i = 0; i < o->nends && i < RT_MAX_ENDS; i++)
			if (o->ends[i])
				prom__u64_by(out, name, "end", o->ends[i], x->ends[i]);
		metric_name(name, sizeof(name), o->name, "frames_total");
		snprintf(help, sizeof(help), "%s frames stored.", o->name);
		prom__counter(out, name, help, x->cnt.frames);
		metric_name(name, sizeof(name), o->name, "frame_errors_total");
		snprintf(help, sizeof(help), "%s frames stored as a marker, by reason.", o->name);
		prom__family(out, name, PROM_COUNTER, help);
		prom__u64_by(out, name, "reason", o->stale_reason, x->cnt.stale);
		prom__u64_by(out, name, "reason", "unreadable", x->cnt.unreadable);
		metric_name(name, sizeof(name), o->name, "name_cache_total");
		snprintf(help, sizeof(help), "Names of %s objects looked up, by result.", o->name);
		prom__family(out, name, PROM_COUNTER, help);
		prom__u64_by(out, name, "result", "hit", x->cache.hits);
		prom__u64_by(out, name, "result", "miss", x->cache.misses);
		prom__u64_by(out, name, "result", "error", x->cache.errors);
		metric_name(name, sizeof(name), o->name, "name_cache_bytes");
		snprintf(help, sizeof(help), "Memory held by named %s objects.", o->name);
		prom__gauge(out, name, help, x->cache.bytes);
		if (o->extra_metrics)
			o->extra_metrics(out, x->ends + o->nends);
	}
}
