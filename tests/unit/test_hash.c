/* test_hash.c - hash_pair64, the identity of a version made of two: a
 * data version and a second (/metrics' fresh render each second), or the
 * versions of several stores. Every pair of a grid of small values names
 * different bytes, and the order of a pair matters. hash64(&b, 8, a),
 * used for this before, fails both: for one 8-byte word it depends on
 * a ^ b only, so /metrics at (version 24, second 55) served the bytes of
 * (25, 54), and two stores at versions (3, 0) read as (1, 2). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/util/util.h"
#include "tests/test.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* How many values of v[0..n) equal another. */
static size_t dups(uint64_t *v, size_t n)
{
	size_t d = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 1; i < n; i++)
		d += v[i] == v[i - 1];
	return d;
}

int main(void)
{
	enum { NV = 1000, NT = 1000 };
	const uint64_t t0 = 1795711500; /* a second of 2026 */
	uint64_t *h = malloc(sizeof(*h) * NV * NT), *o = malloc(sizeof(*o) * NV * NT);
	size_t swapped = 0;

	if (!h || !o)
		return 1;
	for (uint64_t v = 0; v < NV; v++)
		for (uint64_t t = 0; t < NT; t++) {
			uint64_t s = t0 + t;

			h[v * NT + t] = hash_pair64(v, s);
			o[v * NT + t] = hash64(&s, sizeof(s), v);
		}
	CHECK(dups(h, (size_t)NV * NT) == 0, "hash_pair64: %d versions x %d seconds, no two alike", NV, NT);
	/* The old combination, for the record: the test can tell. */
	CHECK(dups(o, (size_t)NV * NT) > 0, "hash64(&second, 8, version) repeats on the same grid");
	for (uint64_t a = 0; a < 64; a++)
		for (uint64_t b = 0; b < 64; b++)
			swapped += a != b && hash_pair64(a, b) == hash_pair64(b, a);
	CHECK(swapped == 0, "hash_pair64(a, b) != hash_pair64(b, a) for 64 x 64 small values");
	CHECK(hash_pair64(hash_pair64(0, 3), 0) != hash_pair64(hash_pair64(0, 1), 2),
	      "two stores at versions (3, 0) and (1, 2) differ");
	{
		/* hash64_pair is two hash64 in one pass: every length's tail */
		uint8_t buf[300];
		int differ = 0;

		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)(i * 37 + 11);
		for (size_t n = 0; n <= sizeof(buf); n++) {
			uint64_t two[2];

			hash64_pair(buf, n, 0x6d656d6f, n * 7919, two);
			differ += two[0] != hash64(buf, n, 0x6d656d6f) || two[1] != hash64(buf, n, n * 7919);
		}
		CHECK(differ == 0, "hash64_pair equals hash64 under each seed, lengths 0-300 (%d differ)", differ);
	}
	free(h);
	free(o);
	return test_done();
}
