/*
 * store_expire.c - retention by age and the size bound.
 *
 * Data goes a minute at a time, oldest first: the blocks of the minute,
 * its minute-index key, and the rollup and dirty mark of its hour (a
 * rollup of a partly deleted hour would count deleted samples; merges then
 * read that hour's remaining raw blocks). Series whose last sample is older
 * than the oldest block of their type go too, with their postings, so
 * listings do not show label pairs without data. Interned symbols (strings,
 * functions, mappings, locations, stacks) are never collected: a
 * known limit, bounded in practice by the code that runs on the host.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

#define HIGH_WATER 0.75
#define LOW_WATER 0.60

int expire__range(struct store *s, MDB_txn *txn, uint32_t type, uint64_t from,
		  uint64_t to, uint64_t *ndel)
{
	uint8_t kb[BLOCK_KEY_LEN], mk[8];
	MDB_val k = { BLOCK_KEY_LEN, kb }, d;
	MDB_cursor *c;
	uint64_t first = UINT64_MAX, last = 0;
	int rc;

	*ndel = 0;
	if (from >= to)
		return 0;
	rc = mdb_cursor_open(txn, s->dbi[DB_BLOCK], &c);
	if (rc)
		return store__errno(rc);
	block_key(kb, type, from, 0);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		uint64_t t;

		if (k.mv_size != BLOCK_KEY_LEN || be32_get(k.mv_data) != type)
			break;
		t = be64_get((uint8_t *)k.mv_data + 4);
		if (t >= to)
			break;
		if (t < first)
			first = t;
		last = t;
		rc = mdb_cursor_del(c, 0);
		if (rc)
			break;
		(*ndel)++;
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return store__errno(rc);
	if (!*ndel)
		return 0;
	/* Minute index keys and hours of the deleted blocks. */
	for (uint64_t m = first / 60; m <= last / 60; m++) {
		key2(mk, type, (uint32_t)m);
		k = (MDB_val){ 8, mk };
		rc = mdb_del(txn, s->dbi[DB_MINUTE], &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return store__errno(rc);
		/* Skip ahead over minutes with no index key. */
		if (m + 1 <= last / 60) {
			MDB_cursor *mc;
			MDB_val nk = { 8, mk }, nd;

			key2(mk, type, (uint32_t)(m + 1));
			if ((rc = mdb_cursor_open(txn, s->dbi[DB_MINUTE], &mc)))
				return store__errno(rc);
			rc = mdb_cursor_get(mc, &nk, &nd, MDB_SET_RANGE);
			if (!rc && nk.mv_size == 8 && be32_get(nk.mv_data) == type)
				m = (uint64_t)be32_get((uint8_t *)nk.mv_data + 4) - 1;
			else
				m = last / 60;
			mdb_cursor_close(mc);
		}
	}
	for (uint64_t h = first / HOUR_S; h <= last / HOUR_S; h++) {
		key2(mk, type, (uint32_t)h);
		k = (MDB_val){ 8, mk };
		rc = mdb_del(txn, s->dbi[DB_ROLLUP], &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return store__errno(rc);
		rc = mdb_del(txn, s->dbi[DB_DIRTY], &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			return store__errno(rc);
	}
	return 0;
}

static uint64_t max_pages(struct store *s)
{
	MDB_stat st;

	if (mdb_env_stat(s->env, &st) || !st.ms_psize)
		return s->max_size / 4096;
	return s->max_size / st.ms_psize;
}

int expire__size(struct store *s, MDB_txn *txn, double target, uint64_t *ndel)
{
	uint64_t limit = (uint64_t)(max_pages(s) * target);
	struct type_ent *types = NULL;
	uint64_t *newest = NULL;
	size_t nt = 0;
	int rc;

	*ndel = 0;
	if (store__used_pages(s, txn) <= limit)
		return 0;
	rc = types__all(s, txn, &types, &nt);
	if (rc)
		return rc;
	newest = calloc(nt + 1, sizeof(*newest));
	if (!newest) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nt; i++)
		if ((rc = block__newest(s, txn, types[i].t.id, &newest[i])))
			goto out;
	while (store__used_pages(s, txn) > limit) {
		uint64_t best = UINT64_MAX, nd;
		uint32_t bt = 0;

		for (size_t i = 0; i < nt; i++) {
			uint64_t t;

			if ((rc = block__oldest(s, txn, types[i].t.id, &t)))
				goto out;
			/* The newest minute of a type stays: when only it is
			 * left, the symbols (never collected) fill the store
			 * and deleting the latest data would not help. */
			if (t == UINT64_MAX || t / 60 >= newest[i] / 60)
				continue;
			if (t < best) {
				best = t;
				bt = types[i].t.id;
			}
		}
		if (best == UINT64_MAX) {
			pr_warn("store: symbols and the newest data fill --max-size; raise it");
			break;
		}
		best -= best % 60;
		if ((rc = expire__range(s, txn, bt, best, best + 60, &nd)))
			goto out;
		*ndel += nd;
	}
out:
	free(newest);
	types__free(types, nt);
	return rc;
}

/* Deletes series of every type whose last sample is older than the
 * type's oldest block, with their index and postings entries. */
static int series_gc(struct store *s, MDB_txn *txn, uint64_t *ngc)
{
	struct type_ent *types = NULL;
	size_t nt = 0;
	uint64_t *oldest = NULL;
	MDB_cursor *c = NULL;
	MDB_val k, d;
	int rc;

	*ngc = 0;
	if ((rc = types__all(s, txn, &types, &nt)))
		return rc;
	oldest = calloc(nt + 1, sizeof(*oldest));
	if (!oldest) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nt; i++)
		if ((rc = block__oldest(s, txn, types[i].t.id, &oldest[i])))
			goto out;
	rc = mdb_cursor_open(txn, s->dbi[DB_SERIES], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		struct series_rec r;
		uint8_t hk[8], ik[4], pk[12];
		MDB_val x, y;
		size_t ti;

		if (k.mv_size != 4 || series__dec(d.mv_data, d.mv_size, &r))
			continue; /* check reports it */
		for (ti = 0; ti < nt && types[ti].t.id != r.type; ti++)
			;
		/* last_seen is exact to the minute only (store_append.c
		 * updates it once a minute): keep what was seen in the
		 * oldest block's minute. */
		if (ti < nt && (uint64_t)r.last_seen >= oldest[ti] - oldest[ti] % 60)
			continue;
		memcpy(ik, k.mv_data, 4);
		be64_put(hk, hash64(d.mv_data, d.mv_size - 8, STORE_HASH_SEED));
		x = (MDB_val){ 8, hk };
		y = (MDB_val){ 4, ik };
		rc = mdb_del(txn, s->dbi[DB_SERIES_IDX], &x, &y);
		for (uint32_t i = 0; (!rc || rc == MDB_NOTFOUND) && i < r.npairs; i++) {
			be32_put(pk, r.type);
			memcpy(pk + 4, r.pairs + 8 * i, 8);
			x = (MDB_val){ 12, pk };
			y = (MDB_val){ 4, ik };
			rc = mdb_del(txn, s->dbi[DB_POST], &x, &y);
		}
		if (rc && rc != MDB_NOTFOUND)
			break;
		rc = mdb_cursor_del(c, 0);
		if (rc)
			break;
		(*ngc)++;
	}
	rc = rc == MDB_NOTFOUND ? 0 : store__errno(rc);
out:
	mdb_cursor_close(c);
	free(oldest);
	types__free(types, nt);
	return rc;
}

