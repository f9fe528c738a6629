/*
 * profiler.c - wiring sampler, procs, symbolizer, labeler and batch.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/batch/batch.h"
#include "sampler/batch/minutes.h"
#include "sampler/batch/wallclock.h"
#include "sampler/offcpu/offcpu.h"
#include "sampler/proc/labels.h"
#include "sampler/proc/procinfo.h"
#include "sampler/profiler.h"
#include "sampler/runtime/runtime.h"
#include "sampler/ring/kfeature.h"
#include "sampler/ring/sampler.h"
#include "sampler/batch/stack.h"
#include "sampler/symbols/symbolize.h"
#include "sampler/unwind/pending.h"
#include "sampler/unwind/unwinder.h"
#include "store/util/prom.h"
#include "store/util/safefile.h"
#include "store/util/util.h"

/* A sample held back until the files its frames need are loaded. */
struct deferred {
	struct deferred *next;
	int64_t due_ns; /* symbolized then with whatever is loaded */
	/* a struct prof_sample_ev cut after its frames (the record's stack
	 * copy, if it had one, is not needed once its walk is finished) */
	_Alignas(struct prof_sample_ev) unsigned char ev[];
};

#define DEFERRED_EV(d) ((struct prof_sample_ev *)(void *)(d)->ev)

/* Bounds on samples held back (they are copied, frames only). */
#define DEFER_MAX 1024
#define DEFER_NS (1000 * 1000000LL)

struct profiler {
	struct sampler *s;
	struct symbolizer *sym;
	struct labeler *lab;
	struct procs *ps;
	struct minutes *mins;
	struct wallclock wc; /* sample time -> wall clock, re-read every drain */
	struct offcpu *oc; /* NULL without --offcpu */
	struct minutes *omins; /* offcpu's open batches, by window */
	struct frame *frames;
	struct frame *rtframes; /* frames with a runtime's merged in */
	struct runtimes *rts;   /* NULL: runtime walks off (PROFFS_RUNTIMES=off) */
	struct unwinder *unw; /* NULL: frame pointers only (PROFFS_UNWIND=fp) */
	struct pending *pend;
	bool unw_running; /* unwinder__run() was called */
	uint64_t samples, nomem, offcpu_samples;
	uint64_t memo_hits; /* records added by the batch's memo (batch.h) */
	uint64_t uends[PROF_UE_MAX];
	struct deferred *deferred, **deferred_tail;
	size_t ndeferred;
	int64_t stats_ns; /* monotonic time of the last update_stats() */
	int64_t trim_ns;  /* ... of the last symbolizer__trim() */
	pthread_mutex_t lock; /* guards st */
	struct profiler_stats st;
};

/* Does a frame wait for a file the loader has not read yet? */
static bool waits_for_load(const struct proc *p, const struct frame *fr, int n)
{
	for (int i = 0; i < n; i++) {
		const struct frame *f = &fr[i];

		if (f->kernel || f->marker || f->name || !f->vma)
			continue;
		if (f->vma->file && f->vma->dso &&
		    __atomic_load_n(&f->vma->dso->state, __ATOMIC_ACQUIRE) == DSO_QUEUED)
			return true;
		if (!f->vma->file && !f->vma->path[0] && p && p->pm_token)
			return true;
	}
	return false;
}

/*
 * The memo's key (batch.h): two hashes, of different seeds, of what
 * decides a record's stack and labels: its process (pid, image, cgroup,
 * leader's name, its runtime's state), its flags and ends, and every frame
 * slot (native addresses, runtime records with their stamps). Its time,
 * CPU, thread and period do not count: they never change the stack.
 */
