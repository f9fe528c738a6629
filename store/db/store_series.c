/*
 * store_series.c - series (type + sorted label set), their postings, and
 * selections (=, !=, =~ anchored) resolved through the postings.
 *
 * A series record is (type u32, npairs u32, (name sid, value sid) *
 * npairs, last_seen u64), pairs sorted by name string. The content (all but
 * last_seen) is what series_idx hashes. Postings are keyed (type, name sid,
 * value sid) so that listing a type's pairs is one range walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

int series__dec(const void *b, size_t len, struct series_rec *r)
{
	const uint8_t *p = b;

	if (len < 16)
		return -EBADMSG;
	r->type = be32_get(p);
	r->npairs = be32_get(p + 4);
	if ((uint64_t)r->npairs * 8 + 16 != len)
		return -EBADMSG;
	r->pairs = p + 8;
	r->last_seen = (int64_t)be64_get(p + 8 + 8 * r->npairs);
	return 0;
}

int series__read(struct store *s, MDB_txn *txn, uint32_t id, struct series_rec *r)
{
	MDB_val v;
	int rc = table__read(s, txn, DB_SERIES, id, &v);

	if (rc)
		return rc;
	return series__dec(v.mv_data, v.mv_size, r);
}

int store_matcher__init(struct store_matcher *m)
{
	char *pat;
	size_t l;
	int rc;

	if (!m || !m->name || !m->value)
		return -EINVAL;
	if (m->op != STORE_RE)
		return 0;
	l = strlen(m->value);
	pat = malloc(l + 5);
	if (!pat)
		return -ENOMEM;
	/* Anchored like Prometheus: the whole value must match. */
	snprintf(pat, l + 5, "^(%s)$", m->value);
	rc = regcomp(&m->re, pat, REG_EXTENDED | REG_NOSUB);
	free(pat);
	return rc ? -EINVAL : 0;
}

void store_matcher__fini(struct store_matcher *m)
{
	if (m && m->op == STORE_RE)
		regfree(&m->re);
}

bool series_set__has(const struct series_set *ss, uint32_t id)
{
	size_t lo = 0, hi;

	if (ss->all)
		return true;
	hi = ss->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ss->ids[mid] == id)
			return true;
		if (ss->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void series_set__free(struct series_set *ss)
{
	free(ss->ids);
	memset(ss, 0, sizeof(*ss));
}

struct idvec {
	uint32_t *v;
	size_t n, cap;
};

static int idvec_push(struct idvec *iv, uint32_t id)
{
	if (GROW(iv->v, &iv->cap, iv->n + 1))
		return -ENOMEM;
	iv->v[iv->n++] = id;
	return 0;
}

static void idvec_sort_unique(struct idvec *iv)
{
	iv->n = u32_sort_unique(iv->v, iv->n);
}

/* Appends every series id under posting key k (12 bytes) to iv. */
static int post_collect(MDB_cursor *c, MDB_val *k, struct idvec *iv)
{
	MDB_val d;
	int rc;

	for (rc = mdb_cursor_get(c, k, &d, MDB_SET_KEY); !rc;
	     rc = mdb_cursor_get(c, k, &d, MDB_NEXT_DUP)) {
		if (d.mv_size != 4)
			return -EBADMSG;
		if (idvec_push(iv, be32_get(d.mv_data)))
			return -ENOMEM;
	}
	return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
}

/* Series of one matcher, sorted and unique. */
static int match_one(struct store *s, MDB_txn *txn, MDB_cursor *c, uint32_t type,
		     const struct store_matcher *m, struct idvec *iv)
{
	uint32_t nsid, vsid = 0;
	uint8_t kb[12];
	MDB_val k, d;
	int rc;

	rc = intern__find(s, txn, DB_STR, DB_STR_IDX, m->name, strlen(m->name), &nsid);
	if (rc || !nsid)
		return rc; /* unknown label name: nothing matches */
	if (m->op == STORE_EQ) {
		rc = intern__find(s, txn, DB_STR, DB_STR_IDX, m->value,
				  strlen(m->value), &vsid);
		if (rc || !vsid)
			return rc;
		be32_put(kb, type);
		be32_put(kb + 4, nsid);
		be32_put(kb + 8, vsid);
		k = (MDB_val){ 12, kb };
		rc = post_collect(c, &k, iv);
		if (!rc)
			idvec_sort_unique(iv);
		return rc;
	}
	if (m->op == STORE_NEQ) {
		rc = intern__find(s, txn, DB_STR, DB_STR_IDX, m->value,
				  strlen(m->value), &vsid);
		if (rc)
			return rc;
	}
	/* != and =~ walk every value of the name. */
	be32_put(kb, type);
	be32_put(kb + 4, nsid);
	be32_put(kb + 8, 0);
	k = (MDB_val){ 12, kb };
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_NODUP)) {
		uint8_t cur[12];
		MDB_val ck;
		uint32_t v;
		bool ok;

		if (k.mv_size != 12 || be32_get(k.mv_data) != type ||
		    be32_get((uint8_t *)k.mv_data + 4) != nsid)
			break;
		v = be32_get((uint8_t *)k.mv_data + 8);
		if (m->op == STORE_NEQ) {
			ok = v != vsid;
		} else {
			char *str = str__dup(s, txn, v);

			if (!str)
				return -ENOMEM;
			ok = !regexec(&m->re, str, 0, NULL, 0);
			free(str);
		}
		if (!ok)
			continue;
		memcpy(cur, k.mv_data, 12);
		ck = (MDB_val){ 12, cur };
		rc = post_collect(c, &ck, iv);
		if (rc)
			return rc;
		/* post_collect left the cursor at the last dup of this key. */
		k = ck;
	}
	if (rc && rc != MDB_NOTFOUND)
		return store__errno(rc);
	idvec_sort_unique(iv);
	return 0;
}

