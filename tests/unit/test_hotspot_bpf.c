/* test_hotspot_bpf: the BPF HotSpot step (bpf/hotspot_walk.h, loaded from
 * tests/bpf/hs_iter.bpf.c) against its user-space twin
 * (sampler/java/hswalk.c), and its cost.
 *
 * Equality: threads of tests/helpers/java/Known (JDK 17 and 25, default
 * and -Xint) are stopped with ptrace and kept stopped; the twin walks the
 * whole stack (native frames by the unwind tables); for every run of
 * HotSpot frames it found, the BPF program (iter.s/task, reading the
 * stopped task's memory) steps from the same registers: its records and
 * the registers where it leaves the code cache must be the twin's, bit
 * for bit, and how it ended too. Under -Xint also at every instruction
 * of the interpreter's method entries (k-jni and k-hot stepped through
 * them, as test_hotspot_walk does). The program passes this kernel's
 * verifier (loading is the first check).
 *
 * Cost: the same steps in a perf_event program (tests/bpf/hs_cost.bpf.c:
 * bpf_probe_read_user, as the sampler runs them) on every CPU at 1999 Hz
 * for 2 s, next to a copy that stops after finding the pc in the code
 * cache; bpf_stats' run time of the two, over the Java samples, gives
 * the time per sample and per frame the steps cost. Then 2 s of the
 * program that times each step and sends k-hot's leaf records: named,
 * heavy's share of heavy and light is within 3 points of what Known's
 * own thread CPU clock says (10:1 in work). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>

#include "tests/bpf/hs_test.h"
#include "gen/hs_iter.skel.h"
#include "gen/hs_cost.skel.h"
#include "sampler/java/hsname.h"
#include "sampler/java/hsvm.h"
#include "tests/test.h"
#include "tests/unit/test_hotspot_stop.h"

struct ctx {
	struct jvm j;
	struct hsvm vm;
	struct hsmem m;
	struct hs_iter_bpf *skel;
	struct hs_cost_bpf *cost;
	struct bpf_link *iter;
	const char *label;
	int segs, same, recs, diffs, deopt;
};

/* One run of the iterator program for x->j's task tid. */
static int run_iter(struct ctx *x)
{
	char buf[64];
	int fd = bpf_iter_create(bpf_link__fd(x->iter));

	if (fd < 0)
		return -errno;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

/* Every run of HotSpot frames of s, stepped by BPF, equals the twin's. */
static void compare(struct ctx *x, struct stopped *s, const char *what)
{
	for (int i = 0; i < s->nseg; i++) {
		const struct stopseg *g = &s->seg[i];
		struct hs_out *o = &x->skel->bss->out;
		bool eq;

		memset(o, 0, sizeof(*o));
		o->end = 99;
		x->skel->bss->target_tid = (__u32)s->tid;
		x->skel->bss->in_regs = g->in;
		x->skel->bss->in_leaf = g->leaf;
		x->skel->bss->in_index = (__u32)g->index;
		if (run_iter(x)) {
			CHECK(0, "%s: %s: the iterator runs", x->label, what);
			return;
		}
		x->segs++;
		eq = (int)o->end == g->end && (int)o->n == (g->nrec < HS_MAX_FRAMES ? g->nrec : HS_MAX_FRAMES);
		for (int k = 0; eq && k < (int)o->n; k++)
			eq = o->rec[2 * k] == s->rec[g->rec0 + k][0] &&
			     o->rec[2 * k + 1] == s->rec[g->rec0 + k][1];
		if (eq && !g->end)
			eq = o->regs.pc == g->out.pc && o->regs.sp == g->out.sp &&
			     o->regs.bp == g->out.bp;
		x->recs += (int)o->n;
		for (int k = 0; eq && k < (int)o->n; k++)
			x->deopt += !!(hs_rec_flags(o->rec[2 * k]) & HS_R_DEOPT);
		if (eq) {
			x->same++;
		} else if (x->diffs++ < 3) {
			printf("    %s: run %d from pc %#llx (leaf %d, index %d): bpf end %u, %u records, "
			       "out pc %#llx sp %#llx; twin end %d, %d records, out pc %#llx sp %#llx\n",
			       what, i, (unsigned long long)g->in.pc, g->leaf, g->index, o->end, o->n,
			       (unsigned long long)o->regs.pc, (unsigned long long)o->regs.sp, g->end,
			       g->nrec, (unsigned long long)g->out.pc, (unsigned long long)g->out.sp);
			for (int k = 0; k < g->nrec && k < 8; k++)
				printf("      twin %#llx %#llx  bpf %#llx %#llx\n",
				       (unsigned long long)s->rec[g->rec0 + k][0],
				       (unsigned long long)s->rec[g->rec0 + k][1],
				       (unsigned long long)o->rec[2 * k], (unsigned long long)o->rec[2 * k + 1]);
		}
	}
}

static void thread(struct ctx *x, const char *name, int shots)
{
	static struct stopped s;
	pid_t tid = 0;

	if (stop_tids(x->j.pid, name, &tid, 1) != 1) {
		CHECK(0, "%s: no thread %s", x->label, name);
		return;
	}
	for (int i = 0; i < shots; i++) {
		usleep(2000 + (unsigned)(i * 7919) % 15000);
		if (stop_take_kept(&s, x->j.pid, tid, true))
			continue;
		stop_walk(&s, &x->m, &x->vm.bpf);
		compare(x, &s, name);
		stop_release(&s);
	}
}

static void entry_stop(void *ctx, struct stopped *s, const struct user_regs_struct *in, bool last)
{
	(void)in, (void)last;
	compare(ctx, s, "entry");
}

/* Thread name stepped through the interpreter's entry `entry` (see
 * test_hotspot_walk): BPF's steps equal the twin's at every stop. */
static void entry_steps(struct ctx *x, const char *name, uint64_t entry, const char *what)
{
	static struct stopped s;
	int segs = x->segs, same = x->same, got = -ENOENT;
	pid_t tid = 0;

	if (entry && stop_tids(x->j.pid, name, &tid, 1) == 1)
		got = stop_entry(&s, x->j.pid, tid, entry, &x->m, &x->vm.bpf, entry_stop, x);
	CHECK(got > 10 && x->segs - segs >= got && x->same - same == x->segs - segs,
	      "%s: %s through the %s entry (%d stops): %d of %d runs stepped by BPF equal the twin's",
	      x->label, name, what, got, x->same - same, x->segs - segs);
}

static int perf_open(int cpu, int freq)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = (__u64)freq,
		.freq = 1,
	};

	return (int)syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void prog_stats(struct bpf_program *p, __u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	*ns = *cnt = 0;
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len)) {
		*ns = info.run_time_ns;
		*cnt = info.run_cnt;
	}
}

