/* test_batch: the open batch's memo (batch.h). A record remembered after
 * its add goes to the same sample again with its own values; a key whose
 * second hash differs, or an unknown key, is a miss; the memo is cleared
 * with the batch, remembers nothing after a take until the next add, and
 * stops remembering at its bound while what it holds still hits.
 * A file's code is stored at its file offsets: two processes that mapped
 * one library at different addresses (ASLR) share its mapping and
 * locations; anonymous code keeps its runtime address. */
#include <stdint.h>
#include <string.h>

#include "sampler/batch/batch.h"
#include "tests/test.h"

#define PERIOD 10101010LL

static const struct frame fa[2] = {
	{ .addr = 0xffffffff81000010ULL, .name = "leaf_a", .kernel = true },
	{ .addr = 0xffffffff81000020ULL, .name = "root", .kernel = true },
};
static const struct frame fb[2] = {
	{ .addr = 0xffffffff81000030ULL, .name = "leaf_b", .kernel = true },
	{ .addr = 0xffffffff81000020ULL, .name = "root", .kernel = true },
};

/* Two processes, one library mapped at two addresses, the same code in
 * each; and a JIT frame in anonymous memory. */
static void file_offsets(void)
{
	char lib[] = "/usr/lib/libx.so", anon[] = "";
	struct vma va = { .start = 0x7f0000001000ULL, .end = 0x7f0000003000ULL, .pgoff = 0x1000,
			  .path = lib, .file = true };
	struct vma vb = { .start = 0x7f5555551000ULL, .end = 0x7f5555553000ULL, .pgoff = 0x1000,
			  .path = lib, .file = true };
	struct vma vj = { .start = 0x7e0000000000ULL, .end = 0x7e0000010000ULL, .path = anon };
	const struct frame f1[2] = { { .addr = va.start + 0x234, .vma = &va, .off = 0x1234 },
				     { .addr = va.start + 0x10, .name = "main", .vma = &va, .off = 0x1010 } };
	const struct frame f2[2] = { { .addr = vb.start + 0x234, .vma = &vb, .off = 0x1234 },
				     { .addr = vb.start + 0x10, .name = "main", .vma = &vb, .off = 0x1010 } };
	const struct frame f3[1] = { { .addr = vj.start + 0x40, .vma = &vj } };
	struct batch *b = batch__new(PERIOD);
	struct profile *p = NULL;
	uint32_t nfile = 0;
	bool jit_at_runtime = false;

	CHECK(b && !batch__add(b, NULL, 100, "app", f1, 2) && !batch__add(b, NULL, 200, "app", f2, 2) &&
		      !batch__add(b, NULL, 200, "app", f3, 1) && !batch__take(b, 0, 10 * 1000000000LL, &p) && p,
	      "three stacks of two processes");
	if (!p) {
		batch__free(b);
		return;
	}
	for (uint32_t i = 0; i < p->nmappings; i++)
		nfile += !strcmp(p->strs[p->mappings[i].file], lib);
	CHECK(nfile == 1, "the library is one mapping in both processes (%u)", nfile);
	CHECK(p->nsamples == 3 && p->samples[0].nlocs == 2 && p->samples[1].nlocs == 2 &&
		      p->samples[0].locs[0] == p->samples[1].locs[0] &&
		      p->samples[0].locs[1] == p->samples[1].locs[1],
	      "their samples share both locations");
	if (p->nsamples == 3 && p->samples[0].nlocs == 2) {
		const struct prof_location *l = &p->locations[p->samples[0].locs[0] - 1];
		const struct prof_mapping *m = &p->mappings[l->mapping_id - 1];

		CHECK(l->address == 0x1234 && l->address - m->start + m->offset == 0x1234 &&
			      m->start == 0x1000 && m->limit == 0x3000 && m->offset == 0x1000,
		      "the frame at its file offset: %#llx in [%#llx, %#llx) offset %#llx",
		      (unsigned long long)l->address, (unsigned long long)m->start,
		      (unsigned long long)m->limit, (unsigned long long)m->offset);
	}
	for (uint32_t i = 0; i < p->nlocations; i++)
		jit_at_runtime |= p->locations[i].address == vj.start + 0x40;
	CHECK(jit_at_runtime, "anonymous code keeps its runtime address");
	profile__free(p);
	batch__free(b);
}

