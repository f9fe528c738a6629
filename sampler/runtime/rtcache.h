/*
 * rtcache.h - the one cache of what the runtimes read from other
 * processes' memory: Python code objects (sampler/python/pycode.c), Ruby
 * iseqs and C functions (sampler/ruby/rbcode.c), HotSpot methods,
 * nmethods and stubs (sampler/java/hsname.c), V8 functions, code and
 * scripts (sampler/v8/v8name.c).
 *
 * Each of those keeps only how to read and decode an object; the keeping
 * is here, written once: entries by (pid, object address), one LRU, one
 * byte budget for every runtime, and each runtime's share of it counted
 * apart for its metrics. A runtime's entry is its own struct with a
 * struct rtcache_ent at its start; the cache frees it with the entry's
 * release function.
 *
 * When an entry may go. A runtime hands out pointers into its entries
 * (names, line tables) that its caller reads before its next call, and
 * one call may use several entries (a sample's frames, an nmethod and the
 * methods inlined into it). So eviction never takes an entry used since
 * the last rtcache__mark: a runtime marks where its earlier results stop
 * being read (the start of a call, or of a sample's naming) and trims
 * after it adds. An entry may also be held (rtcache__hold) past its
 * eviction by another entry or a caller (V8's code holds its functions,
 * a function its script): it is freed when the last holder lets go.
 *
 * Not thread-safe: the sampler thread's, like the runtimes' state.
 */
#ifndef PROFFS_RTCACHE_H
#define PROFFS_RTCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store/util/dlist.h"

/* Every runtime's entries together (before one cache, Python and Ruby
 * had 2 MiB each, HotSpot and V8 4 MiB each). */
#define RTCACHE_DEFAULT_BYTES (12u << 20)
/* Owners: enum rt_kind's values (bpf/runtime.h), below this. */
#define RTCACHE_OWNERS 8

struct rtcache_ent {
	struct dlist_node lru; /* while cached; most recently used first */
	/* Frees the whole entry (the struct it starts), called once no one
	 * holds it. */
	void (*release)(struct rtcache_ent *e);
	uint64_t key;	/* the object's address; a runtime may tag bits 56-63 */
	uint64_t epoch; /* the last mark it was used under */
	size_t bytes;	/* counted against the budget while cached */
	pid_t pid;
	int refs;	/* the cache's one while cached, plus rtcache__hold's */
	uint8_t owner;	/* whose share: enum rt_kind */
	bool cached;
};

/* One owner's share. */
struct rtcache_stats {
	uint64_t evicted; /* entries dropped to stay within the budget */
	size_t bytes;	  /* held now */
	size_t entries;
};

struct rtcache;

/* A cache of about max_bytes (0: RTCACHE_DEFAULT_BYTES). The caller owns
 * it: free with rtcache__free. NULL with errno ENOMEM. */
struct rtcache *rtcache__new(size_t max_bytes);

/* Drops every entry (those still held are freed by their last holder)
 * and frees c. NULL is fine. */
void rtcache__free(struct rtcache *c);

/* Begins a use: from here on, the entries found or put are kept by
 * rtcache__trim until the next mark. */
void rtcache__mark(struct rtcache *c);

/* The entry under (pid, key), made the newest and marked used; NULL if
 * none. Whether it is still the object wanted (its stamp) is the
 * runtime's to judge: rtcache__put of a fresh one replaces it. */
struct rtcache_ent *rtcache__find(struct rtcache *c, pid_t pid, uint64_t key);

/* Caches e (owner, pid, key, bytes, release set; refs may count holders
 * already) under (e->pid, e->key), in place of any entry there, and marks
 * it used. Does not trim. 0, or -ENOMEM with e not cached (still the
 * caller's). */
int rtcache__put(struct rtcache *c, struct rtcache_ent *e);

/* Takes e out of c now (a replaced or disowned object); it is freed
 * unless held. */
void rtcache__drop(struct rtcache *c, struct rtcache_ent *e);

