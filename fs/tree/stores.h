/*
 * stores.h - the stores one tree serves, queried as one (private to the
 * tree). A tree over one store passes every call straight through. Over
 * several, each query runs in every store and the answers are united:
 * listings union, merges sum, and series of a store that carry no `node`
 * label read as node=<that store's name>, so `node=` picks hosts.
 * Series ids never leave a store: merging is of profiles, not of ids.
 */
#ifndef PROFFS_TREE_STORES_H
#define PROFFS_TREE_STORES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/db/store.h"

struct tstore {
	struct store *s;  /* borrowed */
	char *node;       /* NULL: no node labelling (a single store) */
	pthread_mutex_t lock; /* guards the cache below */
	uint64_t nl_version;  /* store version the cache is of */
	char **nl_types;      /* types known, and whether their series */
	bool *nl_has;         /* carry node labels of their own */
	size_t nl_n;
};

struct tstores {
	struct tstore *v;
	size_t n;
};

/* s[i] borrowed (must outlive ts); nodes[i] copied, NULL = no labelling.
 * Returns 0 or -errno. */
int stores__init(struct tstores *ts, struct store *const *s, const char *const *nodes,
		 size_t n);
void stores__fini(struct tstores *ts);

/* As the store.h functions of the same names, over every store. A type a
 * store lacks is empty there; -ENOENT only when no store has it. */
int stores__types(struct tstores *ts, char ***names, size_t *n);
int stores__list(struct tstores *ts, const struct store_sel *sel, char ***pairs,
		 size_t *npairs, int64_t **minutes, size_t *nminutes);
int stores__latest_minute(struct tstores *ts, const struct store_sel *sel, int64_t *minute);
int stores__merge(struct tstores *ts, const struct store_sel *sel, int64_t from, int64_t to,
		  struct profile **out);
/* Changes whenever any store's data changes. */
uint64_t stores__version(struct tstores *ts);
/* Newest last_commit of the stores, 0 = none or unknown. */
int64_t stores__last_commit(struct tstores *ts);

#endif
