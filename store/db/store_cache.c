/*
 * store_cache.c - the process-wide symbol record cache of the read side.
 *
 * Symbol records never change once committed (nor are they deleted), so
 * their bytes can be cached for the life of the process, across queries,
 * threads and writers in other processes. A merge reads its stacks,
 * locations, functions and mappings in bulk (table__read_many, one walk
 * per table), which costs about what this cache saved; what still comes
 * here is the odd record read by id: label strings, type names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

#define YC_MAX_POOL (64u << 20) /* bytes; then start over */
#define YC_MAX_REC ((1u << 24) - 1)

int symcache__read(struct store *s, MDB_txn *txn, int dbi, uint32_t id, uint8_t **buf,
		   size_t *cap, MDB_val *out)
{
	uint64_t key = (uint64_t)dbi << 32 | id, v;
	int rc;

	pthread_rwlock_rdlock(&s->yc_lock);
	if (u64map__get(&s->yc_map, key, &v)) {
		size_t len = v & YC_MAX_REC;

		if (GROW(*buf, cap, len)) {
			pthread_rwlock_unlock(&s->yc_lock);
			return -ENOMEM;
		}
		memcpy(*buf, s->yc_pool + (v >> 24), len);
		pthread_rwlock_unlock(&s->yc_lock);
		*out = (MDB_val){ len, *buf };
		return 0;
	}
	pthread_rwlock_unlock(&s->yc_lock);
	if ((rc = table__read(s, txn, dbi, id, out)))
		return rc;
	if (out->mv_size > YC_MAX_REC)
		return 0;
	pthread_rwlock_wrlock(&s->yc_lock);
	if (u64map__get(&s->yc_map, key, &v))
		goto unlock;
	if (s->yc_n + out->mv_size > YC_MAX_POOL) {
		u64map__free(&s->yc_map);
		s->yc_n = 0;
	}
	if (GROW(s->yc_pool, &s->yc_cap, s->yc_n + out->mv_size))
		goto unlock;
	if (u64map__put(&s->yc_map, key, (uint64_t)s->yc_n << 24 | out->mv_size))
		goto unlock;
	memcpy(s->yc_pool + s->yc_n, out->mv_data, out->mv_size);
	s->yc_n += out->mv_size;
unlock:
	pthread_rwlock_unlock(&s->yc_lock);
	return 0;
}

void symcache__free(struct store *s)
{
	u64map__free(&s->yc_map);
	free(s->yc_pool);
	s->yc_pool = NULL;
	s->yc_n = s->yc_cap = 0;
}

void store__drop_read_caches(struct store *s)
{
	pthread_rwlock_wrlock(&s->yc_lock);
	symcache__free(s);
	pthread_rwlock_unlock(&s->yc_lock);
}

uint64_t store__read_cache_bytes(struct store *s)
{
	uint64_t b;

	pthread_rwlock_rdlock(&s->yc_lock);
	b = s->yc_cap + s->yc_map.cap * sizeof(*s->yc_map.e);
	pthread_rwlock_unlock(&s->yc_lock);
	return b;
}
