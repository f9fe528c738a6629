/*
 * store_minute.c - what a consumer that walks the store minute by minute
 * needs (the pusher): the series holding data in one minute, with their
 * labels, and named counters of its own kept in the store (a cursor that
 * survives restarts and travels with a copy of the store).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

#define USER_META_PREFIX "user."

static int user_key(const char *name, char *buf, size_t len)
{
	if (!name || !*name || snprintf(buf, len, USER_META_PREFIX "%s", name) >= (int)len)
		return -EINVAL;
	return 0;
}

int store__meta_get(struct store *s, const char *name, uint64_t *v)
{
	char key[128];
	MDB_txn *txn;
	MDB_val k, d;
	int rc;

	if ((rc = user_key(name, key, sizeof(key))))
		return rc;
	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	k = (MDB_val){ strlen(key), key };
	rc = mdb_get(txn, s->dbi[DB_META], &k, &d);
	if (rc == MDB_NOTFOUND)
		rc = -ENOENT;
	else if (rc)
		rc = store__errno(rc);
	else if (d.mv_size != 8)
		rc = -EBADMSG;
	else
		*v = be64_get(d.mv_data);
	store__txn_abort(s, txn);
	return rc;
}

int store__meta_put(struct store *s, const char *name, uint64_t v)
{
	char key[128];
	MDB_txn *txn;
	int rc;

	if (s->readonly)
		return -EROFS;
	if ((rc = user_key(name, key, sizeof(key))))
		return rc;
	rc = store__txn_begin(s, false, &txn);
	if (rc)
		return rc;
	rc = meta__put_u64(s, txn, key, v);
	if (rc) {
		store__txn_abort(s, txn);
		return rc;
	}
	return store__txn_commit(s, txn);
}

void store__free_series(struct store_series *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		for (size_t j = 0; j < v[i].nlabels; j++) {
			free((char *)v[i].labels[j].name);
			free((char *)v[i].labels[j].value);
		}
		free(v[i].labels);
	}
	free(v);
}

static int series_labels(struct store *s, MDB_txn *txn, uint32_t id, struct store_series *o)
{
	struct series_rec r;
	int rc;

	o->id = id;
	rc = series__read(s, txn, id, &r);
	if (rc)
		return rc;
	o->labels = calloc(r.npairs ? r.npairs : 1, sizeof(*o->labels));
	if (!o->labels)
		return -ENOMEM;
	for (uint32_t i = 0; i < r.npairs; i++) {
		char *n = str__dup(s, txn, be32_get(r.pairs + 8 * i));
		char *v = str__dup(s, txn, be32_get(r.pairs + 8 * i + 4));

		if (!n || !v) {
			free(n);
			free(v);
			return -ENOMEM;
		}
		o->labels[i].name = n;
		o->labels[i].value = v;
		o->nlabels = i + 1;
	}
	return 0;
}

int store__minute_series(struct store *s, const char *type, int64_t minute,
			 struct store_series **out, size_t *n)
{
	struct store_series *v = NULL, *nv;
	struct store_type t;
	size_t nv_n = 0, cap = 0;
	MDB_txn *txn;
	MDB_cursor *c = NULL;
	MDB_val k, d;
	uint8_t kb[8];
	int rc;

	*out = NULL;
	*n = 0;
	if (minute < 0 || minute % 60)
		return -EINVAL;
	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	if ((rc = type__get(s, txn, type, &t)))
		goto out;
	rc = mdb_cursor_open(txn, s->dbi[DB_MINUTE], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	key2(kb, t.id, (uint32_t)(minute / 60));
	k = (MDB_val){ 8, kb };
	/* Dups are sorted big-endian ids: ascending. */
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_DUP)) {
		if (d.mv_size != 4) {
			rc = -EBADMSG;
			goto out;
		}
		if (nv_n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				goto out;
			}
			v = nv;
		}
		memset(&v[nv_n], 0, sizeof(v[nv_n]));
		rc = series_labels(s, txn, be32_get(d.mv_data), &v[nv_n]);
		nv_n++;
		if (rc)
			goto out;
	}
	rc = rc == MDB_NOTFOUND ? 0 : store__errno(rc);
out:
	mdb_cursor_close(c);
	store__txn_abort(s, txn);
	if (rc) {
		store__free_series(v, nv_n);
		return rc;
	}
	*out = v;
	*n = nv_n;
	return 0;
}
