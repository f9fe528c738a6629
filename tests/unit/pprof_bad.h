/*
 * pprof_bad.h - a table of crafted malformed pprof files, shared by
 * tests/unit/test_pprof.c (decoded in process) and tests/tools/pprofbad.c
 * (written to disk for `proffs import`). Each case is a valid small
 * profile with one thing broken, plus a substring the refusal must contain.
 */
#ifndef PROFFS_TEST_PPROF_BAD_H
#define PROFFS_TEST_PPROF_BAD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gen/profile.pb-c.h"

/* The good profile every case starts from: 2 sample types, 1 mapping,
 * 2 functions, 2 locations, 2 samples with labels. */
struct pb_good {
	Perftools__Profiles__Profile m;
	Perftools__Profiles__ValueType st[9], *stp[9], pt;
	Perftools__Profiles__Mapping mp, *mpp[2];
	Perftools__Profiles__Mapping mp2;
	Perftools__Profiles__Function fn[2], *fnp[2];
	Perftools__Profiles__Location lo[2], *lop[2];
	Perftools__Profiles__Line li[2], *lip[2];
	Perftools__Profiles__Sample sa[2], *sap[2];
	Perftools__Profiles__Label la[2], *lap[2];
	uint64_t locs0[2], locs1[1];
	int64_t vals0[2], vals1[2];
	char *strs[12];
};

static inline void pb_good_init(struct pb_good *g)
{
	static const char *const s[] = { "", "samples", "count", "cpu", "nanoseconds",
					 "/usr/lib/very/long/path/to/libexample.so.1.2.3",
					 "main", "worker_loop", "main.c", "comm", "myprog", "abc123" };

	memset(g, 0, sizeof(*g));
	perftools__profiles__profile__init(&g->m);
	for (int i = 0; i < 12; i++)
		g->strs[i] = (char *)s[i];
	g->m.n_string_table = 12;
	g->m.string_table = g->strs;
	for (int i = 0; i < 9; i++) {
		perftools__profiles__value_type__init(&g->st[i]);
		g->st[i].type = i == 0 ? 1 : 3;
		g->st[i].unit = i == 0 ? 2 : 4;
		g->stp[i] = &g->st[i];
	}
	g->m.n_sample_type = 2;
	g->m.sample_type = g->stp;
	perftools__profiles__value_type__init(&g->pt);
	g->pt.type = 3;
	g->pt.unit = 4;
	g->m.period_type = &g->pt;
	g->m.period = 10000000;
	g->m.time_nanos = 1700000000000000000LL;
	g->m.duration_nanos = 60000000000LL;

	perftools__profiles__mapping__init(&g->mp);
	g->mp.id = 1;
	g->mp.memory_start = 0x400000;
	g->mp.memory_limit = 0x500000;
	g->mp.filename = 5;
	g->mp.build_id = 11;
	g->mp.has_functions = 1;
	g->mpp[0] = &g->mp;
	perftools__profiles__mapping__init(&g->mp2);
	g->mp2.id = 2;
	g->mpp[1] = &g->mp2;
	g->m.n_mapping = 1;
	g->m.mapping = g->mpp;

	for (int i = 0; i < 2; i++) {
		perftools__profiles__function__init(&g->fn[i]);
		g->fn[i].id = 10 + i;
		g->fn[i].name = 6 + i;
		g->fn[i].system_name = 6 + i;
		g->fn[i].filename = 8;
		g->fnp[i] = &g->fn[i];

		perftools__profiles__line__init(&g->li[i]);
		g->li[i].function_id = 10 + i;
		g->li[i].line = 42 + i;
		g->lip[i] = &g->li[i];

		perftools__profiles__location__init(&g->lo[i]);
		g->lo[i].id = 100 + i;
		g->lo[i].mapping_id = 1;
		g->lo[i].address = 0x401000 + 0x10 * i;
		g->lo[i].n_line = 1;
		g->lo[i].line = &g->lip[i];
		g->lop[i] = &g->lo[i];

		perftools__profiles__label__init(&g->la[i]);
		g->la[i].key = 9;
		g->la[i].str = 10;
		g->lap[i] = &g->la[i];

		perftools__profiles__sample__init(&g->sa[i]);
		g->sap[i] = &g->sa[i];
	}
	g->m.n_function = 2;
	g->m.function = g->fnp;
	g->m.n_location = 2;
	g->m.location = g->lop;

	g->locs0[0] = 101; /* leaf worker_loop, called from main */
	g->locs0[1] = 100;
	g->locs1[0] = 100;
	g->vals0[0] = 3;
	g->vals0[1] = 30000000;
	g->vals1[0] = 2;
	g->vals1[1] = 20000000;
	g->sa[0].n_location_id = 2;
	g->sa[0].location_id = g->locs0;
	g->sa[0].n_value = 2;
	g->sa[0].value = g->vals0;
	g->sa[0].n_label = 1;
	g->sa[0].label = &g->lap[0];
	g->sa[1].n_location_id = 1;
	g->sa[1].location_id = g->locs1;
	g->sa[1].n_value = 2;
	g->sa[1].value = g->vals1;
	g->sa[1].n_label = 1;
	g->sa[1].label = &g->lap[1];
	g->m.n_sample = 2;
	g->m.sample = g->sap;
}

static inline uint8_t *pb_pack(const Perftools__Profiles__Profile *m, size_t *len)
{
	size_t n = perftools__profiles__profile__get_packed_size(m);
	uint8_t *b = malloc(n ? n : 1);

	if (b)
		perftools__profiles__profile__pack(m, b);
	*len = n;
	return b;
}

