/*
 * test_offcpu.c - the user-space pieces of the offcpu type that need no
 * BPF: --offcpu-states parsing and state names, the offcpu batch (sample
 * types, values, the `state` label) and folded.txt in microseconds.
 * The BPF side is tests/integration/offcpu.sh's.
 */
#include <errno.h>
#include <string.h>

#include "fs/render/render.h"
#include "sampler/batch/batch.h"
#include "sampler/offcpu/offcpu.h"
#include "store/profile/profile.h"
#include "tests/test.h"

static const char *label(const struct profile *p, const struct prof_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(p->strs[s->labels[i].key], key))
			return p->strs[s->labels[i].str];
	return NULL;
}

int main(void)
{
	static const char *const types[] = { "events", "offcpu" };
	static const char *const units[] = { "count", "nanoseconds" };
	struct frame fr[2] = { { .addr = 0xffffffff81000010ULL, .name = "schedule", .kernel = true },
			       { .addr = 0x401000, .name = "waitLong" } };
	struct profile *p = NULL;
	struct batch *b;
	struct buf out = { 0 };
	int64_t t0, dur;
	unsigned m = 0;

	CHECK(!offcpu__parse_states("sleep", &m) && m == 1u << OFFCPU_SLEEP, "states: sleep");
	CHECK(!offcpu__parse_states("disk,runqueue", &m) &&
		      m == (1u << OFFCPU_DISK | 1u << OFFCPU_RUNQUEUE), "states: disk,runqueue");
	CHECK(!offcpu__parse_states("all", &m) && m == OFFCPU_DEFAULT_STATES, "states: all");
	CHECK(offcpu__parse_states("", &m) == -EINVAL, "states: empty is refused");
	CHECK(offcpu__parse_states("sleep,nap", &m) == -EINVAL, "states: unknown name refused");
	CHECK(offcpu__parse_states("sleepy", &m) == -EINVAL, "states: prefix match refused");
	CHECK(!strcmp(offcpu__state_name(OFFCPU_DISK << OFFCPU_STATE_SHIFT | PROF_F_KTRUNC), "disk"),
	      "state name from flags, other flags ignored");
	CHECK(!strcmp(offcpu__state_name(OFFCPU_RUNQUEUE << OFFCPU_STATE_SHIFT), "runqueue"), "runqueue");
	CHECK(offcpu__state_name(9u << OFFCPU_STATE_SHIFT) == NULL, "unknown state: NULL");

	b = batch__new_typed(0, types, units);
	CHECK(b != NULL, "offcpu batch");
	if (!b)
		return test_done();
	CHECK(!batch__add_values(b, NULL, 42, "app", fr, 2, (const int64_t[2]){ 1, 900001499 }, "state",
				 "sleep"), "add a 900 ms sleep");
	CHECK(!batch__add_values(b, NULL, 42, "app", fr, 2, (const int64_t[2]){ 1, 2500 }, "state", "disk"),
	      "add a 2.5 us disk wait");
	CHECK(!batch__add_values(b, NULL, 42, "app", fr, 1, (const int64_t[2]){ 1, 499 }, "state", "disk"),
	      "add a 0.499 us wait (rounds to 0 us)");
	t0 = 1000000000LL;
	dur = 10000000000LL;
	CHECK(!batch__take(b, t0, dur, &p) && p, "take");
	if (p) {
		CHECK(p->nvalues == 2 && !strcmp(p->strs[p->sample_types[0].type], "events") &&
			      !strcmp(p->strs[p->sample_types[1].type], "offcpu") &&
			      !strcmp(p->strs[p->sample_types[1].unit], "nanoseconds") &&
			      !strcmp(p->strs[p->period_type.type], "offcpu"),
		      "sample types events/count, offcpu/nanoseconds; period type offcpu");
		CHECK(p->nsamples == 3 && p->samples[0].values[0] == 1 && p->samples[0].values[1] == 900001499,
		      "values (1, ns)");
		CHECK(p->nsamples == 3 && label(p, &p->samples[0], "state") &&
			      !strcmp(label(p, &p->samples[0], "state"), "sleep") &&
			      !strcmp(label(p, &p->samples[1], "state"), "disk") &&
			      !strcmp(label(p, &p->samples[0], "comm"), "app") &&
			      !strcmp(label(p, &p->samples[0], "pid"), "42"),
		      "labels comm, pid and state");
		CHECK(!render__folded(p, &out), "render folded");
		CHECK(out.data && !strcmp(out.data, "app;waitLong;schedule_[k] 900004\n"),
		      "folded counts microseconds, rounded per line, zero lines dropped:\n%s",
		      out.data ? out.data : "");
		buf__free(&out);
		memset(&out, 0, sizeof(out));
		CHECK(!render__folded_diff(p, p, &out) && out.data &&
			      !strcmp(out.data, "app;waitLong;schedule_[k] 900004 900004\n"),
		      "diff folded in microseconds too:\n%s", out.data ? out.data : "");
		buf__free(&out);
		profile__free(p);
	}
	batch__free(b);
	return test_done();
}