struct leaves {
	struct hs_leaf l[200000];
	int n;
};

static int on_leaf(void *ctx, void *data, size_t size)
{
	struct leaves *lv = ctx;

	if (size >= sizeof(struct hs_leaf) && lv->n < 200000)
		memcpy(&lv->l[lv->n++], data, sizeof(struct hs_leaf));
	return 0;
}

/* heavy's and light's CPU time so far, as Known timed them. */
static int known_times(struct jvm *j, double *heavy, double *light)
{
	char *got = NULL;
	size_t len;
	int found = 0;

	if (jvm_cmd(j, "times", &got, &len))
		return -1;
	for (size_t at = 0; got && at < len; at += strlen(got + at) + 1) {
		found += sscanf(got + at, "heavy %lf", heavy);
		found += sscanf(got + at, "light %lf", light);
	}
	free(got);
	return found == 2 ? 0 : -1;
}

/* The leaves BPF walked to in k-hot, named: heavy's share of heavy and
 * light against Known's own clock. */
static void shares(struct ctx *x, struct leaves *lv, double th, double tl)
{
	struct hsnames *names = hsnames__new(0);
	pid_t hot = 0;
	int heavy = 0, light = 0, other = 0, stale = 0;
	double truth = th / (th + tl), got;

	stop_tids(x->j.pid, "k-hot", &hot, 1);
	for (int i = 0; names && i < lv->n; i++) {
		struct hsjframe fr[HSNAME_MAX_INLINE];
		int n;

		if ((pid_t)lv->l[i].tid != hot)
			continue;
		n = hsnames__frames(names, x->j.pid, &x->m, &x->vm, lv->l[i].rec[0], lv->l[i].rec[1],
				    fr, HSNAME_MAX_INLINE);
		if (n == -ESTALE)
			stale++;
		else if (n > 0 && !strcmp(fr[0].sysname, "Known.heavy"))
			heavy++;
		else if (n > 0 && !strcmp(fr[0].sysname, "Known.light"))
			light++;
		else
			other++;
	}
	hsnames__free(names);
	got = heavy + light ? (double)heavy / (heavy + light) : 0;
	CHECK(heavy + light > 300 && got > truth - 0.03 && got < truth + 0.03 && !stale,
	      "%s: k-hot's leaves walked by BPF: heavy %d, light %d (%.1f%% heavy; Known's clock "
	      "says %.1f%%), %d elsewhere, %d freed",
	      x->label, heavy, light, 100 * got, 100 * truth, other, stale);
}

