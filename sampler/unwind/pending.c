/*
 * pending.c - finishing PROF_UE_PENDING walks with the twin.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/unwind/pending.h"
#include "sampler/unwind/twin.h"
#include "store/util/prom.h"
#include "store/util/util.h"

#define PARK_MAX 256                  /* ~7.5 MB at worst (28 KiB of stack each) */
#define PARK_NS (5 * 1000000000LL)    /* a table takes ms; a busy worker, longer */
/* A JVM's or V8's code met while its runtime sets up waits this long for
 * the set-up (a JVM's takes ~100 ms after its first sample), then is
 * walked by frame pointers, unnamed. Such waits take at most half the
 * room: at 499 Hz two JVMs starting at once park ~400 samples, and the
 * walks that wait for a table (that of libjvm itself) must find room. */
#define SETUP_WAIT_NS (2 * 1000000000LL)
#define SETUP_WAIT_MAX (PARK_MAX / 2)

struct parked {
	int64_t deadline;
	size_t size;
	struct prof_sample_ev *ev;
};

struct pending {
	struct unwinder *u;
	struct procs *ps;
	struct pending_rt rt; /* step NULL: no runtimes */
	struct parked park[PARK_MAX];
	size_t n;
	struct prof_sample_ev *out; /* the completed record handed to done */
	struct pending_stats st;
};

struct pending *pending__new(struct unwinder *u, struct procs *ps)
{
	struct pending *pq = calloc(1, sizeof(*pq));

	if (!pq)
		return NULL;
	pq->out = malloc(sizeof(*pq->out));
	if (!pq->out) {
		free(pq);
		return NULL;
	}
	pq->u = u;
	pq->ps = ps;
	return pq;
}

void pending__free(struct pending *pq)
{
	if (!pq)
		return;
	for (size_t i = 0; i < pq->n; i++)
		free(pq->park[i].ev);
	free(pq->out);
	free(pq);
}

void pending__set_runtimes(struct pending *pq, const struct pending_rt *rt)
{
	if (pq)
		pq->rt = rt ? *rt : (struct pending_rt){ 0 };
}

static enum twin_kind request_vma(struct pending *pq, struct proc *p, const struct vma *v,
				  bool urgent)
{
	if (v->file)
		return unwinder__request(pq->u, p->pid, unwinder__kdev(v->dev), v->ino, v->path,
					 v->start, v->end, urgent);
	return TWIN_FP;
}

void pending__request_maps(struct pending *pq, struct proc *p)
{
	if (!p || !p->maps)
		return;
	for (size_t i = 0; i < p->maps->n; i++)
		request_vma(pq, p, &p->maps->v[i], false);
}

struct walk_ctx {
	struct pending *pq;
	struct proc *p;
	const struct vma *need; /* a file never requested: ask, then retry */
	bool unmapped;          /* an address our copy of the maps lacks */
	bool final;             /* our maps were read after the sample (or the
				 * process is gone): what they lack is unmapped */
	bool setup_wait;        /* anonymous code waits for the runtime's set-up */
	bool anon_fp;           /* anonymous code walked by frame pointers */
	/* the runtime's records of the frames this walk stepped */
	__u64 rec[2 * PROF_MAX_FRAMES];
	int nrec;
};

/* The runtime's step (twin.h's hook): a JVM's or V8's frame. */
static int rt_hook(void *arg, struct twin_regs *r, const struct twin_mem *mem, const struct twin_map *m,
		   int index)
{
	struct walk_ctx *c = arg;
	uint64_t rec[2];
	int k;

	if (c->nrec >= PROF_MAX_FRAMES)
		return 0;
	k = c->pq->rt.step(c->pq->rt.ctx, c->p, r, mem, m, index, rec);
	if (k <= 0)
		return k;
	c->rec[2 * c->nrec] = rec[0];
	c->rec[2 * c->nrec + 1] = rec[1];
	c->nrec++;
	return k == 2 ? TWIN_HOOK_STEPPED : 0;
}

