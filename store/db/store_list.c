/*
 * store_list.c - the read side's listings: types, label pairs, the latest
 * minute. Each call runs in its own read snapshot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

void store__free_strv(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int has_blocks(struct store *s, MDB_txn *txn, uint32_t type)
{
	uint64_t t;
	int rc = block__oldest(s, txn, type, &t);

	return rc ? rc : t != UINT64_MAX;
}

static int strv_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int store__types(struct store *s, char ***names, size_t *n)
{
	struct type_ent *t = NULL;
	size_t nt = 0, o = 0;
	MDB_txn *txn;
	char **v = NULL;
	int rc;

	*names = NULL;
	*n = 0;
	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	rc = types__all(s, txn, &t, &nt);
	if (rc)
		goto out;
	v = calloc(nt + 1, sizeof(*v));
	if (!v) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		int hb = has_blocks(s, txn, t[i].t.id);

		if (hb < 0) {
			rc = hb;
			goto out;
		}
		if (hb) {
			v[o++] = t[i].name;
			t[i].name = NULL;
		}
	}
	if (o) /* qsort(NULL, 0) is undefined */
		qsort(v, o, sizeof(*v), strv_cmp);
	*names = v;
	*n = o;
	v = NULL;
out:
	store__free_strv(v, o);
	types__free(t, nt);
	store__txn_abort(s, txn);
	return rc;
}

static int pair_str(struct store *s, MDB_txn *txn, uint32_t ns, uint32_t vs, char **out)
{
	char *n = str__dup(s, txn, ns), *v = str__dup(s, txn, vs);
	int rc = 0;

	if (!n || !v || asprintf(out, "%s=%s", n, v) < 0)
		rc = -ENOMEM;
	free(n);
	free(v);
	return rc;
}

int store__list(struct store *s, const struct store_sel *sel, char ***pairs,
		size_t *npairs, int64_t **minutes, size_t *nminutes)
{
	struct series_set ss = { 0 };
	struct store_type t;
	struct u64map seen = { 0 };
	MDB_txn *txn;
	MDB_cursor *c = NULL;
	MDB_val k, d;
	char **pv = NULL;
	size_t np = 0, pcap = 0, nm = 0, mcap = 0;
	int64_t *mv = NULL;
	uint8_t kb[12];
	int rc;

	*pairs = NULL;
	*minutes = NULL;
	*npairs = *nminutes = 0;
	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	if ((rc = type__get(s, txn, sel->type, &t)) ||
	    (rc = series__select(s, txn, t.id, sel, &ss)))
		goto out;

	/* Label pairs: every posting key of the type, or the pairs of the
	 * selected series. */
	rc = mdb_cursor_open(txn, s->dbi[DB_POST], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	be32_put(kb, t.id);
	memset(kb + 4, 0, 8);
	k = (MDB_val){ 12, kb };
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_NODUP)) {
		uint32_t ns, vs;
		bool any = ss.all;

		if (k.mv_size != 12 || be32_get(k.mv_data) != t.id)
			break;
		ns = be32_get((uint8_t *)k.mv_data + 4);
		vs = be32_get((uint8_t *)k.mv_data + 8);
		if (!any) {
			int r2;
			MDB_val k2, d2;

			for (r2 = mdb_cursor_get(c, &k2, &d2, MDB_FIRST_DUP); !r2 && !any;
			     r2 = mdb_cursor_get(c, &k2, &d2, MDB_NEXT_DUP))
				any = d2.mv_size == 4 && series_set__has(&ss, be32_get(d2.mv_data));
		}
		if (!any)
			continue;
		if (GROW(pv, &pcap, np + 1)) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = pair_str(s, txn, ns, vs, &pv[np])))
			goto out;
		np++;
	}
	if (rc && rc != MDB_NOTFOUND) {
		rc = store__errno(rc);
		goto out;
	}
	mdb_cursor_close(c);
	c = NULL;
	if (np)
		qsort(pv, np, sizeof(*pv), strv_cmp);

	rc = mdb_cursor_open(txn, s->dbi[DB_MINUTE], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	key2(kb, t.id, 0);
	k = (MDB_val){ 8, kb };
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_NODUP)) {
		if (k.mv_size != 8 || be32_get(k.mv_data) != t.id)
			break;
		if (!series_set__in_minute(c, &ss))
			continue;
		if (GROW(mv, &mcap, nm + 1)) {
			rc = -ENOMEM;
			goto out;
		}
		mv[nm++] = (int64_t)be32_get((uint8_t *)k.mv_data + 4) * 60;
	}
	rc = rc == MDB_NOTFOUND ? 0 : store__errno(rc);
out:
	mdb_cursor_close(c);
	store__txn_abort(s, txn);
	series_set__free(&ss);
	u64map__free(&seen);
	if (rc) {
		store__free_strv(pv, np);
		free(mv);
		return rc;
	}
	*pairs = pv;
	*npairs = np;
	*minutes = mv;
	*nminutes = nm;
	return 0;
}

int store__latest_minute(struct store *s, const struct store_sel *sel, int64_t *minute)
{
	struct series_set ss = { 0 };
	struct store_type t;
	MDB_txn *txn;
	MDB_cursor *c = NULL;
	MDB_val k, d;
	uint8_t kb[8];
	int rc;

	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	if ((rc = type__get(s, txn, sel->type, &t)) ||
	    (rc = series__select(s, txn, t.id, sel, &ss)))
		goto out;
	rc = mdb_cursor_open(txn, s->dbi[DB_MINUTE], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	key2(kb, t.id + 1, 0);
	k = (MDB_val){ 8, kb };
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	if (!rc)
		rc = mdb_cursor_get(c, &k, &d, MDB_PREV_NODUP);
	else if (rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(c, &k, &d, MDB_LAST);
	for (; !rc; rc = mdb_cursor_get(c, &k, &d, MDB_PREV_NODUP)) {
		if (k.mv_size != 8 || be32_get(k.mv_data) != t.id)
			break;
		if (series_set__in_minute(c, &ss)) {
			*minute = (int64_t)be32_get((uint8_t *)k.mv_data + 4) * 60;
			rc = 0;
			goto out;
		}
	}
	rc = rc && rc != MDB_NOTFOUND ? store__errno(rc) : -ENOENT;
out:
	mdb_cursor_close(c);
	store__txn_abort(s, txn);
	series_set__free(&ss);
	return rc;
}
