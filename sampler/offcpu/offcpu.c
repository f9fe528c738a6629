/*
 * offcpu.c - the user-space half of bpf/offcpu.bpf.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "gen/offcpu.skel.h"
#include "sampler/offcpu/offcpu.h"
#include "sampler/ring/kfeature.h"
#include "store/util/prom.h"
#include "store/util/util.h"

struct offcpu {
	struct offcpu_bpf *skel;
	struct ring_buffer *rb;
	int ncpus_possible;
	struct offcpu_opts o;
	struct prof_sample_ev *join; /* scratch: a kernel part with its user part */
	struct pend **pend;          /* kernel parts waiting for their user part, by age */
	size_t npend, cappend;
	uint64_t newest_ns;          /* the newest record's time */
	uint64_t expired, lost_nomem;
	unsigned budget;             /* records left in this poll */
};

/* Records handled per poll at most: producers that outpace us must not
 * keep the sampler thread (and a SIGTERM) inside one poll forever; what
 * is left waits for the next poll, or is dropped by the BPF side (and
 * counted) when the ring fills. About a ring's worth. */
#define POLL_BUDGET 32768
#define OUT_OF_BUDGET (-EAGAIN)

static const char *const state_names[OFFCPU_NSTATES] = {
	[OFFCPU_SLEEP] = "sleep",
	[OFFCPU_DISK] = "disk",
	[OFFCPU_RUNQUEUE] = "runqueue",
};

const char *offcpu__state_name(uint32_t flags)
{
	uint32_t s = (flags & OFFCPU_STATE_MASK) >> OFFCPU_STATE_SHIFT;

	return s < OFFCPU_NSTATES ? state_names[s] : NULL;
}

