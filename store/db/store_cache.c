/*
 * store_cache.c - the process-wide stack cache of the read side.
 *
 * Stacks never change once committed (nor are they deleted), so a stack's
 * location ids (leaf first) can be cached for the life of the process,
 * across queries, threads and writers in other processes: a merge of an
 * hour touches thousands of stacks, and decoding each from LMDB every time
 * cost a good share of the merge. The records of strings, functions,
 * mappings and locations are immutable too, and a merge of a busy minute
 * resolves tens of thousands of them: their bytes are cached the same way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

#define SC_MAX_POOL (16u << 20) /* location ids (64 MiB); then start over */

int stackcache__get(struct store *s, uint32_t stack, uint32_t **buf, size_t *cap,
		    uint32_t *n)
{
	uint64_t v;
	int found = 0;

	pthread_rwlock_rdlock(&s->sc_lock);
	if (u64map__get(&s->sc_map, stack, &v)) {
		uint32_t len = v & 0xffff;

		if (GROW(*buf, cap, len)) {
			pthread_rwlock_unlock(&s->sc_lock);
			return -ENOMEM;
		}
		memcpy(*buf, s->sc_pool + (v >> 16), len * sizeof(uint32_t));
		*n = len;
		found = 1;
	}
	pthread_rwlock_unlock(&s->sc_lock);
	return found;
}

void stackcache__put(struct store *s, uint32_t stack, const uint32_t *path, uint32_t n)
{
	uint64_t v;

	if (n > 0xffff)
		return;
	pthread_rwlock_wrlock(&s->sc_lock);
	if (u64map__get(&s->sc_map, stack, &v))
		goto out; /* another thread was faster */
	if (s->sc_n + n > SC_MAX_POOL) {
		u64map__free(&s->sc_map);
		s->sc_n = 0;
	}
	if (GROW(s->sc_pool, &s->sc_cap, s->sc_n + n))
		goto out;
	if (u64map__put(&s->sc_map, stack, (uint64_t)s->sc_n << 16 | n))
		goto out;
	memcpy(s->sc_pool + s->sc_n, path, n * sizeof(uint32_t));
	s->sc_n += n;
out:
	pthread_rwlock_unlock(&s->sc_lock);
}

void stackcache__free(struct store *s)
{
	u64map__free(&s->sc_map);
	free(s->sc_pool);
	s->sc_pool = NULL;
	s->sc_n = s->sc_cap = 0;
}

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
	pthread_rwlock_wrlock(&s->sc_lock);
	stackcache__free(s);
	pthread_rwlock_unlock(&s->sc_lock);
	pthread_rwlock_wrlock(&s->yc_lock);
	symcache__free(s);
	pthread_rwlock_unlock(&s->yc_lock);
}

uint64_t store__read_cache_bytes(struct store *s)
{
	uint64_t b;

	pthread_rwlock_rdlock(&s->sc_lock);
	b = s->sc_cap * sizeof(*s->sc_pool) + s->sc_map.cap * sizeof(*s->sc_map.e);
	pthread_rwlock_unlock(&s->sc_lock);
	pthread_rwlock_rdlock(&s->yc_lock);
	b += s->yc_cap + s->yc_map.cap * sizeof(*s->yc_map.e);
	pthread_rwlock_unlock(&s->yc_lock);
	return b;
}