/* Under the unwinder's lock. */
static int map_fn(void *arg, uint64_t addr, struct twin_map *m)
{
	struct walk_ctx *c = arg;
	struct vma *v = procs__vma(c->pq->ps, c->p, addr);

	/* Maps read at exec lack the libraries mapped since: wait for a
	 * fresh read rather than call the address unmapped; after one, it
	 * is (the walk ends "outside mappings" rather than wait for good). */
	if (!v) {
		if (c->final)
			return -1;
		c->unmapped = true;
		m->kind = TWIN_WAIT;
		return 0;
	}
	m->start = v->start;
	m->end = v->end;
	m->pgoff = v->pgoff;
	m->kdev = v->file ? unwinder__kdev(v->dev) : 0;
	m->ino = v->file ? v->ino : 0;
	if (v->file) {
		if (unwinder__lookup_locked(c->pq->u, unwinder__kdev(v->dev), v->ino, m) == -ENOENT) {
			c->need = v;
			m->kind = TWIN_WAIT;
		}
	} else if (!strcmp(v->path, "[vdso]")) {
		unwinder__lookup_locked(c->pq->u, UNW_VDSO_DEV, UNW_VDSO_INO, m);
	} else if (c->setup_wait) {
		m->kind = TWIN_WAIT;
	} else if (!c->final && c->p->rt.state != RTS_WALKED) {
		/* Maps older than the sample: the library of a runtime may
		 * have come since (a JVM's libjvm, dlopened by its launcher),
		 * whose set-up this code should wait for. Read them again. */
		c->unmapped = true;
		m->kind = TWIN_WAIT;
	} else {
		m->kind = TWIN_FP;
		c->anon_fp = true;
	}
	return 0;
}

/* How much stack past BPF's copy a walk may read from the live process. */
#define LIVE_MAX (256 * 1024)

/*
 * A walk that ran past BPF's copy (UNW_STACK_COPY, the most a record
 * carries) goes on in the live process's stack: what lies beyond the
 * copy are the sample's outermost frames (a thread's start, its event
 * loop), still there while the thread runs. A node worker's start-up
 * stacks, JS being compiled under V8's and node's frames, ran past 28
 * KiB and ended `[truncated]` above SpinEventLoop. Copies mem into a
 * buffer of its own with up to LIVE_MAX more bytes appended; false when
 * nothing could be read (the process or its stack is gone). Should the
 * frames have returned since, the walk reads what replaced them and
 * ends where it stops making sense, as for any stack read late.
 * Sampler thread only.
 */
static bool extend_live(pid_t pid, struct twin_mem *mem)
{
	static uint8_t buf[UNW_STACK_COPY + LIVE_MAX];
	struct iovec l = { buf + mem->len, LIVE_MAX };
	struct iovec r = { (void *)(uintptr_t)(mem->base + mem->len), LIVE_MAX };
	ssize_t got;

	if (mem->len > UNW_STACK_COPY)
		return false;
	got = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (got <= 0)
		return false;
	memmove(buf, mem->buf, mem->len);
	mem->buf = buf;
	mem->len += (size_t)got;
	mem->capped = got == LIVE_MAX;
	return true;
}

/* Whether p's anonymous code in ev waits for its runtime's set-up (the
 * clock read only for a process whose runtime is setting up). */
static bool setup_wait_of(const struct pending *pq, const struct proc *p,
			  const struct prof_sample_ev *ev)
{
	return p->rt.setting_up && !p->exit_ns && pq->n < SETUP_WAIT_MAX &&
	       now_mono_ns() - (int64_t)ev->time_ns < SETUP_WAIT_NS;
}

