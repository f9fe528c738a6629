/*
 * rtcache.c - the runtimes' one cache of objects read (rtcache.h).
 *
 * A map of processes, each a map of its entries by key, so that a
 * process's exit drops its entries without a walk of the whole cache; one
 * doubly linked LRU through every entry (store/util/dlist.h), newest
 * first.
 */
#include <errno.h>
#include <stdlib.h>

#include "sampler/runtime/rtcache.h"
#include "store/util/hmap.h"

struct rtproc_ents {
	pid_t pid;
	struct hmap ents; /* key -> struct rtcache_ent */
};

struct rtcache {
	size_t max_bytes, bytes;
	uint64_t epoch;
	struct hmap procs; /* pid -> struct rtproc_ents */
	struct dlist lru; /* every entry, most recently used first */
	struct rtcache_stats st[RTCACHE_OWNERS];
};

static void lru_push(struct rtcache *c, struct rtcache_ent *e)
{
	dlist__push(&c->lru, &e->lru);
	e->epoch = c->epoch;
}

static struct rtcache_stats *share(struct rtcache *c, const struct rtcache_ent *e)
{
	return &c->st[e->owner < RTCACHE_OWNERS ? e->owner : 0];
}

/* Out of the LRU and the counts, and the cache's hold let go; the caller
 * has taken it out of its process's map. */
static void uncache(struct rtcache *c, struct rtcache_ent *e)
{
	struct rtcache_stats *s = share(c, e);

	dlist__unlink(&c->lru, &e->lru);
	c->bytes -= e->bytes;
	s->bytes -= e->bytes;
	s->entries--;
	e->cached = false;
	rtcache__unhold(e);
}

static void uncache_val(void *c, void *e)
{
	uncache(c, e);
}

/* hmap__drain's fn for c's processes: p and its entries. */
static void proc_free(void *c, void *p)
{
	hmap__drain(&((struct rtproc_ents *)p)->ents, uncache_val, c);
	free(p);
}

struct rtcache *rtcache__new(size_t max_bytes)
{
	struct rtcache *c = calloc(1, sizeof(*c));

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->max_bytes = max_bytes ? max_bytes : RTCACHE_DEFAULT_BYTES;
	c->epoch = 1;
	return c;
}

void rtcache__free(struct rtcache *c)
{
	if (!c)
		return;
	hmap__drain(&c->procs, proc_free, c);
	free(c);
}

void rtcache__mark(struct rtcache *c)
{
	c->epoch++;
}

struct rtcache_ent *rtcache__find(struct rtcache *c, pid_t pid, uint64_t key)
{
	struct rtproc_ents *p = pid > 0 ? hmap__get(&c->procs, (uint64_t)pid) : NULL;
	struct rtcache_ent *e = p && key ? hmap__get(&p->ents, key) : NULL;

	if (e) {
		dlist__unlink(&c->lru, &e->lru);
		lru_push(c, e);
	}
	return e;
}

int rtcache__put(struct rtcache *c, struct rtcache_ent *e)
{
	struct rtproc_ents *p, *made = NULL;
	struct rtcache_ent *old;
	struct rtcache_stats *s = share(c, e);
	int err;

	if (e->pid <= 0 || !e->key)
		return -EINVAL;
	p = hmap__get(&c->procs, (uint64_t)e->pid);
	if (!p) {
		made = p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		p->pid = e->pid;
		err = hmap__put(&c->procs, (uint64_t)p->pid, p);
		if (err) {
			free(made);
			return err;
		}
	}
	old = hmap__get(&p->ents, e->key);
	err = hmap__put(&p->ents, e->key, e);
	if (err) {
		if (made) {
			hmap__del(&c->procs, (uint64_t)made->pid);
			free(made);
		}
		return err;
	}
	if (old && old != e)
		uncache(c, old);
	e->cached = true;
	e->refs++;
	lru_push(c, e);
	c->bytes += e->bytes;
	s->bytes += e->bytes;
	s->entries++;
	return 0;
}

void rtcache__drop(struct rtcache *c, struct rtcache_ent *e)
{
	struct rtproc_ents *p;

	if (!e->cached)
		return;
	p = hmap__get(&c->procs, (uint64_t)e->pid);
	if (p) {
		hmap__del(&p->ents, e->key);
		if (!p->ents.len) {
			hmap__del(&c->procs, (uint64_t)p->pid);
			hmap__fini(&p->ents);
			free(p);
		}
	}
	uncache(c, e);
}

void rtcache__trim(struct rtcache *c)
{
	struct rtcache_ent *old;

	while (c->bytes > c->max_bytes && c->lru.last &&
	       (old = dlist__entry(c->lru.last, struct rtcache_ent, lru))->epoch != c->epoch) {
		share(c, old)->evicted++;
		rtcache__drop(c, old);
	}
}

void rtcache__forget(struct rtcache *c, pid_t pid)
{
	struct rtproc_ents *p = pid > 0 ? hmap__get(&c->procs, (uint64_t)pid) : NULL;

	if (p) {
		hmap__del(&c->procs, (uint64_t)pid);
		proc_free(c, p);
	}
}

void rtcache__hold(struct rtcache_ent *e)
{
	e->refs++;
}

void rtcache__unhold(struct rtcache_ent *e)
{
	if (--e->refs <= 0 && !e->cached)
		e->release(e);
}

void *rtview__new(size_t size, struct rtcache *shared, size_t own_bytes)
{
	struct rtview *v = calloc(1, size);

	if (!v) {
		errno = ENOMEM;
		return NULL;
	}
	v->rc = shared;
	if (!shared) {
		v->own = true;
		v->rc = rtcache__new(own_bytes);
		if (!v->rc) {
			free(v);
			return NULL;
		}
	}
	return v;
}

void rtview__free(void *view)
{
	struct rtview *v = view;

	if (!v)
		return;
	if (v->own)
		rtcache__free(v->rc);
	free(v);
}

void rtcache__stats(const struct rtcache *c, unsigned owner, struct rtcache_stats *s)
{
	*s = c->st[owner < RTCACHE_OWNERS ? owner : 0];
}
