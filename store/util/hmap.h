/*
 * hmap.h - a small open-addressing hash map from a non-zero 64-bit key to a
 * pointer, for the sampler's caches (pid -> process, inode -> dso, ...).
 * Header-only; not thread-safe. Key 0 is reserved (empty slot).
 */
#ifndef PROFFS_HMAP_H
#define PROFFS_HMAP_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/util/util.h"

struct hmap {
	uint64_t *keys;
	void **vals;
	size_t cap, len; /* cap is 0 or a power of two */
};

/* Keys are pids, inodes, addresses: util's mix spreads them to the low
 * bits the slot index takes. */
static inline uint64_t hmap__mix(uint64_t k)
{
	return hash_mix64(k);
}

static inline void *hmap__get(const struct hmap *h, uint64_t key)
{
	if (!h->cap)
		return NULL;
	for (size_t i = hmap__mix(key) & (h->cap - 1);; i = (i + 1) & (h->cap - 1)) {
		if (h->keys[i] == key)
			return h->vals[i];
		if (!h->keys[i])
			return NULL;
	}
}

static inline int hmap__grow(struct hmap *h)
{
	size_t ncap = h->cap ? h->cap * 2 : 64;
	uint64_t *nk = calloc(ncap, sizeof(*nk));
	void **nv = calloc(ncap, sizeof(*nv));

	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->cap; i++) {
		size_t j;

		if (!h->keys[i])
			continue;
		for (j = hmap__mix(h->keys[i]) & (ncap - 1); nk[j]; j = (j + 1) & (ncap - 1))
			;
		nk[j] = h->keys[i];
		nv[j] = h->vals[i];
	}
	free(h->keys);
	free(h->vals);
	h->keys = nk;
	h->vals = nv;
	h->cap = ncap;
	return 0;
}

/* Inserts or replaces. Returns 0 or -ENOMEM. */
static inline int hmap__put(struct hmap *h, uint64_t key, void *val)
{
	size_t i;

	if ((h->len + 1) * 4 > h->cap * 3 && hmap__grow(h))
		return -ENOMEM;
	for (i = hmap__mix(key) & (h->cap - 1); h->keys[i] && h->keys[i] != key;
	     i = (i + 1) & (h->cap - 1))
		;
	if (!h->keys[i])
		h->len++;
	h->keys[i] = key;
	h->vals[i] = val;
	return 0;
}

/* Removes key (backward-shift deletion keeps probe chains intact). */
static inline void hmap__del(struct hmap *h, uint64_t key)
{
	size_t i, j, k;

	if (!h->cap)
		return;
	for (i = hmap__mix(key) & (h->cap - 1); h->keys[i] != key; i = (i + 1) & (h->cap - 1))
		if (!h->keys[i])
			return;
	h->len--;
	for (j = i;;) {
		h->keys[i] = 0;
		h->vals[i] = NULL;
		for (;;) {
			j = (j + 1) & (h->cap - 1);
			if (!h->keys[j])
				return;
			k = hmap__mix(h->keys[j]) & (h->cap - 1);
			/* move j back to i unless its home lies cyclically in (i, j] */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		h->keys[i] = h->keys[j];
		h->vals[i] = h->vals[j];
		i = j;
	}
}

static inline void hmap__fini(struct hmap *h)
{
	free(h->keys);
	free(h->vals);
	h->keys = NULL;
	h->vals = NULL;
	h->cap = h->len = 0;
}

/* Iteration: for (size_t i = 0; i < h.cap; i++) if (h.keys[i]) ... */

#endif
