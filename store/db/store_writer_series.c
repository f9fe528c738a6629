/*
 * store_writer_series.c - the writer's series: a sample's labels, with
 * the batch's extra labels (which win a clash), sorted and interned as
 * one series record, through the same generations of cached ids as the
 * symbols (store_writer_cache.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_writer.h"

struct lpair {
	const char *name, *value;
	size_t nl, vl;
	int prio; /* extra labels win a clash */
};

static int lpair_cmp(const void *a, const void *b)
{
	const struct lpair *x = a, *y = b;
	size_t n = x->nl < y->nl ? x->nl : y->nl;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	if (x->nl != y->nl)
		return x->nl < y->nl ? -1 : 1;
	return y->prio - x->prio; /* higher priority first */
}

/* Creates or finds the series of this label set. */
static int w_series_of(struct wctx *w, struct lpair *lp, size_t n, uint32_t *id)
{
	size_t o = 0, len;
	uint8_t *b;
	uint8_t hk[8], ik[4];
	MDB_val k, d;
	MDB_cursor *c = NULL;
	int rc;

	qsort(lp, n, sizeof(*lp), lpair_cmp);
	for (size_t i = 0; i < n; i++) {
		if (o && lp[o - 1].nl == lp[i].nl && !memcmp(lp[o - 1].name, lp[i].name, lp[i].nl))
			continue; /* same name: the first (highest priority) stays */
		lp[o++] = lp[i];
	}
	len = 8 + 8 * o;
	b = malloc(len + 8);
	if (!b)
		return -ENOMEM;
	be32_put(b, w->type);
	be32_put(b + 4, o);
	for (size_t i = 0; i < o; i++) {
		uint32_t ns, vs;

		if ((rc = wctx__label_str(w, lp[i].name, lp[i].nl, &ns)) ||
		    (rc = wctx__label_str(w, lp[i].value, lp[i].vl, &vs)))
			goto out;
		be32_put(b + 8 + 8 * i, ns);
		be32_put(b + 12 + 8 * i, vs);
	}
	be64_put(hk, hash64(b, len, STORE_HASH_SEED));
	{
		uint32_t cv;
		MDB_val v;

		if ((wctx__pc_get(w->s, w->s->pc_series, be64_get(hk), &cv) ||
		     wctx__tx_get(&w->txseries, be64_get(hk), &cv)) &&
		    !table__read(w->s, w->txn, DB_SERIES, cv, &v) &&
		    v.mv_size == len + 8 && !memcmp(v.mv_data, b, len)) {
			*id = cv;
			rc = 0;
			goto out;
		}
	}
	k = (MDB_val){ 8, hk };
	rc = mdb_cursor_open(w->txn, w->s->dbi[DB_SERIES_IDX], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_DUP)) {
		MDB_val v;
		uint32_t cand = be32_get(d.mv_data);

		if (!table__read(w->s, w->txn, DB_SERIES, cand, &v) && v.mv_size == len + 8 &&
		    !memcmp(v.mv_data, b, len)) {
			*id = cand;
			rc = u64map__put(&w->txseries, be64_get(hk), cand);
			goto out;
		}
	}
	if (rc != MDB_NOTFOUND) {
		rc = store__errno(rc);
		goto out;
	}
	/* New series: ids come from a counter, never reused after expiry. */
	if (!w->series_next) {
		if ((rc = meta__get_u64(w->s, w->txn, "series_next", &w->series_next)))
			goto out;
		if (!w->series_next)
			w->series_next = 1;
	}
	if (w->series_next >= UINT32_MAX) {
		rc = -ENOSPC;
		goto out;
	}
	*id = (uint32_t)w->series_next++;
	if ((rc = meta__put_u64(w->s, w->txn, "series_next", w->series_next)))
		goto out;
	be64_put(b + len, w->start);
	be32_put(ik, *id);
	k = (MDB_val){ 4, ik };
	d = (MDB_val){ len + 8, b };
	rc = mdb_put(w->txn, w->s->dbi[DB_SERIES], &k, &d, 0);
	if (!rc) {
		k = (MDB_val){ 8, hk };
		d = (MDB_val){ 4, ik };
		rc = mdb_put(w->txn, w->s->dbi[DB_SERIES_IDX], &k, &d, 0);
	}
	if (!rc)
		rc = u64map__put(&w->txseries, be64_get(hk), *id);
	for (size_t i = 0; !rc && i < o; i++) {
		uint8_t pk[12];

		be32_put(pk, w->type);
		memcpy(pk + 4, b + 8 + 8 * i, 8);
		k = (MDB_val){ 12, pk };
		d = (MDB_val){ 4, ik };
		rc = mdb_put(w->txn, w->s->dbi[DB_POST], &k, &d, MDB_NODUPDATA);
		if (rc == MDB_KEYEXIST)
			rc = 0;
	}
	rc = store__errno(rc);
out:
	mdb_cursor_close(c);
	free(b);
	return rc;
}

/* Series of a sample, cached by its profile label indexes. */
int wctx__series(struct wctx *w, const struct prof_sample *sm, uint32_t *id)
{
	uint32_t pairs[64], np = 0;
	struct lpair lp[64 + 16];
	size_t nlp = 0;
	uint64_t h, ci;
	int rc;

	for (uint32_t i = 0; i < sm->nlabels && np < 64; i += 1) {
		if (!sm->labels[i].str)
			continue; /* numeric labels are not kept */
		pairs[np++] = sm->labels[i].key;
		pairs[np++] = sm->labels[i].str;
		if (np >= 64)
			break;
	}
	h = fhash(pairs, np * sizeof(uint32_t), 7);
	if (u64map__get(&w->ser_hash, h, &ci) && w->sc[ci].n == np &&
	    !memcmp(w->sc[ci].pairs, pairs, np * sizeof(uint32_t))) {
		*id = w->sc[ci].series;
		return 0;
	}
	for (uint32_t i = 0; i < np; i += 2) {
		uint32_t k = pairs[i], v = pairs[i + 1];

		if (k >= w->p->nstrs || v >= w->p->nstrs)
			return -EINVAL;
		lp[nlp++] = (struct lpair){ w->p->strs[k], w->p->strs[v],
					    w->p->str_lens ? w->p->str_lens[k] : strlen(w->p->strs[k]),
					    w->p->str_lens ? w->p->str_lens[v] : strlen(w->p->strs[v]), 0 };
	}
	for (size_t i = 0; i < w->nextra && nlp < 64 + 16; i++)
		lp[nlp++] = (struct lpair){ w->extra[i].name, w->extra[i].value,
					    strlen(w->extra[i].name), strlen(w->extra[i].value), 1 };
	rc = w_series_of(w, lp, nlp, id);
	if (rc)
		return rc;
	{
		struct ser_cache_ent *nsc;

		if (GROW(w->sc, &w->capsc, w->nsc + 1))
			return -ENOMEM;
		nsc = w->sc;
		nsc[w->nsc].pairs = malloc(np * sizeof(uint32_t) + 1);
		if (!nsc[w->nsc].pairs)
			return -ENOMEM;
		memcpy(nsc[w->nsc].pairs, pairs, np * sizeof(uint32_t));
		nsc[w->nsc].n = np;
		nsc[w->nsc].series = *id;
		if (u64map__put(&w->ser_hash, h, w->nsc++))
			return -ENOMEM;
	}
	return 0;
}