static int add_dropped(struct store *s, MDB_txn *txn, uint64_t n)
{
	uint64_t v;
	int rc = meta__get_u64(s, txn, "dropped", &v);

	return rc ? rc : meta__put_u64(s, txn, "dropped", v + n);
}

int store__expire(struct store *s, int64_t now)
{
	MDB_txn *txn = NULL;
	struct type_ent *types = NULL;
	size_t nt = 0;
	uint64_t cutoff = 0, total = 0, nd;
	bool need_ret = false, need_size;
	int rc;

	if (s->readonly)
		return -EROFS;
	/* A reader slot left by a killed process (a `proffs cat`, a mount)
	 * would pin old pages forever and the map would fill up. */
	if (now > 0)
		mdb_reader_check(s->env, NULL);
	if (now > 0 && s->retention_s > 0 && now > s->retention_s) {
		cutoff = (uint64_t)(now - s->retention_s);
		cutoff -= cutoff % 60;
	}
	/* A cheap look first: most calls have nothing to do. */
	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	need_size = store__used_pages(s, txn) > (uint64_t)(max_pages(s) * HIGH_WATER);
	if (cutoff && !(rc = types__all(s, txn, &types, &nt))) {
		for (size_t i = 0; i < nt && !need_ret; i++) {
			uint64_t t;

			if (!block__oldest(s, txn, types[i].t.id, &t) && t < cutoff)
				need_ret = true;
		}
	}
	types__free(types, nt);
	types = NULL;
	nt = 0;
	store__txn_abort(s, txn);
	txn = NULL;
	if (rc || (!need_ret && !need_size))
		return rc;

	rc = store__txn_begin(s, false, &txn);
	if (rc)
		return rc;
	if (need_ret) {
		if ((rc = types__all(s, txn, &types, &nt)))
			goto out;
		for (size_t i = 0; i < nt; i++) {
			if ((rc = expire__range(s, txn, types[i].t.id, 0, cutoff, &nd)))
				goto out;
			total += nd;
		}
	}
	if (need_size) {
		if ((rc = expire__size(s, txn, LOW_WATER, &nd)))
			goto out;
		total += nd;
	}
	if (total) {
		uint64_t ngc;

		if ((rc = series_gc(s, txn, &ngc)) || (rc = add_dropped(s, txn, total)))
			goto out;
		pr_debug("store: expired %llu blocks, %llu series", (unsigned long long)total,
			 (unsigned long long)ngc);
	}
	rc = store__txn_commit(s, txn);
	txn = NULL;
out:
	store__txn_abort(s, txn);
	types__free(types, nt);
	return rc;
}
