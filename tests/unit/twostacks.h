/* twostacks.h - the small CPU profile that test_profile and test_tree build
 * their cases from: two stacks over one mapping, main;LEAF and main. */
#ifndef PROFFS_TESTS_UNIT_TWOSTACKS_H
#define PROFFS_TESTS_UNIT_TWOSTACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "store/profile/profile.h"

/* A profile of value types samples/count and cpu/nanoseconds, mapping
 * /bin/x, with the stack main;leaf (count a) and the stack main (count b),
 * each count's nanoseconds count * ns. A stack of count 0 is added with
 * its zeros unless skip0. The caller frees it. */
static inline struct profile *two_stacks(const char *leaf, int64_t a, int64_t b, int64_t ns,
					 bool skip0)
{
	struct profile *p = profile__new();
	const char *t[] = { "samples", "cpu" }, *u[] = { "count", "nanoseconds" };
	struct prof_mapping m = { .start = 0x1000, .limit = 0x2000, .file = profile__intern_str(p, "/bin/x"), .has_functions = true };
	uint64_t mid = profile__add_mapping(p, &m);
	struct prof_function f1 = { .name = profile__intern_str(p, "main") };
	struct prof_function f2 = { .name = profile__intern_str(p, leaf) };
	struct prof_line l1 = { profile__add_function(p, &f1), 3 }, l2 = { profile__add_function(p, &f2), 9 };
	struct prof_location L1 = { mid, 0x1010, 1, &l1 }, L2 = { mid, 0x1020, 1, &l2 };
	uint64_t locs[2];
	int64_t v[2];

	profile__set_value_types(p, 2, t, u);
	locs[0] = profile__add_location(p, &L2);
	locs[1] = profile__add_location(p, &L1);
	v[0] = a; v[1] = a * ns;
	if (a || !skip0)
		profile__add_sample(p, locs, 2, NULL, 0, v);
	v[0] = b; v[1] = b * ns;
	if (b || !skip0)
		profile__add_sample(p, locs + 1, 1, NULL, 0, v);
	return p;
}

#endif
