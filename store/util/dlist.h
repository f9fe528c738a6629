/*
 * dlist.h - the intrusive doubly linked list of the caches' LRUs (the
 * render cache, fs/cache/cache.c; the runtimes' objects read,
 * sampler/runtime/rtcache.c): a struct dlist_node inside each element,
 * the list knows its first and last. Header-only, not thread-safe.
 */
#ifndef PROFFS_DLIST_H
#define PROFFS_DLIST_H

#include <stddef.h>

struct dlist_node {
	struct dlist_node *prev, *next; /* toward first, toward last */
};

struct dlist {
	struct dlist_node *first, *last;
};

/* The element whose member n is. */
#define dlist__entry(n, type, member) ((type *)(void *)((char *)(n) - offsetof(type, member)))

/* Takes n (in l) out of l. */
static inline void dlist__unlink(struct dlist *l, struct dlist_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->first = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->last = n->prev;
	n->prev = n->next = NULL;
}

/* Puts n (in no list) first in l. */
static inline void dlist__push(struct dlist *l, struct dlist_node *n)
{
	n->prev = NULL;
	n->next = l->first;
	if (l->first)
		l->first->prev = n;
	else
		l->last = n;
	l->first = n;
}

#endif
