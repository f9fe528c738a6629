/*
 * store_intern.c - interned tables (strings, functions, mappings,
 * locations), their record encodings, and profile types.
 *
 * Only label strings (names and values of series labels, which readers
 * look up by content) are indexed on disk: str_idx, keyed by hash64 of the
 * bytes, holding every id with that hash (DUPSORT), verified byte for
 * byte because LMDB keys are limited to 511 bytes and strings are not.
 * The writer finds all other content through in-memory maps it rebuilds
 * from the tables (store_append.c): an index on disk cost as much as the
 * records themselves.
 *
 * Grouped tables (strings, functions, mappings, locations, stacks): one
 * LMDB entry holds the records of consecutive ids, keyed by the first id
 * (big-endian): varint n, n varint lengths, the n records' bytes. LMDB
 * spends ~14 bytes per entry (node header, key, pointer), as much as a
 * location record itself. An append collects its new records in memory
 * (s->pend, readable through table__read meanwhile) and writes them as
 * groups just before commit: groups are never rewritten.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

bool table__grouped(int dbi)
{
	return dbi == DB_STR || dbi == DB_FUNC || dbi == DB_MAP || dbi == DB_LOC ||
	       dbi == DB_STACK;
}

int group__dec(const MDB_val *k, const MDB_val *d, struct group *g)
{
	const uint8_t *p = d->mv_data, *end = p + d->mv_size;
	uint64_t n, len, total = 0;
	size_t l;

	if (k->mv_size != 4 || !(l = varint_get(p, end - p, &n)) || !n || n > GROUP_MAX)
		return -EBADMSG;
	p += l;
	g->first = be32_get(k->mv_data);
	g->n = (uint32_t)n;
	for (uint64_t i = 0; i < n; i++) {
		if (!(l = varint_get(p, end - p, &len)) || len > d->mv_size)
			return -EBADMSG;
		p += l;
		g->off[i] = (uint32_t)total;
		total += len;
	}
	g->off[n] = (uint32_t)total;
	if (total != (uint64_t)(end - p) || (uint64_t)g->first + n - 1 > UINT32_MAX)
		return -EBADMSG;
	g->data = p;
	return 0;
}

int table__read(struct store *s, MDB_txn *txn, int dbi, uint32_t id, MDB_val *v)
{
	struct pend_tab *pt = &s->pend[dbi];
	uint8_t kb[4];
	MDB_val k = { 4, kb }, d;
	MDB_cursor *c;
	struct group g;
	int rc;

	be32_put(kb, id);
	if (!table__grouped(dbi)) {
		rc = mdb_get(txn, s->dbi[dbi], &k, v);
		if (!rc)
			store__touched(s, v->mv_data, v->mv_size);
		return store__errno(rc);
	}
	if (txn == __atomic_load_n(&s->pend_txn, __ATOMIC_RELAXED) && pt->n &&
	    id >= pt->first) { /* added by the running append */
		if (id - pt->first >= pt->n)
			return -ENOENT;
		*v = (MDB_val){ pt->off[id - pt->first + 1] - pt->off[id - pt->first],
				pt->buf + pt->off[id - pt->first] };
		return 0;
	}
	/* The group holding id: the last whose first id is <= id. */
	rc = mdb_cursor_open(txn, s->dbi[dbi], &c);
	if (rc)
		return store__errno(rc);
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	if (!rc && (k.mv_size != 4 || be32_get(k.mv_data) != id))
		rc = mdb_cursor_get(c, &k, &d, MDB_PREV);
	else if (rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(c, &k, &d, MDB_LAST);
	mdb_cursor_close(c);
	if (rc)
		return store__errno(rc);
	if (group__dec(&k, &d, &g))
		return -EBADMSG;
	store__touched(s, d.mv_data, d.mv_size);
	if (id < g.first || id - g.first >= g.n)
		return -ENOENT;
	*v = (MDB_val){ g.off[id - g.first + 1] - g.off[id - g.first],
			(void *)(g.data + g.off[id - g.first]) };
	return 0;
}

