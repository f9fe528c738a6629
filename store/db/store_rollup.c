/*
 * store_rollup.c - hourly rollups: one block per (type, hour) holding the
 * sum of every raw block of that hour, so a day merges from 24 blocks.
 *
 * An append marks its hour dirty; a dirty hour is rebuilt (inside the same
 * write transaction) once it is closed, i.e. the type has a batch starting
 * at or after the hour's end. Raw blocks stay: minute queries need them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/db/store_int.h"

struct agg {
	struct u64map idx; /* (series << 32 | stack) -> entry index */
	struct blk_entry *e;
	size_t n, cap;
	uint32_t nvalues;
};

static int agg_add(void *ctx, uint32_t series, uint32_t stack, const int64_t *v,
		   uint32_t nv)
{
	struct agg *a = ctx;
	uint64_t k = (uint64_t)series << 32 | stack, i;

	if (nv != a->nvalues)
		return -EBADMSG;
	if (u64map__get(&a->idx, k, &i)) {
		for (uint32_t j = 0; j < nv; j++)
			a->e[i].v[j] += v[j];
		return 0;
	}
	if (GROW(a->e, &a->cap, a->n + 1))
		return -ENOMEM;
	a->e[a->n].series = series;
	a->e[a->n].stack = stack;
	memset(a->e[a->n].v, 0, sizeof(a->e[a->n].v));
	memcpy(a->e[a->n].v, v, nv * sizeof(*v));
	if (u64map__put(&a->idx, k, a->n))
		return -ENOMEM;
	a->n++;
	return 0;
}

int rollup__entries(struct store *s, MDB_txn *txn, uint32_t type, uint32_t nvalues,
		    uint32_t hour, void *zd, struct blk_entry **out, size_t *nout)
{
	struct agg a = { .nvalues = nvalues };
	uint8_t kb[BLOCK_KEY_LEN];
	MDB_val k = { BLOCK_KEY_LEN, kb }, d;
	MDB_cursor *c;
	uint64_t end = (uint64_t)(hour + 1) * HOUR_S;
	int rc;

	*out = NULL;
	*nout = 0;
	rc = mdb_cursor_open(txn, s->dbi[DB_BLOCK], &c);
	if (rc)
		return store__errno(rc);
	block_key(kb, type, (uint64_t)hour * HOUR_S, 0);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		if (k.mv_size != BLOCK_KEY_LEN || be32_get(k.mv_data) != type ||
		    be64_get((uint8_t *)k.mv_data + 4) >= end)
			break;
		rc = block__decode_dctx(zd, d.mv_data, d.mv_size, NULL, agg_add, &a, NULL);
		if (rc) {
			pr_err("store: rollup: bad block in hour %u: %s", hour, strerror(-rc));
			goto out;
		}
	}
	rc = rc == MDB_NOTFOUND ? 0 : store__errno(rc);
out:
	mdb_cursor_close(c);
	u64map__free(&a.idx);
	if (rc) {
		free(a.e);
		return rc;
	}
	*out = a.e;
	*nout = blk_entries__normalize(a.e, a.n, nvalues);
	return 0;
}

/* Rebuilds the rollup of (type, hour) from its raw blocks. */
static int rollup_build(struct store *s, MDB_txn *txn, const struct store_type *t,
			uint32_t hour)
{
	struct blk_entry *e = NULL;
	uint8_t rk[8], *blk = NULL;
	MDB_val k = { 8, rk }, d;
	size_t n, blen;
	int rc;

	if (!s->zd)
		s->zd = ZSTD_createDCtx(); /* the appending thread's */
	rc = rollup__entries(s, txn, t->id, t->nvalues, hour, s->zd, &e, &n);
	if (rc)
		return rc;
	key2(rk, t->id, hour);
	if (!n) {
		rc = mdb_del(txn, s->dbi[DB_ROLLUP], &k, NULL);
		rc = rc == MDB_NOTFOUND ? 0 : store__errno(rc);
		goto out;
	}
	rc = block__encode(e, n, t->nvalues, (int64_t)HOUR_S * 1000000000, s->zc, &blk, &blen);
	if (rc)
		goto out;
	d = (MDB_val){ blen, blk };
	rc = store__errno(mdb_put(txn, s->dbi[DB_ROLLUP], &k, &d, 0));
out:
	free(blk);
	free(e);
	return rc;
}

