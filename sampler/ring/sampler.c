/*
 * sampler.c - the user-space half of bpf/profile.bpf.c.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "gen/profile.skel.h"
#include "sampler/ring/kfeature.h"
#include "sampler/ring/sampler.h"
#include "store/util/prom.h"
#include "store/util/util.h"

struct sampler {
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *pfds;
	int nlinks, ncpus_possible;
	int wake_fd; /* an eventfd in the ring's epoll set: sampler__wake */
	__u32 rt_walks; /* the runtime walks loaded (1 << enum rt_kind) */
	struct sampler_opts o;
};

/* The runtimes, by their feature names (enum rt_kind). */
static const char *const walk_names[RT_NKINDS] = RT_KIND_NAMES;

static int handle(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct prof_hdr *h = data;

	if (size < sizeof(*h))
		return 0;
	if (h->type == PROF_EV_SAMPLE && size >= offsetof(struct prof_sample_ev, frames)) {
		const struct prof_sample_ev *ev = data;

		/* Never trust lengths beyond what arrived. */
		if (offsetof(struct prof_sample_ev, frames) +
			    (size_t)prof_sample_slots(ev) * sizeof(__u64) > size ||
		    prof_sample_slots(ev) > 2 * PROF_MAX_FRAMES)
			return 0;
		/* A stack copy is trusted only as far as it arrived. */
		if (ev->uend == PROF_UE_PENDING) {
			size_t head = offsetof(struct prof_sample_ev, ustack);
			struct prof_sample_ev *w = data;

			if (size < head || ev->ustack_len > size - head)
				w->ustack_len = size < head ? 0 : size - head;
		}
		if (s->o.on_sample)
			s->o.on_sample(s->o.ctx, ev, size);
	} else if (h->type != PROF_EV_SAMPLE && size >= sizeof(struct prof_task_ev)) {
		if (s->o.on_task)
			s->o.on_task(s->o.ctx, data);
	}
	return 0;
}

/* Online CPUs from sysfs ("0-3,5"); falls back to all possible. */
static int online_cpus(bool **online, int *n)
{
	int np = libbpf_num_possible_cpus();
	char buf[1024];
	FILE *f;
	bool *on;

	if (np <= 0)
		return np ? np : -EINVAL;
	on = calloc(np, sizeof(*on));
	if (!on)
		return -ENOMEM;
	f = fopen("/sys/devices/system/cpu/online", "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		for (int i = 0; i < np; i++)
			on[i] = true;
	} else {
		char *p = buf;

		while (*p && *p != '\n') {
			char *e;
			long a = strtol(p, &e, 10), b = a;

			if (e == p)
				break;
			if (*e == '-')
				b = strtol(e + 1, &e, 10);
			for (long i = a; i <= b && i < np; i++)
				if (i >= 0)
					on[i] = true;
			p = *e == ',' ? e + 1 : e;
		}
	}
	if (f)
		fclose(f);
	*online = on;
	*n = np;
	return 0;
}

/* The ring's size: a power of two, >= 1 MiB. */
static size_t pow_ring(const struct sampler *s, int np)
{
	size_t ring = s->o.ring_bytes, pow = 1 << 20;

	/* Worst case a record is ~2 KiB (a typical one ~300 bytes); keep a
	 * second of full-depth samples of every CPU, four polls' worth, plus
	 * a burst of 16 records carrying a whole stack copy (new binaries'
	 * walks, ~30 KiB each; most copies are a few KiB, the stack in use).
	 * The consumer maps the ring twice (wrap-around) and the kernel maps
	 * all its pages at once, so each byte here is two of the daemon's
	 * RSS: 1 MiB at 99 Hz on 2 CPUs (was 2 MiB with room for 32 copies,
	 * and 4 MiB before that: 8 MiB of RSS, most of the busy host's peak
	 * over its goal, issue 26). */
	if (!ring)
		ring = (size_t)s->o.hz * np * offsetof(struct prof_sample_ev, ustack) +
		       16 * sizeof(struct prof_sample_ev);
	while (pow < ring && pow < (1u << 26)) /* 64 MiB is plenty for any hz */
		pow <<= 1;
	return pow;
}

