/*
 * store_merge_ids.c - the merge's id containers: a store id -> profile id
 * map (a dense array over the snapshot's ids, a hash map beyond) and a
 * set of wanted ids that lists them ascending and distinct.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_merge_int.h"

bool idmap_get(const struct idmap *x, uint32_t id, uint64_t *v)
{
	if (id < x->n) {
		if (!(x->a[id] & IDMAP_SET))
			return false;
		*v = x->a[id] & ~IDMAP_SET;
		return true;
	}
	return u64map__get(&x->m, id, v);
}

int idmap_put(struct idmap *x, uint32_t id, uint64_t v)
{
	if (id < x->n) {
		x->a[id] = v | IDMAP_SET;
		return 0;
	}
	return u64map__put(&x->m, id, v);
}

/* Sized by the last id of table dbi in this snapshot. */
int idmap_init(struct idmap *x, struct store *s, MDB_txn *txn, int dbi)
{
	uint32_t next;
	int rc;

	memset(x, 0, sizeof(*x));
	if ((rc = table__next_id(s, txn, dbi, &next)))
		return rc;
	x->n = next;
	if (x->n > (64u << 20))
		x->n = 64u << 20; /* beyond: the hash map */
	if (x->n && !(x->a = zalloc((size_t)x->n * sizeof(*x->a))))
		return -ENOMEM;
	return 0;
}

void idmap_free(struct idmap *x)
{
	zfree(x->a, (size_t)x->n * sizeof(*x->a));
	u64map__free(&x->m);
	memset(x, 0, sizeof(*x));
}

int idset_init(struct idset *x, uint32_t n)
{
	memset(x, 0, sizeof(*x));
	x->n = n;
	if (n && !(x->w = zalloc(((size_t)n + 63) / 64 * sizeof(*x->w))))
		return -ENOMEM;
	return 0;
}

int idset_add(struct idset *x, uint32_t id)
{
	if (id < x->n) {
		x->w[id / 64] |= 1ULL << (id % 64);
		return 0;
	}
	if (GROW(x->more, &x->capmore, x->nmore + 1))
		return -ENOMEM;
	x->more[x->nmore++] = id;
	return 0;
}

/* The wanted ids into x->ids (ascending, distinct); clears the set. */
int idset_list(struct idset *x)
{
	size_t n = 0;

	for (size_t i = 0; i < ((size_t)x->n + 63) / 64; i++)
		n += (size_t)__builtin_popcountll(x->w[i]);
	if (GROW(x->ids, &x->capids, n + x->nmore + 1))
		return -ENOMEM;
	x->nids = 0;
	for (size_t i = 0; i < ((size_t)x->n + 63) / 64; i++) {
		for (uint64_t b = x->w[i]; b; b &= b - 1)
			x->ids[x->nids++] = (uint32_t)(i * 64 + (size_t)__builtin_ctzll(b));
		x->w[i] = 0;
	}
	if (x->nmore) {
		x->nmore = u32_sort_unique(x->more, x->nmore);
		memcpy(x->ids + x->nids, x->more, x->nmore * sizeof(*x->ids));
		x->nids += x->nmore;
		x->nmore = 0;
	}
	return 0;
}

void idset_free(struct idset *x)
{
	zfree(x->w, ((size_t)x->n + 63) / 64 * sizeof(*x->w));
	free(x->more);
	free(x->ids);
	memset(x, 0, sizeof(*x));
}
