/* test_rbbpf: bpf/ruby_walk.h in the kernel, against its user-space
 * twin (rbproc__twin) and a real ruby 3.1.
 *
 * load:   tests/bpf/rb_test.bpf.c (the walk in a perf_event program) is
 *         accepted by this kernel's verifier.
 * points: tests/helpers/rb_points.rb's main thread is watched by a
 *         context-switch perf event (period 1) running the program:
 *         when the thread blocks in IO#read at a point, the program
 *         walks it as it switches out. The last record of each point
 *         must equal, record for record (addresses, flags, pcs, stamps)
 *         and end, what the twin walks from a ptrace stop right after;
 *         the kernel walk learns the static TLS offset in the map entry,
 *         equal to the twin's.
 * cost:   tests/helpers/rb_known.rb sampled by cpu-clock at 997 Hz for
 *         3 s: per sample the program's run time (bpf_stats), its
 *         records and ends; every walk of a thread that has an EC ends
 *         whole (no read failure, no truncation).
 * Needs root (BPF, ptrace). */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/profile.h"
#include "gen/rb_test.skel.h"
#include "sampler/ruby/rbfile.h"
#include "sampler/ruby/rblayout.h"
#include "sampler/ruby/rbproc.h"
#include "sampler/symbols/elfsym.h"
#include "tests/test.h"
#include "tests/unit/test_ruby.h"

/* What setup finds of libruby: the path and load bias of its mapping of
 * offset 0. */
struct first_map {
	char path[512];
	uint64_t bias;
};

/* libruby_maps' callback for setup: 1, the path and load bias kept, at the
 * mapping of offset 0. */
static int at_offset0(void *ctx, unsigned long lo, unsigned long off, const char *p)
{
	struct first_map *fm = ctx;

	if (off)
		return 0;
	fm->bias = lo; /* its first PT_LOAD: offset 0 at vaddr 0 */
	snprintf(fm->path, sizeof(fm->path), "%s", p);
	return 1;
}

/* The walk's set-up for pid (libruby from its maps), retried while the
 * VM comes up. */
static int setup(pid_t pid, struct rb_proc *c)
{
	struct first_map fm = { "", 0 };
	const struct rblayout *l;
	struct rbfile rf;
	uint64_t sym;
	int fd, err = -ENOENT;

	for (int i = 0; i < 100 && !fm.path[0]; i++) {
		libruby_maps(pid, at_offset0, &fm);
		if (!fm.path[0])
			usleep(10000);
	}
	fd = fm.path[0] ? open(fm.path, O_RDONLY) : -1;
	if (fd < 0)
		return -ENOENT;
	err = rbfile__read(fd, &rf);
	close(fd);
	if (err)
		return err;
	l = rblayout__get(rf.major, rf.minor);
	if (!l || rblayout__check(l, &rf, NULL, 0))
		return -EPROTO;
	for (int i = 0; i < 100; i++) {
		err = rbproc__setup(pid, &rf, l, fm.bias, c, &sym);
		if (err != -EAGAIN)
			break;
		usleep(20000);
	}
	return err;
}

struct got {
	pid_t tid;
	int n, end, count;
	struct rb_frame rec[RB_MAX_FRAMES];
};

static int on_event(void *ctx, void *data, size_t len)
{
	const struct prof_sample_ev *ev = data;
	struct got *g = ctx;
	size_t n = ev->nrt;

	if (len < __builtin_offsetof(struct prof_sample_ev, frames) + 16 * n || n > RB_MAX_FRAMES ||
	    (pid_t)ev->tid != g->tid)
		return 0;
	g->n = (int)n;
	g->end = ev->rtend;
	memcpy(g->rec, ev->frames, 16 * n);
	g->count++;
	return 0;
}

static int twin(pid_t pid, pid_t tid, struct rb_proc *c, struct rb_frame *rec)
{
	struct user_regs_struct r;
	int st, res = -1;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -1;
	if (waitpid(tid, &st, __WALL) == tid && !ptrace(PTRACE_GETREGS, tid, 0, &r))
		res = rbproc__twin(pid, r.fs_base, c, rec, RB_MAX_FRAMES);
	ptrace(PTRACE_DETACH, tid, 0, 0);
	return res;
}

static int perf_open(pid_t tid, uint32_t type, uint64_t config, uint64_t period, bool freq)
{
	struct perf_event_attr a = { 0 };

	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.sample_period = period;
	a.freq = freq;
	return (int)syscall(__NR_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void prog_stats(int fd, uint64_t *ns, uint64_t *cnt, uint32_t *insns)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);

	*ns = *cnt = 0;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
		*ns = info.run_time_ns;
		*cnt = info.run_cnt;
		if (insns)
			*insns = info.verified_insns;
	}
}

static struct rb_test_bpf *load(pid_t tgid, bool walk_off)
{
	struct rb_test_bpf *skel = rb_test_bpf__open();

