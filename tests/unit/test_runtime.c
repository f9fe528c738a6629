/* test_runtime: the runtime pipeline (sampler/runtime/runtime.c) with a
 * fake runtime behind struct rt_ops, and the one cache every runtime keeps
 * its objects in (sampler/runtime/rtcache.h).
 *
 * The pipeline: a sample in an interpreter's file sets its process up;
 * "not initialised yet" is looked at again on a doubling timer up to a
 * cap, then given up; a walked process's samples go to its runtime's
 * merge and nobody else's, and what the merge counts decides whether the
 * stack is settled; a process's exit drops its cached objects, and its
 * runtime's data once the grace is over; the
 * metrics carry each runtime's counts and its share of the cache.
 * The cache: entries by (pid, key), replaced in place; eviction oldest
 * first but never of what was used since the last mark; held entries
 * live on after eviction; each owner's share counted apart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/stack.h"
#include "sampler/proc/procinfo.h"
#include "sampler/runtime/rt_int.h"
#include "sampler/runtime/rtcache.h"
#include "sampler/runtime/runtime.h"
#include "sampler/symbols/symbolize.h"
#include "store/util/buf.h"
#include "tests/test.h"

/* ---- the cache ---- */

static int released;

struct obj {
	struct rtcache_ent ce;
	int id;
};

static void obj_release(struct rtcache_ent *ce)
{
	released++;
	free(ce);
}

static struct obj *obj_new(pid_t pid, uint64_t key, size_t bytes, uint8_t owner, int id)
{
	struct obj *o = calloc(1, sizeof(*o));

	o->ce = (struct rtcache_ent){ .release = obj_release, .key = key, .pid = pid, .bytes = bytes,
				      .owner = owner };
	o->id = id;
	return o;
}

static void test_cache(void)
{
	struct rtcache *c = rtcache__new(1000);
	struct rtcache_stats py, rb;
	struct obj *a, *b, *d, *held;
	int r0;

	CHECK(c != NULL, "cache: new");
	if (!c)
		return;
	released = 0;
	a = obj_new(10, 0x1000, 400, RT_PYTHON, 1);
	b = obj_new(10, 0x2000, 400, RT_RUBY, 2);
	CHECK(!rtcache__put(c, &a->ce) && !rtcache__put(c, &b->ce), "cache: two entries put");
	CHECK(rtcache__find(c, 10, 0x1000) == &a->ce && rtcache__find(c, 11, 0x1000) == NULL &&
		      rtcache__find(c, 10, 0x3000) == NULL,
	      "cache: found by (pid, key) only");
	rtcache__stats(c, RT_PYTHON, &py);
	rtcache__stats(c, RT_RUBY, &rb);
	CHECK(py.bytes == 400 && py.entries == 1 && rb.bytes == 400 && rb.entries == 1,
	      "cache: each owner's share apart (python %zu, ruby %zu)", py.bytes, rb.bytes);

	/* Over budget with everything used since the mark: nothing goes. */
	d = obj_new(10, 0x3000, 400, RT_PYTHON, 3);
	rtcache__put(c, &d->ce);
	rtcache__trim(c);
	rtcache__stats(c, RT_PYTHON, &py);
	CHECK(released == 0 && py.entries == 2, "cache: over budget, nothing used since the mark is evicted");
	/* A new mark: the least recently used goes (a, then b were found
	 * last; d put before them). */
	rtcache__mark(c);
	rtcache__find(c, 10, 0x1000);
	rtcache__trim(c);
	rtcache__stats(c, RT_PYTHON, &py);
	rtcache__stats(c, RT_RUBY, &rb);
	CHECK(released == 1 && rtcache__find(c, 10, 0x3000) == &d->ce && rtcache__find(c, 10, 0x2000) == NULL &&
		      rb.evicted == 1 && rb.entries == 0 && py.entries == 2,
	      "cache: the oldest not used since the mark evicted (released %d, ruby evicted %llu)", released,
	      (unsigned long long)rb.evicted);

	/* Replaced in place: the old one released, the counts moved. */
	r0 = released;
	b = obj_new(10, 0x1000, 100, RT_PYTHON, 4);
	rtcache__put(c, &b->ce);
	rtcache__stats(c, RT_PYTHON, &py);
	CHECK(released == r0 + 1 && ((struct obj *)rtcache__find(c, 10, 0x1000))->id == 4 && py.bytes == 500 &&
		      py.entries == 2,
	      "cache: a put under a key in use replaces its entry (bytes %zu)", py.bytes);

	/* A held entry outlives its eviction and its process's forget. */
	held = obj_new(20, 0x5000, 10, RT_V8, 5);
	held->ce.refs = 1; /* its maker's hold */
	rtcache__put(c, &held->ce);
	r0 = released;
	rtcache__forget(c, 20);
	CHECK(released == r0 && rtcache__find(c, 20, 0x5000) == NULL && held->id == 5,
	      "cache: a forgotten entry someone holds is not freed");
	rtcache__unhold(&held->ce);
	CHECK(released == r0 + 1, "cache: ... until its last holder lets go");

	r0 = released;
	rtcache__forget(c, 10);
	rtcache__stats(c, RT_PYTHON, &py);
	CHECK(released == r0 + 2 && py.bytes == 0 && py.entries == 0, "cache: a forget drops the process's entries");
	a = obj_new(30, 0x6000, 10, RT_PYTHON, 6);
	rtcache__put(c, &a->ce);
	r0 = released;
	rtcache__free(c);
	CHECK(released == r0 + 1, "cache: free releases what is left");
}

