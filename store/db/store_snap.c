/*
 * store_snap.c - merging snapshot types (heap, goroutine; SPEC §2 Types):
 * a range shows the mean of the snapshots per series, summed over series.
 * Each block a series appears in is one snapshot of it (one scrape or
 * import is one append, one block), so values are summed per (series,
 * stack), the series' blocks are counted, and snap__fold hands the
 * quotients to the ordinary merge. Hourly rollups are sums that have lost
 * the counts: a snapshot merge reads raw blocks only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

struct snap_acc {
	uint64_t blkno;      /* blocks begun so far */
	struct u64map last;  /* series -> blkno of its last block */
	struct u64map n;     /* series -> snapshots seen */
	struct u64map idx;   /* (series << 32 | stack) -> entry */
	uint64_t *key;
	int64_t *val;
	size_t nent, cap;
	uint32_t nv;
};

bool snap__type(const char *type)
{
	return !strcmp(type, "heap") || !strcmp(type, "goroutine");
}

struct snap_acc *snap__new(uint32_t nvalues)
{
	struct snap_acc *a = calloc(1, sizeof(*a));

	if (!a)
		errno = ENOMEM;
	else
		a->nv = nvalues;
	return a;
}

void snap__block(struct snap_acc *a)
{
	a->blkno++;
}

int snap__add(struct snap_acc *a, uint32_t series, uint32_t stack, const int64_t *v)
{
	uint64_t k = (uint64_t)series << 32 | stack, i, last, n;
	uint32_t nv = a->nv;
	int rc;

	if (!u64map__get(&a->last, series, &last) || last != a->blkno) {
		if (!u64map__get(&a->n, series, &n))
			n = 0;
		if ((rc = u64map__put(&a->last, series, a->blkno)) ||
		    (rc = u64map__put(&a->n, series, n + 1)))
			return rc;
	}
	if (!u64map__get(&a->idx, k, &i)) {
		if (a->nent == a->cap) {
			size_t nc = a->cap ? a->cap * 2 : 1024;
			uint64_t *nk = realloc(a->key, nc * sizeof(*nk));
			int64_t *nvv;

			if (!nk)
				return -ENOMEM;
			a->key = nk;
			nvv = realloc(a->val, nc * nv * sizeof(*nvv));
			if (!nvv)
				return -ENOMEM;
			a->val = nvv;
			a->cap = nc;
		}
		i = a->nent++;
		a->key[i] = k;
		memset(a->val + i * nv, 0, nv * sizeof(int64_t));
		if ((rc = u64map__put(&a->idx, k, i)))
			return rc;
	}
	for (uint32_t j = 0; j < nv; j++)
		a->val[i * nv + j] += v[j];
	return 0;
}

int snap__fold(struct snap_acc *a, snap_emit_fn emit, void *ctx)
{
	int64_t mean[PROF_MAX_VALUES];
	int rc;

	for (size_t i = 0; i < a->nent; i++) {
		uint32_t series = a->key[i] >> 32;
		uint64_t n = 1;

		u64map__get(&a->n, series, &n);
		for (uint32_t j = 0; j < a->nv; j++) {
			int64_t x = a->val[i * a->nv + j], h = (int64_t)(n / 2);

			/* rounded to nearest, halves away from zero */
			mean[j] = (x >= 0 ? x + h : x - h) / (int64_t)n;
		}
		if ((rc = emit(ctx, series, (uint32_t)a->key[i], mean, a->nv)))
			return rc;
	}
	return 0;
}

void snap__free(struct snap_acc *a)
{
	if (!a)
		return;
	u64map__free(&a->last);
	u64map__free(&a->n);
	u64map__free(&a->idx);
	free(a->key);
	free(a->val);
	free(a);
}
