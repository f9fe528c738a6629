/*
 * cache.c - the render cache (see cache.h).
 *
 * One mutex guards the table, the LRU list and every reference count; it is
 * never held while rendering, so a slow render of one file does not stall
 * readers of others. Threads that find a render of their key in progress
 * sleep on one condition variable, broadcast whenever a render finishes.
 */
#include "fs/cache/cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/util.h"

/* Per-entry bookkeeping counted against the bound besides the bytes. */
#define ENTRY_OVERHEAD 128

struct cache {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct cache_entry **table;
	size_t nbuckets; /* power of two */
	size_t nentries; /* linked into the table (rendering or ready) */
	struct dlist lru; /* ready entries, most recently used first */
	struct dlist all; /* every live entry, cached or only referenced */
	size_t bytes, max_bytes;
	struct spill *spill; /* NULL: bytes in the heap */
	uint64_t hits, misses, waits, evictions, failures;
};

struct cache *cache__new(size_t max_bytes)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		goto err;
	c->max_bytes = max_bytes ? max_bytes : CACHE_DEFAULT_BYTES;
	c->nbuckets = 1024;
	c->table = calloc(c->nbuckets, sizeof(*c->table));
	if (!c->table)
		goto err_free;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	return c;

err_free:
	free(c);
err:
	errno = ENOMEM;
	return NULL;
}

static void entry__free(struct cache *c, struct cache_entry *e)
{
	dlist__unlink(&c->all, &e->all);
	spill__free(c->spill, &e->ext);
	free((void *)e->data);
	free(e->key);
	free(e);
}

/* A spilled entry holds whole pages of the file (and of page cache). */
static size_t entry__cost(const struct cache_entry *e)
{
	size_t len = e->ext.f ? (size_t)spill__extent_bytes(e->len) : e->len;

	return len + e->keylen + ENTRY_OVERHEAD;
}

static struct cache_entry **bucket(struct cache *c, uint64_t hash)
{
	return &c->table[hash & (c->nbuckets - 1)];
}

/* Doubles the table when it gets crowded; failure to grow is harmless. */
static void table__grow(struct cache *c)
{
	size_t n = c->nbuckets * 2;
	struct cache_entry **t;

	if (c->nentries < c->nbuckets)
		return;
	t = calloc(n, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cache_entry *e = c->table[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			e->hnext = t[e->hash & (n - 1)];
			t[e->hash & (n - 1)] = e;
		}
	}
	free(c->table);
	c->table = t;
	c->nbuckets = n;
}

static void table__unlink(struct cache *c, struct cache_entry *e)
{
	struct cache_entry **p = bucket(c, e->hash);

	for (; *p; p = &(*p)->hnext) {
		if (*p == e) {
			*p = e->hnext;
			c->nentries--;
			return;
		}
	}
}

static void lru__unlink(struct cache *c, struct cache_entry *e)
{
	dlist__unlink(&c->lru, &e->lru);
}

static void lru__push(struct cache *c, struct cache_entry *e)
{
	dlist__push(&c->lru, &e->lru);
}

/* Takes a ready entry out of the cache; it lives on while referenced. */
static void cache__drop(struct cache *c, struct cache_entry *e)
{
	table__unlink(c, e);
	lru__unlink(c, e);
	c->bytes -= entry__cost(e);
	e->cached = 0;
	if (!e->refs)
		entry__free(c, e);
}

static void cache__evict(struct cache *c)
{
	while (c->bytes > c->max_bytes && c->lru.last) {
		cache__drop(c, dlist__entry(c->lru.last, struct cache_entry, lru));
		c->evictions++;
	}
}

static struct cache_entry *table__find(struct cache *c, const char *key,
				       size_t keylen, uint64_t version,
				       uint64_t hash)
{
	struct cache_entry *e = *bucket(c, hash);

	for (; e; e = e->hnext)
		if (e->hash == hash && e->version == version &&
		    e->keylen == keylen && !memcmp(e->key, key, keylen))
			return e;
	return NULL;
}