	if (!skel)
		return NULL;
	skel->rodata->target_tgid = (uint32_t)tgid;
	skel->rodata->walk_off = walk_off;
	if (rb_test_bpf__load(skel)) {
		rb_test_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

static void t_points(const char *dir)
{
	char *argv[] = { RUBY, "tests/helpers/rb_points.rb", NULL };
	struct child ch = { 0 };
	struct rb_test_bpf *skel = NULL;
	struct ring_buffer *ring = NULL;
	struct bpf_link *link = NULL;
	struct got *g = calloc(1, sizeof(*g));
	struct rb_frame tw[RB_MAX_FRAMES];
	struct rb_proc c, k;
	int err, pfd = -1, same = 0, points = 0, stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	uint32_t key, insns = 0;
	uint64_t ns, cnt;
	char line[2048];

	(void)dir;
	err = spawn_ruby(&ch, argv);
	CHECK(!err, "ruby %s runs", argv[1]);
	if (err)
		goto out;
	skel = load(ch.pid, false);
	CHECK(skel, "the verifier accepts rb_walk (tests/bpf/rb_test.bpf.c)%s",
	      skel ? "" : strerror(errno));
	if (!skel)
		goto out;
	prog_stats(bpf_program__fd(skel->progs.on_rb_sample), &ns, &cnt, &insns);
	printf("  %u instructions verified\n", insns);
	/* The VM is up once the first point prints. */
	if (!fgets(line, sizeof(line), ch.out) || setup(ch.pid, &c)) {
		CHECK(0, "rb_points.rb's set-up");
		goto out;
	}
	key = (uint32_t)ch.pid;
	g->tid = ch.pid;
	pfd = perf_open(ch.pid, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 1, false);
	err = bpf_map_update_elem(bpf_map__fd(skel->maps.rb_procs), &key, &c, BPF_ANY);
	link = pfd >= 0 && !err ? bpf_program__attach_perf_event(skel->progs.on_rb_sample, pfd) : NULL;
	ring = ring_buffer__new(bpf_map__fd(skel->maps.rb_events), on_event, g, NULL);
	CHECK(link && ring, "a context-switch event on the main thread runs the walk");
	if (!link || !ring)
		goto out;
	for (;;) {
		pid_t tid = 0;
		int r;

		if (!strncmp(line, "done", 4))
			break;
		if (sscanf(line, "point %*s %d", &tid) == 1 && tid == ch.pid) {
			points++;
			g->count = 0;
			wait_read(ch.pid, tid);
			/* The ptrace stop switches the thread out (and back into
			 * read): the program walks it there too. */
			r = twin(ch.pid, tid, &c, tw);
			usleep(20000);
			ring_buffer__consume(ring);
			if (g->count && r >= 0 && g->n == (r & 0xffff) && g->end == r >> 16 &&
			    !memcmp(g->rec, tw, sizeof(tw[0]) * (size_t)g->n))
				same++;
			else
				printf("  point %d: BPF %d records (end %d, %d events), twin %d (end %d)\n",
				       points, g->n, g->end, g->count, r & 0xffff, r >> 16);
		}
		if (!strcmp(line, "end\n") && write(ch.in, "x", 1) != 1)
			break;
		if (!fgets(line, sizeof(line), ch.out))
			break;
	}
	CHECK(points == 7 && same == points,
	      "%d of %d points of the main thread: the kernel's records equal the twin's", same,
	      points);
	err = bpf_map_lookup_elem(bpf_map__fd(skel->maps.rb_procs), &key, &k);
	CHECK(!err && (k.flags & RB_TLS_STATIC) && k.tls_off == c.tls_off,
	      "the kernel walk learnt the static TLS offset %+ld (twin %+ld)", (long)k.tls_off,
	      (long)c.tls_off);
	prog_stats(bpf_program__fd(skel->progs.on_rb_sample), &ns, &cnt, NULL);
	printf("  bpf_stats%s: %lu runs, %.0f ns per run (a switch of the stopped thread: 8-11 "
	       "frames)\n",
	       stats >= 0 ? "" : " (could not enable)", (unsigned long)cnt,
	       cnt ? (double)ns / (double)cnt : 0.0);
out:
	bpf_link__destroy(link);
	if (pfd >= 0)
		close(pfd);
	ring_buffer__free(ring);
	rb_test_bpf__destroy(skel);
	kill_child(&ch);
	if (stats >= 0)
		close(stats);
	free(g);
}

/* Every record of a cpu-clock phase. */
struct phase {
	long samples, records, ends[RB_END_MAX + 1];
};

static int on_sample(void *ctx, void *data, size_t len)
{
	const struct prof_sample_ev *ev = data;
	struct phase *p = ctx;

	(void)len;
	p->samples++;
	p->records += ev->nrt;
	if (ev->rtend <= RB_END_MAX)
		p->ends[ev->rtend]++;
	return 0;
}

/* SECS tenths of a second of cpu-clock samples at 997 Hz on the three
 * threads with a program loaded walk_off or not: its records into *ph,
 * bpf_stats' ns per run returned (-1 on failure). */
/* Samples a phase waits for: the last round's ends are judged on them. */
#define MIN_SAMPLES 600

static double phase(pid_t pid, const pid_t *tids, const struct rb_proc *c, bool walk_off,
		    int tenths, struct phase *ph)
{
	struct rb_test_bpf *skel = load(pid, walk_off);
	struct ring_buffer *ring = NULL;
	struct bpf_link *links[3] = { 0 };
	int fds[3] = { -1, -1, -1 }, err = !skel;
	uint64_t ns0 = 0, cnt0 = 0, ns = 0, cnt = 0;
	uint32_t key = (uint32_t)pid;
	double r = -1;

	memset(ph, 0, sizeof(*ph));
	if (skel) {
		err |= bpf_map_update_elem(bpf_map__fd(skel->maps.rb_procs), &key, c, BPF_ANY);
		ring = ring_buffer__new(bpf_map__fd(skel->maps.rb_events), on_sample, ph, NULL);
		err |= !ring;
	}
	for (int t = 0; !err && t < 3; t++) {
		fds[t] = perf_open(tids[t], PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 997, true);
		links[t] = fds[t] >= 0 ? bpf_program__attach_perf_event(skel->progs.on_rb_sample, fds[t])
				       : NULL;
		err |= !links[t];
	}
	if (!err) {
		prog_stats(bpf_program__fd(skel->progs.on_rb_sample), &ns0, &cnt0, NULL);
		/* At least `tenths`, and on until MIN_SAMPLES came: beside
		 * other tests the VM got a third of a CPU (493 in 1.5 s). */
		for (int i = 0; i < tenths || (ph->samples < MIN_SAMPLES && i < 10 * tenths); i++) {
			usleep(100000);
			ring_buffer__consume(ring);
		}
		prog_stats(bpf_program__fd(skel->progs.on_rb_sample), &ns, &cnt, NULL);
		ring_buffer__consume(ring);
		for (uint32_t k = RB_CNT_GC, n = (uint32_t)libbpf_num_possible_cpus(); n && n <= 256;) {
			uint64_t v[256] = { 0 };

			if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.rb_ends), &k, v))
				for (uint32_t j = 0; j < n; j++)
					ph->ends[RB_END_MAX] += (long)v[j];
			break;
		}
		r = cnt > cnt0 ? (double)(ns - ns0) / (double)(cnt - cnt0) : -1;
	}
	for (int t = 0; t < 3; t++) {
		bpf_link__destroy(links[t]);
		if (fds[t] >= 0)
			close(fds[t]);
	}
	ring_buffer__free(ring);
	rb_test_bpf__destroy(skel);
	return r;
}