/* Positions c on the group holding id and decodes it into g. */
static int group_seek(struct store *s, MDB_cursor *c, uint32_t id, struct group *g)
{
	uint8_t kb[4];
	MDB_val k = { 4, kb }, d;
	int rc;

	be32_put(kb, id);
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	if (!rc && (k.mv_size != 4 || be32_get(k.mv_data) != id))
		rc = mdb_cursor_get(c, &k, &d, MDB_PREV);
	else if (rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(c, &k, &d, MDB_LAST);
	if (rc)
		return store__errno(rc);
	if (group__dec(&k, &d, g))
		return -EBADMSG;
	store__touched(s, d.mv_data, d.mv_size);
	return 0;
}

static bool group_has(const struct group *g, uint32_t id)
{
	return g->n && id >= g->first && id - g->first < g->n;
}

int table__read_many(struct store *s, MDB_txn *txn, int dbi, const uint32_t *ids, size_t n,
		     int (*fn)(void *ctx, size_t i, const MDB_val *rec), void *ctx)
{
	struct group g = { 0 };
	MDB_cursor *c = NULL;
	MDB_val k, d, v;
	int rc = 0;

	if (!n)
		return 0;
	if (!table__grouped(dbi) || txn == __atomic_load_n(&s->pend_txn, __ATOMIC_RELAXED)) {
		for (size_t i = 0; i < n && !rc; i++)
			if (!(rc = table__read(s, txn, dbi, ids[i], &v)))
				rc = fn(ctx, i, &v);
		return rc;
	}
	if ((rc = mdb_cursor_open(txn, s->dbi[dbi], &c)))
		return store__errno(rc);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = ids[i];

		if (!group_has(&g, id)) {
			/* Asked-for ids are mostly dense: the next group is
			 * the likely one, and a step costs less than a search. */
			rc = g.n && id > g.first ? mdb_cursor_get(c, &k, &d, MDB_NEXT) : MDB_NOTFOUND;
			if (!rc && group__dec(&k, &d, &g)) {
				rc = -EBADMSG;
				break;
			}
			if (!rc)
				store__touched(s, d.mv_data, d.mv_size);
			if ((rc || !group_has(&g, id)) && (rc = group_seek(s, c, id, &g)))
				break;
			if (!group_has(&g, id)) {
				rc = -ENOENT;
				break;
			}
		}
		v = (MDB_val){ g.off[id - g.first + 1] - g.off[id - g.first],
			       (void *)(g.data + g.off[id - g.first]) };
		if ((rc = fn(ctx, i, &v)))
			break;
	}
	mdb_cursor_close(c);
	return rc;
}

int table__next_id(struct store *s, MDB_txn *txn, int dbi, uint32_t *next)
{
	MDB_cursor *c;
	MDB_val k, d;
	struct group g;
	int rc;

	*next = 1;
	rc = mdb_cursor_open(txn, s->dbi[dbi], &c);
	if (rc)
		return store__errno(rc);
	rc = mdb_cursor_get(c, &k, &d, MDB_LAST);
	if (!rc && !group__dec(&k, &d, &g))
		*next = g.first + g.n;
	else if (!rc && k.mv_size == 4)
		*next = be32_get(k.mv_data) + 1;
	mdb_cursor_close(c);
	return rc && rc != MDB_NOTFOUND ? store__errno(rc) : 0;
}

char *str__dup(struct store *s, MDB_txn *txn, uint32_t sid)
{
	MDB_val v;
	char *r;

	if (!sid)
		return strdup("");
	if (table__read(s, txn, DB_STR, sid, &v)) {
		errno = ENOENT;
		return NULL;
	}
	r = malloc(v.mv_size + 1);
	if (!r)
		return NULL;
	memcpy(r, v.mv_data, v.mv_size);
	r[v.mv_size] = 0;
	return r;
}

int intern__find(struct store *s, MDB_txn *txn, int dbi, int idx, const void *b,
		 size_t len, uint32_t *id)
{
	uint8_t hk[8];
	MDB_val k = { 8, hk }, d, v;
	MDB_cursor *c;
	int rc;

	*id = 0;
	if (dbi == DB_STR && len == 0)
		return 0; /* "" is string 0 */
	be64_put(hk, hash64(b, len, STORE_HASH_SEED));
	rc = mdb_cursor_open(txn, s->dbi[idx], &c);
	if (rc)
		return store__errno(rc);
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY);
	while (!rc) {
		uint32_t cand;

		if (d.mv_size != 4) {
			rc = -EBADMSG;
			break;
		}
		cand = be32_get(d.mv_data);
		if (!table__read(s, txn, dbi, cand, &v) && v.mv_size == len &&
		    !memcmp(v.mv_data, b, len)) {
			*id = cand;
			break;
		}
		rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_DUP);
	}
	mdb_cursor_close(c);
	if (rc == MDB_NOTFOUND)
		rc = 0;
	return store__errno(rc);
}

