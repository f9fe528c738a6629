/*
 * hmap.h - the hash maps: open addressing with linear probing, a power of
 * two slots, header-only (the hot lookups inline), not thread-safe.
 * Three shapes of one table, by what the caller keys and keeps:
 *
 *   struct hmap    non-zero u64 key -> pointer (the sampler's caches:
 *                  pid -> process, inode -> dso, ...). Key 0 is reserved.
 *   struct u64map  any u64 key -> u64 value, keys and values side by side
 *                  (one cache line per probe: the store's content -> id
 *                  caches and the merge's sums, millions of lookups).
 *   struct hidx    content -> dense index, for tables whose rows live in
 *                  the caller's arrays (interned strings, locations, ...):
 *                  it keeps only the full hash and the index, and asks the
 *                  caller whether the row at an index equals the key.
 */
#ifndef PROFFS_HMAP_H
#define PROFFS_HMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* Moves the entries into ncap slots (a power of two, > len). 0 or -ENOMEM
 * (h unchanged). */
static inline int hmap__resize(struct hmap *h, size_t ncap)
{
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

static inline int hmap__grow(struct hmap *h)
{
	return hmap__resize(h, h->cap ? h->cap * 2 : 64);
}

/* Gives back half the slots of a table under a quarter full (a table
 * sized by a burst would otherwise keep its peak; it grows at three
 * quarters, so a steady size does not flap). Call after deletions;
 * failing to shrink loses nothing. */
static inline void hmap__shrink(struct hmap *h)
{
	if (h->cap > 256 && h->len * 4 < h->cap)
		hmap__resize(h, h->cap / 2);
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

/* Empties h, handing each value to fn(ctx, value) first: the one loop
 * of every owner that frees what its map holds. */
static inline void hmap__drain(struct hmap *h, void (*fn)(void *ctx, void *val), void *ctx)
{
	for (size_t i = 0; i < h->cap; i++)
		if (h->keys[i])
			fn(ctx, h->vals[i]);
	hmap__fini(h);
}

/* hmap__drain's fn for values made by malloc. */
static inline void hmap__free_val(void *ctx, void *val)
{
	(void)ctx;
	free(val);
}

/* Iteration: for (size_t i = 0; i < h.cap; i++) if (h.keys[i]) ... */

/* ---- u64map: u64 -> u64 ---- */

struct u64map_ent {
	uint64_t k, v;
};
struct u64map {
	/* One array of pairs (one cache line per probe); the key
	 * UINT64_MAX marks an empty slot and is kept aside. Zeroed = empty. */
	struct u64map_ent *e;
	size_t cap, n;
	bool has_max;
	uint64_t max_v;
};
#define U64MAP_EMPTY UINT64_MAX

static inline size_t u64map__slot(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k & (cap - 1);
}

/* Moves the keys into a table of ncap slots (a power of two). */
static inline int u64map__rehash(struct u64map *m, size_t ncap)
{
	struct u64map_ent *ne = malloc(ncap * sizeof(*ne));

	if (!ne)
		return -ENOMEM;
	memset(ne, 0xff, ncap * sizeof(*ne));
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (m->e[i].k == U64MAP_EMPTY)
			continue;
		j = u64map__slot(m->e[i].k, ncap);
		while (ne[j].k != U64MAP_EMPTY)
			j = (j + 1) & (ncap - 1);
		ne[j] = m->e[i];
	}
	free(m->e);
	m->e = ne;
	m->cap = ncap;
	return 0;
}

static inline int u64map__grow(struct u64map *m)
{
	return u64map__rehash(m, m->cap ? m->cap * 2 : 64);
}

/* Room for n keys without growing (a caller that knows its count saves
 * the rehashes and the freshly faulted pages of each doubling). Returns 0
 * or -ENOMEM (m unchanged). */
static inline int u64map__reserve(struct u64map *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 64;

	while ((n + 1) * 2 > cap)
		cap *= 2;
	return cap == m->cap ? 0 : u64map__rehash(m, cap);
}

/* Inserts or replaces. Returns 0 or -ENOMEM (m unchanged). */
static inline int u64map__put(struct u64map *m, uint64_t k, uint64_t v)
{
	size_t j;

	if (k == U64MAP_EMPTY) {
		m->n += !m->has_max;
		m->has_max = true;
		m->max_v = v;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && u64map__grow(m))
		return -ENOMEM;
	j = u64map__slot(k, m->cap);
	while (m->e[j].k != U64MAP_EMPTY) {
		if (m->e[j].k == k) {
			m->e[j].v = v;
			return 0;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->e[j].k = k;
	m->e[j].v = v;
	m->n++;
	return 0;
}

/* Hints the CPU to load k's first slot (a batch of lookups to come). */
static inline void u64map__prefetch(const struct u64map *m, uint64_t k)
{
	if (m->cap && k != U64MAP_EMPTY)
		__builtin_prefetch(&m->e[u64map__slot(k, m->cap)]);
}

/* true and *v = k's value, or false. */
static inline bool u64map__get(const struct u64map *m, uint64_t k, uint64_t *v)
{
	size_t j;

	if (k == U64MAP_EMPTY) {
		if (m->has_max)
			*v = m->max_v;
		return m->has_max;
	}
	if (!m->cap)
		return false;
	j = u64map__slot(k, m->cap);
	while (m->e[j].k != U64MAP_EMPTY) {
		if (m->e[j].k == k) {
			*v = m->e[j].v;
			return true;
		}
		j = (j + 1) & (m->cap - 1);
	}
	return false;
}

/* k's value, in place (valid until the next put), or NULL. */
static inline uint64_t *u64map__getp(struct u64map *m, uint64_t k)
{
	size_t j;

	if (k == U64MAP_EMPTY)
		return m->has_max ? &m->max_v : NULL;
	if (!m->cap)
		return NULL;
	j = u64map__slot(k, m->cap);
	while (m->e[j].k != U64MAP_EMPTY) {
		if (m->e[j].k == k)
			return &m->e[j].v;
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

static inline void u64map__free(struct u64map *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* Iteration: if (m.has_max) ...U64MAP_EMPTY, m.max_v...;
 * for (size_t i = 0; i < m.cap; i++) if (m.e[i].k != U64MAP_EMPTY) ... */

/* ---- hidx: content -> index of the caller's row ---- */

struct hidx {
	uint32_t *slots;  /* row index + 1; 0 = empty */
	uint64_t *hashes; /* full hash of each slot's row */
	uint32_t cap, n;  /* zeroed = empty */
};

/* Is the caller's row idx equal to key? ctx is the caller's table. */
typedef bool (*hidx_eq_fn)(const void *ctx, uint32_t idx, const void *key);

static inline int hidx__grow(struct hidx *h)
{
	uint32_t ncap = h->cap ? h->cap * 2 : 64;
	uint32_t *ns = calloc(ncap, sizeof(*ns));
	uint64_t *nh = calloc(ncap, sizeof(*nh));

	if (!ns || !nh) {
		free(ns);
		free(nh);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < h->cap; i++) {
		uint32_t j;

		if (!h->slots[i])
			continue;
		for (j = h->hashes[i] & (ncap - 1); ns[j]; j = (j + 1) & (ncap - 1))
			;
		ns[j] = h->slots[i];
		nh[j] = h->hashes[i];
	}
	free(h->slots);
	free(h->hashes);
	h->slots = ns;
	h->hashes = nh;
	h->cap = ncap;
	return 0;
}

/* The index of the row equal to key (whose hash is hash), or UINT32_MAX.
 * The hash must spread over the low bits (hash64 does). */
static inline uint32_t hidx__find(const struct hidx *h, uint64_t hash, hidx_eq_fn eq,
				  const void *ctx, const void *key)
{
	if (!h->cap)
		return UINT32_MAX;
	for (uint32_t j = hash & (h->cap - 1); h->slots[j]; j = (j + 1) & (h->cap - 1))
		if (h->hashes[j] == hash && eq(ctx, h->slots[j] - 1, key))
			return h->slots[j] - 1;
	return UINT32_MAX;
}

/* Adds row idx (not already there) under hash. 0 or -ENOMEM. */
static inline int hidx__insert(struct hidx *h, uint64_t hash, uint32_t idx)
{
	uint32_t j;

	if ((h->n + 1) * 4 >= h->cap * 3 && hidx__grow(h))
		return -ENOMEM;
	for (j = hash & (h->cap - 1); h->slots[j]; j = (j + 1) & (h->cap - 1))
		;
	h->slots[j] = idx + 1;
	h->hashes[j] = hash;
	h->n++;
	return 0;
}

static inline void hidx__free(struct hidx *h)
{
	free(h->slots);
	free(h->hashes);
	h->slots = NULL;
	h->hashes = NULL;
	h->cap = h->n = 0;
}

#endif