static void t_cost(const char *dir)
{
	/* Long enough for six slow BPF loads on a busy host (under the
	 * sanitizers it had ended before the last: 0 samples); killed once
	 * measured. */
	char *argv[] = { RUBY, "tests/helpers/rb_known.rb", "120", NULL };
	int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	struct child ch = { 0 };
	struct phase on, off;
	struct rb_proc c;
	double ns_on[3], ns_off[3];
	pid_t tids[3];
	char line[256];

	(void)dir;
	if (spawn_ruby(&ch, argv) || !fgets(line, sizeof(line), ch.out) ||
	    sscanf(line, "threads %d %d %d", &tids[0], &tids[1], &tids[2]) != 3 ||
	    setup(ch.pid, &c)) {
		CHECK(0, "rb_known.rb and its set-up");
		goto out;
	}
	/* Alternating, 1.5 s each: this VM drifts over seconds. */
	for (int i = 0; i < 3; i++) {
		ns_off[i] = phase(ch.pid, tids, &c, true, 15, &off);
		ns_on[i] = phase(ch.pid, tids, &c, false, 15, &on);
		printf("  round %d: %.0f ns per sample without the walk, %.0f with it\n", i, ns_off[i],
		       ns_on[i]);
	}
	printf("  last round: %ld samples, %.1f records each; ends: ok %ld, idle %ld, truncated %ld, "
	       "read failed %ld; %ld in GC\n",
	       on.samples, on.samples ? (double)on.records / (double)on.samples : 0.0,
	       on.ends[RB_END_OK], on.ends[RB_END_IDLE], on.ends[RB_END_TRUNC],
	       on.ends[RB_END_READ], on.ends[RB_END_MAX]);
	CHECK(stats >= 0 && ns_on[2] > 0 && ns_off[2] > 0, "bpf_stats enabled and counting");
	CHECK(on.samples >= MIN_SAMPLES && on.ends[RB_END_OK] == on.samples && on.records > 3 * on.samples,
	      "%ld samples, every walk whole (%ld ok)", on.samples, on.ends[RB_END_OK]);
out:
	kill_child(&ch);
	if (stats >= 0)
		close(stats);
}

static const struct test_scenario scenarios[] = {
	{ "points", t_points },
	{ "cost", t_cost },
};

RUBY_SCENARIOS_MAIN(scenarios)
