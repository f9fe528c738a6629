/*
 * store_merge_int.h - the merge's inside, shared by store_merge.c (sums
 * and the profile's samples), store_merge_resolve.c (what the sums name,
 * read in phases) and store_merge_ids.c (the id maps and sets both use).
 * Internal to store/db/.
 */
#ifndef PROFFS_STORE_MERGE_INT_H
#define PROFFS_STORE_MERGE_INT_H

#include "store/db/store_int.h"

/* Store id -> value for one merge: a dense array over the ids the
 * snapshot holds (ids are allocated sequentially; the pages of a large,
 * lazily zeroed array cost only where touched), a hash map beyond. */
struct idmap {
	uint64_t *a; /* bit 63 set = present */
	uint32_t n;
	struct u64map m;
};

#define IDMAP_SET (1ULL << 63)

struct idset {
	uint64_t *w;    /* bit i: id i is wanted */
	uint32_t n;     /* ids the bitmap covers */
	uint32_t *more; /* ids >= n (a table past 64M ids), unsorted */
	size_t nmore, capmore;
	uint32_t *ids;  /* idset_list's answer */
	size_t nids, capids;
};

struct mctx {
	struct store *s;
	MDB_txn *txn;
	struct profile *p;
	const struct series_set *ss;
	struct idmap str, func, map, loc; /* store id -> profile id */
	struct idmap stk; /* stack -> (offset in spool and locpool << 16 | length) */
	uint32_t *spool;  /* stacks' store location ids, leaf first */
	size_t nspool, capspool;
	uint64_t *locpool; /* the same as profile location ids (memory of p) */
	struct idset need, mneed, fneed, sneed; /* m_resolve's phases */
	struct u64map ser;   /* series -> label set index */
	struct hidx lsidx;   /* (comm, pid, state) sids -> label set index */
	uint32_t (*lskey)[3]; /* per label set: its (comm, pid, state) sids */
	struct prof_label **plab; /* per label set: its labels in p (m_labels) */
	uint8_t *nlab;
	size_t nls, caplskey;
	uint32_t *sumix; /* the sums' index (sums_find): entry + 1, 0 = empty */
	size_t sumcap;
	uint64_t *akey;
	int64_t *aval;
	size_t nagg, capagg;
	uint32_t comm_key, pid_key, state_key; /* store sids (0: not in this store) */
	void *zd;                   /* ZSTD_DCtx for this call */
	struct snap_acc *snap;      /* heap, goroutine: means (store_snap.c) */
};

/* Entry i of the sums holds a value other than 0? */
static inline bool m_nonzero(const struct mctx *m, size_t i)
{
	for (uint32_t j = 0; j < m->p->nvalues; j++)
		if (m->aval[i * m->p->nvalues + j])
			return true;
	return false;
}

/* x holds id -> v? (store ids of one snapshot) */
bool idmap_get(const struct idmap *x, uint32_t id, uint64_t *v);
/* Sets id -> v; 0 or -ENOMEM. */
int idmap_put(struct idmap *x, uint32_t id, uint64_t v);
/* An empty map sized for the ids table dbi of s holds in txn; 0 or -errno. */
int idmap_init(struct idmap *x, struct store *s, MDB_txn *txn, int dbi);
void idmap_free(struct idmap *x);

/* An empty set dense over ids below n; 0 or -ENOMEM. */
int idset_init(struct idset *x, uint32_t n);
int idset_add(struct idset *x, uint32_t id);
/* The wanted ids into x->ids (ascending, distinct); clears the set. */
int idset_list(struct idset *x);
void idset_free(struct idset *x);

/* Resolves what m's sums name into m->p: stacks, locations, mappings,
 * functions, strings and label sets (store_merge_resolve.c). 0 or -errno;
 * on error m->p holds part of them, freed with it. */
int m_resolve(struct mctx *m);

#endif
