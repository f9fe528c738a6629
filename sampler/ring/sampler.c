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
	struct sampler_opts o;
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];

	if (level == LIBBPF_DEBUG && log_level < LOG_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0; /* log_msg ends the line itself */
	if (level == LIBBPF_WARN)
		pr_warn("libbpf: %s", buf);
	else
		pr_debug("libbpf: %s", buf);
	return 0;
}

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

int sampler__open(struct sampler **out, const struct sampler_opts *o)
{
	struct sampler *s;
	bool *online = NULL;
	size_t ring;
	int err, np = 0;

	libbpf_set_print(libbpf_log);
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

	s->skel = profile_bpf__open();
	if (!s->skel) {
		err = -errno;
		pr_err("sampler: cannot open BPF object: %s", strerror(errno));
		goto err;
	}
	s->skel->rodata->target_tgid = o->target_tgid;
	/* Worst case a record is ~2 KiB (a typical one ~300 bytes); keep a
	 * second of full-depth samples of every CPU, four polls' worth, plus
	 * a burst of 16 records carrying a whole stack copy (new binaries'
	 * walks, ~30 KiB each; most copies are a few KiB, the stack in use).
	 * Power of two, >= 1 MiB. The consumer maps the ring twice
	 * (wrap-around) and the kernel maps all its pages at once, so each
	 * byte here is two of the daemon's RSS: 1 MiB at 99 Hz on 2 CPUs
	 * (was 2 MiB with room for 32 copies, and 4 MiB before that: 8 MiB
	 * of RSS, most of the busy host's peak over its goal, issue 26). */
	ring = o->ring_bytes;
	if (!ring)
		ring = (size_t)s->o.hz * np * offsetof(struct prof_sample_ev, ustack) +
		       16 * sizeof(struct prof_sample_ev);
	size_t pow = 1 << 20;
	while (pow < ring && pow < (1u << 26)) /* 64 MiB is plenty for any hz */
		pow <<= 1;
	err = bpf_map__set_max_entries(s->skel->maps.events, pow);
	if (err)
		goto err;
	s->skel->rodata->unwind_tables = o->unwinder != NULL;
	s->skel->rodata->anon_wait = o->unwinder && o->anon_wait;
	if (o->unwinder) {
		err = unwinder__size_maps(o->unwinder, s->skel->maps.unw_rows, s->skel->maps.unw_rules,
					  s->skel->maps.unw_files);
		if (err)
			goto err;
	}
	err = profile_bpf__load(s->skel);
	if (err) {
		pr_err("sampler: cannot load BPF program: %s", strerror(-err));
		goto err;
	}
	if (o->unwinder) {
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
	pr_info("sampler: %d Hz on %d CPUs, ring %zu KiB", s->o.hz, s->nlinks, pow >> 10);
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
	static const char *const kind[PROF_COST_KINDS] = {
		[RT_NONE] = "native", [RT_PYTHON] = "python", [RT_RUBY] = "ruby",
		[RT_HOTSPOT] = "java", [RT_V8] = "js",
	};
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

int sampler__rt_ends(struct sampler *s, int kind, uint64_t *out, size_t n)
{
	struct bpf_map *m = kind == RT_PYTHON ? s->skel->maps.py_ends :
			    kind == RT_RUBY   ? s->skel->maps.rb_ends :
			    kind == RT_HOTSPOT ? s->skel->maps.hs_ends :
			    kind == RT_V8     ? s->skel->maps.v8_ends : NULL;
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