/* ---- the pipeline, with a fake runtime ---- */

struct fake {
	struct rt_head rt; /* the pipeline's part */
	int kind;
	int setups, merges, inits;
	int next_state; /* what setup says */
	bool stale;	/* the merge counts a stale frame */
};

static struct fake *fakes[RT_NKINDS];
static int finis;

static void *fake_names_new(struct rtcache *rc)
{
	return rtview__new(sizeof(struct rtview), rc, 0);
}

static int fake_init(void *st)
{
	struct fake *f = st;

	for (int k = 1; k < RT_NKINDS; k++)
		if (!fakes[k]) {
			fakes[k] = f;
			f->kind = k;
			f->inits++;
			return 0;
		}
	return -ENOMEM;
}

static void fake_fini(void *st)
{
	fakes[((struct fake *)st)->kind] = NULL;
	finis++;
}

static int fake_setup(void *st, struct runtimes *rts, struct proc *p, const struct vma *v,
		      const struct symtab *t, struct rt_proc *c)
{
	struct fake *f = st;

	(void)rts, (void)v, (void)t, (void)c;
	f->setups++;
	f->rt.names->hits = 7; /* as its view counts them */
	if (f->next_state == RTS_WALKED) { /* as a runtime reads its first objects, keeps its data */
		int *data = malloc(sizeof(int));

		*data = p->pid;
		rtcache__put(f->rt.names->rc, &obj_new(p->pid, 0x7000, 1000, (uint8_t)f->kind, 7)->ce);
		rt_pdata__put(&f->rt.pdata, p->pid, data);
	}
	return f->next_state;
}

static int fake_merge(void *st, struct proc *p, const struct prof_sample_ev *ev, const struct frame *fr,
		      int n, struct frame *out, int max, struct rt_counts *cnt)
{
	struct fake *f = st;

	(void)p, (void)ev;
	f->merges++;
	memcpy(out, fr, (size_t)n * sizeof(*fr));
	if (n < max)
		out[n++] = (struct frame){ .addr = 0x7000, .name = "heavy (fake.py)", .rt = true };
	cnt->frames++;
	cnt->stale += f->stale;
	return n;
}

static uint64_t fake_errors(void *st)
{
	(void)st;
	return 3;
}

static const char *const fake_ends[] = { "ok" };

#define FAKE(nm)                                                                                         \
	{ .name = nm, .ends = fake_ends, .nends = 1, .stale_reason = "object_moved",                     \
	  .state_size = sizeof(struct fake), .names_new = fake_names_new, .names_free = rtview__free,    \
	  .state_init = fake_init, .state_fini = fake_fini, .setup = fake_setup, .merge = fake_merge,    \
	  .name_errors = fake_errors }
static const struct rt_ops fake_ops[RT_NKINDS] = {
	[RT_PYTHON] = FAKE("fpy"), [RT_RUBY] = FAKE("frb"), [RT_HOTSPOT] = FAKE("fhs"), [RT_V8] = FAKE("fv8"),
};
static const struct rt_ops *const fake_table[RT_NKINDS] = {
	[RT_PYTHON] = &fake_ops[RT_PYTHON], [RT_RUBY] = &fake_ops[RT_RUBY],
	[RT_HOTSPOT] = &fake_ops[RT_HOTSPOT], [RT_V8] = &fake_ops[RT_V8],
};