int main(void)
{
	const uint64_t ka[2] = { 0x1234567890abcdefULL, 0x1111 }, kb[2] = { 0x2234567890abcdefULL, 0x2222 };
	const uint64_t kc[2] = { 0x1234567890abcdefULL, 0x3333 }; /* ka's first hash, another check */
	const int64_t one[2] = { 1, PERIOD }, two[2] = { 2, 2 * PERIOD };
	struct batch *b = batch__new(PERIOD);
	struct profile *p = NULL;
	uint32_t tag = 0;
	int hits = 0;

	CHECK(b != NULL, "new batch");
	if (!b)
		return test_done();
	CHECK(batch__period(b) == PERIOD, "period");
	CHECK(!batch__memo_hit(b, ka, one, &tag), "empty memo: a miss");
	CHECK(!batch__add(b, NULL, 42, "app", fa, 2), "add stack a");
	batch__memo_put(b, ka, 0x305);
	CHECK(batch__memo_hit(b, ka, one, &tag) && tag == 0x305, "a again: a hit with its tag (%#x)", tag);
	CHECK(!batch__memo_hit(b, kc, one, &tag), "same first hash, other check: a miss");
	CHECK(!batch__memo_hit(b, kb, one, &tag), "unknown key: a miss");
	CHECK(!batch__add(b, NULL, 42, "app", fb, 2), "add stack b");
	batch__memo_put(b, kb, 7);
	CHECK(batch__memo_hit(b, kb, two, &tag) && tag == 7, "b: a hit, values of its own");
	CHECK(batch__memo_hit(b, ka, one, &tag) && tag == 0x305, "a still hits");
	CHECK(batch__count(b) == 5, "five samples counted (%llu)", (unsigned long long)batch__count(b));
	CHECK(!batch__take(b, 0, 10 * 1000000000LL, &p) && p, "take");
	if (p) {
		int64_t va = -1, vb = -1;

		for (uint32_t i = 0; i < p->nsamples; i++) {
			const char *leaf = p->strs[p->functions[p->locations[p->samples[i].locs[0] - 1].lines[0].function_id - 1].name];

			if (!strcmp(leaf, "leaf_a"))
				va = p->samples[i].values[1];
			else if (!strcmp(leaf, "leaf_b"))
				vb = p->samples[i].values[1];
		}
		CHECK(p->nsamples == 2 && va == 3 * PERIOD && vb == 3 * PERIOD,
		      "a's sample 3 periods, b's 3 (one add, a hit of 2): %lld, %lld", (long long)va,
		      (long long)vb);
		profile__free(p);
	}
	CHECK(!batch__memo_hit(b, ka, one, &tag), "after the take: a miss");
	batch__memo_put(b, ka, 1);
	CHECK(!batch__memo_hit(b, ka, one, &tag), "no add since the take: nothing remembered");
	CHECK(!batch__add(b, NULL, 42, "app", fa, 2), "add a to the new batch");
	for (uint64_t i = 1; i <= 20000; i++)
		batch__memo_put(b, (const uint64_t[2]){ i * 0x9e3779b97f4a7c15ULL, i }, (uint32_t)i);
	for (uint64_t i = 1; i <= 20000; i++)
		hits += batch__memo_hit(b, (const uint64_t[2]){ i * 0x9e3779b97f4a7c15ULL, i }, one, &tag) &&
			tag == (uint32_t)i;
	CHECK(hits == 16384, "20,000 keys put: the first 16,384 remembered (%d hits)", hits);
	batch__free(b);
	file_offsets();
	return test_done();
}
