/*
 * test_pprof.c - pprof decode/encode: a crafted good profile round-trips
 * field by field, encoding is deterministic and a fixed point, gzip (one or
 * several members) is accepted, and every crafted bad file of
 * pprof_bad.h is refused with its one-line reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "tests/test.h"
#include "tests/unit/pprof_bad.h"

static const char *S(const struct profile *p, uint32_t i)
{
	return i < p->nstrs ? p->strs[i] : "<bad index>";
}

static void check_good(const struct profile *p, const char *what)
{
	const struct prof_sample *s0 = NULL;

	CHECK(p->nvalues == 2, "%s: 2 sample types (%u)", what, p->nvalues);
	if (p->nvalues != 2)
		return;
	CHECK(!strcmp(S(p, p->sample_types[0].type), "samples") &&
	      !strcmp(S(p, p->sample_types[0].unit), "count") &&
	      !strcmp(S(p, p->sample_types[1].type), "cpu") &&
	      !strcmp(S(p, p->sample_types[1].unit), "nanoseconds"),
	      "%s: sample types samples/count, cpu/nanoseconds", what);
	CHECK(!strcmp(S(p, p->period_type.type), "cpu") && p->period == 10000000,
	      "%s: period type cpu, period 10ms", what);
	CHECK(p->time_nanos == 1700000000000000000LL && p->duration_nanos == 60000000000LL,
	      "%s: time and duration kept", what);
	CHECK(profile__total(p, 0) == 5 && profile__total(p, 1) == 50000000,
	      "%s: totals 5 and 50000000 (%lld, %lld)", what,
	      (long long)profile__total(p, 0), (long long)profile__total(p, 1));
	CHECK(p->nmappings == 1 && p->mappings[0].has_functions &&
	      !strcmp(S(p, p->mappings[0].file), "/usr/lib/very/long/path/to/libexample.so.1.2.3") &&
	      !strcmp(S(p, p->mappings[0].build_id), "abc123") && p->mappings[0].start == 0x400000,
	      "%s: mapping file, build id, start, has_functions", what);
	CHECK(p->nfunctions == 2 && p->nlocations == 2 && p->nsamples == 2,
	      "%s: 2 functions, 2 locations, 2 samples", what);
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].nlocs == 2)
			s0 = &p->samples[i];
	CHECK(s0 != NULL, "%s: the two-frame sample exists", what);
	if (s0) {
		const struct prof_location *leaf = &p->locations[s0->locs[0] - 1];
		const struct prof_function *f = &p->functions[leaf->lines[0].function_id - 1];
		const char *comm = profile__sample_label(p, s0, "comm");

		CHECK(!strcmp(S(p, f->name), "worker_loop") && leaf->lines[0].line == 43 &&
		      leaf->address == 0x401010,
		      "%s: leaf is worker_loop:43 at 0x401010", what);
		CHECK(comm && !strcmp(comm, "myprog"), "%s: comm label myprog", what);
		CHECK(s0->values[0] == 3 && s0->values[1] == 30000000, "%s: sample values 3, 30ms", what);
	}
}

static int decode(const uint8_t *b, size_t n, struct profile **p, char *err, size_t errsz)
{
	return pprof__decode(b, n, p, err, errsz);
}

int main(void)
{
	struct pb_good g;
	struct profile *p = NULL, *q = NULL;
	uint8_t *raw, *enc1 = NULL, *enc2 = NULL, *enc3 = NULL, *gz;
	size_t rawn, n1 = 0, n2 = 0, n3 = 0, gzn;
	char err[256];
	int rc;

	pb_good_init(&g);
	raw = pb_pack(&g.m, &rawn);

	/* 1. the crafted good profile decodes field by field */
	rc = decode(raw, rawn, &p, err, sizeof(err));
	CHECK(rc == 0, "good profile decodes (%s)", rc ? err : "ok");
	if (rc)
		return test_done();
	check_good(p, "raw");
	CHECK(p->nstrs >= 1 && p->strs[0][0] == '\0', "decoded string table starts with \"\"");

	/* 2. encode: deterministic, and decode(encode(x)) encodes identically */
	CHECK(pprof__encode(p, &enc1, &n1) == 0, "encode (%zu bytes)", n1);
	CHECK(pprof__encode(p, &enc2, &n2) == 0 && n1 == n2 && !memcmp(enc1, enc2, n1),
	      "encoding twice gives identical bytes");
	rc = decode(enc1, n1, &q, err, sizeof(err));
	CHECK(rc == 0, "re-decode of our encoding (%s)", rc ? err : "ok");
	if (!rc) {
		check_good(q, "re-decoded");
		CHECK(pprof__encode(q, &enc3, &n3) == 0 && n3 == n1 && !memcmp(enc1, enc3, n1),
		      "encode(decode(encode(x))) == encode(x)");
		CHECK(q->nmappings == 1 && q->mappings[0].has_functions, "has_functions survives encode");
	}
	profile__free(q);
	q = NULL;

	/* 3. gzip, one member and two concatenated members */
	gz = pb_gzip(raw, rawn, &gzn);
	rc = decode(gz, gzn, &q, err, sizeof(err));
	CHECK(rc == 0, "gzip decodes (%s)", rc ? err : "ok");
	if (!rc)
		check_good(q, "gzip");
	profile__free(q);
	q = NULL;
	{
		size_t an, bn, half = rawn / 2;
		uint8_t *a = pb_gzip(raw, half, &an), *b = pb_gzip(raw + half, rawn - half, &bn);
		uint8_t *cat = malloc(an + bn + 4);

		memcpy(cat, a, an);
		memcpy(cat + an, b, bn);
		rc = decode(cat, an + bn, &q, err, sizeof(err));
		CHECK(rc == 0, "two concatenated gzip members decode (%s)", rc ? err : "ok");
		if (!rc)
			check_good(q, "gzip x2");
		profile__free(q);
		q = NULL;
		memcpy(cat + an, "JUNK", 4);
		rc = decode(cat, an + 4, &q, err, sizeof(err));
		CHECK(rc == -EINVAL && strstr(err, "trailing") && !q,
		      "gzip with trailing garbage refused: %s", err);
		free(a);
		free(b);
		free(cat);
	}
	free(gz);

	/* 4. symbols with bytes that are not UTF-8 still decode */
	{
		struct pb_good h;
		uint8_t *b;
		size_t bn;

		pb_good_init(&h);
		h.strs[7] = "worker\xff\xfeloop";
		b = pb_pack(&h.m, &bn);
		rc = decode(b, bn, &q, err, sizeof(err));
		CHECK(rc == 0, "non-UTF-8 function name accepted (%s)", rc ? err : "ok");
		profile__free(q);
		q = NULL;
		free(b);
	}

	/* 5. the table of crafted bad files */
	for (size_t i = 0; i < PB_NBAD; i++) {
		const char *expect = "";
		size_t bn = 0;
		uint8_t *b = pb_bad(i, &bn, &expect);

		err[0] = '\0';
		q = (struct profile *)0x1;
		rc = decode(b, bn, &q, err, sizeof(err));
		CHECK(rc == -EINVAL && q == NULL && strstr(err, expect) && !strchr(err, '\n'),
		      "bad file %-22s refused: \"%s\" (want \"%s\")", pb_bad_names[i], err, expect);
		if (rc == 0)
			profile__free(q);
		q = NULL;
		free(b);
	}

	/* 6. profiles built through the API: inlined lines and numeric labels */
	{
		struct profile *a = profile__new(), *b = NULL;
		const char *types[] = { "alloc_objects", "alloc_space" }, *units[] = { "count", "bytes" };
		struct prof_function f1 = { .name = profile__intern_str(a, "inner") };
		struct prof_function f2 = { .name = profile__intern_str(a, "outer") };
		struct prof_line lines[2];
		struct prof_location l = { .address = 0x1234, .nlines = 2, .lines = lines };
		struct prof_label lab[2] = {
			{ .key = profile__intern_str(a, "bytes"), .num = 4096,
			  .num_unit = profile__intern_str(a, "bytes") },
			{ .key = profile__intern_str(a, "pid"), .str = profile__intern_str(a, "77") },
		};
		int64_t vals[2] = { 7, 7 * 4096 };
		uint64_t loc;
		uint8_t *e1 = NULL, *e2 = NULL;
		size_t m1 = 0, m2 = 0;

		profile__set_value_types(a, 2, types, units);
		lines[0] = (struct prof_line){ profile__add_function(a, &f1), 10 };
		lines[1] = (struct prof_line){ profile__add_function(a, &f2), 20 };
		loc = profile__add_location(a, &l);
		profile__add_sample(a, &loc, 1, lab, 2, vals);
		CHECK(pprof__encode(a, &e1, &m1) == 0, "API-built profile encodes");
		rc = decode(e1, m1, &b, err, sizeof(err));
		CHECK(rc == 0, "and decodes (%s)", rc ? err : "ok");
		if (!rc) {
			const struct prof_sample *s = &b->samples[0];
			const struct prof_location *bl = &b->locations[s->locs[0] - 1];
			bool numok = false;

			for (uint32_t k = 0; k < s->nlabels; k++)
				if (!strcmp(S(b, s->labels[k].key), "bytes") && !s->labels[k].str &&
				    s->labels[k].num == 4096 && !strcmp(S(b, s->labels[k].num_unit), "bytes"))
					numok = true;
			CHECK(numok, "numeric label bytes=4096 (unit bytes) survives");
			CHECK(bl->nlines == 2 && !strcmp(S(b, b->functions[bl->lines[0].function_id - 1].name), "inner") &&
			      !strcmp(S(b, b->functions[bl->lines[1].function_id - 1].name), "outer"),
			      "inlined lines keep their order (inner first)");
			CHECK(pprof__encode(b, &e2, &m2) == 0 && m1 == m2 && !memcmp(e1, e2, m1),
			      "and re-encodes identically");
		}
		profile__free(a);
		profile__free(b);
		free(e1);
		free(e2);
	}

	/* 7. has_functions is set on every mapping a location symbolizes */
	{
		struct profile *a = profile__new(), *b = NULL;
		const char *types[] = { "samples" }, *units[] = { "count" };
		struct prof_mapping m1 = { .start = 0x1000, .limit = 0x2000, .file = profile__intern_str(a, "/bin/sym") };
		struct prof_mapping m2 = { .start = 0x3000, .limit = 0x4000, .file = profile__intern_str(a, "/bin/nosym") };
		struct prof_function f = { .name = profile__intern_str(a, "fn") };
		struct prof_line line;
		struct prof_location l1 = { .address = 0x1100, .nlines = 1, .lines = &line };
		struct prof_line none[1];
		struct prof_location l2 = { .address = 0x3100, .nlines = 0, .lines = none };
		uint64_t locs[2];
		int64_t v = 1;
		uint8_t *e = NULL;
		size_t m = 0;

		profile__set_value_types(a, 1, types, units);
		l1.mapping_id = profile__add_mapping(a, &m1);
		l2.mapping_id = profile__add_mapping(a, &m2);
		line = (struct prof_line){ profile__add_function(a, &f), 3 };
		locs[0] = profile__add_location(a, &l1);
		locs[1] = profile__add_location(a, &l2);
		profile__add_sample(a, locs, 2, NULL, 0, &v);
		rc = pprof__encode(a, &e, &m) ? -1 : decode(e, m, &b, err, sizeof(err));
		CHECK(rc == 0 && b->nmappings == 2 && b->mappings[0].has_functions && !b->mappings[1].has_functions,
		      "has_functions set on the symbolized mapping only");
		profile__free(a);
		profile__free(b);
		free(e);
	}

	/* 8. an empty profile is valid both ways */
	{
		struct profile *a = profile__new(), *b = NULL;
		const char *types[] = { "samples", "cpu" }, *units[] = { "count", "nanoseconds" };
		uint8_t *e = NULL;
		size_t m = 0;

		profile__set_value_types(a, 2, types, units);
		CHECK(pprof__encode(a, &e, &m) == 0 && m > 0, "empty profile encodes (%zu bytes)", m);
		rc = decode(e, m, &b, err, sizeof(err));
		CHECK(rc == 0 && b->nsamples == 0 && b->nvalues == 2, "and decodes with 2 types, 0 samples (%s)",
		      rc ? err : "ok");
		profile__free(a);
		profile__free(b);
		free(e);
	}

	/* 9. the widest values (addresses, offsets, lines, numbers) over several
	 * parts of each kind: the encoder packs a part into room it counted
	 * without sizing it, and stops the process if a part packed to more */
	{
		enum { N = 1100, DEPTH = 64, NLAB = 4 };
		struct profile *a = profile__new(), *b = NULL;
		const char *types[] = { "samples", "cpu" }, *units[] = { "count", "nanoseconds" };
		uint64_t *locs = calloc((size_t)N * DEPTH, sizeof(*locs)), mapid[N], fnid[N], lid[N];
		struct prof_label lab[NLAB];
		uint8_t *e = NULL, *e2 = NULL;
		size_t m = 0, m2 = 0;
		int64_t vals[2] = { INT64_MIN / 2, -1 };
		bool ok = locs != NULL;

		profile__set_value_types(a, 2, types, units);
		for (uint32_t i = 0; i < N && ok; i++) {
			char s[32];
			struct prof_mapping pm = {
				.start = UINT64_MAX - 2 * (uint64_t)N + i, .limit = UINT64_MAX - i,
				.offset = UINT64_MAX - i, .has_functions = true,
			};
			struct prof_function f = { .start_line = -1 - (int64_t)i };
			struct prof_line lines[3];
			struct prof_location l = { .address = UINT64_MAX - i, .nlines = 3, .lines = lines };

			snprintf(s, sizeof(s), "/lib/m%u.so", i);
			pm.file = profile__intern_str(a, s);
			snprintf(s, sizeof(s), "fn%u", i);
			f.name = f.system_name = f.filename = profile__intern_str(a, s);
			mapid[i] = profile__add_mapping(a, &pm);
			fnid[i] = profile__add_function(a, &f);
			for (int j = 0; j < 3; j++)
				lines[j] = (struct prof_line){ fnid[(i + (uint32_t)j) % (i + 1)], -1 - j };
			l.mapping_id = mapid[i];
			lid[i] = profile__add_location(a, &l);
			ok = mapid[i] && fnid[i] && lid[i];
		}
		for (uint32_t i = 0; i < N && ok; i++) {
			uint64_t *st = locs + (size_t)i * DEPTH;

			for (int j = 0; j < DEPTH; j++)
				st[j] = lid[(i + (uint32_t)j * 7) % N];
			for (int j = 0; j < NLAB; j++)
				lab[j] = (struct prof_label){ .key = profile__intern_str(a, j ? "k" : "pid"),
							      .num = INT64_MIN + i + j,
							      .num_unit = profile__intern_str(a, "u") };
			lab[1].key = profile__intern_str(a, "k1");
			lab[2].key = profile__intern_str(a, "k2");
			lab[3].key = profile__intern_str(a, "k3");
			ok = profile__add_sample(a, st, DEPTH, lab, NLAB, vals) == 0;
		}
		CHECK(ok && a->nmappings == N && a->nlocations == N && a->nsamples == N,
		      "a profile of %u mappings, locations and samples at the widest values", N);
		rc = ok && pprof__encode(a, &e, &m) == 0 ? decode(e, m, &b, err, sizeof(err)) : -1;
		CHECK(rc == 0, "it encodes (%zu bytes) and decodes (%s)", m, rc ? err : "ok");
		if (!rc) {
			CHECK(b->nmappings == N && b->nfunctions == N && b->nlocations == N &&
			      b->nsamples == N && b->mappings[N - 1].limit == UINT64_MAX - (N - 1) &&
			      b->locations[0].address == UINT64_MAX && b->locations[0].lines[2].line == -3 &&
			      b->samples[N - 1].nlocs == DEPTH && b->samples[N - 1].values[0] == INT64_MIN / 2 &&
			      b->samples[N - 1].nlabels == NLAB,
			      "every entry comes back, the widest values as written");
			CHECK(pprof__encode(b, &e2, &m2) == 0 && m2 == m && !memcmp(e, e2, m),
			      "and re-encodes identically");
		}
		profile__free(a);
		profile__free(b);
		free(locs);
		free(e);
		free(e2);
	}

	profile__free(p);
	free(raw);
	free(enc1);
	free(enc2);
	free(enc3);
	return test_done();
}
