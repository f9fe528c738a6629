/*
 * store_cache.c - the process-wide stack cache of the read side.
 *
 * Stacks never change once committed (nor are they deleted), so a stack's
 * location ids (leaf first) can be cached for the life of the process,
 * across queries, threads and writers in other processes: a merge of an
 * hour touches thousands of stacks, and decoding each from LMDB every time
 * cost a good share of the merge.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define SC_MAX_POOL (16u << 20) /* location ids (64 MiB); then start over */

int stackcache__get(struct store *s, uint32_t stack, uint32_t **buf, size_t *cap,
		    uint32_t *n)
{
	uint64_t v;
	int found = 0;

	pthread_rwlock_rdlock(&s->sc_lock);
	if (u64map__get(&s->sc_map, stack, &v)) {
		uint32_t len = v & 0xffff;

		if (len > *cap) {
			uint32_t *nb = realloc(*buf, len * sizeof(*nb));

			if (!nb) {
				pthread_rwlock_unlock(&s->sc_lock);
				return -ENOMEM;
			}
			*buf = nb;
			*cap = len;
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
	if (s->sc_n + n > s->sc_cap) {
		size_t nc = s->sc_cap ? s->sc_cap * 2 : 65536;
		uint32_t *np;

		while (nc < s->sc_n + n)
			nc *= 2;
		np = realloc(s->sc_pool, nc * sizeof(*np));
		if (!np)
			goto out;
		s->sc_pool = np;
		s->sc_cap = nc;
	}
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