int rollup__update(struct store *s, MDB_txn *txn, const struct store_type *t,
		   uint64_t newest, size_t *built)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, d;
	MDB_cursor *c;
	uint32_t hours[64];
	size_t n = 0;
	int rc;

	rc = mdb_cursor_open(txn, s->dbi[DB_DIRTY], &c);
	if (rc)
		return store__errno(rc);
	key2(kb, t->id, 0);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc && n < 64;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		uint32_t h;

		if (k.mv_size != 8 || be32_get(k.mv_data) != t->id)
			break;
		h = be32_get((uint8_t *)k.mv_data + 4);
		if ((uint64_t)(h + 1) * HOUR_S > newest)
			break; /* still open; later hours too */
		hours[n++] = h;
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return store__errno(rc);
	for (size_t i = 0; i < n; i++) {
		if ((rc = rollup_build(s, txn, t, hours[i])))
			return rc;
		key2(kb, t->id, hours[i]);
		k = (MDB_val){ 8, kb };
		rc = mdb_del(txn, s->dbi[DB_DIRTY], &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return store__errno(rc);
	}
	if (built)
		*built = n;
	return 0;
}

int store__close_hours(struct store *s, int64_t until_s, size_t *built)
{
	MDB_txn *txn;
	MDB_cursor *c;
	MDB_val k, d;
	size_t total = 0;
	int rc, r;

	if (until_s <= 0)
		return -EINVAL;
	rc = store__txn_begin(s, false, &txn);
	if (rc)
		return rc;
	rc = store__errno(mdb_cursor_open(txn, s->dbi[DB_TYPE], &c));
	if (rc)
		goto abort;
	for (r = mdb_cursor_get(c, &k, &d, MDB_FIRST); !r; r = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		struct store_type t;
		size_t n;

		if ((rc = type__dec(d.mv_data, d.mv_size, &t)))
			break;
		/* rollup__update closes at most 64 hours a call */
		do {
			n = 0;
			rc = rollup__update(s, txn, &t, (uint64_t)until_s, &n);
			total += n;
		} while (!rc && n == 64);
		if (rc)
			break;
	}
	mdb_cursor_close(c);
	if (!rc && r != MDB_NOTFOUND)
		rc = store__errno(r);
	if (rc || !total)
		goto abort;
	if (built)
		*built = total;
	return store__txn_commit(s, txn);
abort:
	store__txn_abort(s, txn);
	if (built)
		*built = 0;
	return rc;
}

/* The first (oldest) or last (newest) block start of a type in *t; *t is
 * left alone when the type has none. Keys sort by (type, start), so the
 * newest is the entry just before the next type's first. */
static int block_edge(struct store *s, MDB_txn *txn, uint32_t type,
		      bool newest, uint64_t *t)
{
	uint8_t kb[BLOCK_KEY_LEN];
	MDB_val k = { BLOCK_KEY_LEN, kb }, d;
	MDB_cursor *c;
	int rc;

	rc = mdb_cursor_open(txn, s->dbi[DB_BLOCK], &c);
	if (rc)
		return store__errno(rc);
	block_key(kb, newest ? type + 1 : type, 0, 0);
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	if (newest) {
		if (!rc)
			rc = mdb_cursor_get(c, &k, &d, MDB_PREV);
		else if (rc == MDB_NOTFOUND)
			rc = mdb_cursor_get(c, &k, &d, MDB_LAST);
	}
	if (!rc && k.mv_size == BLOCK_KEY_LEN && be32_get(k.mv_data) == type)
		*t = be64_get((uint8_t *)k.mv_data + 4);
	mdb_cursor_close(c);
	return rc && rc != MDB_NOTFOUND ? store__errno(rc) : 0;
}

int block__oldest(struct store *s, MDB_txn *txn, uint32_t type, uint64_t *t)
{
	*t = UINT64_MAX;
	return block_edge(s, txn, type, false, t);
}

int block__newest(struct store *s, MDB_txn *txn, uint32_t type, uint64_t *newest)
{
	*newest = 0;
	return block_edge(s, txn, type, true, newest);
}
