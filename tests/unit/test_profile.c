/* test_profile: interning, aggregation, merge with scaling, diff labels. */
#include <stdio.h>
#include <string.h>

#include "store/profile/profile.h"
#include "store/util/demangle.h"
#include "tests/test.h"
#include "tests/unit/twostacks.h"

/* The stacks main, then a leaf named "work;x" (count a), and main alone
 * (count b); 10 ns a count; a count of 0 kept as a sample of zeros. */
static struct profile *mk(int64_t a, int64_t b)
{
	return two_stacks("work;x", a, b, 10, false);
}

int main(void)
{
	struct profile *a = mk(3, 4), *b = mk(5, 1), *m, *d;
	char name[64];

	CHECK(a->nstrs > 0 && !strcmp(a->strs[0], ""), "string 0 is empty");
	CHECK(profile__intern_str(a, "main") == profile__intern_str(a, "main"), "interning dedups");
	m = profile__new();
	CHECK(profile__merge(m, a, 1, NULL, 0) == 0, "merge a");
	CHECK(profile__merge(m, b, 1, NULL, 0) == 0, "merge b");
	CHECK(m->nsamples == 2, "merged profile aggregates identical stacks (got %u)", m->nsamples);
	CHECK(m->nlocations == 2 && m->nfunctions == 2 && m->nmappings == 1, "symbols deduplicated");
	CHECK(profile__total(m, 0) == 13 && profile__total(m, 1) == 130, "totals add up (%lld)", (long long)profile__total(m, 0));
	CHECK(profile__display_value(m) == 1, "display value is the last type");
	profile__frame_name(m, m->samples[0].locs[0], 0, true, name, sizeof(name));
	CHECK(!strcmp(name, "work:x"), "';' in a frame is written ':' (got %s)", name);
	{
		/* C++ and Rust: the stored name is pprof's short form, the
		 * system name the symbol; folded.txt shows it as perf does. */
		struct profile *q = profile__new();
		struct prof_function f = { .name = profile__intern_str(q, "Threads::create_vm"),
					   .system_name = profile__intern_str(q, "_ZN7Threads9create_vmEP14JavaVMInitArgsPb") };
		struct prof_line ln = { profile__add_function(q, &f), 0 };
		struct prof_location L = { 0, 0x10, 1, &ln };
		uint64_t loc = profile__add_location(q, &L);
		char dm[128];

		profile__frame_name(q, loc, 0, true, dm, sizeof(dm));
		CHECK(!strcmp(dm, "Threads::create_vm(JavaVMInitArgs*, bool*)"), "folded style: whole C++ name (%s)", dm);
		profile__frame_name(q, loc, 0, false, dm, sizeof(dm));
		CHECK(!strcmp(dm, "Threads::create_vm"), "pprof style: the stored short name (%s)", dm);
		CHECK(demangle__name("_ZNSt6vectorIiSaIiEE9push_backERKi", false, dm, sizeof(dm)) &&
		      !strcmp(dm, "std::vector::push_back"), "short form drops parameters and templates (%s)", dm);
		CHECK(demangle__name("_ZN9__gnu_cxxltIPiEEbRKNS_17__normal_iteratorIT_EES6_", false, dm, sizeof(dm)) &&
		      !strcmp(dm, "__gnu_cxx::operator<"), "an operator's '<' stays (%s)", dm);
		CHECK(demangle__name("_ZN4core3fmt5write17h0123456789abcdefE", true, dm, sizeof(dm)) &&
		      !strcmp(dm, "core::fmt::write"), "Rust legacy symbol (%s)", dm);
		CHECK(demangle__name("_RNvCs1234_7mycrate3foo", true, dm, sizeof(dm)) && !strcmp(dm, "mycrate::foo"),
		      "Rust v0 symbol (%s)", dm);
		CHECK(!demangle__name("main", true, dm, sizeof(dm)) && !demangle__name("_Zgarbage", true, dm, sizeof(dm)),
		      "plain C and garbage are left alone");
		profile__free(q);
	}
	d = profile__diff(a, b);
	CHECK(d && d->nsamples == 4, "diff keeps both sides apart (got %u)", d ? d->nsamples : 0);
	CHECK(profile__total(d, 0) == 6 - 7, "diff total is B - A");
	{
		int based = 0;
		for (uint32_t i = 0; i < d->nsamples; i++) {
			const char *v = profile__sample_label(d, &d->samples[i], "pprof::base");
			if (v && !strcmp(v, "true")) {
				based++;
				CHECK(d->samples[i].values[0] < 0, "base samples are negated");
			}
		}
		CHECK(based == 2, "A's samples carry pprof::base=true (%d)", based);
	}
	{
		/* Appended samples (no lookup) are found by later adds. */
		struct profile *q = mk(0, 0);
		uint64_t *locs = profile__alloc(q, 2 * sizeof(*locs));
		struct prof_label lab[2] = { { .key = profile__intern_str(q, "pid"), .str = profile__intern_str(q, "7") },
					     { .key = profile__intern_str(q, "comm"), .str = profile__intern_str(q, "x") } };
		int64_t v[2] = { 2, 20 };
		uint32_t n0 = q->nsamples;

		CHECK(locs != NULL, "profile__alloc");
		locs[0] = 2;
		locs[1] = 1;
		struct prof_label *plab = profile__labels(q, lab, 2);

		CHECK(plab != NULL, "profile__labels");
		CHECK(!profile__append_sample(q, locs, 2, plab, 2, v), "append");
		CHECK(!profile__append_sample(q, locs, 1, NULL, 0, v), "append a second");
		CHECK(q->nsamples == n0 + 2 && q->samples[n0].locs == locs, "appended as given (locs not copied)");
		CHECK(q->samples[n0].labels == plab && plab[0].key < plab[1].key,
		      "appended labels as given, sorted by profile__labels");
		CHECK(!profile__add_sample(q, locs, 2, lab + 1, 1, v), "add with other labels");
		CHECK(q->nsamples == n0 + 3 && q->samples[n0 + 2].locs == locs, "a new sample shares an appended stack");
		struct prof_label rev[2] = { lab[1], lab[0] };
		CHECK(!profile__add_sample(q, locs, 2, rev, 2, v), "add equal to the appended one");
		CHECK(q->nsamples == n0 + 3 && q->samples[n0].values[0] == 4,
		      "an add equal to an appended sample sums into it (%u samples, value %lld)", q->nsamples,
		      (long long)q->samples[n0].values[0]);
		profile__free(q);
	}
	profile__free(a);
	profile__free(b);
	profile__free(m);
	profile__free(d);
	return test_done();
}