/* Continues the walk of ev into pq->out. Returns the end. */
static int walk(struct pending *pq, struct proc *p, const struct prof_sample_ev *ev, size_t size)
{
	struct prof_sample_ev *o = pq->out;
	size_t head = offsetof(struct prof_sample_ev, ustack);
	struct twin_mem mem = { .base = ev->uregs[1], .buf = ev->ustack, .len = ev->ustack_len };
	static struct walk_ctx c; /* (its records: 1 KiB) sampler thread only */
	bool refreshed = false, setup_wait;
	int n = ev->nuser, end = PROF_UE_PENDING;

	if (size < head)
		mem.len = 0;
	else if (mem.len > size - head)
		mem.len = size - head;
	/* BPF copies up to UNW_STACK_COPY bytes, fewer only where the stack's
	 * vma ends: a full copy means the stack may go on past it. */
	mem.capped = mem.len >= UNW_STACK_COPY || (ev->flags & PROF_F_UCUT);
	c = (struct walk_ctx){ .pq = pq, .p = p };
	memcpy(o, ev, head);
	/* Decided once per walk, again after the maps are read (they may
	 * show a runtime's library). */
	setup_wait = setup_wait_of(pq, p, ev);
	/* Each file the walk reaches unknown is asked for, then looked at
	 * again (small files take a millisecond); an address outside the
	 * maps we know may be a library mapped since we read them. */
	for (int tries = 0; tries < 8; tries++) {
		struct twin_regs r = {
			.pc = ev->uregs[0],
			.sp = ev->uregs[1],
			.bp = ev->uregs[2],
			.bp_ok = true,
			.exact = ev->flags & PROF_F_UEXACT,
			.stored = true,
		};

		n = ev->nuser;
		c.need = NULL;
		c.unmapped = false;
		c.nrec = 0;
		c.final = p->exit_ns || p->maps_ns >= (int64_t)ev->time_ns;
		c.setup_wait = setup_wait;
		unwinder__lock(pq->u);
		end = twin__walk_hooked(&r, &mem, map_fn, &c, pq->rt.step ? rt_hook : NULL, &c,
					o->frames + o->nkern, &n, PROF_MAX_FRAMES);
		unwinder__unlock(pq->u);
		if (end == PROF_UE_TRUNC && mem.capped && mem.buf == ev->ustack && n < PROF_MAX_FRAMES &&
		    !p->exit_ns && extend_live(p->pid, &mem))
			continue;
		if (end == PROF_UE_PENDING && c.need) {
			request_vma(pq, p, c.need, true);
		} else if (end == PROF_UE_PENDING && c.unmapped && !refreshed) {
			procs__refresh(pq->ps, p, true, PROCS_PM_NO);
			refreshed = true;
			setup_wait = setup_wait_of(pq, p, ev);
		} else {
			break;
		}
	}
	/* Anonymous code walked by frame pointers with maps read after the
	 * sample: if BPF walks no runtime of p, it may do the same from now
	 * on (until then it sends such samples here; mark_native decides). */
	if (c.anon_fp && c.final && end != PROF_UE_PENDING && pq->rt.mark_native)
		pq->rt.mark_native(pq->rt.ctx, p);
	/* The runtime frames BPF wrote after its part of the user stack
	 * follow the finished one, then those of the frames the twin
	 * stepped (a JVM's, V8's), as many as still fit. */
	o->nrt = 0;
	if (ev->nrt || c.nrec) {
		size_t from = (size_t)ev->nkern + ev->nuser, to = (size_t)o->nkern + n;
		size_t fit = to < 2 * PROF_MAX_FRAMES ? (2 * PROF_MAX_FRAMES - to) / 2 : 0;
		size_t nb = from + 2 * (size_t)ev->nrt > 2 * PROF_MAX_FRAMES ? 0 : ev->nrt;
		size_t nt = (size_t)c.nrec;

		if (nb > fit)
			nb = fit;
		if (nt > fit - nb)
			nt = fit - nb;
		memmove(&o->frames[to], &ev->frames[from], 2 * nb * sizeof(o->frames[0]));
		memcpy(&o->frames[to + 2 * nb], c.rec, 2 * nt * sizeof(o->frames[0]));
		o->nrt = (uint16_t)(nb + nt);
		if (!ev->nrt) {
			o->rtkind = c.p->rt.kind;
			o->rtend = RT_END_OK;
		}
		if (nb < ev->nrt || nt < (size_t)c.nrec)
			o->rtend = RT_END_TRUNC;
	}
	if (mem.buf != ev->ustack)
		pr_debug("pending: pid %d: the walk went on in the live stack (%zu bytes past the copy): %d frames, end %d",
			 (int)ev->tgid, mem.len - ev->ustack_len, n, end);
	if (end == PROF_UE_BAD_FRAME)
		pr_debug("pending: pid %d: the walk from pc %#llx sp %#llx bp %#llx ended in a bad frame "
			 "after %d frames (last pc %#llx; stack copy %zu bytes)",
			 (int)ev->tgid, (unsigned long long)ev->uregs[0], (unsigned long long)ev->uregs[1],
			 (unsigned long long)ev->uregs[2], n,
			 (unsigned long long)(n > 0 ? o->frames[o->nkern + n - 1] : 0), mem.len);
	o->nuser = n;
	o->uend = end;
	o->ustack_len = 0;
	if (end == PROF_UE_TRUNC)
		o->flags |= PROF_F_UTRUNC;
	return end;
}

