/*
 * cache.h - the render cache: rendered file bytes keyed by (canonical
 * query, data version), bounded in bytes, least recently used out first.
 *
 * Shared by every FUSE thread. A render in progress for a key is never
 * started a second time: later callers for the same key wait for the first
 * one and share its bytes. Entries are reference counted so that an open
 * file keeps its bytes after the cache has evicted them (reads are served
 * from exactly the bytes that were measured for st_size).
 */
#ifndef PROFFS_CACHE_H
#define PROFFS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "fs/cache/spill.h"
#include "store/util/buf.h"
#include "store/util/dlist.h"

/* SPEC §1: 32M. The kernel keeps served bytes in its page cache too (the
 * mount lets it), so ours only needs the files being read now. */
#define CACHE_DEFAULT_BYTES (32ULL << 20)

struct cache;

/* Rendered bytes. data/len never change once handed out; they stay valid
 * until the holder's reference is dropped with cache__put(). data is NULL
 * when the bytes are in the cache's spill file (cache_entry__fd). */
struct cache_entry {
	const char *data;
	size_t len;
	uint64_t fp; /* hash64 of the bytes: tells renders of one key apart */
	/* private to cache.c below */
	char *key;
	size_t keylen;
	uint64_t version;
	uint64_t hash;
	int refs;
	int state; /* 0 rendering, 1 ready, <0 failed with -errno */
	int cached; /* linked into the table and LRU */
	struct spill_ext ext; /* the bytes, when data is NULL */
	struct cache_entry *hnext;
	struct dlist_node lru; /* in the LRU, most recent first */
	struct dlist_node all; /* in every live entry's list */
};

/* Produces the bytes for a key into out (out->data is malloc'd and handed
 * over to the cache on success). Returns 0 or -errno. */
typedef int (*cache_render_fn)(void *ctx, struct buf *out);

struct cache_stats {
	uint64_t hits, misses, waits, evictions, failures;
	uint64_t bytes, entries, max_bytes;
	uint64_t file_bytes; /* of those, in the spill file (page-rounded) */
};

/* max_bytes == 0 means CACHE_DEFAULT_BYTES. Returns NULL with errno set. */
struct cache *cache__new(size_t max_bytes);
/*
 * From now on, keeps rendered bytes in an unlinked file in dir (see
 * spill.h) instead of the heap; a write that fails (a full disk) keeps
 * that entry's bytes in the heap. Call before the first cache__get.
 * Returns 0 or -errno: then the cache stays in the heap.
 */
int cache__spill_to(struct cache *c, const char *dir);
/* Where e's bytes are: -1 when in e->data, else a descriptor to pread
 * them from at *off (valid while the reference on e is held). */
int cache_entry__fd(const struct cache_entry *e, uint64_t *off);
/* Frees the cache and every entry, even ones still referenced (files the
 * kernel never released because the connection ended first): no
 * reference may be used afterwards. */
void cache__free(struct cache *c);

/*
 * Returns in *out a referenced entry for (key, version), rendering it with
 * fn(ctx, ...) when absent. Concurrent callers for the same key wait for
 * the render in progress instead of starting their own. A failed render is
 * not cached; its error is returned to every waiter. An entry bigger than
 * the whole cache is returned but not kept. Returns 0 or -errno.
 */
int cache__get(struct cache *c, const char *key, uint64_t version,
	       cache_render_fn fn, void *ctx, struct cache_entry **out);
/* Takes one more reference on an entry the caller already holds one on. */
void cache__ref(struct cache *c, struct cache_entry *e);
/* Drops a reference taken by cache__get() or cache__ref(). NULL is a no-op. */
void cache__put(struct cache *c, struct cache_entry *e);

void cache__stats(struct cache *c, struct cache_stats *st);

#endif
