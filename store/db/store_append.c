/*
 * store_append.c - one batch in, one write transaction.
 *
 * The writer's caches (store_writer_cache.c) turn the profile's symbols,
 * stacks and labels into store ids; here samples are grouped by series and
 * written as one block keyed (type, batch start, seq), with the minute
 * index, series last-seen times, the dirty mark of the hour and the
 * rollups of hours that just closed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/db/store_writer.h"

static int next_seq(struct wctx *w, uint32_t *seq)
{
	uint8_t kb[BLOCK_KEY_LEN];
	MDB_val k = { BLOCK_KEY_LEN, kb }, d;
	MDB_cursor *c;
	int rc;

	*seq = 0;
	block_key(kb, w->type, w->start + 1, 0);
	rc = mdb_cursor_open(w->txn, w->s->dbi[DB_BLOCK], &c);
	if (rc)
		return store__errno(rc);
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	if (!rc)
		rc = mdb_cursor_get(c, &k, &d, MDB_PREV);
	else if (rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(c, &k, &d, MDB_LAST);
	if (!rc && k.mv_size == BLOCK_KEY_LEN && be32_get(k.mv_data) == w->type &&
	    be64_get((uint8_t *)k.mv_data + 4) == w->start)
		*seq = be32_get((uint8_t *)k.mv_data + 12) + 1;
	mdb_cursor_close(c);
	return rc && rc != MDB_NOTFOUND ? store__errno(rc) : 0;
}

/* The batch's entries, one per sample with a non-zero value, in the
 * type's value order: ents/sh/si have room for every sample. */
static int append__collect(struct wctx *w, const int *vmap, struct blk_entry *ents,
			   uint64_t *sh, uint32_t *si, size_t *nentp)
{
	const struct profile *p = w->p;
	size_t nent = 0;
	int rc;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *sm = &p->samples[i];
		struct blk_entry *e = &ents[nent];
		bool nz = false;
		uint32_t n;

		memset(e->v, 0, sizeof(e->v));
		for (uint32_t j = 0; j < p->nvalues; j++) {
			e->v[vmap[j]] += sm->values[j];
			nz |= sm->values[j] != 0;
		}
		if (!nz)
			continue; /* nothing to add */
		if ((rc = wctx__series(w, sm, &e->series)) ||
		    (rc = wctx__stack_path(w, sm, &n)))
			return rc;
		sh[nent] = wctx__stack_hash(w, n);
		si[nent] = i;
		u64map__prefetch(&w->s->pc_sym[DB_STACK], sh[nent]);
		nent++;
	}
	/* Stack ids in a second pass, so that the prefetches above overlap
	 * the cache misses of the lookups (the cache is large). */
	for (size_t k = 0; k < nent; k++)
		if ((rc = wctx__stack_id(w, &p->samples[si[k]], sh[k], &ents[k].stack)))
			return rc;
	*nentp = nent;
	return 0;
}

/* Encodes the (normalized, non-empty) entries as the batch's block. */
static int append__put_block(struct wctx *w, const struct store_type *t,
			     const struct blk_entry *ents, size_t nent, int64_t duration_ns)
{
	struct store *s = w->s;
	uint8_t kb[BLOCK_KEY_LEN], *blk = NULL;
	MDB_val k, d;
	uint32_t seq;
	size_t blen;
	int rc;

	if (!s->zc)
		s->zc = ZSTD_createCCtx();
	if ((rc = block__encode(ents, nent, t->nvalues, duration_ns, s->zc, &blk, &blen)))
		return rc;
	if (!(rc = next_seq(w, &seq))) {
		block_key(kb, t->id, w->start, seq);
		k = (MDB_val){ BLOCK_KEY_LEN, kb };
		d = (MDB_val){ blen, blk };
		rc = store__errno(mdb_put(w->txn, s->dbi[DB_BLOCK], &k, &d, 0));
	}
	free(blk);
	return rc;
}

/* Each series of the block (entries are sorted by series) into the
 * minute index, and its last-seen time forward. */
static int append__touch_series(struct wctx *w, const struct store_type *t,
				const struct blk_entry *ents, size_t nent)
{
	struct store *s = w->s;
	uint8_t mk[8], sb[4];
	MDB_val k, d;
	int rc;

	key2(mk, t->id, (uint32_t)(w->start / 60));
	for (size_t i = 0; i < nent; i++) {
		struct series_rec r;
		MDB_val sv;
		uint8_t *nb;

		if (i && ents[i].series == ents[i - 1].series)
			continue;
		be32_put(sb, ents[i].series);
		k = (MDB_val){ 8, mk };
		d = (MDB_val){ 4, sb };
		rc = mdb_put(w->txn, s->dbi[DB_MINUTE], &k, &d, MDB_NODUPDATA);
		if (rc && rc != MDB_KEYEXIST)
			return store__errno(rc);
		/* last seen */
		if ((rc = table__read(s, w->txn, DB_SERIES, ents[i].series, &sv)) ||
		    (rc = series__dec(sv.mv_data, sv.mv_size, &r)))
			return rc;
		/* Minute granularity (store_expire.c compares so): a
		 * series is rewritten once a minute, not per batch. */
		if ((uint64_t)r.last_seen / 60 >= w->start / 60)
			continue;
		nb = malloc(sv.mv_size);
		if (!nb)
			return -ENOMEM;
		memcpy(nb, sv.mv_data, sv.mv_size);
		be64_put(nb + sv.mv_size - 8, w->start);
		k = (MDB_val){ 4, sb };
		d = (MDB_val){ sv.mv_size, nb };
		rc = store__errno(mdb_put(w->txn, s->dbi[DB_SERIES], &k, &d, 0));
		free(nb);
		if (rc)
			return rc;
	}
	return 0;
}