/* Opens and loads the object with the unwind tables on or off and the
 * runtime walks `walks`. Returns 0 (s->skel loaded) or -errno (s->skel
 * NULL; libbpf's messages kept the verifier's log). */
static int load_one(struct sampler *s, size_t ring, bool tables, __u32 walks)
{
	__u32 refuse = 0;
	int err;

	s->skel = profile_bpf__open();
	if (!s->skel) {
		err = -errno;
		pr_err("sampler: cannot open BPF object: %s", strerror(errno));
		return err;
	}
	if (kfeature__test_refuse("unwind_tables"))
		refuse |= TEST_REFUSE_TABLES;
	for (int k = RT_NONE + 1; k < RT_NKINDS; k++)
		if (kfeature__test_refuse(walk_names[k]))
			refuse |= 1u << k;
	s->skel->rodata->target_tgid = s->o.target_tgid;
	s->skel->rodata->unwind_tables = tables;
	s->skel->rodata->anon_wait = tables && s->o.anon_wait;
	s->skel->rodata->rt_walks = walks;
	s->skel->rodata->test_refuse = refuse;
	err = bpf_map__set_max_entries(s->skel->maps.events, ring);
	if (!err && tables)
		err = unwinder__size_maps(s->o.unwinder, s->skel->maps.unw_rows, s->skel->maps.unw_rules,
					  s->skel->maps.unw_files);
	if (!err)
		err = profile_bpf__load(s->skel);
	if (err) {
		profile_bpf__destroy(s->skel);
		s->skel = NULL;
	}
	return err;
}


/*
 * Loads what the kernel takes, stepping down (kfeature.h says each step):
 * everything; else without the runtime walks the kernel refuses (each
 * tried alone, so one refused walk costs no other); else the kernel's
 * frame-pointer walk instead of the unwind tables, with the walks that do
 * not need them. Only an object refused in its smallest form fails.
 */
static int load_ladder(struct sampler *s, size_t ring)
{
	bool tables = s->o.unwinder != NULL;
	__u32 walks = tables ? RT_ALL_WALKS : RT_ALL_WALKS & ~RT_STEP_WALKS;
	bool base_loads = false; /* (tables, no walk) is known to load */
	int err, err0;

	err = load_one(s, ring, tables, walks);
	if (err && tables) {
		err0 = err;
		err = load_one(s, ring, true, 0);
		if (err) {
			kfeature__refused("unwind_tables", "user stacks walked by frame pointers only", err);
			tables = false;
			walks &= ~RT_STEP_WALKS;
			s->o.unwinder = NULL;
			err = load_one(s, ring, false, walks);
		} else {
			/* The log the full load kept is not the one-walk loads'. */
			profile_bpf__destroy(s->skel);
			s->skel = NULL;
			base_loads = true;
			err = err0;
		}
	}
	if (err) {
		/* Each walk alone, on what loads without any. */
		if (!base_loads) {
			err = load_one(s, ring, tables, 0);
			if (err) {
				kfeature__refused(tables ? "unwind_tables" : "cpu_sampler", "no sampling program loads",
						  err);
				return err;
			}
			profile_bpf__destroy(s->skel);
			s->skel = NULL;
		}
		__u32 ok = 0;
		for (int k = 0; k < RT_NKINDS; k++) {
			if (!(walks & (1u << k)))
				continue;
			err = load_one(s, ring, tables, 1u << k);
			if (err) {
				kfeature__refused(walk_names[k], "its frames stay native", err);
				continue;
			}
			profile_bpf__destroy(s->skel);
			s->skel = NULL;
			ok |= 1u << k;
		}
		walks = ok;
		err = load_one(s, ring, tables, walks);
		if (err) {
			kfeature__refused("runtime walks", "together too large: all runtimes' frames stay native", err);
			walks = 0;
			err = load_one(s, ring, tables, 0);
			if (err)
				return err;
		}
	}
	s->rt_walks = walks;
	kfeature__on("cpu_sampler");
	if (tables)
		kfeature__on("unwind_tables");
	for (int k = 0; k < RT_NKINDS; k++)
		if (walks & (1u << k))
			kfeature__on(walk_names[k]);
	return 0;
}