/* Samples of the JVM with the steps, and with the cheap start alone. */
static void cost(struct ctx *x)
{
	int ncpu = libbpf_num_possible_cpus(), stats;
	struct bpf_link *links[2][16] = { { 0 } };
	__u64 ns[2], cnt[2], java, frames;

	jvm_cmd(&x->j, "spin 2000", NULL, NULL);
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	CHECK(stats >= 0, "%s: bpf_stats on", x->label);
	if (stats < 0)
		return;
	for (int c = 0; c < ncpu && c < 16; c++)
		for (int p = 0; p < 2; p++) {
			int fd = perf_open(c, 1999);

			if (fd < 0)
				continue;
			links[p][c] = bpf_program__attach_perf_event(
				p ? x->cost->progs.hs_sample_base : x->cost->progs.hs_sample, fd);
			if (!links[p][c])
				close(fd);
		}
	sleep(2);
	for (int c = 0; c < 16; c++)
		for (int p = 0; p < 2; p++)
			bpf_link__destroy(links[p][c]);
	prog_stats(x->cost->progs.hs_sample, &ns[0], &cnt[0]);
	prog_stats(x->cost->progs.hs_sample_base, &ns[1], &cnt[1]);
	close(stats);
	/* the split by kind and the known answer, on their own */
	static struct leaves lv;
	struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(x->cost->maps.leaves), on_leaf, &lv, NULL);
	double h0 = 0, l0 = 0, h1 = 0, l1 = 0;

	lv.n = 0;
	jvm_cmd(&x->j, "spin 2000", NULL, NULL);
	known_times(&x->j, &h0, &l0);
	for (int c = 0; c < ncpu && c < 16; c++) {
		int fd = perf_open(c, 1999);

		links[0][c] = fd < 0 ? NULL
				     : bpf_program__attach_perf_event(x->cost->progs.hs_sample_timed, fd);
		if (fd >= 0 && !links[0][c])
			close(fd);
	}
	for (int t = 0; t < 20; t++) {
		usleep(100000);
		if (rb)
			ring_buffer__consume(rb);
	}
	for (int c = 0; c < 16; c++)
		bpf_link__destroy(links[0][c]);
	if (rb)
		ring_buffer__consume(rb);
	ring_buffer__free(rb);
	CHECK(!known_times(&x->j, &h1, &l1) && h1 > h0 && l1 > l0, "%s: Known's own times", x->label);
	shares(x, &lv, h1 - h0, l1 - l0);
	java = x->cost->bss->samples_java;
	frames = x->cost->bss->frames_total;
	CHECK(java > 100 && frames >= java,
	      "%s: %llu samples of the JVM in its code cache, %llu Java frames stepped", x->label,
	      (unsigned long long)java, (unsigned long long)frames);
	if (java && frames && cnt[0] && cnt[1]) {
		double per = (double)ns[0] / (double)cnt[0], base = (double)ns[1] / (double)cnt[1];
		double steps = (per - base) * (double)cnt[0] / (double)java;

		printf("    %s: bpf_stats: %.0f ns per run with the steps, %.0f without (%llu, %llu runs); "
		       "the steps: %.0f ns per Java sample, %.1f frames each, %.0f ns per frame\n",
		       x->label, per, base, (unsigned long long)cnt[0], (unsigned long long)cnt[1],
		       steps, (double)frames / (double)java, steps * (double)java / (double)frames);
		printf("      blob cache: %llu hits, %llu misses\n",
		       (unsigned long long)x->cost->bss->cache_hits,
		       (unsigned long long)x->cost->bss->cache_misses);
		for (int l = 0; l < 2; l++)
			for (int k = 1; k < 4; k++)
				if (x->cost->bss->step_cnt[l][k])
					printf("      %s %s: %llu steps, %.0f ns each (bpf_ktime_get_ns)\n",
					       l ? "leaf" : "caller",
					       k == 1 ? "interpreted" : k == 2 ? "compiled" : "stub",
					       (unsigned long long)x->cost->bss->step_cnt[l][k],
					       (double)x->cost->bss->step_ns[l][k] /
						       (double)x->cost->bss->step_cnt[l][k]);
		printf("      8 reads of 8 bytes: %.0f ns; the clock itself %.0f ns; one read at the pc "
		       "%.0f ns, at sp %.0f ns\n",
		       (double)x->cost->bss->read8_ns / (double)x->cost->bss->read8_cnt,
		       (double)x->cost->bss->clock_ns / (double)x->cost->bss->read8_cnt,
		       (double)x->cost->bss->code1_ns / (double)x->cost->bss->read8_cnt,
		       (double)x->cost->bss->stack1_ns / (double)x->cost->bss->read8_cnt);
		CHECK(steps * (double)java / (double)frames < 2000,
		      "%s: under 2 us per Java frame (%.0f ns)", x->label,
		      steps * (double)java / (double)frames);
	}
}