int intern__add(struct store *s, MDB_txn *txn, int dbi, const void *b, size_t len,
		uint32_t *next, uint32_t *id)
{
	struct pend_tab *pt = &s->pend[dbi];
	int rc;

	if (!pt->n) {
		if ((rc = table__next_id(s, txn, dbi, &pt->first)))
			return rc;
	}
	if ((uint64_t)pt->first + pt->n >= UINT32_MAX || len > UINT32_MAX / 2 ||
	    pt->len + len > UINT32_MAX / 2)
		return -ENOSPC;
	if (GROW(pt->off, &pt->offcap, pt->n + 2) || GROW(pt->buf, &pt->cap, pt->len + len))
		return -ENOMEM;
	memcpy(pt->buf + pt->len, b, len);
	pt->off[pt->n] = (uint32_t)pt->len;
	pt->len += len;
	pt->off[++pt->n] = (uint32_t)pt->len;
	*id = pt->first + pt->n - 1;
	*next = *id + 1;
	return 0;
}

int intern__flush(struct store *s, MDB_txn *txn)
{
	uint8_t *v = NULL;
	int rc = 0;

	for (int dbi = 0; dbi < DB__N && !rc; dbi++) {
		struct pend_tab *pt = &s->pend[dbi];
		uint32_t i = 0;

		while (!rc && i < pt->n) {
			uint32_t j = i, n;
			size_t bytes = 0, o = 0;
			uint8_t kb[4];
			MDB_val k = { 4, kb }, d;

			/* Up to GROUP_MAX records or GROUP_BYTES bytes (a value
			 * that stays in a leaf page, with little slack). */
			while (j < pt->n && j - i < GROUP_MAX &&
			       (j == i || bytes + (pt->off[j + 1] - pt->off[j]) <= GROUP_BYTES)) {
				bytes += pt->off[j + 1] - pt->off[j];
				j++;
			}
			n = j - i;
			free(v);
			v = malloc(1 + 5 * (size_t)n + bytes);
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			o += varint_put(v + o, n);
			for (uint32_t x = i; x < j; x++)
				o += varint_put(v + o, pt->off[x + 1] - pt->off[x]);
			memcpy(v + o, pt->buf + pt->off[i], bytes);
			o += bytes;
			be32_put(kb, pt->first + i);
			d = (MDB_val){ o, v };
			/* Ids grow: appending fills leaf pages completely. */
			rc = store__errno(mdb_put(txn, s->dbi[dbi], &k, &d, MDB_APPEND));
			i = j;
		}
	}
	free(v);
	intern__discard(s);
	return rc;
}

void intern__discard(struct store *s)
{
	for (int dbi = 0; dbi < DB__N; dbi++) {
		s->pend[dbi].n = 0;
		s->pend[dbi].len = 0;
	}
}

void intern__free(struct store *s)
{
	for (int dbi = 0; dbi < DB__N; dbi++) {
		free(s->pend[dbi].buf);
		free(s->pend[dbi].off);
		memset(&s->pend[dbi], 0, sizeof(s->pend[dbi]));
	}
}

int intern__index(struct store *s, MDB_txn *txn, int idx, const void *b, size_t len,
		  uint32_t id)
{
	uint8_t hk[8], ik[4];
	MDB_val k = { 8, hk }, d = { 4, ik };
	int rc;

	be64_put(hk, hash64(b, len, STORE_HASH_SEED));
	be32_put(ik, id);
	rc = mdb_put(txn, s->dbi[idx], &k, &d, MDB_NODUPDATA);
	return rc == MDB_KEYEXIST ? 0 : store__errno(rc);
}

/* ---- record encodings: varints, so small ids cost a byte or two ---- */