static void record_key(const struct prof_sample_ev *ev, const struct proc *p, uint64_t key[2])
{
	struct {
		uint64_t cgroup, gen;
		uint32_t type, tgid, flags;
		uint16_t nkern, nuser, nrt;
		uint8_t uend, rtend, rtkind, kind, state;
		char comm[PROF_COMM_LEN];
	} h;
	size_t nf = prof_sample_slots(ev);
	uint64_t seeds[2];

	memset(&h, 0, sizeof(h));
	h.cgroup = ev->cgroup_id;
	h.gen = p->gen;
	h.type = ev->type;
	h.tgid = ev->tgid;
	h.flags = ev->flags;
	h.nkern = ev->nkern;
	h.nuser = ev->nuser;
	h.nrt = ev->nrt;
	h.uend = ev->uend;
	h.rtend = ev->rtend;
	h.rtkind = ev->rtkind;
	h.kind = p->rt.kind;
	h.state = p->rt.state;
	memcpy(h.comm, ev->comm, PROF_COMM_LEN);
	if (nf > 2 * PROF_MAX_FRAMES)
		nf = 2 * PROF_MAX_FRAMES;
	hash64_pair(&h, sizeof(h), 0x6d656d6f, 0x2b7e1516, seeds);
	hash64_pair(ev->frames, nf * sizeof(ev->frames[0]), seeds[0], seeds[1], key);
}

/* Would an equal record later get the same stack? Not while a frame
 * waits for its process's maps, its file's symbols, or a perf map. */
static bool settled(const struct frame *fr, int n)
{
	for (int i = 0; i < n; i++) {
		const struct frame *f = &fr[i];

		if (f->kernel || f->marker || f->rt)
			continue;
		if (!f->vma)
			return false;
		if (f->vma->file) {
			if (f->vma->dso && __atomic_load_n(&f->vma->dso->state, __ATOMIC_ACQUIRE) != DSO_DONE)
				return false;
		} else if (!f->name && f->vma->path[0] != '[') {
			return false;
		}
	}
	return true;
}

/* Keeps a copy of ev for later; false when too many wait already. */
static bool defer(struct profiler *pr, const struct prof_sample_ev *ev, int64_t due_ns)
{
	size_t nf = prof_sample_slots(ev), sz;
	struct deferred *d;

	if (pr->ndeferred >= DEFER_MAX || nf > 2 * PROF_MAX_FRAMES)
		return false;
	sz = offsetof(struct deferred, ev) + offsetof(struct prof_sample_ev, frames) +
	     nf * sizeof(ev->frames[0]);
	d = malloc(sz);
	if (!d)
		return false;
	memcpy(d->ev, ev, offsetof(struct prof_sample_ev, frames) + nf * sizeof(ev->frames[0]));
	d->due_ns = due_ns;
	d->next = NULL;
	*pr->deferred_tail = d;
	pr->deferred_tail = &d->next;
	pr->ndeferred++;
	return true;
}

/* The unwind tables of the files in pr->frames[0..nn) (ev's, symbolized)
 * were used: tables in use stay, the rest age out. */
static void touch_tables(struct profiler *pr, const struct prof_sample_ev *ev, int nn)
{
	int64_t now = now_mono_ns();
	const struct vma *last = NULL;

	if (!pr->unw || !ev->nuser)
		return;
	unwinder__lock(pr->unw);
	for (int i = 0; i < nn; i++) {
		const struct vma *v = pr->frames[i].vma;

		if (!v || v == last || !v->file)
			continue;
		last = v;
		unwinder__touch_locked(pr->unw, unwinder__kdev(v->dev), v->ino, now);
	}
	unwinder__unlock(pr->unw);
}

/* How ev's user walk ended, counted (cpu samples). */
static void count_end(struct profiler *pr, const struct prof_sample_ev *ev)
{
	if (ev->type != OFFCPU_EV_SAMPLE)
		pr->uends[ev->uend < PROF_UE_MAX ? ev->uend : PROF_UE_NONE]++;
}

/*
 * Symbolizes a record, a cpu sample or an off-CPU block (OFFCPU_EV_SAMPLE),
 * and counts it in its type's batch. A record whose frames wait for the
 * loader (the first samples of a new binary or JIT, a process's first
 * blocks after the daemon starts) is held back until due_ns rather than
 * stored unresolved; due_ns 0: now, with whatever is loaded. The drain
 * never waits for a file.
 */