/* The hour's rollup no longer covers its raw data; hours that closed
 * get theirs. */
static int append__mark_hour(struct wctx *w, const struct store_type *t)
{
	uint8_t mk[8];
	MDB_val k, d;
	uint64_t newest;
	int rc;

	key2(mk, t->id, (uint32_t)(w->start / HOUR_S));
	k = (MDB_val){ 8, mk };
	d = (MDB_val){ 1, (void *)"" };
	if ((rc = store__errno(mdb_put(w->txn, w->s->dbi[DB_DIRTY], &k, &d, 0))) ||
	    (rc = block__newest(w->s, w->txn, t->id, &newest)))
		return rc;
	return rollup__update(w->s, w->txn, t, newest, NULL);
}

static int append_txn(struct store *s, const char *type, uint64_t start,
		      int64_t duration_ns, const struct profile *p,
		      const struct store_label *extra, size_t nextra)
{
	struct wctx w = { .s = s, .p = p, .extra = extra, .nextra = nextra, .start = start };
	struct store_type t;
	struct blk_entry *ents = NULL;
	uint64_t *sh = NULL; /* stack hash of each entry */
	uint32_t *si = NULL; /* its sample */
	size_t nent = 0;
	int vmap[PROF_MAX_VALUES];
	int rc;

	ents = malloc((p->nsamples + 1) * sizeof(*ents));
	sh = malloc((p->nsamples + 1) * sizeof(*sh));
	si = malloc((p->nsamples + 1) * sizeof(*si));
	if (!ents || !sh || !si) {
		rc = -ENOMEM;
		goto out_free;
	}
	if ((rc = wctx__init(&w)))
		goto out_free;
	rc = store__txn_begin(s, false, &w.txn);
	if (rc)
		goto out_free;
	intern__discard(s);
	__atomic_store_n(&s->pend_txn, w.txn, __ATOMIC_RELAXED);
	if ((rc = wctx__sync(&w)) || (rc = wctx__type(&w, type, &t, vmap)))
		goto out;
	w.type = t.id;
	wctx__known_locs(&w);
	if ((rc = wctx__touch_known(&w)))
		goto out;

	if ((rc = append__collect(&w, vmap, ents, sh, si, &nent)))
		goto out;
	nent = blk_entries__normalize(ents, nent, t.nvalues);
	if (nent && ((rc = append__put_block(&w, &t, ents, nent, duration_ns)) ||
		     (rc = append__touch_series(&w, &t, ents, nent)) ||
		     (rc = append__mark_hour(&w, &t))))
		goto out;
	if ((rc = meta__put_u64(s, w.txn, "last_commit", (uint64_t)now_s())) ||
	    (rc = intern__flush(s, w.txn)))
		goto out;
	__atomic_store_n(&s->pend_txn, NULL, __ATOMIC_RELAXED);
	rc = store__txn_commit(s, w.txn);
	w.txn = NULL;
	if (!rc)
		wctx__commit_caches(&w);
out:
	__atomic_store_n(&s->pend_txn, NULL, __ATOMIC_RELAXED);
	intern__discard(s);
	store__txn_abort(s, w.txn);
out_free:
	free(ents);
	free(sh);
	free(si);
	wctx__free(&w);
	return rc;
}

bool store__type_ok(const char *t, size_t len)
{
	if (len == 0 || len > STORE_TYPE_MAX || t[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = t[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int store__append(struct store *s, const char *type, int64_t time_ns,
		  int64_t duration_ns, const struct profile *p,
		  const struct store_label *extra, size_t nextra)
{
	int64_t now = now_s();
	int rc = 0;

	if (s->readonly)
		return -EROFS;
	if (!type || !store__type_ok(type, strlen(type)) || !p ||
	    !p->nvalues || p->nvalues > PROF_MAX_VALUES || time_ns < 0) {
		pr_err("store: append: bad batch (type, values or time)");
		return -EINVAL;
	}
	for (size_t i = 0; i < nextra; i++)
		if (!extra[i].name || !*extra[i].name || !extra[i].value)
			return -EINVAL;
	/* Retention (and stale reader slots) at most once a minute; the
	 * size bound every time (a cheap stat of the databases when there is
	 * room). */
	if (now - s->last_retention >= 60) {
		s->last_retention = now;
		store__expire(s, now);
	} else {
		store__expire(s, 0);
	}
	for (int attempt = 0; attempt < 6; attempt++) {
		rc = append_txn(s, type, (uint64_t)(time_ns / 1000000000), duration_ns, p,
				extra, nextra);
		if (rc != -ENOSPC)
			break;
		/* The map is full despite the watermarks (fragmentation,
		 * readers pinning old pages): free more, then retry. */
		pr_warn("store: map full, deleting oldest data (attempt %d)", attempt + 1);
		{
			MDB_txn *txn;
			uint64_t nd = 0;
			int erc = store__txn_begin(s, false, &txn);

			if (erc)
				break;
			erc = expire__size(s, txn, 0.5 - 0.08 * attempt, &nd);
			if (!erc)
				erc = store__txn_commit(s, txn);
			else
				store__txn_abort(s, txn);
			if (erc || !nd) {
				if (erc)
					pr_err("store: cannot free space: %s", strerror(-erc));
				if (!nd && attempt >= 2)
					break;
			}
		}
	}
	if (rc)
		pr_err("store: append of a %s batch failed: %s", type, strerror(-rc));
	return rc;
}