size_t func__enc(const struct sym_func *f, uint8_t *out)
{
	size_t n = 0;

	n += varint_put(out + n, f->name);
	n += varint_put(out + n, f->system_name);
	n += varint_put(out + n, f->filename);
	n += varint_put(out + n, zigzag(f->start_line));
	return n;
}

#define GETV(var)                                        \
	do {                                             \
		size_t _l = varint_get(p, end - p, &(var)); \
		if (!_l)                                 \
			return -EBADMSG;                 \
		p += _l;                                 \
	} while (0)

int func__dec(const void *b, size_t len, struct sym_func *f)
{
	const uint8_t *p = b, *end = p + len;
	uint64_t a, c, d, e;

	GETV(a);
	GETV(c);
	GETV(d);
	GETV(e);
	if (p != end || a > UINT32_MAX || c > UINT32_MAX || d > UINT32_MAX)
		return -EBADMSG;
	f->name = a;
	f->system_name = c;
	f->filename = d;
	f->start_line = unzigzag(e);
	return 0;
}

size_t mapping__enc(const struct sym_mapping *m, uint8_t *out)
{
	size_t n = 0;

	n += varint_put(out + n, m->start);
	n += varint_put(out + n, m->limit);
	n += varint_put(out + n, m->offset);
	n += varint_put(out + n, m->file);
	n += varint_put(out + n, m->build_id);
	out[n++] = m->has_functions;
	return n;
}

int mapping__dec(const void *b, size_t len, struct sym_mapping *m)
{
	const uint8_t *p = b, *end = p + len;
	uint64_t f, bid;

	GETV(m->start);
	GETV(m->limit);
	GETV(m->offset);
	GETV(f);
	GETV(bid);
	if (end - p != 1 || f > UINT32_MAX || bid > UINT32_MAX)
		return -EBADMSG;
	m->file = f;
	m->build_id = bid;
	m->has_functions = *p;
	return 0;
}

size_t loc__enc(uint32_t mapping, uint64_t addr, const struct sym_line *l,
		uint32_t nl, uint8_t *out)
{
	size_t n = 0;

	n += varint_put(out + n, mapping);
	n += varint_put(out + n, addr);
	n += varint_put(out + n, nl);
	for (uint32_t i = 0; i < nl; i++) {
		n += varint_put(out + n, l[i].func);
		n += varint_put(out + n, zigzag(l[i].line));
	}
	return n;
}

int loc__dec_into(const void *b, size_t len, uint32_t *mapping, uint64_t *addr,
		  struct sym_line *l, size_t cap, uint32_t *nl)
{
	const uint8_t *p = b, *end = p + len;
	uint64_t m, n, f, ln;

	*nl = 0;
	GETV(m);
	GETV(*addr);
	GETV(n);
	if (m > UINT32_MAX || n > len || n > cap)
		return -EBADMSG;
	*mapping = m;
	for (uint64_t i = 0; i < n; i++) {
		size_t a = varint_get(p, end - p, &f), c;

		if (!a)
			return -EBADMSG;
		p += a;
		c = varint_get(p, end - p, &ln);
		if (!c || f > UINT32_MAX)
			return -EBADMSG;
		p += c;
		l[i].func = f;
		l[i].line = unzigzag(ln);
	}
	if (p != end)
		return -EBADMSG;
	*nl = n;
	return 0;
}

int loc__dec(const void *b, size_t len, uint32_t *mapping, uint64_t *addr,
	     struct sym_line **lines, uint32_t *nl)
{
	/* A record of len bytes holds at most len / 2 lines (two varints each). */
	struct sym_line *l = calloc(len / 2 + 1, sizeof(*l));
	int rc;

	*lines = NULL;
	*nl = 0;
	if (!l)
		return -ENOMEM;
	rc = loc__dec_into(b, len, mapping, addr, l, len / 2 + 1, nl);
	if (rc || !*nl) {
		free(l);
		return rc;
	}
	*lines = l;
	return 0;
}

size_t stack__enc(const uint32_t *locs, uint32_t n, uint8_t *out)
{
	size_t o = varint_put(out, n);
	uint32_t prev = 0;

	for (uint32_t i = 0; i < n; i++) {
		o += varint_put(out + o, zigzag((int64_t)locs[i] - (int64_t)prev));
		prev = locs[i];
	}
	return o;
}