static void add_record(struct profiler *pr, const struct prof_sample_ev *ev, int64_t due_ns)
{
	bool off = ev->type == OFFCPU_EV_SAMPLE, memo;
	struct proc *p = procs__get(pr->ps, ev->tgid, ev->comm, ev->cgroup_id);
	/* An off-CPU interval is filed under the minute it ended in (when
	 * the thread ran again: the time the event carries); a wait across a
	 * minute boundary is not split, as the earlier minute may be stored. */
	struct batch *b = minutes__batch(off ? pr->omins : pr->mins,
					 wallclock__wall(&pr->wc, (int64_t)ev->time_ns));
	const int64_t vals[2] = { 1, off ? (int64_t)ev->period : b ? batch__period(b) : 0 };
	struct rt_merged m = { 0 };
	const struct frame *fr = pr->frames;
	char comm[PROF_COMM_LEN + 1];
	uint64_t key[2];
	uint32_t tag;
	int nn, n, err;

	/* A record this batch has seen: its sample again (batch.c's memo),
	 * unless this one is due a look for a runtime to set up. */
	memo = b && p && !runtimes__wants_look(pr->rts, p, (int64_t)ev->time_ns);
	if (memo) {
		record_key(ev, p, key);
		if (batch__memo_hit(b, key, vals, &tag)) {
			m.kind = (uint8_t)(tag & 0xff);
			m.frames = tag >> 8;
			runtimes__count(pr->rts, &m);
			pr->memo_hits++;
			count_end(pr, ev);
			if (off)
				pr->offcpu_samples++;
			else
				pr->samples++;
			return;
		}
	}
	/* nn native frames in pr->frames; n stored (runtime frames merged) */
	nn = stack__symbolize(pr->ps, pr->sym, p, ev, pr->frames, 2 * PROF_MAX_FRAMES);
	n = nn;
	if (waits_for_load(p, pr->frames, nn)) {
		if (due_ns && defer(pr, ev, due_ns))
			return;
		memo = false; /* stored with what is loaded: not for reuse */
	}
	if (pr->rts && p && ev->nrt) {
		n = runtimes__merge(pr->rts, p, ev, pr->frames, nn, pr->rtframes, STACK_MAX_FRAMES, &m);
		fr = pr->rtframes;
		memo = memo && !m.unsure;
	}
	count_end(pr, ev);
	touch_tables(pr, ev, nn);
	memcpy(comm, ev->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	if (!b) {
		err = -ENOMEM;
	} else if (off) {
		const char *state = offcpu__state_name(ev->flags);

		err = batch__add_values(b, p, ev->tgid, comm, fr, n, vals, state ? "state" : NULL, state);
	} else {
		err = batch__add_values(b, p, ev->tgid, comm, fr, n, vals, NULL, NULL);
	}
	if (err)
		pr->nomem++;
	else if (off)
		pr->offcpu_samples++;
	else
		pr->samples++;
	if (!err && memo && m.frames < (1u << 24) && settled(fr, n))
		batch__memo_put(b, key, (uint32_t)m.kind | m.frames << 8);
	/* A process not set up from its maps at exec (it ran before us, or
	 * loaded its interpreter later) is, from whichever record shows its
	 * interpreter first. Last: it may re-read p's maps, which frees the
	 * vmas fr points at. */
	if (pr->rts && p)
		runtimes__see(pr->rts, p, pr->frames, nn, (int64_t)ev->time_ns);
}

/* A walk the twin finished (sampler/unwind/pending.h). */
static void unwound(void *ctx, struct proc *p, const struct prof_sample_ev *ev)
{
	add_record(ctx, ev, now_mono_ns() + DEFER_NS);
}

/* A record of either ring (size bytes as received). One whose user stack
 * reached a file whose table is not loaded yet goes to the twin first. */
static void take(struct profiler *pr, const struct prof_sample_ev *ev, size_t size)
{
	if (ev->uend == PROF_UE_PENDING && pr->pend) {
		pending__add(pr->pend, procs__get(pr->ps, ev->tgid, ev->comm, ev->cgroup_id), ev, size,
			     unwound, pr);
		return;
	}
	add_record(pr, ev, now_mono_ns() + DEFER_NS);
}

static void on_sample(void *ctx, const struct prof_sample_ev *ev, size_t size)
{
	take(ctx, ev, size);
}

/* An off-CPU block joined in sampler/offcpu/ (its stack copy, if any,
 * ends the record). */
static void on_offcpu(void *ctx, const struct prof_sample_ev *ev)
{
	take(ctx, ev, offsetof(struct prof_sample_ev, ustack) + ev->ustack_len);
}

/* Samples held back whose files are loaded (or that waited long enough,
 * or all of them when force) go into the batch. */
static void replay(struct profiler *pr, bool force)
{
	struct deferred *d = pr->deferred, *next;
	int64_t now = now_mono_ns();

	pr->deferred = NULL;
	pr->deferred_tail = &pr->deferred;
	pr->ndeferred = 0;
	for (; d; d = next) {
		next = d->next;
		int64_t due = force || now >= d->due_ns ? 0 : d->due_ns;

		add_record(pr, DEFERRED_EV(d), due);
		free(d);
	}
}

static void on_task(void *ctx, const struct prof_task_ev *ev)
{
	struct profiler *pr = ctx;
	char comm[PROF_COMM_LEN + 1];

	memcpy(comm, ev->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	switch (ev->type) {
	case PROF_EV_EXEC:
		runtimes__forget(pr->rts, ev->tgid);
		/* (its maps read now set its interpreter's walk up: maps_read) */
		procs__exec(pr->ps, ev->tgid, comm, ev->cgroup_id);
		/* Build the new image's tables before its first samples. */
		if (pr->pend)
			pending__request_maps(pr->pend, procs__get(pr->ps, ev->tgid, comm, ev->cgroup_id));
		break;
	case PROF_EV_FORK:
		/* (procs__fork reads a parent's maps again if they date from
		 * its exec: the child borrows them and may not live to be read.) */
		procs__fork(pr->ps, ev->tgid, ev->ppid, comm, ev->cgroup_id);
		break;
	case PROF_EV_EXIT:
		runtimes__forget(pr->rts, ev->tgid);
		procs__exit(pr->ps, ev->tgid);
		break;
	}
}

/* A process's maps were read (at exec, 10 ms later, or when a sample
 * missed them): an interpreter among them (ld.so maps libpython after
 * exec) is set up now, before its samples are drained. */
static void maps_read(void *ctx, struct proc *p)
{
	struct profiler *pr = ctx;

	runtimes__maps(pr->rts, p, now_mono_ns());
}

/* The pending walk's hooks into the runtimes (pending.h's struct
 * pending_rt): unwind/ knows nothing of sampler/runtime/. */
static int rt_step(void *ctx, struct proc *p, struct twin_regs *r, const struct twin_mem *mem,
		   const struct twin_map *m, int index, uint64_t rec[2])
{
	return runtimes__twin_step(ctx, p, r, mem, m, index, rec);
}

static void rt_native(void *ctx, struct proc *p)
{
	runtimes__mark_native(ctx, p);
}


int profiler__open(struct profiler **out, const struct profiler_opts *o)
{
	struct labeler_opts lo = { .cgroup_root = o->cgroup_root, .pods_root = o->pods_root };
	struct sampler_opts so = {
		.hz = o->hz > 0 ? o->hz : 19,
		.target_tgid = o->target_tgid,
		.on_sample = on_sample,
		.on_task = on_task,
	};
	struct profiler *pr = calloc(1, sizeof(*pr));
	int err = -ENOMEM;

	if (!pr)
		return -ENOMEM;
	pthread_mutex_init(&pr->lock, NULL);
	pr->deferred_tail = &pr->deferred;
	so.ctx = pr;
	pr->frames = calloc(2 * PROF_MAX_FRAMES, sizeof(*pr->frames));
	pr->sym = symbolizer__new(NULL);
	pr->lab = labeler__new(&lo);
	wallclock__refresh(&pr->wc);
	pr->mins = minutes__new(1000000000LL / so.hz,
				 o->interval_ns > 0 ? o->interval_ns : 10 * 1000000000LL, now_ns());
	if (!pr->frames || !pr->sym || !pr->lab || !pr->mins)
		goto err;
	/* Every file read for symbols is also looked at for a runtime. */
	symbolizer__set_detector(pr->sym, &(struct symbolizer_detector){
		.detect = rtfile__detect, .free = rtfile__free, .size = sizeof(struct rtfile) });
	pr->ps = procs__new(&(struct procs_opts){ .sym = pr->sym, .lab = pr->lab, .maps_read = maps_read,
						  .maps_ctx = pr });
	if (!pr->ps)
		goto err;
	/* PROFFS_UNWIND=fp: the kernel's frame-pointer walk, for comparison. */
	const char *mode = getenv("PROFFS_UNWIND");
	if (!mode || strcmp(mode, "fp")) {
		/* PROFFS_UNWIND_DELAY=MS:PATH (tests): a slow build of one
		 * file, so a short process can exit before its table is read. */
		const char *d = getenv("PROFFS_UNWIND_DELAY"), *colon = d ? strchr(d, ':') : NULL;
		/* PROFFS_UNWIND_IDLE=S (tests): tables idle this long are
		 * freed, so a test sees row chunks given back. */
		const char *idle = getenv("PROFFS_UNWIND_IDLE");

		pr->unw = unwinder__new(&(struct unwinder_opts){
			.idle_ns = idle ? strtoll(idle, NULL, 10) * 1000000000LL : 0,
			.chunk_fd = o->unw_chunk_fd,
			.chunk_ctx = o->unw_chunk_ctx,
			.delay_path = colon ? colon + 1 : NULL,
			.build_delay_ns = colon ? strtoll(d, NULL, 10) * 1000000LL : 0 });
		pr->pend = pr->unw ? pending__new(pr->unw, pr->ps) : NULL;
		if (!pr->unw || !pr->pend)
			goto err;
		so.unwinder = pr->unw;
	}
	/* PROFFS_RUNTIMES=off: native frames only, for comparison. */
	mode = getenv("PROFFS_RUNTIMES");
	so.anon_wait = pr->pend && (!mode || strcmp(mode, "off"));
	err = sampler__open(&pr->s, &so);
	if (err)
		goto err;
	if (pr->unw && !sampler__walks_tables(pr->s)) {
		/* The kernel refused the tables: frame pointers (said). */
		pending__free(pr->pend);
		unwinder__free(pr->unw);
		pr->pend = NULL;
		pr->unw = NULL;
	}
	if (!mode || strcmp(mode, "off")) {
		pr->rts = runtimes__new(pr->s, pr->ps);
		pr->rtframes = calloc(STACK_MAX_FRAMES, sizeof(*pr->rtframes));
		if (!pr->rts || !pr->rtframes) {
			err = -ENOMEM;
			goto err;
		}
		pending__set_runtimes(pr->pend, &(struct pending_rt){ .step = rt_step, .mark_native = rt_native,
								     .ctx = pr->rts });
	}
	if (o->offcpu) {
		static const char *const types[] = { "events", "offcpu" };
		static const char *const units[] = { "count", "nanoseconds" };
		struct unwind_fds fds;
		struct offcpu_opts oo = {
			.target_tgid = o->target_tgid,
			.min_ns = o->offcpu_min_ns,
			.states = o->offcpu_states,
			.unw = sampler__unwind_fds(pr->s, &fds) ? NULL : &fds,
			.rt_procs_fd = pr->rts ? sampler__rt_procs_fd(pr->s) : -1,
			.on_sample = on_offcpu,
			.ctx = pr,
		};

		/* A block stands for itself: no sampling period. */
		pr->omins = minutes__new_typed(0, types, units,
					       o->interval_ns > 0 ? o->interval_ns : 10 * 1000000000LL,
					       now_ns());
		if (!pr->omins) {
			err = -ENOMEM;
			goto err;
		}
		/* A kernel that refuses it loses the offcpu type only
		 * (offcpu__open said why). */
		oo.rt_walks = pr->rts ? sampler__rt_walks(pr->s) : 0;
		err = offcpu__open(&pr->oc, &oo);
		if (err == -ENOMEM)
			goto err;
		if (err) {
			minutes__free(pr->omins);
			pr->omins = NULL;
			pr->oc = NULL;
		}
	}
	*out = pr;
	return 0;
err:
	profiler__close(pr);
	return err;
}

static void update_stats(struct profiler *pr)
{
	struct profiler_stats st = { 0 };
	uint64_t c[PROF_CNT_MAX], oc[OFFCPU_CNT_MAX];

	if (!sampler__counters(pr->s, c)) {
		st.bpf_samples = c[PROF_CNT_SAMPLES];
		st.idle = c[PROF_CNT_IDLE];
		st.lost_ring_full = c[PROF_CNT_RINGFULL];
		st.lost_events = c[PROF_CNT_EVENTS_LOST];
		st.kstack_errors = c[PROF_CNT_KSTACK_ERR];
		st.ustack_errors = c[PROF_CNT_USTACK_ERR];
		st.ktruncated = c[PROF_CNT_KTRUNC];
		st.utruncated = c[PROF_CNT_UTRUNC];
	}
	symbolizer__stats(pr->sym, &st.sym);
	st.samples = pr->samples;
	st.lost_nomem = pr->nomem;
	st.memo_hits = pr->memo_hits;
	st.procs = procs__count(pr->ps);
	st.ncpus = sampler__ncpus(pr->s);
	memcpy(st.uends, pr->uends, sizeof(st.uends));
	if (pr->unw) {
		unwinder__stats(pr->unw, &st.unw);
		pending__stats(pr->pend, &st.pend);
	}
	if (pr->oc && !offcpu__counters(pr->oc, oc)) {
		st.off.switches = oc[OFFCPU_CNT_SWITCHES];
		st.off.short_blocks = oc[OFFCPU_CNT_SHORT];
		st.off.short_ns = oc[OFFCPU_CNT_SHORT_NS];
		st.off.lost_ring_full = oc[OFFCPU_CNT_RINGFULL];
		st.off.lost_nostorage = oc[OFFCPU_CNT_MAPFULL];
		st.off.kstack_errors = oc[OFFCPU_CNT_KSTACK_ERR];
		st.off.ustack_errors = oc[OFFCPU_CNT_USTACK_ERR];
	}
	st.off.samples = pr->offcpu_samples;
	runtimes__update(pr->rts);
	pthread_mutex_lock(&pr->lock);
	pr->st = st;
	pthread_mutex_unlock(&pr->lock);
}

int profiler__poll(struct profiler *pr, int timeout_ms)
{
	int n;
	int64_t now;

	/* The table builder starts in the polling thread (once), so it has
	 * only the capabilities the daemon kept. */
	if (pr->unw && !pr->unw_running) {
		int err = unwinder__run(pr->unw);

		if (err)
			pr_warn("unwind: cannot start the table builder: %s", strerror(-err));
		pr->unw_running = true;
	}
	/* What the loader read since: used by the samples drained now. */
	procs__collect(pr->ps);
	symbolizer__watchdog(pr->sym);
	if (pr->deferred)
		replay(pr, false);
	/* The records this poll drains were taken after the previous one:
	 * the offset read now files them, so a clock step misfiles at most
	 * the samples of one poll wait around it. */
	wallclock__refresh(&pr->wc);
	{
		int due = procs__reread_due(pr->ps, now_mono_ns());
		int rdue = runtimes__due(pr->rts, now_mono_ns());

		if (rdue >= 0 && (due < 0 || rdue < due))
			due = rdue;
		if (due >= 0 && (timeout_ms < 0 || due < timeout_ms))
			timeout_ms = due;
	}
	n = sampler__poll(pr->s, timeout_ms);
	/* offcpu records wake no one: they are picked up with the samples. */
	if (pr->oc && n >= 0) {
		int m = offcpu__poll(pr->oc, 0);

		n = m < 0 ? m : n + m;
	}

	if (pr->pend)
		pending__drain(pr->pend, now_mono_ns(), unwound, pr);
	procs__gc(pr->ps);
	/* Exec records wake us often on a busy host; the figures (a few
	 * syscalls) need refreshing far less. */
	now = now_mono_ns();
	/* Between samples (no name looked up is held now), once a second. */
	if (now - pr->trim_ns >= 1000000000LL) {
		symbolizer__trim(pr->sym, 0);
		pr->trim_ns = now;
	}
	if (timeout_ms == 0 || now - pr->stats_ns >= 1000000000LL) {
		update_stats(pr);
		pr->stats_ns = now;
	}
	return n;
}

void profiler__settle(struct profiler *pr, int64_t budget_ns)
{
	int64_t end = now_mono_ns() + budget_ns;

	if (!pr->pend)
		return;
	/* Sampling goes on meanwhile: a poll takes what the ring holds
	 * (whose walks may park too) and finishes what the builder made. */
	while (pending__oldest(pr->pend) != INT64_MAX && now_mono_ns() < end) {
		usleep(10000);
		profiler__poll(pr, 0);
	}
	pending__drain(pr->pend, INT64_MAX, unwound, pr);
}

int profiler__take(struct profiler *pr, int64_t cut_ns, bool all,
		   struct minute_batch out[MINUTES_SLOTS], size_t *n)
{
	procs__collect(pr->ps);
	replay(pr, true);
	return minutes__take(pr->mins, cut_ns, all, out, n);
}

int64_t profiler__held_since(struct profiler *pr)
{
	int64_t t = pending__oldest(pr->pend), o = offcpu__oldest(pr->oc);

	if (o < t)
		t = o;
	return t == INT64_MAX ? t : wallclock__wall(&pr->wc, t);
}

uint64_t profiler__clock_steps(struct profiler *pr)
{
	return pr->wc.steps;
}

int profiler__take_offcpu(struct profiler *pr, int64_t cut_ns, bool all,
			  struct minute_batch out[MINUTES_SLOTS], size_t *n)
{
	if (!pr->omins) {
		*n = 0;
		return 0;
	}
	return minutes__take(pr->omins, cut_ns, all, out, n);
}

void profiler__wake(struct profiler *pr)
{
	sampler__wake(pr->s);
}

bool profiler__has_offcpu(const struct profiler *pr)
{
	return pr->oc != NULL;
}

void profiler__runtime_metrics(struct profiler *pr, struct buf *out)
{
	runtimes__metrics(pr->rts, out);
	sampler__cost_metrics(pr->s, out);
	symbolizer__go_metrics(pr->sym, out);
}

void profiler__stats(struct profiler *pr, struct profiler_stats *st)
{
	pthread_mutex_lock(&pr->lock);
	*st = pr->st;
	pthread_mutex_unlock(&pr->lock);
}

void profiler__close(struct profiler *pr)
{
	if (!pr)
		return;
	offcpu__close(pr->oc);
	sampler__close(pr->s);
	pending__free(pr->pend);
	unwinder__free(pr->unw);
	minutes__free(pr->omins);
	while (pr->deferred) {
		struct deferred *d = pr->deferred;

		pr->deferred = d->next;
		free(d);
	}
	minutes__free(pr->mins);
	procs__free(pr->ps);
	labeler__free(pr->lab);
	symbolizer__free(pr->sym);
	free(pr->frames);
	free(pr->rtframes);
	runtimes__free(pr->rts);
	pthread_mutex_destroy(&pr->lock);
	free(pr);
}

struct symbolizer *profiler__symbolizer(struct profiler *pr)
{
	return pr->sym;
}

void profiler__metrics(struct profiler *pr, bool offcpu, struct buf *out)
{
	struct profiler_stats st;

	profiler__stats(pr, &st);
	prom__counter(out, "proffs_samples_total", "CPU samples stored in batches.", st.samples);
	prom__counter(out, "proffs_samples_repeated_total",
		      "Samples and off-CPU blocks stored as a record seen before in their batch (not symbolized again).",
		      st.memo_hits);
	prom__counter(out, "proffs_bpf_samples_total", "Samples the BPF program took (idle excluded).",
		      st.bpf_samples);
	prom__counter(out, "proffs_idle_samples_total", "Samples of idle CPUs (counted, not stored).",
		      st.idle);
	prom__family(out, "proffs_lost_samples_total", PROM_COUNTER, "Samples lost, by cause.");
	prom__u64_by(out, "proffs_lost_samples_total", "cause", "ring_full", st.lost_ring_full);
	prom__u64_by(out, "proffs_lost_samples_total", "cause", "no_memory", st.lost_nomem);
	prom__counter(out, "proffs_lost_events_total", "Process exec/fork/exit records lost (ring full).",
		      st.lost_events);
	prom__family(out, "proffs_stack_errors_total", PROM_COUNTER, "Stacks that could not be read, by kind.");
	prom__u64_by(out, "proffs_stack_errors_total", "stack", "kernel", st.kstack_errors);
	prom__u64_by(out, "proffs_stack_errors_total", "stack", "user", st.ustack_errors);
	prom__family(out, "proffs_stacks_truncated_total", PROM_COUNTER,
		     "Stacks cut at the kernel's depth cap, by kind.");
	prom__u64_by(out, "proffs_stacks_truncated_total", "stack", "kernel", st.ktruncated);
	prom__u64_by(out, "proffs_stacks_truncated_total", "stack", "user", st.utruncated);
	prom__family(out, "proffs_sampled_cpus", PROM_GAUGE, "CPUs with an attached sampling event.");
	prom__i64(out, "proffs_sampled_cpus", NULL, 0, st.ncpus);
	prom__gauge(out, "proffs_processes_tracked", "Processes in the process-info cache.", st.procs);
	symbolizer__metrics(&st.sym, out);
	if (offcpu)
		offcpu__metrics(&st.off, out);
	safefile__metrics(out);
	{
		static const char *const ends[PROF_UE_MAX] = {
			[PROF_UE_NONE] = "none", [PROF_UE_ROOT] = "root", [PROF_UE_FP_END] = "fp_end",
			[PROF_UE_TRUNC] = "truncated", [PROF_UE_PENDING] = "pending",
			[PROF_UE_NO_TABLE] = "no_table", [PROF_UE_NO_RULE] = "no_rule",
			[PROF_UE_BAD_FRAME] = "bad_frame", [PROF_UE_BAD_PC] = "outside_mappings",
			[PROF_UE_NO_VMA] = "mappings_busy", [PROF_UE_FP] = "frame_pointers",
		};

		prom__family(out, "proffs_user_stacks_total", PROM_COUNTER,
			     "Stored user stacks by how their walk ended.");
		for (int i = 0; i < PROF_UE_MAX; i++)
			if (ends[i] && i != PROF_UE_PENDING)
				prom__u64_by(out, "proffs_user_stacks_total", "end", ends[i], st.uends[i]);
	}
	/* Each language runtime writes its own lines. */
	profiler__runtime_metrics(pr, out);
	kfeature__metrics(out);
	unwinder__metrics(&st.unw, out);
	pending__metrics(&st.pend, out);
}
