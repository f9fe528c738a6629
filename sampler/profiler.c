/*
 * profiler.c - wiring sampler, procs, symbolizer, labeler and batch.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/batch/batch.h"
#include "sampler/proc/labels.h"
#include "sampler/proc/procinfo.h"
#include "sampler/profiler.h"
#include "sampler/ring/sampler.h"
#include "sampler/batch/stack.h"
#include "sampler/symbols/symbolize.h"
#include "sampler/unwind/pending.h"
#include "sampler/unwind/unwinder.h"
#include "store/util/util.h"

struct profiler {
	struct sampler *s;
	struct symbolizer *sym;
	struct labeler *lab;
	struct procs *ps;
	struct batch *b;
	struct frame *frames;
	struct unwinder *unw; /* NULL: frame pointers only (PROFFS_UNWIND=fp) */
	struct pending *pend;
	uint64_t samples, nomem;
	uint64_t uends[PROF_UE_MAX];
	int64_t stats_ns; /* monotonic time of the last update_stats() */
	pthread_mutex_t lock; /* guards st */
	struct profiler_stats st;
};

/* A sample whose user walk is finished: symbolized into the batch. */
static void add_sample(void *ctx, struct proc *p, const struct prof_sample_ev *ev)
{
	struct profiler *pr = ctx;
	int n = stack__symbolize(pr->ps, pr->sym, p, ev, pr->frames, 2 * PROF_MAX_FRAMES);
	char comm[PROF_COMM_LEN + 1];

	pr->uends[ev->uend < PROF_UE_MAX ? ev->uend : PROF_UE_NONE]++;
	/* Tables in use stay; the rest age out. */
	if (pr->unw && ev->nuser) {
		int64_t now = now_mono_ns();
		const struct vma *last = NULL;

		unwinder__lock(pr->unw);
		for (int i = 0; i < n; i++) {
			const struct vma *v = pr->frames[i].vma;

			if (!v || v == last || !v->file)
				continue;
			last = v;
			unwinder__touch_locked(pr->unw, unwinder__kdev(v->dev), v->ino, now);
		}
		unwinder__unlock(pr->unw);
	}
	memcpy(comm, ev->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	if (batch__add(pr->b, p, ev->tgid, comm, pr->frames, n))
		pr->nomem++;
	else
		pr->samples++;
}

static void on_sample(void *ctx, const struct prof_sample_ev *ev, size_t size)
{
	struct profiler *pr = ctx;
	struct proc *p = procs__get(pr->ps, ev->tgid, ev->comm, ev->cgroup_id);

	if (ev->uend == PROF_UE_PENDING && pr->pend) {
		pending__add(pr->pend, p, ev, size, add_sample, pr);
		return;
	}
	add_sample(pr, p, ev);
}

static void on_task(void *ctx, const struct prof_task_ev *ev)
{
	struct profiler *pr = ctx;
	char comm[PROF_COMM_LEN + 1];

	memcpy(comm, ev->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	switch (ev->type) {
	case PROF_EV_EXEC:
		procs__exec(pr->ps, ev->tgid, comm, ev->cgroup_id);
		/* Build the new image's tables before its first samples. */
		if (pr->pend)
			pending__request_maps(pr->pend, procs__get(pr->ps, ev->tgid, comm, ev->cgroup_id));
		break;
	case PROF_EV_FORK:
		/* A child inherits its parent's maps; maps read at the parent's
		 * exec lack its libraries, and the child may not live to be read. */
		if (pr->pend) {
			struct proc *pp = procs__get(pr->ps, ev->ppid, comm, ev->cgroup_id);

			if (pp && pp->own_maps && !pp->maps_gap_ns)
				procs__refresh(pr->ps, pp, true, false);
		}
		procs__fork(pr->ps, ev->tgid, ev->ppid, comm, ev->cgroup_id);
		break;
	case PROF_EV_EXIT:
		procs__exit(pr->ps, ev->tgid);
		break;
	}
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
	so.ctx = pr;
	pr->frames = calloc(2 * PROF_MAX_FRAMES, sizeof(*pr->frames));
	pr->sym = symbolizer__new(NULL);
	pr->lab = labeler__new(&lo);
	pr->b = batch__new(1000000000LL / so.hz);
	if (!pr->frames || !pr->sym || !pr->lab || !pr->b)
		goto err;
	pr->ps = procs__new(&(struct procs_opts){ .sym = pr->sym, .lab = pr->lab });
	if (!pr->ps)
		goto err;
	/* PROFFS_UNWIND=fp: the kernel's frame-pointer walk, for comparison. */
	const char *mode = getenv("PROFFS_UNWIND");
	if (!mode || strcmp(mode, "fp")) {
		pr->unw = unwinder__new(&(struct unwinder_opts){ 0 });
		pr->pend = pr->unw ? pending__new(pr->unw, pr->ps) : NULL;
		if (!pr->unw || !pr->pend)
			goto err;
		so.unwinder = pr->unw;
	}
	err = sampler__open(&pr->s, &so);
	if (err)
		goto err;
	*out = pr;
	return 0;
err:
	profiler__close(pr);
	return err;
}

static void update_stats(struct profiler *pr)
{
	struct profiler_stats st = { 0 };
	struct symbolizer_stats ss;
	uint64_t c[PROF_CNT_MAX];

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
	symbolizer__stats(pr->sym, &ss);
	st.samples = pr->samples;
	st.lost_nomem = pr->nomem;
	st.procs = procs__count(pr->ps);
	st.dsos = ss.dsos;
	st.symtabs = ss.symtabs;
	st.symbols = ss.symbols;
	st.kernel_symbols = ss.kernel_symbols;
	st.sym_hits = ss.hits;
	st.sym_misses = ss.misses;
	st.ncpus = sampler__ncpus(pr->s);
	memcpy(st.uends, pr->uends, sizeof(st.uends));
	if (pr->unw) {
		struct pending_stats ps;

		unwinder__stats(pr->unw, &st.unw);
		pending__stats(pr->pend, &ps);
		st.pend_finished = ps.finished;
		st.pend_expired = ps.expired;
		st.pend_dropped = ps.dropped;
		st.pend_parked = ps.parked;
	}
	pthread_mutex_lock(&pr->lock);
	pr->st = st;
	pthread_mutex_unlock(&pr->lock);
}

int profiler__poll(struct profiler *pr, int timeout_ms)
{
	int n = sampler__poll(pr->s, timeout_ms);
	int64_t now;

	if (pr->pend)
		pending__drain(pr->pend, now_mono_ns(), add_sample, pr);
	procs__gc(pr->ps);
	/* Exec records wake us often on a busy host; the figures (a few
	 * syscalls) need refreshing far less. */
	now = now_mono_ns();
	if (timeout_ms == 0 || now - pr->stats_ns >= 1000000000LL) {
		update_stats(pr);
		pr->stats_ns = now;
	}
	return n;
}

int profiler__take(struct profiler *pr, struct profile **out, int64_t *start_ns,
		   int64_t *duration_ns)
{
	return batch__take(pr->b, out, start_ns, duration_ns);
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
	sampler__close(pr->s);
	pending__free(pr->pend);
	unwinder__free(pr->unw);
	batch__free(pr->b);
	procs__free(pr->ps);
	labeler__free(pr->lab);
	symbolizer__free(pr->sym);
	free(pr->frames);
	pthread_mutex_destroy(&pr->lock);
	free(pr);
}