int stack__dec(const void *b, size_t len, uint32_t *locs, uint32_t cap)
{
	const uint8_t *p = b, *end = p + len;
	uint64_t n, d;
	int64_t cur = 0;

	GETV(n);
	if (n > cap || n > STACK_MAX_DEPTH)
		return -EBADMSG;
	for (uint64_t i = 0; i < n; i++) {
		GETV(d);
		cur += unzigzag(d);
		if (cur <= 0 || cur > UINT32_MAX)
			return -EBADMSG;
		locs[i] = (uint32_t)cur;
	}
	return p == end ? (int)n : -EBADMSG;
}

/* ---- types: name -> id u32, period i64, period type/unit sids, n,
 * (type sid, unit sid) * n, default sample type sid, all big-endian ---- */

int type__dec(const void *b, size_t len, struct store_type *t)
{
	const uint8_t *p = b;

	if (len < 21)
		return -EBADMSG;
	t->id = be32_get(p);
	t->period = (int64_t)be64_get(p + 4);
	t->period_type = be32_get(p + 12);
	t->period_unit = be32_get(p + 16);
	t->nvalues = p[20];
	if (!t->nvalues || t->nvalues > PROF_MAX_VALUES || len != 25 + 8 * t->nvalues)
		return -EBADMSG;
	t->default_type = be32_get(p + 21 + 8 * t->nvalues);
	for (uint32_t i = 0; i < t->nvalues; i++) {
		t->vtype[i] = be32_get(p + 21 + 8 * i);
		t->vunit[i] = be32_get(p + 25 + 8 * i);
	}
	return 0;
}

int type__get(struct store *s, MDB_txn *txn, const char *name, struct store_type *t)
{
	MDB_val k = { strlen(name), (void *)name }, d;
	int rc;

	if (!k.mv_size || k.mv_size > 256)
		return -ENOENT;
	rc = mdb_get(txn, s->dbi[DB_TYPE], &k, &d);
	if (rc)
		return store__errno(rc);
	return type__dec(d.mv_data, d.mv_size, t);
}

int type__put(struct store *s, MDB_txn *txn, const char *name,
	      const struct store_type *t)
{
	uint8_t b[25 + 8 * PROF_MAX_VALUES];
	MDB_val k = { strlen(name), (void *)name }, d = { 25 + 8 * t->nvalues, b };

	if (!k.mv_size || k.mv_size > 256)
		return -EINVAL;
	be32_put(b, t->id);
	be64_put(b + 4, (uint64_t)t->period);
	be32_put(b + 12, t->period_type);
	be32_put(b + 16, t->period_unit);
	b[20] = t->nvalues;
	for (uint32_t i = 0; i < t->nvalues; i++) {
		be32_put(b + 21 + 8 * i, t->vtype[i]);
		be32_put(b + 25 + 8 * i, t->vunit[i]);
	}
	be32_put(b + 21 + 8 * t->nvalues, t->default_type);
	return store__errno(mdb_put(txn, s->dbi[DB_TYPE], &k, &d, 0));
}

void types__free(struct type_ent *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(t[i].name);
	free(t);
}

int types__all(struct store *s, MDB_txn *txn, struct type_ent **out, size_t *n)
{
	MDB_cursor *c;
	MDB_val k, d;
	struct type_ent *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = mdb_cursor_open(txn, s->dbi[DB_TYPE], &c);
	if (rc)
		return store__errno(rc);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		if (GROW(v, &cap, cnt + 1)) {
			rc = -ENOMEM;
			goto out;
		}
		if (type__dec(d.mv_data, d.mv_size, &v[cnt].t)) {
			rc = -EBADMSG;
			goto out;
		}
		v[cnt].name = strndup(k.mv_data, k.mv_size);
		if (!v[cnt].name) {
			rc = -ENOMEM;
			goto out;
		}
		cnt++;
	}
	if (rc == MDB_NOTFOUND)
		rc = 0;
out:
	mdb_cursor_close(c);
	if (rc) {
		types__free(v, cnt);
		return store__errno(rc);
	}
	*out = v;
	*n = cnt;
	return 0;
}