/* A sampled frame in an interpreter's file of runtime kind. */
struct interp {
	struct rtfile rf;
	struct symtab tab;
	struct dso dso;
	struct vma vma;
	struct frame fr;
};

static void interp_init(struct interp *in, int kind)
{
	memset(in, 0, sizeof(*in));
	in->rf.kind = (uint8_t)kind;
	in->tab.rt = &in->rf;
	in->dso.tab = &in->tab;
	in->dso.state = DSO_DONE;
	in->vma = (struct vma){ .start = 0x400000, .end = 0x500000, .path = "/usr/bin/fake", .dso = &in->dso,
				.file = true };
	in->fr = (struct frame){ .addr = 0x401000, .vma = &in->vma };
}

static bool has_line(const struct buf *b, const char *line)
{
	return b->data && strstr(b->data, line);
}

static void test_setup_timer(struct runtimes *rts)
{
	struct proc p = { .pid = 1234, .comm = "fake" };
	struct interp in;
	int64_t now = 1000000000LL, want = 5000000LL;
	bool backoff = true;
	int calls = 0;

	interp_init(&in, RT_PYTHON);
	fakes[RT_PYTHON]->next_state = RTS_WAIT;
	runtimes__see(rts, &p, &in.fr, 1, now);
	calls++;
	CHECK(fakes[RT_PYTHON]->setups == 1 && p.rt.state == RTS_WAIT && p.rt.kind == RT_PYTHON &&
		      p.rt.next_ns == now + want,
	      "timer: not initialised yet: waits 5 ms (state %d)", p.rt.state);
	CHECK(!runtimes__wants_look(rts, &p, now + want - 1) && runtimes__wants_look(rts, &p, now + want),
	      "timer: looked at again when due, not before");
	CHECK(runtimes__due(rts, now) == 5, "timer: due in 5 ms (%d)", runtimes__due(rts, now));
	/* Each look that finds it still waiting doubles the wait, up to 1 s. */
	while (p.rt.state == RTS_WAIT && calls < 200) {
		int64_t at = p.rt.next_ns;

		want = want * 2 > 1000000000LL ? 1000000000LL : want * 2;
		runtimes__see(rts, &p, &in.fr, 1, at);
		calls++;
		if (p.rt.state == RTS_WAIT && p.rt.next_ns - at != want && backoff) {
			backoff = false;
			CHECK(0, "timer: look %d: waits %lld ns, want %lld", calls, (long long)(p.rt.next_ns - at),
			      (long long)want);
		}
		now = at;
	}
	CHECK(backoff, "timer: the wait doubles from 5 ms up to 1 s");
	CHECK(p.rt.state == RTS_FAILED && calls == 71 && fakes[RT_PYTHON]->setups == 71,
	      "timer: given up (failed) after 70 waits (%d looks, state %d)", calls, p.rt.state);
	CHECK(!runtimes__wants_look(rts, &p, now + 10000000000LL), "timer: a process given up is not looked at");
	CHECK(fakes[RT_RUBY]->setups == 0 && fakes[RT_V8]->setups == 0, "timer: only its runtime set up");
}