/* gzip (not zlib) framing, as Go writes profiles. */
static inline uint8_t *pb_gzip(const uint8_t *in, size_t len, size_t *outlen)
{
	z_stream zs = { 0 };
	size_t cap = len + 256;
	uint8_t *out = malloc(cap);

	if (!out || deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		return NULL;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	*outlen = zs.total_out;
	deflateEnd(&zs);
	return out;
}

static const char *const pb_bad_names[] = {
	"empty", "garbage", "truncated", "gzip-truncated", "gzip-corrupt",
	"absurd-length", "string0-not-empty", "string-index-range",
	"label-string-range", "sample-type-range", "mapping-id-zero",
	"function-id-zero", "location-id-zero", "duplicate-location-id",
	"duplicate-function-id", "unresolvable-location", "unresolvable-function",
	"unresolvable-mapping", "value-count-mismatch", "too-many-sample-types",
	"absurd-stack-depth", "no-string-table",
};
#define PB_NBAD (sizeof(pb_bad_names) / sizeof(pb_bad_names[0]))

/*
 * Builds bad case i (0 <= i < PB_NBAD): returns a malloc'd file body and
 * sets *expect to a substring the decoder's reason must contain.
 */
static inline uint8_t *pb_bad(size_t i, size_t *len, const char **expect)
{
	struct pb_good g;
	uint8_t *b = NULL, *z = NULL;
	size_t n = 0, zn = 0;
	static uint64_t deep[70000];

	pb_good_init(&g);
	switch (i) {
	case 0: /* empty */
		*expect = "empty";
		*len = 0;
		return malloc(1);
	case 1: /* garbage: wire type 7 does not exist */
		*expect = "protobuf";
		b = malloc(64);
		for (int k = 0; k < 64; k++)
			b[k] = (uint8_t)(0x07 + k * 37);
		*len = 64;
		return b;
	case 2: { /* truncated inside the long mapping file name */
		const char *needle = "very/long/path";

		*expect = "protobuf";
		b = pb_pack(&g.m, &n);
		for (size_t k = 0; k + strlen(needle) <= n; k++)
			if (!memcmp(b + k, needle, strlen(needle))) {
				*len = k + 4;
				return b;
			}
		*len = n / 2;
		return b;
	}
	case 3: /* gzip cut short */
		*expect = "gzip";
		b = pb_pack(&g.m, &n);
		z = pb_gzip(b, n, &zn);
		free(b);
		*len = zn * 2 / 3;
		return z;
	case 4: /* gzip with its deflate body and CRC damaged */
		*expect = "gzip";
		b = pb_pack(&g.m, &n);
		z = pb_gzip(b, n, &zn);
		free(b);
		for (size_t k = 12; k < zn - 8; k += 3)
			z[k] ^= 0x5a;
		z[zn - 6] ^= 0xff;
		*len = zn;
		return z;
	case 5: { /* a string claiming 2^40 bytes */
		static const uint8_t absurd[] = { 0x32, 0x00, 0x32, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 'a', 'b', 'c' };

		*expect = "protobuf";
		b = malloc(sizeof(absurd));
		memcpy(b, absurd, sizeof(absurd));
		*len = sizeof(absurd);
		return b;
	}
	case 6:
		*expect = "string_table[0]";
		g.strs[0] = "x";
		break;
	case 7:
		*expect = "out of range";
		g.fn[1].name = 999;
		break;
	case 8:
		*expect = "out of range";
		g.la[0].str = 12;
		break;
	case 9:
		*expect = "out of range";
		g.st[1].unit = -1;
		break;
	case 10:
		*expect = "mapping #0 has id 0";
		g.mp.id = 0;
		break;
	case 11:
		*expect = "function #1 has id 0";
		g.fn[1].id = 0;
		break;
	case 12:
		*expect = "location #0 has id 0";
		g.lo[0].id = 0;
		break;
	case 13:
		*expect = "duplicate location id 100";
		g.lo[1].id = 100;
		break;
	case 14:
		*expect = "duplicate function id 10";
		g.fn[1].id = 10;
		break;
	case 15:
		*expect = "location id 4242 not found";
		g.locs0[1] = 4242;
		break;
	case 16:
		*expect = "function id 77 not found";
		g.li[1].function_id = 77;
		break;
	case 17:
		*expect = "mapping id 5 not found";
		g.lo[0].mapping_id = 5;
		break;
	case 18:
		*expect = "values for 2 sample types";
		g.sa[1].n_value = 1;
		break;
	case 19:
		*expect = "sample types";
		g.m.n_sample_type = 9;
		break;
	case 20:
		*expect = "locations (at most";
		for (size_t k = 0; k < sizeof(deep) / sizeof(deep[0]); k++)
			deep[k] = 100;
		g.sa[1].n_location_id = sizeof(deep) / sizeof(deep[0]);
		g.sa[1].location_id = deep;
		break;
	case 21:
		*expect = "string table is empty";
		g.m.n_string_table = 0;
		g.m.n_sample = 0;
		g.m.n_location = 0;
		g.m.n_function = 0;
		g.m.n_mapping = 0;
		g.m.n_sample_type = 0;
		g.m.period_type = NULL;
		break;
	default:
		*expect = "?";
		*len = 0;
		return NULL;
	}
	return pb_pack(&g.m, len);
}

#endif