int series__select(struct store *s, MDB_txn *txn, uint32_t type,
		   const struct store_sel *sel, struct series_set *out)
{
	struct idvec acc = { 0 }, cur = { 0 };
	MDB_cursor *c = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (sel->ids) {
		/* Ids first: the matchers below intersect with them. */
		acc.v = malloc((sel->nids ? sel->nids : 1) * sizeof(*acc.v));
		if (!acc.v)
			return -ENOMEM;
		memcpy(acc.v, sel->ids, sel->nids * sizeof(*acc.v));
		acc.n = acc.cap = sel->nids;
		idvec_sort_unique(&acc);
		if (!sel->nm || !acc.n) {
			out->ids = acc.v;
			out->n = acc.n;
			return 0;
		}
	} else if (!sel->nm) {
		out->all = true;
		return 0;
	}
	rc = mdb_cursor_open(txn, s->dbi[DB_POST], &c);
	if (rc)
		return store__errno(rc);
	for (size_t i = 0; i < sel->nm; i++) {
		cur.n = 0;
		rc = match_one(s, txn, c, type, &sel->m[i], &cur);
		if (rc)
			goto out;
		if (!i && !sel->ids) {
			struct idvec t = acc;

			acc = cur;
			cur = t;
		} else {
			/* Intersect two sorted vectors into acc. */
			size_t a = 0, b = 0, o = 0;

			while (a < acc.n && b < cur.n) {
				if (acc.v[a] == cur.v[b]) {
					acc.v[o++] = acc.v[a];
					a++;
					b++;
				} else if (acc.v[a] < cur.v[b]) {
					a++;
				} else {
					b++;
				}
			}
			acc.n = o;
		}
		if (!acc.n)
			break;
	}
	out->ids = acc.v;
	out->n = acc.n;
	acc.v = NULL;
out:
	mdb_cursor_close(c);
	free(acc.v);
	free(cur.v);
	return rc;
}

/* Does minute key (type, m) hold any series of ss? The cursor is
 * positioned on the key. */
bool series_set__in_minute(MDB_cursor *c, const struct series_set *ss)
{
	MDB_val k, d;
	size_t cnt = 0;
	int rc;

	if (ss->all)
		return true;
	if (!ss->n)
		return false;
	mdb_cursor_count(c, &cnt);
	if (ss->n < cnt) {
		/* Few selected series: probe each. */
		MDB_val key;
		uint8_t kb[8], sb[4];

		if (mdb_cursor_get(c, &key, &d, MDB_GET_CURRENT))
			return false;
		memcpy(kb, key.mv_data, 8);
		for (size_t i = 0; i < ss->n; i++) {
			k = (MDB_val){ 8, kb };
			be32_put(sb, ss->ids[i]);
			d = (MDB_val){ 4, sb };
			if (!mdb_cursor_get(c, &k, &d, MDB_GET_BOTH))
				return true;
		}
		return false;
	}
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST_DUP); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_DUP))
		if (d.mv_size == 4 && series_set__has(ss, be32_get(d.mv_data)))
			return true;
	return false;
}