static void test_merge(struct runtimes *rts)
{
	struct proc p = { .pid = 2345, .comm = "fake" };
	struct prof_sample_ev ev = { .nrt = 1, .rtkind = RT_RUBY };
	struct frame out[8];
	struct rt_merged m;
	struct interp in;
	struct buf b = { 0 };
	int n;

	interp_init(&in, RT_RUBY);
	fakes[RT_RUBY]->next_state = RTS_WALKED;
	runtimes__see(rts, &p, &in.fr, 1, 5000000000LL);
	CHECK(p.rt.state == RTS_WALKED && p.rt.kind == RT_RUBY, "merge: set up and walked (state %d)", p.rt.state);
	n = runtimes__merge(rts, &p, &ev, &in.fr, 1, out, 8, &m);
	CHECK(n == 2 && out[1].rt && !strcmp(out[1].name, "heavy (fake.py)") && m.kind == RT_RUBY && m.frames == 1 &&
		      !m.unsure && fakes[RT_RUBY]->merges == 1,
	      "merge: its runtime's merge made the frames, settled (n %d, unsure %d)", n, m.unsure);
	fakes[RT_RUBY]->stale = true;
	n = runtimes__merge(rts, &p, &ev, &in.fr, 1, out, 8, &m);
	CHECK(m.unsure && m.frames == 1, "merge: a stale frame leaves the stack unsure");
	ev.rtkind = RT_PYTHON;
	n = runtimes__merge(rts, &p, &ev, &in.fr, 1, out, 8, &m);
	CHECK(n == 1 && out[0].addr == in.fr.addr && m.kind == RT_NONE && fakes[RT_RUBY]->merges == 2 &&
		      fakes[RT_PYTHON]->merges == 0,
	      "merge: a record of another runtime's frames is left native");
	ev.rtkind = RT_RUBY;
	ev.nrt = 0;
	n = runtimes__merge(rts, &p, &ev, &in.fr, 1, out, 8, &m);
	CHECK(n == 1 && fakes[RT_RUBY]->merges == 2, "merge: a record without runtime frames is left native");

	runtimes__update(rts);
	runtimes__metrics(rts, &b);
	CHECK(has_line(&b, "proffs_frb_processes_total{state=\"walked\"} 1\n") &&
		      has_line(&b, "proffs_fpy_processes_total{state=\"failed\"} 1\n"),
	      "metrics: processes by state, per runtime");
	CHECK(has_line(&b, "proffs_frb_frame_errors_total{reason=\"object_moved\"} 1\n") &&
		      has_line(&b, "proffs_frb_name_cache_total{result=\"hit\"} 7\n") &&
		      has_line(&b, "proffs_frb_name_cache_total{result=\"error\"} 3\n"),
	      "metrics: the runtime's counts, its view's hits and its own errors");
	CHECK(has_line(&b, "proffs_frb_name_cache_bytes 1000\n") && has_line(&b, "proffs_fpy_name_cache_bytes 0\n"),
	      "metrics: each runtime's share of the one cache");

	released = 0;
	CHECK(rt_pdata__get(&fakes[RT_RUBY]->rt.pdata, p.pid) != NULL, "merge: its runtime keeps data of it");
	runtimes__forget(rts, p.pid);
	CHECK(released == 1 && !rt_pdata__get(&fakes[RT_RUBY]->rt.pdata, p.pid) &&
		      fakes[RT_RUBY]->rt.pdata.ndead == 1,
	      "forget: the process's cached objects dropped, its data waits out the grace (released %d)", released);
	free(b.data);
	b = (struct buf){ 0 };
	runtimes__update(rts);
	runtimes__metrics(rts, &b);
	CHECK(has_line(&b, "proffs_frb_name_cache_bytes 0\n"), "forget: its share back to 0");
	free(b.data);
}

static void test_grace(void)
{
	struct rt_pdata d = { 0 };
	int *one = malloc(sizeof(int)), *two = malloc(sizeof(int));

	*one = 1;
	*two = 2;
	CHECK(!rt_pdata__put(&d, 0, one) && rt_pdata__get(&d, 0) == one, "grace: pid 0's data kept and found");
	rt_pdata__forget(&d, 0);
	CHECK(rt_pdata__get(&d, 0) == NULL && d.ndead == 1 && d.dead[0].data == one && *one == 1,
	      "grace: forgotten, its data waits (not freed: a late sample may name with it)");
	CHECK(d.dead[0].free_ns - now_mono_ns() > RT_PDATA_GRACE_NS - 1000000000LL,
	      "grace: for RT_PDATA_GRACE_NS");
	rt_pdata__put(&d, 7, two);
	rt_pdata__forget(&d, 8); /* nothing of 8's: only collects */
	CHECK(d.ndead == 1, "grace: nothing freed before its time");
	d.dead[0].free_ns = now_mono_ns() - 1;
	rt_pdata__forget(&d, 8);
	CHECK(d.ndead == 0 && rt_pdata__get(&d, 7) == two, "grace: freed once past it; the live one stays");
	rt_pdata__free(&d);
}

int main(void)
{
	struct runtimes *rts;

	test_cache();
	rts = runtimes__new_with(NULL, NULL, fake_table);
	CHECK(rts != NULL && fakes[RT_PYTHON] && fakes[RT_V8] && fakes[RT_V8]->inits == 1 &&
		      fakes[RT_V8]->rt.names,
	      "pipeline: made with the fake runtimes, each with its view");
	if (rts) {
		test_setup_timer(rts);
		test_merge(rts);
		runtimes__free(rts);
		CHECK(!fakes[RT_PYTHON] && !fakes[RT_V8] && finis == 4, "pipeline: every runtime's state freed");
	}
	test_grace();
	return test_done();
}
