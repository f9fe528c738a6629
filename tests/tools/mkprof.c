/*
 * mkprof - writes a deterministic synthetic CPU profile (pprof, raw) for
 * the mount tests: known time, known label sets, pseudo-random stacks
 * drawn from a seed, so the test knows which minutes and labels exist.
 *
 *   mkprof --time UNIX_S [--seed N] [--samples N] [--series comm:pid]... OUT.pb
 *
 * Every --series adds samples carrying string labels comm and pid
 * (default one series "app:1"). Sample types samples/count and
 * cpu/nanoseconds at 19 Hz, time_nanos = UNIX_S, duration 10 s.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "tests/tools/xorshift.h"

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "time", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "samples", required_argument, NULL, 'n' },
		{ "series", required_argument, NULL, 'l' },
		{ 0 },
	};
	static const char *const types[] = { "samples", "cpu" };
	static const char *const units[] = { "count", "nanoseconds" };
	const char *series[64];
	int nseries = 0, nsamples = 40, c;
	long long t = -1;
	uint64_t seed = 1, fn[12], loc[12], map;
	struct profile *p;
	uint8_t *out;
	size_t outlen;
	FILE *f;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't': t = atoll(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': nsamples = atoi(optarg); break;
		case 'l':
			if (nseries < 64)
				series[nseries++] = optarg;
			break;
		default:
			return 2;
		}
	}
	if (t < 0 || optind != argc - 1) {
		fprintf(stderr, "usage: mkprof --time UNIX_S [--seed N] [--samples N] [--series comm:pid]... OUT.pb\n");
		return 2;
	}
	if (!nseries)
		series[nseries++] = "app:1";
	rng = seed * 0x9e3779b97f4a7c15ULL + 1;

	p = profile__new();
	if (!p || profile__set_value_types(p, 2, types, units))
		return 1;
	p->period_type.type = profile__intern_str(p, "cpu");
	p->period_type.unit = profile__intern_str(p, "nanoseconds");
	p->period = 1000000000LL / 19;
	p->time_nanos = t * 1000000000LL;
	p->duration_nanos = 10000000000LL;

	struct prof_mapping m = {
		.start = 0x400000, .limit = 0x800000, .offset = 0,
		.file = profile__intern_str(p, "/usr/bin/app"),
		.build_id = profile__intern_str(p, "0123456789abcdef0123456789abcdef01234567"),
		.has_functions = true,
	};
	map = profile__add_mapping(p, &m);
	for (int i = 0; i < 12; i++) {
		char name[32];

		snprintf(name, sizeof(name), i < 10 ? "main.fn%d" : "runtime.op%d", i);
		struct prof_function f = {
			.name = profile__intern_str(p, name),
			.system_name = profile__intern_str(p, name),
			.filename = profile__intern_str(p, i < 10 ? "/src/app/main.go" : "/src/runtime/op.go"),
			.start_line = 10 * i + 1,
		};
		fn[i] = profile__add_function(p, &f);
		struct prof_line ln = { .function_id = fn[i], .line = 10 * i + 3 };
		struct prof_location l = {
			.mapping_id = map, .address = 0x401000 + 0x100 * i,
			.nlines = 1, .lines = &ln,
		};
		loc[i] = profile__add_location(p, &l);
	}
	for (int s = 0; s < nseries; s++) {
		char comm[128], *colon;
		const char *pid = "1";

		snprintf(comm, sizeof(comm), "%s", series[s]);
		colon = strchr(comm, ':');
		if (colon) {
			*colon = 0;
			pid = colon + 1;
		}
		struct prof_label lb[2] = {
			{ .key = profile__intern_str(p, "comm"), .str = profile__intern_str(p, comm) },
			{ .key = profile__intern_str(p, "pid"), .str = profile__intern_str(p, pid) },
		};
		for (int i = 0; i < nsamples; i++) {
			uint64_t locs[8];
			uint32_t depth = 2 + rnd() % 6;
			int64_t count = 1 + rnd() % 20;
			int64_t v[2] = { count, count * p->period };

			/* leaf first; root is always fn0 (main) */
			for (uint32_t d = 0; d < depth; d++)
				locs[d] = loc[d == depth - 1 ? 0 : 1 + rnd() % 11];
			if (profile__add_sample(p, locs, depth, lb, 2, v))
				return 1;
		}
	}
	if (pprof__encode(p, &out, &outlen))
		return 1;
	f = fopen(argv[optind], "wb");
	if (!f || fwrite(out, 1, outlen, f) != outlen || fclose(f)) {
		perror(argv[optind]);
		return 1;
	}
	free(out);
	profile__free(p);
	return 0;
}