int offcpu__parse_states(const char *s, unsigned *mask)
{
	unsigned m = 0;

	if (!strcmp(s, "all")) {
		*mask = OFFCPU_DEFAULT_STATES;
		return 0;
	}
	while (*s) {
		size_t n = strcspn(s, ",");
		int i;

		for (i = 0; i < OFFCPU_NSTATES; i++)
			if (strlen(state_names[i]) == n && !strncmp(s, state_names[i], n))
				break;
		if (i == OFFCPU_NSTATES)
			return -EINVAL;
		m |= 1u << i;
		s += n;
		if (*s == ',')
			s++;
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

/* A kernel part waiting for its thread's user part. */
struct pend {
	size_t size;
	struct prof_sample_ev ev; /* the first `size` bytes are valid */
};

/* The user part of a block has not come for this long (ring time): the
 * thread died before it returned to user space. Stored with kernel frames
 * only. */
#define PEND_TIMEOUT_NS 2000000000ULL

static void emit(struct offcpu *oc, const struct prof_sample_ev *ev)
{
	if (oc->o.on_sample)
		oc->o.on_sample(oc->o.ctx, ev);
}

/* Joins kernel part k with user part u (NULL: none) and hands it on. */
static void join(struct offcpu *oc, const struct prof_sample_ev *k, const struct prof_sample_ev *u)
{
	struct prof_sample_ev *j = oc->join;
	size_t hdr = offsetof(struct prof_sample_ev, frames);

	memcpy(j, k, hdr + k->nkern * sizeof(__u64));
	j->flags &= ~OFFCPU_F_USER_NEXT;
	j->nuser = 0;
	j->nrt = 0;
	j->rtend = RT_END_NONE;
	j->rtkind = RT_NONE;
	j->uend = PROF_UE_NONE;
	j->ustack_len = 0;
	if (u) {
		memcpy(&j->frames[k->nkern], u->frames, u->nuser * sizeof(__u64));
		j->nuser = u->nuser;
		j->flags |= u->flags & (PROF_F_UTRUNC | PROF_F_UERR | PROF_F_UEXACT);
		j->cgroup_id = u->cgroup_id;
		memcpy(j->comm, u->comm, sizeof(j->comm));
		j->uend = u->uend;
		/* The runtime frames after the native ones, as many as fit
		 * after this block's kernel frames. */
		if (u->nrt) {
			size_t at = (size_t)k->nkern + u->nuser, fit = (2 * PROF_MAX_FRAMES - at) / 2;

			j->nrt = u->nrt <= fit ? u->nrt : (uint16_t)fit;
			j->rtend = j->nrt < u->nrt ? RT_END_TRUNC : u->rtend;
			j->rtkind = u->rtkind;
			memcpy(&j->frames[at], &u->frames[u->nuser], 2 * (size_t)j->nrt * sizeof(__u64));
		}
		/* A walk to finish: its registers and stack copy go along
		 * (handle_one bounded ustack_len by what arrived). */
		if (u->uend == PROF_UE_PENDING) {
			memcpy(j->uregs, u->uregs, sizeof(j->uregs));
			j->ustack_len = u->ustack_len;
			memcpy(j->ustack, u->ustack, u->ustack_len);
		}
	}
	emit(oc, j);
}

static void handle_one(struct offcpu *oc, void *data, size_t size)
{
	const struct prof_sample_ev *ev = data;
	size_t w = 0;

	if (size < offsetof(struct prof_sample_ev, frames))
		return;
	/* Never trust lengths beyond what arrived. */
	if (ev->nkern > PROF_MAX_FRAMES || ev->nuser > PROF_MAX_FRAMES ||
	    (size_t)ev->nkern + ev->nuser + 2u * ev->nrt > 2 * PROF_MAX_FRAMES ||
	    offsetof(struct prof_sample_ev, frames) + prof_sample_slots(ev) * sizeof(__u64) > size)
		return;
	if (ev->time_ns > oc->newest_ns)
		oc->newest_ns = ev->time_ns;
	if (ev->type == OFFCPU_EV_SAMPLE) {
		struct pend *p;

		if (!(ev->flags & OFFCPU_F_USER_NEXT) || ev->nuser) {
			emit(oc, ev);
			return;
		}
		if (oc->npend == oc->cappend) {
			size_t nc = oc->cappend ? 2 * oc->cappend : 64;
			struct pend **nv = realloc(oc->pend, nc * sizeof(*nv));

			if (!nv)
				goto nomem;
			oc->pend = nv;
			oc->cappend = nc;
		}
		p = malloc(offsetof(struct pend, ev) + size);
		if (!p)
			goto nomem;
		p->size = size;
		memcpy(&p->ev, ev, size);
		oc->pend[oc->npend++] = p;
		return;
	}
	if (ev->type != OFFCPU_EV_USER)
		return;
	if (ev->uend == PROF_UE_PENDING &&
	    (size < offsetof(struct prof_sample_ev, ustack) ||
	     ev->ustack_len > size - offsetof(struct prof_sample_ev, ustack)))
		return;
	/* Every block of this thread since it last left user space. */
	for (size_t r = 0; r < oc->npend; r++) {
		struct pend *p = oc->pend[r];

		if (p->ev.tid == ev->tid && p->ev.time_ns <= ev->time_ns) {
			join(oc, &p->ev, ev);
			free(p);
		} else {
			oc->pend[w++] = p;
		}
	}
	oc->npend = w;
	return;
nomem:
	oc->lost_nomem++;
	return;
}

/* libbpf's ring callback. An error ends the consume, after this record
 * (libbpf has already moved past it): so it is handled first. */
static int handle(void *ctx, void *data, size_t size)
{
	struct offcpu *oc = ctx;

	handle_one(oc, data, size);
	if (oc->budget)
		oc->budget--;
	return oc->budget ? 0 : OUT_OF_BUDGET;
}

/* Kernel parts whose user part will not come (see PEND_TIMEOUT_NS). */
static void expire(struct offcpu *oc)
{
	size_t w = 0;

	for (size_t r = 0; r < oc->npend; r++) {
		struct pend *p = oc->pend[r];

		if (p->ev.time_ns + PEND_TIMEOUT_NS < oc->newest_ns) {
			join(oc, &p->ev, NULL);
			free(p);
			oc->expired++;
		} else {
			oc->pend[w++] = p;
		}
	}
	oc->npend = w;
}

int64_t offcpu__oldest(const struct offcpu *oc)
{
	int64_t t = INT64_MAX;

	for (size_t i = 0; oc && i < oc->npend; i++)
		if ((int64_t)oc->pend[i]->ev.time_ns < t)
			t = (int64_t)oc->pend[i]->ev.time_ns;
	return t;
}

/* Opens and loads the object, walking user stacks with the tables unw
 * (NULL: frame pointers) and the runtime walks `walks`. Returns 0
 * (oc->skel loaded) or -errno (oc->skel NULL). */
static int load_one(struct offcpu *oc, size_t ring, const struct unwind_fds *unw, uint32_t walks)
{
	int err;

	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		err = -errno;
		pr_err("offcpu: cannot open BPF object: %s", strerror(errno));
		return err;
	}
	oc->skel->rodata->self_tgid = oc->o.self_tgid;
	oc->skel->rodata->target_tgid = oc->o.target_tgid;
	oc->skel->rodata->min_ns = oc->o.min_ns;
	oc->skel->rodata->state_mask = oc->o.states;
	oc->skel->rodata->with_kthreads = oc->o.kthreads;
	oc->skel->rodata->rt_walks = walks;
	oc->skel->rodata->test_refuse = kfeature__test_refuse("offcpu") ? TEST_REFUSE_OFFCPU : 0;
	/* The cpu sampler's tables, not copies: one set of rows to build,
	 * and a file's table loaded for either program serves both. */
	oc->skel->rodata->unwind_tables = unw != NULL;
	if (unw &&
	    ((err = bpf_map__reuse_fd(oc->skel->maps.unw_rows, unw->rows)) ||
	     (err = bpf_map__reuse_fd(oc->skel->maps.unw_rules, unw->rules)) ||
	     (err = bpf_map__reuse_fd(oc->skel->maps.unw_files, unw->files)))) {
		pr_err("offcpu: cannot share the unwind tables: %s", strerror(-err));
		goto err;
	}
	/* And its runtime processes: set up from either program's records. */
	if (oc->o.rt_procs_fd > 0 && (err = bpf_map__reuse_fd(oc->skel->maps.rt_procs, oc->o.rt_procs_fd))) {
		pr_err("offcpu: cannot share the runtime processes: %s", strerror(-err));
		goto err;
	}
	err = bpf_map__set_max_entries(oc->skel->maps.events, ring);
	if (!err)
		err = offcpu_bpf__load(oc->skel);
	if (!err)
		return 0;
err:
	offcpu_bpf__destroy(oc->skel);
	oc->skel = NULL;
	return err;
}

int offcpu__open(struct offcpu **out, const struct offcpu_opts *o)
{
	struct offcpu *oc;
	size_t ring, pow;
	int err;

	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return -ENOMEM;
	oc->o = *o;
	if (!oc->o.min_ns)
		oc->o.min_ns = OFFCPU_DEFAULT_MIN_NS;
	if (!oc->o.states)
		oc->o.states = OFFCPU_DEFAULT_STATES;
	if (!oc->o.self_tgid)
		oc->o.self_tgid = getpid();
	oc->ncpus_possible = libbpf_num_possible_cpus();
	if (oc->ncpus_possible <= 0) {
		err = oc->ncpus_possible ? oc->ncpus_possible : -EINVAL;
		goto err;
	}
	oc->join = malloc(sizeof(*oc->join));
	if (!oc->join) {
		err = -ENOMEM;
		goto err;
	}
	/* Records are drained every poll (~250 ms) without a wakeup each:
	 * 1 MiB holds ~2.5k typical records (~400 B), i.e. ~10k blocks/s of
	 * at least the minimum, 15x the busy host of scripts/bench/busy.sh
	 * (600-700 a second, none lost). It is memory locked for the
	 * daemon's life, and the consumer maps it twice (wrap-around): each
	 * MiB is two of the daemon's RSS once wrapped. 4 MiB, then 2, were
	 * most of the daemon's budget and of its peak (issue 26). */
	ring = o->ring_bytes ? o->ring_bytes : 1u << 20;
	for (pow = 1 << 20; pow < ring && pow < (1u << 28); pow <<= 1)
		;
	err = load_one(oc, pow, o->unw, o->rt_walks);
	if (err && o->unw) {
		kfeature__refused("offcpu_unwind_tables", "off-CPU user stacks by frame pointers", err);
		err = load_one(oc, pow, NULL, o->rt_walks & ~RT_STEP_WALKS);
	}
	if (err) {
		kfeature__refused("offcpu", "no offcpu type", err);
		goto err;
	}
	kfeature__on("offcpu");
	err = offcpu_bpf__attach(oc->skel);
	if (err) {
		pr_err("offcpu: cannot attach to sched_switch: %s", strerror(-err));
		goto err;
	}
	oc->rb = ring_buffer__new(bpf_map__fd(oc->skel->maps.events), handle, oc, NULL);
	if (!oc->rb) {
		err = -errno;
		goto err;
	}
	pr_info("offcpu: blocks of >= %.3f ms (%s%s%s), ring %zu KiB", oc->o.min_ns / 1e6,
		oc->o.states & 1 ? "sleep " : "", oc->o.states & 2 ? "disk " : "",
		oc->o.states & 4 ? "runqueue" : "", pow >> 10);
	*out = oc;
	return 0;
err:
	offcpu__close(oc);
	return err < 0 ? err : -EINVAL;
}

int offcpu__poll(struct offcpu *oc, int timeout_ms)
{
	int n, m;

	oc->budget = POLL_BUDGET;
	n = ring_buffer__poll(oc->rb, timeout_ms);
	if (n == -EINTR || n == OUT_OF_BUDGET)
		n = 0;
	if (n < 0)
		return n;
	/* Records wake no one (a wakeup per block would cost more than the
	 * block's record): poll only waits, consume reads. */
	m = ring_buffer__consume(oc->rb);
	if (m == OUT_OF_BUDGET)
		m = 0;
	expire(oc);
	return m < 0 ? m : n + (int)(POLL_BUDGET - oc->budget);
}

int offcpu__counters(struct offcpu *oc, uint64_t out[OFFCPU_CNT_MAX])
{
	int np = oc->ncpus_possible;
	__u64 *vals = calloc(np, sizeof(*vals));

	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < OFFCPU_CNT_MAX; k++) {
		out[k] = 0;
		if (bpf_map__lookup_elem(oc->skel->maps.counters, &k, sizeof(k), vals,
					 np * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < np; c++)
			out[k] += vals[c];
	}
	/* Counted in user space, same effect as their BPF twins. */
	out[OFFCPU_CNT_USTACK_ERR] += oc->expired;
	out[OFFCPU_CNT_RINGFULL] += oc->lost_nomem;
	free(vals);
	return 0;
}

void offcpu__close(struct offcpu *oc)
{
	if (!oc)
		return;
	ring_buffer__free(oc->rb);
	offcpu_bpf__destroy(oc->skel);
	for (size_t i = 0; i < oc->npend; i++)
		free(oc->pend[i]);
	free(oc->pend);
	free(oc->join);
	free(oc);
}

void offcpu__metrics(const struct offcpu_stats *st, struct buf *out)
{
	prom__counter(out, "proffs_offcpu_samples_total", "Off-CPU blocks stored in batches.",
		      st->samples);
	prom__counter(out, "proffs_offcpu_switches_total", "Switch-outs of recorded threads noted.",
		      st->switches);
	prom__counter(out, "proffs_offcpu_short_total", "Blocks under --offcpu-min (counted, not stored).",
		      st->short_blocks);
	prom__family(out, "proffs_offcpu_short_seconds_total", PROM_COUNTER,
		     "Off-CPU time of the blocks under --offcpu-min.");
	prom__f64(out, "proffs_offcpu_short_seconds_total", NULL, 0, st->short_ns / 1e9);
	prom__family(out, "proffs_offcpu_lost_total", PROM_COUNTER,
		     "Off-CPU blocks or switch-outs lost, by cause.");
	prom__u64_by(out, "proffs_offcpu_lost_total", "cause", "ring_full", st->lost_ring_full);
	prom__u64_by(out, "proffs_offcpu_lost_total", "cause", "no_task_storage",
		     st->lost_nostorage);
	prom__family(out, "proffs_offcpu_stack_errors_total", PROM_COUNTER,
		     "Off-CPU stacks that could not be read, by kind.");
	prom__u64_by(out, "proffs_offcpu_stack_errors_total", "stack", "kernel", st->kstack_errors);
	prom__u64_by(out, "proffs_offcpu_stack_errors_total", "stack", "user", st->ustack_errors);
}
