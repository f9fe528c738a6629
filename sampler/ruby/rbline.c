/*
 * rbline.c - Ruby's succinct index lookup (see rbline.h).
 *
 * The index (iseq.c, struct succ_index_table): 6 words of "immediate"
 * ranks, 7 bits for each of the first 54 positions (9 per word), then
 * for every further 512 positions an 80-byte block: its rank (u32, then
 * padding), the ranks of its 8 sub-blocks of 64 positions (9 bits each,
 * the first implied 0) and their 8 bit maps. A position's rank is the
 * number of entries that start at or before it. Below 54 positions only
 * the words needed are allocated ((size + 8) / 9).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/ruby/rbline.h"

#define IMM 54
#define IMM_WORDS (IMM / 9)
#define BLOCK 80

size_t rbline__succ_bytes(uint32_t iseq_size)
{
	if (iseq_size < IMM)
		return (size_t)(iseq_size + 8) / 9 * 8;
	return IMM_WORDS * 8 + (size_t)(iseq_size - IMM + 511) / 512 * BLOCK;
}

struct rbline *rbline__new(const uint8_t *entries, uint32_t n, size_t entry_size, size_t line_off,
			   const uint8_t *succ, size_t succ_len, uint32_t iseq_size)
{
	struct rbline *t;
	size_t need = n > 1 ? rbline__succ_bytes(iseq_size) : 0;

	if (n > RBLINE_MAX_ENTRIES || iseq_size > RBLINE_MAX_ISEQ) {
		errno = EFBIG;
		return NULL;
	}
	if ((n && !entries) || line_off + 4 > entry_size || (need && (!succ || succ_len != need)) ||
	    n > iseq_size) {
		errno = EINVAL;
		return NULL;
	}
	t = malloc(sizeof(*t) + (size_t)n * 4 + need);
	if (!t)
		return NULL;
	t->iseq_size = iseq_size;
	t->n = n;
	t->succ_len = need;
	t->succ = (const uint8_t *)&t->line[n];
	for (uint32_t i = 0; i < n; i++)
		memcpy(&t->line[i], entries + i * entry_size + line_off, 4);
	if (need)
		memcpy((uint8_t *)&t->line[n], succ, need);
	return t;
}

void rbline__free(struct rbline *t)
{
	free(t);
}

static uint64_t u64at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

int rbline__at(const struct rbline *t, uint32_t pos, int32_t *line)
{
	uint64_t rank;

	if (!t->n)
		return -ENOENT;
	if (pos >= t->iseq_size)
		return -ERANGE;
	if (t->n == 1) {
		*line = t->line[0];
		return 0;
	}
	if (pos < IMM) {
		rank = u64at(t->succ + pos / 9 * 8) >> (7 * (pos % 9)) & 0x7f;
	} else {
		uint32_t x = pos - IMM, bit = x % 512, sub = bit / 64;
		const uint8_t *b = t->succ + IMM_WORDS * 8 + (size_t)(x / 512) * BLOCK;
		uint32_t r;

		/* pos < iseq_size keeps b's 80 bytes within succ_len. */
		memcpy(&r, b, 4);
		rank = r;
		if (sub)
			rank += u64at(b + 8) >> (9 * (sub - 1)) & 0x1ff;
		rank += (uint64_t)__builtin_popcountll(u64at(b + 16 + 8 * sub) << (63 - bit % 64));
	}
	if (!rank || rank > t->n)
		return -EBADMSG;
	*line = t->line[rank - 1];
	return 0;
}