static void run(int major, const char *const *flags, const char *label, bool measure)
{
	struct ctx x = { .label = label };
	char why[256], *got = NULL;
	size_t gotlen;
	__u32 key;
	int err;

	if (jvm_start(&x.j, major, flags, why, sizeof(why))) {
		CHECK(0, "%s", why);
		return;
	}
	x.m = (struct hsmem){ hsmem__pid_read, &x.j.pid };
	err = hsvm__open(&x.m, &x.j.jf, x.j.bias, &x.vm, why, sizeof(why));
	CHECK(!err, "%s: set up (%s)", label, why);
	if (err)
		goto out;
	x.skel = hs_iter_bpf__open();
	err = x.skel ? hs_iter_bpf__load(x.skel) : -errno;
	CHECK(x.skel && !err, "%s: the iterator passes the verifier and loads (%d)", label, err);
	if (!x.skel || err)
		goto out;
	x.cost = hs_cost_bpf__open();
	if (x.cost) {
		x.cost->rodata->target_tgid = (__u32)x.j.pid;
		err = hs_cost_bpf__load(x.cost);
	}
	CHECK(x.cost && !err, "%s: the perf_event program passes the verifier and loads (%d)", label,
	      err);
	if (!x.cost || err)
		goto out;
	key = (__u32)x.j.pid;
	err = bpf_map__update_elem(x.skel->maps.hs_procs, &key, sizeof(key), &x.vm.bpf,
				   sizeof(x.vm.bpf), BPF_ANY);
	if (!err)
		err = bpf_map__update_elem(x.cost->maps.hs_procs, &key, sizeof(key), &x.vm.bpf,
					   sizeof(x.vm.bpf), BPF_ANY);
	x.iter = bpf_program__attach_iter(x.skel->progs.hs_iter, NULL);
	CHECK(!err && x.iter, "%s: the JVM's set-up in hs_procs, the iterator attached", label);
	if (err || !x.iter)
		goto out;
	for (int i = 0; i < 100; i++) {
		free(got);
		got = NULL;
		if (jvm_cmd(&x.j, "deep", &got, &gotlen) || (got && strstr(got, "true")))
			break;
		usleep(100000);
	}
	usleep(500000);
	thread(&x, "k-deep", 2);
	if (!flags) {
		/* deoptimized frames (see test_hotspot_walk) */
		jvm_cmd(&x.j, "deopt", NULL, NULL);
		usleep(300000);
		thread(&x, "k-deep", 1);
		CHECK(x.deopt > 0, "%s: %d deoptimized frames stepped alike", label, x.deopt);
	}
	thread(&x, "k-blocked", 2);
	thread(&x, "k-holder", 2);
	jvm_cmd(&x.j, "spin 2000", NULL, NULL);
	thread(&x, "k-hot", 40);
	thread(&x, "k-jni", 40);
	if (flags) {
		uint64_t native, normal;

		stop_entries(&x.j, &x.m, &x.vm, &native, &normal);
		entry_steps(&x, "k-jni", native, "native");
		entry_steps(&x, "k-jni", normal, "normal");
		entry_steps(&x, "k-hot", normal, "normal");
	}
	CHECK(x.segs > 50 && x.same == x.segs,
	      "%s: %d of %d runs of Java frames (%d records) stepped by BPF equal the twin's", label,
	      x.same, x.segs, x.recs);
	if (measure)
		cost(&x);
out:
	free(got);
	bpf_link__destroy(x.iter);
	hs_iter_bpf__destroy(x.skel);
	hs_cost_bpf__destroy(x.cost);
	jvm_stop(&x.j);
}

static const char *const xint[] = { "-Xint", NULL };

static void t_jdk17(const char *d) { (void)d; run(17, NULL, "JDK 17", true); }
static void t_jdk17_xint(const char *d) { (void)d; run(17, xint, "JDK 17 -Xint", true); }
static void t_jdk25(const char *d) { (void)d; run(25, NULL, "JDK 25", true); }
static void t_jdk25_xint(const char *d) { (void)d; run(25, xint, "JDK 25 -Xint", false); }

static const struct test_scenario scenarios[] = {
	{ "jdk17", t_jdk17 },
	{ "jdk17_xint", t_jdk17_xint },
	{ "jdk25", t_jdk25 },
	{ "jdk25_xint", t_jdk25_xint },
};

int main(int argc, char **argv)
{
	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	return test_scenarios_main(scenarios, sizeof(scenarios) / sizeof(scenarios[0]), argc, argv);
}