int sampler__open(struct sampler **out, const struct sampler_opts *o)
{
	struct sampler *s;
	bool *online = NULL;
	int err, np = 0;

	kfeature__install();
	s = calloc(1, sizeof(*s));
	if (s)
		s->wake_fd = -1;
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (s->o.hz <= 0)
		s->o.hz = 19;
	err = online_cpus(&online, &np);
	if (err)
		goto err;
	s->ncpus_possible = np;

	err = load_ladder(s, pow_ring(s, np));
	if (err)
		goto err;
	if (s->o.unwinder) {
		err = unwinder__start(o->unwinder, s->skel->maps.unw_rows, s->skel->maps.unw_rules,
				      s->skel->maps.unw_files);
		if (err) {
			pr_err("sampler: cannot set up unwind tables: %s", strerror(-err));
			goto err;
		}
	}
	/* Lifecycle tracepoints first, so no process slips between. */
	err = profile_bpf__attach(s->skel);
	if (err) {
		pr_err("sampler: cannot attach tracepoints: %s", strerror(-err));
		goto err;
	}
	s->links = calloc(np, sizeof(*s->links));
	s->pfds = malloc(np * sizeof(*s->pfds));
	if (!s->links || !s->pfds) {
		err = -ENOMEM;
		goto err;
	}
	for (int cpu = 0; cpu < np; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.freq = 1,
			.sample_freq = s->o.hz,
		};
		int fd;

		s->pfds[cpu] = -1;
		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			/* A CPU that went offline since we looked is not fatal. */
			if (errno == ENODEV)
				continue;
			err = -errno;
			pr_err("sampler: perf_event_open on cpu %d: %s", cpu, strerror(errno));
			goto err;
		}
		s->pfds[cpu] = fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_sample, fd);
		if (!s->links[cpu]) {
			err = -errno;
			pr_err("sampler: attach to cpu %d: %s", cpu, strerror(errno));
			goto err;
		}
		s->nlinks++;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle, s, NULL);
	if (!s->rb) {
		err = -errno;
		goto err;
	}
	/* One shot, reported as the ring (libbpf takes an event's data as
	 * its ring's index): a wake drains the ring once and is spent, so
	 * no read is needed to clear it. */
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0 ||
	    epoll_ctl(ring_buffer__epoll_fd(s->rb), EPOLL_CTL_ADD, s->wake_fd,
		      &(struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.fd = 0 })) {
		err = -errno;
		goto err;
	}
	free(online);
	pr_info("sampler: %d Hz on %d CPUs, ring %u KiB", s->o.hz, s->nlinks,
		bpf_map__max_entries(s->skel->maps.events) >> 10);
	*out = s;
	return 0;
err:
	free(online);
	sampler__close(s);
	return err < 0 ? err : -EINVAL;
}

int sampler__poll(struct sampler *s, int timeout_ms)
{
	int n = ring_buffer__poll(s->rb, timeout_ms);

	if (n == -EINTR)
		return 0;
	if (n < 0)
		return n;
	/* A wakeup by a lifecycle record leaves samples queued behind it. */
	int m = ring_buffer__consume(s->rb);
	return m < 0 ? m : n + m;
}