/* Drops the least recently used entries while c holds more than its
 * budget, but none used since the last mark. */
void rtcache__trim(struct rtcache *c);

/* Drops every entry of pid (its exec or exit: its addresses name other
 * objects from then on). */
void rtcache__forget(struct rtcache *c, pid_t pid);

/* Holds e (cached or not) past its eviction; rtcache__unhold lets go and
 * frees it when it was the last holder and it is no longer cached. */
void rtcache__hold(struct rtcache_ent *e);
void rtcache__unhold(struct rtcache_ent *e);

/*
 * A runtime's handle on a cache, the first member of its own struct
 * (struct pycodes, rbcodes, hsnames, v8names): the shared cache, or one
 * of its own (tests and tools make a runtime's cache alone).
 */
struct rtview {
	struct rtcache *rc;
	bool own; /* rc made for this view: freed with it */
	uint64_t hits, misses; /* objects found in the cache as sampled, or read */
};

/* A zeroed struct of size bytes starting with a struct rtview on shared,
 * or (shared NULL) on a cache of own_bytes of its own. The caller owns
 * it: free with rtview__free. NULL with errno ENOMEM. */
void *rtview__new(size_t size, struct rtcache *shared, size_t own_bytes);

/* Frees view (NULL is fine), and its cache with every entry when it was
 * its own. */
void rtview__free(void *view);

/*
 * The functions every runtime's view has, for struct T (first member
 * struct rtview v, its counters in struct T##_stats st, which has a
 * struct rtcache_stats cache): written once, here.
 *   T__new(max_bytes)  on a cache of its own (0: DEFAULT bytes): tests
 *   T__new_in(rc)      on the shared cache rc, which must outlive it
 *   T__free(c)         NULL is fine; its own cache goes with it
 *   T__forget(c, pid)  pid's entries (its exec or exit), any runtime's
 *   T__stats(c, s)     its counters, and its share (OWNER) of the cache
 *   T__view_new(rc), T__view_free(c)  the same as __new_in and __free,
 *                      typed for struct rt_ops (rt_int.h)
 * The constructors return NULL with errno ENOMEM.
 */
#define RTVIEW_DECLARE(T)                                               \
	struct T *T##__new(size_t max_bytes);                           \
	struct T *T##__new_in(struct rtcache *rc);                      \
	void T##__free(struct T *c);                                    \
	void T##__forget(struct T *c, pid_t pid);                       \
	void T##__stats(const struct T *c, struct T##_stats *s);        \
	void *T##__view_new(struct rtcache *rc);                        \
	void T##__view_free(void *c)
#define RTVIEW_DEFINE(T, DEFAULT, OWNER)                                \
	struct T *T##__new(size_t max_bytes)                            \
	{                                                               \
		return rtview__new(sizeof(struct T), NULL, max_bytes ? max_bytes : (DEFAULT)); \
	}                                                               \
	struct T *T##__new_in(struct rtcache *rc)                       \
	{                                                               \
		return rtview__new(sizeof(struct T), rc, 0);            \
	}                                                               \
	void T##__free(struct T *c)                                     \
	{                                                               \
		rtview__free(c);                                        \
	}                                                               \
	void T##__forget(struct T *c, pid_t pid)                        \
	{                                                               \
		rtcache__forget(c->v.rc, pid);                          \
	}                                                               \
	void T##__stats(const struct T *c, struct T##_stats *s)         \
	{                                                               \
		*s = c->st;                                             \
		s->hits = c->v.hits;                                    \
		s->misses = c->v.misses;                                \
		rtcache__stats(c->v.rc, (OWNER), &s->cache);            \
	}                                                               \
	void *T##__view_new(struct rtcache *rc)                         \
	{                                                               \
		return T##__new_in(rc);                                 \
	}                                                               \
	void T##__view_free(void *c)                                    \
	{                                                               \
		T##__free(c);                                           \
	}

/* owner's share of c into *s. */
void rtcache__stats(const struct rtcache *c, unsigned owner, struct rtcache_stats *s);

#endif