int pending__add(struct pending *pq, struct proc *p, const struct prof_sample_ev *ev, size_t size,
		 pending_done_fn done, void *ctx)
{
	struct parked *k;

	if (p) {
		/* The files of a new process: the one that stopped BPF and the rest. */
		struct vma *v = procs__vma(pq->ps, p, ev->uregs[0] - (ev->flags & PROF_F_UEXACT ? 0 : 1));

		if (!v)
			procs__refresh(pq->ps, p, true, PROCS_PM_NO);
		if (walk(pq, p, ev, size) != PROF_UE_PENDING) {
			pq->st.finished++;
			done(ctx, p, pq->out);
			return 1;
		}
	}
	if (pq->n == PARK_MAX) {
		pq->st.dropped++;
		memcpy(pq->out, ev, offsetof(struct prof_sample_ev, ustack));
		pq->out->uend = PROF_UE_NO_TABLE;
		done(ctx, p, pq->out);
		return 1;
	}
	k = &pq->park[pq->n];
	k->ev = malloc(size);
	if (!k->ev) {
		done(ctx, p, ev);
		return -ENOMEM;
	}
	memcpy(k->ev, ev, size);
	k->size = size;
	k->deadline = now_mono_ns() + PARK_NS;
	pq->n++;
	pq->st.parked = pq->n;
	return 0;
}

void pending__drain(struct pending *pq, int64_t now, pending_done_fn done, void *ctx)
{
	size_t j = 0;

	for (size_t i = 0; i < pq->n; i++) {
		struct parked *k = &pq->park[i];
		struct proc *p = procs__get(pq->ps, k->ev->tgid, k->ev->comm, k->ev->cgroup_id);
		int end = PROF_UE_PENDING;

		if (p)
			end = walk(pq, p, k->ev, k->size);
		else
			memcpy(pq->out, k->ev, offsetof(struct prof_sample_ev, ustack));

		if (end == PROF_UE_PENDING && now < k->deadline) {
			pq->park[j++] = *k;
			continue;
		}
		if (end == PROF_UE_PENDING) {
			pq->out->uend = PROF_UE_NO_TABLE;
			pq->st.expired++;
		} else {
			pq->st.finished++;
		}
		done(ctx, p, pq->out);
		free(k->ev);
	}
	pq->n = j;
	pq->st.parked = j;
}

int64_t pending__oldest(const struct pending *pq)
{
	int64_t t = INT64_MAX;

	for (size_t i = 0; pq && i < pq->n; i++)
		if ((int64_t)pq->park[i].ev->time_ns < t)
			t = (int64_t)pq->park[i].ev->time_ns;
	return t;
}

void pending__stats(struct pending *pq, struct pending_stats *st)
{
	*st = pq->st;
}

void pending__metrics(const struct pending_stats *st, struct buf *out)
{
	prom__family(out, "proffs_unwind_pending_total", PROM_COUNTER,
		     "Walks finished in user space from a stack copy, by outcome.");
	prom__u64_by(out, "proffs_unwind_pending_total", "outcome", "finished", st->finished);
	prom__u64_by(out, "proffs_unwind_pending_total", "outcome", "expired", st->expired);
	prom__u64_by(out, "proffs_unwind_pending_total", "outcome", "no_room", st->dropped);
}