/* Sums a per-CPU array map's first n slots into out. */
static int sum_percpu(struct sampler *s, struct bpf_map *m, uint64_t *out, __u32 n)
{
	int np = s->ncpus_possible;
	__u64 *vals = calloc(np, sizeof(*vals));

	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < n; k++) {
		out[k] = 0;
		if (bpf_map__lookup_elem(m, &k, sizeof(k), vals, np * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < np; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int sampler__counters(struct sampler *s, uint64_t out[PROF_CNT_MAX])
{
	return sum_percpu(s, s->skel->maps.counters, out, PROF_CNT_MAX);
}

_Static_assert(PROF_COST_KINDS == RT_NKINDS, "one cost slot per runtime kind");

void sampler__cost_metrics(struct sampler *s, struct buf *out)
{
	static const char *const *const kind = walk_names;
	uint64_t c[PROF_CNT_MAX];

	if (sum_percpu(s, s->skel->maps.counters, c, PROF_CNT_MAX))
		return;
	prom__family(out, "proffs_bpf_sample_seconds_total", PROM_COUNTER,
		     "Time the sampling program spent on samples, by the runtime of the "
		     "process sampled (native: none walked).");
	for (int k = 0; k < PROF_COST_KINDS; k++) {
		struct prom_label l = { "runtime", kind[k] };

		prom__f64(out, "proffs_bpf_sample_seconds_total", &l, 1, c[PROF_CNT_COST_NS + k] / 1e9);
	}
	prom__family(out, "proffs_bpf_samples_by_runtime_total", PROM_COUNTER,
		     "Samples timed in proffs_bpf_sample_seconds_total, by the same runtime.");
	for (int k = 0; k < PROF_COST_KINDS; k++)
		prom__u64_by(out, "proffs_bpf_samples_by_runtime_total", "runtime", kind[k],
			     c[PROF_CNT_COST_N + k]);
}

int sampler__rt_ends(struct sampler *s, const char *map, uint64_t *out, size_t n)
{
	struct bpf_map *m = s && map ? bpf_object__find_map_by_name(s->skel->obj, map) : NULL;
	size_t have = m ? bpf_map__max_entries(m) : 0;

	memset(out, 0, n * sizeof(*out));
	if (!m)
		return -ENOENT;
	return sum_percpu(s, m, out, n < have ? n : have);
}

int sampler__rt_set(struct sampler *s, pid_t tgid, const struct rt_proc *c)
{
	__u32 k = (__u32)tgid;
	int err;

	if (!c)
		err = bpf_map__delete_elem(s->skel->maps.rt_procs, &k, sizeof(k), 0);
	else
		err = bpf_map__update_elem(s->skel->maps.rt_procs, &k, sizeof(k), c, sizeof(*c),
					   BPF_ANY);
	return err == -ENOENT && !c ? 0 : err;
}

void sampler__wake(struct sampler *s)
{
	uint64_t one = 1;

	if (s && s->wake_fd >= 0 && write(s->wake_fd, &one, sizeof(one)) < 0)
		pr_debug("sampler: wake: %s", strerror(errno));
}

int sampler__ncpus(struct sampler *s)
{
	return s->nlinks;
}

int sampler__rt_procs_fd(struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.rt_procs);
}

bool sampler__walks_tables(const struct sampler *s)
{
	return s->o.unwinder != NULL;
}

uint32_t sampler__rt_walks(const struct sampler *s)
{
	return s->rt_walks;
}

int sampler__unwind_fds(struct sampler *s, struct unwind_fds *out)
{
	if (!s->o.unwinder)
		return -ENOENT;
	out->rows = bpf_map__fd(s->skel->maps.unw_rows);
	out->rules = bpf_map__fd(s->skel->maps.unw_rules);
	out->files = bpf_map__fd(s->skel->maps.unw_files);
	return 0;
}

void sampler__close(struct sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->links)
		for (int i = 0; i < s->ncpus_possible; i++)
			bpf_link__destroy(s->links[i]);
	if (s->pfds)
		for (int i = 0; i < s->ncpus_possible; i++)
			if (s->pfds[i] >= 0)
				close(s->pfds[i]);
	profile_bpf__destroy(s->skel);
	free(s->links);
	free(s->pfds);
	free(s);
}
