/*
 * store_writer.h - the writer's side of one append (store_writer_cache.c),
 * shared with the batch write (store_append.c). Private to store/db.
 *
 * A struct wctx lives for one write transaction: it maps the indexes of
 * one profile to store ids, through the store's content -> id caches
 * (s->pc_*) and the entries this transaction added (tx*), which join the
 * store's caches only once the transaction commits.
 */
#ifndef PROFFS_STORE_WRITER_H
#define PROFFS_STORE_WRITER_H

#include "store/db/store_int.h"

#define NO_ID UINT32_MAX

struct ser_cache_ent {
	uint32_t *pairs; /* profile (key, str) indexes */
	uint32_t n;
	uint32_t series;
};

struct wctx {
	struct store *s;
	MDB_txn *txn;
	const struct profile *p;
	const struct store_label *extra;
	size_t nextra;
	uint32_t type;
	uint64_t start;
	uint32_t next[DB__N]; /* next free id per table, 0 = not loaded */
	uint64_t series_next;
	uint32_t *strs, *maps, *funcs, *locs; /* profile index -> store id */
	uint64_t *strh;                       /* profile string hashes, 0 = not yet */
	uint64_t *maph, *funch;               /* mapping / function content hashes, likewise */
	uint64_t *locfp;                      /* location fingerprints, likewise */
	uint8_t *fresh; /* per location, known_locs' pc_get: 2 = first use this generation */
	struct u64map ser_hash;               /* label hash -> ser_cache index */
	struct ser_cache_ent *sc;
	size_t nsc, capsc;
	struct u64map txsym[DB__N]; /* resolved in this txn, for s->pc_sym */
	struct u64map txseries;     /* likewise for s->pc_series */
	struct u64map txlocfp;      /* location fingerprint -> location */
	struct u64map txlstr;       /* label strings indexed in this txn */
	uint32_t *path;             /* store location ids of one sample, leaf first */
	uint8_t *sbuf;              /* its encoding */
	size_t npath;
};
/* Allocates w's per-profile arrays for w->p and the store's caches if
 * this is the first append. 0 or -ENOMEM; wctx__free releases either way. */
int wctx__init(struct wctx *w);
/* Frees what w owns (never the store's caches or w->txn). */
void wctx__free(struct wctx *w);

/* Brings the store's symbol caches up to date with other writers'
 * commits. Call first in the transaction. 0 or -errno. */
int wctx__sync(struct wctx *w);
/* The type record named name (created on first use) and the map of
 * the profile's value index -> the type's. 0 or -errno. */
int wctx__type(struct wctx *w, const char *name, struct store_type *t,
	       int *vmap);
/* Resolves up front the locations the cache knows (a speed-up only). */
void wctx__known_locs(struct wctx *w);
/* Marks the mappings and functions of the locations known_locs found as
 * used this generation. Returns 0 or -errno. */
int wctx__touch_known(struct wctx *w);
/* Series id of a sample (interned with the batch's extra labels). */
int wctx__series(struct wctx *w, const struct prof_sample *sm, uint32_t *id);
/* Resolves a sample's locations into w->path; *n = their number. */
int wctx__stack_path(struct wctx *w, const struct prof_sample *sm, uint32_t *n);
/* The cache key of the stack last put in w->path (n locations). */
uint64_t wctx__stack_hash(struct wctx *w, uint32_t n);
/* Stack id of sample sm whose wctx__stack_hash is h (interns it if new). */
int wctx__stack_id(struct wctx *w, const struct prof_sample *sm, uint64_t h, uint32_t *id);
/* Store function id of profile function fid (interned if new). */
int wctx__function(struct wctx *w, uint64_t fid, uint32_t *out);
/* After a successful commit: what this transaction resolved joins the
 * store's caches. */
void wctx__commit_caches(struct wctx *w);

/* For store_writer_series.c: a committed cache entry (0: absent; 1: found,
 * used already this generation; 2: found, its first use in it), an entry
 * this transaction added, and a label string's id (interned and indexed
 * in str_idx if new). */
int wctx__pc_get(const struct store *s, struct u64map *m, uint64_t k, uint32_t *id);
bool wctx__tx_get(const struct u64map *m, uint64_t k, uint32_t *id);
int wctx__label_str(struct wctx *w, const char *b, size_t len, uint32_t *sid);

#endif