int cache__get(struct cache *c, const char *key, uint64_t version,
	       cache_render_fn fn, void *ctx, struct cache_entry **out)
{
	size_t keylen = strlen(key);
	uint64_t hash = hash64(key, keylen, version);
	struct buf b = { 0 };
	struct cache_entry *e;
	int err;

	*out = NULL;
	pthread_mutex_lock(&c->lock);
	e = table__find(c, key, keylen, version, hash);
	if (e) {
		e->refs++;
		if (e->state == 0) {
			c->waits++;
			while (e->state == 0)
				pthread_cond_wait(&c->done, &c->lock);
		} else {
			c->hits++;
		}
		if (e->state < 0) {
			err = e->state;
			goto err_put;
		}
		if (e->cached) {
			lru__unlink(c, e);
			lru__push(c, e);
		}
		pthread_mutex_unlock(&c->lock);
		*out = e;
		return 0;
	}

	/* Miss: publish a placeholder so that others wait on this render. */
	c->misses++;
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto err_unlock;
	}
	e->key = strdup(key);
	if (!e->key) {
		free(e);
		err = -ENOMEM;
		goto err_unlock;
	}
	dlist__push(&c->all, &e->all);
	e->keylen = keylen;
	e->version = version;
	e->hash = hash;
	e->refs = 1;
	e->cached = 1;
	e->hnext = *bucket(c, hash);
	*bucket(c, hash) = e;
	c->nentries++;
	table__grow(c);
	pthread_mutex_unlock(&c->lock);

	err = fn(ctx, &b);
	if (!err && b.err)
		err = b.err;
	if (!err)
		e->fp = hash64(b.data ? b.data : "", b.len, 0);
	/* Out of the heap before the lock: the write may take a while. */
	if (!err && c->spill && b.len && !spill__put(c->spill, b.data, b.len, &e->ext)) {
		free(b.data);
		b.data = NULL;
	}

	pthread_mutex_lock(&c->lock);
	if (err) {
		free(b.data);
		c->failures++;
		table__unlink(c, e);
		e->cached = 0;
		e->state = err < 0 ? err : -EIO;
		err = e->state;
		pthread_cond_broadcast(&c->done);
		goto err_put;
	}
	/* A zero-length render still needs a non-NULL pointer for readers. */
	e->data = b.data || e->ext.f ? b.data : calloc(1, 1);
	e->len = b.len;
	e->state = 1;
	if (!e->data && !e->ext.f) {
		e->state = -ENOMEM;
		table__unlink(c, e);
		e->cached = 0;
		err = -ENOMEM;
		pthread_cond_broadcast(&c->done);
		goto err_put;
	}
	if (entry__cost(e) > c->max_bytes) {
		/* Served to its callers, never kept: it would flush the rest. */
		table__unlink(c, e);
		e->cached = 0;
		c->evictions++;
	} else {
		lru__push(c, e);
		c->bytes += entry__cost(e);
		cache__evict(c);
	}
	pthread_cond_broadcast(&c->done);
	pthread_mutex_unlock(&c->lock);
	*out = e;
	return 0;

err_put:
	if (--e->refs == 0 && !e->cached)
		entry__free(c, e);
err_unlock:
	pthread_mutex_unlock(&c->lock);
	return err;
}

void cache__ref(struct cache *c, struct cache_entry *e)
{
	pthread_mutex_lock(&c->lock);
	e->refs++;
	pthread_mutex_unlock(&c->lock);
}

void cache__put(struct cache *c, struct cache_entry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	if (--e->refs == 0 && !e->cached)
		entry__free(c, e);
	pthread_mutex_unlock(&c->lock);
}

int cache__spill_to(struct cache *c, const char *dir)
{
	return c->spill ? -EALREADY : spill__open(&c->spill, dir);
}

int cache_entry__fd(const struct cache_entry *e, uint64_t *off)
{
	*off = e->ext.off;
	return e->data ? -1 : spill__fd(&e->ext);
}

void cache__stats(struct cache *c, struct cache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	st->hits = c->hits;
	st->misses = c->misses;
	st->waits = c->waits;
	st->evictions = c->evictions;
	st->failures = c->failures;
	st->bytes = c->bytes;
	st->entries = c->nentries;
	st->max_bytes = c->max_bytes;
	pthread_mutex_unlock(&c->lock);
	st->file_bytes = spill__bytes(c->spill);
}

void cache__free(struct cache *c)
{
	if (!c)
		return;
	while (c->all.first)
		entry__free(c, dlist__entry(c->all.first, struct cache_entry, all));
	spill__close(c->spill);
	free(c->table);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
