/*
 * store_query.c - the read side: types, listings, the latest minute and
 * merges into a struct profile. Each call runs in its own read snapshot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

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
	uint8_t kb[BLOCK_KEY_LEN];
	MDB_val k = { BLOCK_KEY_LEN, kb }, d;
	MDB_cursor *c;
	int rc;

	rc = mdb_cursor_open(txn, s->dbi[DB_BLOCK], &c);
	if (rc)
		return store__errno(rc);
	block_key(kb, type, 0, 0);
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	mdb_cursor_close(c);
	if (rc)
		return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
	return k.mv_size == BLOCK_KEY_LEN && be32_get(k.mv_data) == type;
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

/* Does minute key (type, m) hold any series of ss? The cursor is
 * positioned on the key. */
static bool minute_matches(MDB_cursor *c, const struct series_set *ss)
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
		if (np == pcap) {
			size_t nc = pcap ? pcap * 2 : 32;
			char **n2 = realloc(pv, nc * sizeof(*pv));

			if (!n2) {
				rc = -ENOMEM;
				goto out;
			}
			pv = n2;
			pcap = nc;
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
		if (!minute_matches(c, &ss))
			continue;
		if (nm == mcap) {
			size_t nc = mcap ? mcap * 2 : 256;
			int64_t *n2 = realloc(mv, nc * sizeof(*mv));

			if (!n2) {
				rc = -ENOMEM;
				goto out;
			}
			mv = n2;
			mcap = nc;
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
		if (minute_matches(c, &ss)) {
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

/* ---- merge ---- */

struct mctx {
	struct store *s;
	MDB_txn *txn;
	struct profile *p;
	const struct series_set *ss;
	struct u64map str, func, map, loc; /* store id -> profile id */
	struct u64map node;                /* node -> (parent << 32 | profile loc) */
	struct u64map stk;                 /* stack -> offset in locpool */
	uint64_t *locpool;
	size_t npool, cappool;
	struct u64map ser; /* series -> index into serlab */
	struct prof_label (*serlab)[2];
	uint8_t *sernl;
	size_t nser;
	uint64_t *tmp; /* one stack, leaf first */
	size_t ntmp;
	uint32_t comm_key, pid_key; /* store sids */
};

static int m_str(struct mctx *m, uint32_t sid, uint32_t *out)
{
	uint64_t v;
	MDB_val d;
	int rc;

	if (!sid) {
		*out = 0;
		return 0;
	}
	if (u64map__get(&m->str, sid, &v)) {
		*out = (uint32_t)v;
		return 0;
	}
	if ((rc = table__read(m->s, m->txn, DB_STR, sid, &d)))
		return rc == -ENOENT ? -EBADMSG : rc;
	*out = profile__intern(m->p, d.mv_data, d.mv_size);
	if (*out == UINT32_MAX)
		return -ENOMEM;
	return u64map__put(&m->str, sid, *out);
}

static int m_mapping(struct mctx *m, uint32_t id, uint64_t *out)
{
	struct prof_mapping pm = { 0 };
	struct sym_mapping sm;
	uint64_t v;
	MDB_val d;
	int rc;

	if (!id) {
		*out = 0;
		return 0;
	}
	if (u64map__get(&m->map, id, &v)) {
		*out = v;
		return 0;
	}
	if ((rc = table__read(m->s, m->txn, DB_MAP, id, &d)) ||
	    (rc = mapping__dec(d.mv_data, d.mv_size, &sm)))
		return rc == -ENOENT ? -EBADMSG : rc;
	pm.start = sm.start;
	pm.limit = sm.limit;
	pm.offset = sm.offset;
	pm.has_functions = sm.has_functions;
	if ((rc = m_str(m, sm.file, &pm.file)) || (rc = m_str(m, sm.build_id, &pm.build_id)))
		return rc;
	*out = profile__add_mapping(m->p, &pm);
	if (!*out)
		return -ENOMEM;
	return u64map__put(&m->map, id, *out);
}

static int m_function(struct mctx *m, uint32_t id, uint64_t *out)
{
	struct prof_function pf;
	struct sym_func sf;
	uint64_t v;
	MDB_val d;
	int rc;

	if (u64map__get(&m->func, id, &v)) {
		*out = v;
		return 0;
	}
	if ((rc = table__read(m->s, m->txn, DB_FUNC, id, &d)) ||
	    (rc = func__dec(d.mv_data, d.mv_size, &sf)))
		return rc == -ENOENT ? -EBADMSG : rc;
	pf.start_line = sf.start_line;
	if ((rc = m_str(m, sf.name, &pf.name)) || (rc = m_str(m, sf.system_name, &pf.system_name)) ||
	    (rc = m_str(m, sf.filename, &pf.filename)))
		return rc;
	*out = profile__add_function(m->p, &pf);
	if (!*out)
		return -ENOMEM;
	return u64map__put(&m->func, id, *out);
}

static int m_location(struct mctx *m, uint32_t id, uint64_t *out)
{
	struct prof_location pl = { 0 };
	struct sym_line *sl = NULL;
	struct prof_line *pln = NULL;
	uint32_t mapping, nl;
	uint64_t v;
	MDB_val d;
	int rc;

	if (u64map__get(&m->loc, id, &v)) {
		*out = v;
		return 0;
	}
	if ((rc = table__read(m->s, m->txn, DB_LOC, id, &d)) ||
	    (rc = loc__dec(d.mv_data, d.mv_size, &mapping, &pl.address, &sl, &nl)))
		return rc == -ENOENT ? -EBADMSG : rc;
	if ((rc = m_mapping(m, mapping, &pl.mapping_id)))
		goto out;
	if (nl) {
		pln = calloc(nl, sizeof(*pln));
		if (!pln) {
			rc = -ENOMEM;
			goto out;
		}
	}
	for (uint32_t i = 0; i < nl; i++) {
		pln[i].line = sl[i].line;
		if ((rc = m_function(m, sl[i].func, &pln[i].function_id)))
			goto out;
	}
	pl.nlines = nl;
	pl.lines = pln;
	*out = profile__add_location(m->p, &pl);
	rc = *out ? u64map__put(&m->loc, id, *out) : -ENOMEM;
out:
	free(sl);
	free(pln);
	return rc;
}

/* Locations of a stack, leaf first, into m->tmp; returns the count. */
static int m_stack(struct mctx *m, uint32_t stack, uint64_t **locs, uint32_t *n)
{
	uint64_t v;
	uint32_t node = stack;
	size_t cnt = 0;
	int rc;

	if (u64map__get(&m->stk, stack, &v)) {
		*locs = m->locpool + (v >> 16);
		*n = v & 0xffff;
		return 0;
	}
	while (node) {
		uint32_t parent;
		uint64_t ploc;

		if (u64map__get(&m->node, node, &v)) {
			parent = v >> 32;
			ploc = (uint32_t)v;
		} else {
			MDB_val d;
			uint32_t loc;

			if ((rc = table__read(m->s, m->txn, DB_STACK, node, &d)))
				return rc == -ENOENT ? -EBADMSG : rc;
			if (d.mv_size != 8)
				return -EBADMSG;
			parent = be32_get(d.mv_data);
			loc = be32_get((uint8_t *)d.mv_data + 4);
			if ((rc = m_location(m, loc, &ploc)))
				return rc;
			if (ploc > UINT32_MAX)
				return -E2BIG;
			if ((rc = u64map__put(&m->node, node, (uint64_t)parent << 32 | ploc)))
				return rc;
		}
		if (cnt >= 0xffff || parent >= node)
			return -EBADMSG; /* parents are always older: no cycles */
		if (cnt == m->ntmp) {
			size_t nc = m->ntmp ? m->ntmp * 2 : 128;
			uint64_t *nt = realloc(m->tmp, nc * sizeof(*nt));

			if (!nt)
				return -ENOMEM;
			m->tmp = nt;
			m->ntmp = nc;
		}
		m->tmp[cnt++] = ploc;
		node = parent;
	}
	if (m->npool + cnt > m->cappool) {
		size_t nc = m->cappool ? m->cappool * 2 : 4096;
		uint64_t *np;

		while (nc < m->npool + cnt)
			nc *= 2;
		np = realloc(m->locpool, nc * sizeof(*np));
		if (!np)
			return -ENOMEM;
		m->locpool = np;
		m->cappool = nc;
	}
	memcpy(m->locpool + m->npool, m->tmp, cnt * sizeof(uint64_t));
	if ((rc = u64map__put(&m->stk, stack, (uint64_t)m->npool << 16 | cnt)))
		return rc;
	*locs = m->locpool + m->npool;
	*n = cnt;
	m->npool += cnt;
	return 0;
}

static bool m_want(void *ctx, uint32_t series)
{
	struct mctx *m = ctx;

	return series_set__has(m->ss, series);
}

/* Sample labels of a series: its comm and pid. */
static int m_series(struct mctx *m, uint32_t series, size_t *idx)
{
	struct series_rec r;
	uint64_t v;
	int rc;

	if (u64map__get(&m->ser, series, &v)) {
		*idx = v;
		return 0;
	}
	if ((rc = series__read(m->s, m->txn, series, &r)))
		return rc == -ENOENT ? -EBADMSG : rc;
	if (m->nser % 64 == 0) {
		void *a = realloc(m->serlab, (m->nser + 64) * sizeof(*m->serlab));
		void *b;

		if (!a)
			return -ENOMEM;
		m->serlab = a;
		b = realloc(m->sernl, m->nser + 64);
		if (!b)
			return -ENOMEM;
		m->sernl = b;
	}
	m->sernl[m->nser] = 0;
	for (uint32_t i = 0; i < r.npairs; i++) {
		uint32_t ns = be32_get(r.pairs + 8 * i), vs = be32_get(r.pairs + 8 * i + 4);
		struct prof_label *l;

		if (!ns || (ns != m->comm_key && ns != m->pid_key) || m->sernl[m->nser] >= 2)
			continue;
		l = &m->serlab[m->nser][m->sernl[m->nser]++];
		memset(l, 0, sizeof(*l));
		if ((rc = m_str(m, ns, &l->key)) || (rc = m_str(m, vs, &l->str)))
			return rc;
		if (!l->str) /* an empty value cannot be a string label */
			m->sernl[m->nser]--;
	}
	*idx = m->nser++;
	return u64map__put(&m->ser, series, *idx);
}

static int m_entry(void *ctx, uint32_t series, uint32_t stack, const int64_t *v, uint32_t nv)
{
	struct mctx *m = ctx;
	uint64_t *locs;
	uint32_t n;
	size_t si;
	int rc;

	if (nv != m->p->nvalues)
		return -EBADMSG;
	if ((rc = m_series(m, series, &si)) || (rc = m_stack(m, stack, &locs, &n)))
		return rc;
	return profile__add_sample(m->p, locs, n, m->serlab[si], m->sernl[si], v);
}

static int m_block(struct mctx *m, const MDB_val *d)
{
	int rc = block__decode(d->mv_data, d->mv_size, m_want, m_entry, m, NULL);

	if (rc == -EBADMSG)
		pr_err("store: merge: a corrupt block or reference (run proffs check)");
	return rc;
}

/* Whole hours in [from, to) whose rollup is present and clean. */
static bool hour_rollup(struct mctx *m, uint32_t type, uint32_t h, MDB_val *d)
{
	uint8_t kb[8];
	MDB_val k = { 8, kb }, x;

	key2(kb, type, h);
	if (!mdb_get(m->txn, m->s->dbi[DB_DIRTY], &k, &x))
		return false;
	return !mdb_get(m->txn, m->s->dbi[DB_ROLLUP], &k, d);
}

int store__merge(struct store *s, const struct store_sel *sel, int64_t from, int64_t to,
		 struct profile **out)
{
	struct mctx m = { .s = s };
	struct series_set ss = { 0 };
	struct store_type t;
	const char *types[PROF_MAX_VALUES], *units[PROF_MAX_VALUES];
	char *tstr[PROF_MAX_VALUES] = { 0 }, *ustr[PROF_MAX_VALUES] = { 0 };
	char *pt = NULL, *pu = NULL;
	MDB_cursor *c = NULL;
	uint8_t kb[BLOCK_KEY_LEN];
	MDB_val k, d;
	int rc;

	*out = NULL;
	if (from < 0)
		from = 0;
	m.p = profile__new();
	if (!m.p)
		return -ENOMEM;
	rc = store__txn_begin(s, true, &m.txn);
	if (rc) {
		profile__free(m.p);
		return rc;
	}
	if ((rc = type__get(s, m.txn, sel->type, &t)))
		goto out;
	for (uint32_t i = 0; i < t.nvalues; i++) {
		tstr[i] = str__dup(s, m.txn, t.vtype[i]);
		ustr[i] = str__dup(s, m.txn, t.vunit[i]);
		if (!tstr[i] || !ustr[i]) {
			rc = -EBADMSG;
			goto out;
		}
		types[i] = tstr[i];
		units[i] = ustr[i];
	}
	if ((rc = profile__set_value_types(m.p, t.nvalues, types, units)))
		goto out;
	pt = str__dup(s, m.txn, t.period_type);
	pu = str__dup(s, m.txn, t.period_unit);
	if (!pt || !pu) {
		rc = -EBADMSG;
		goto out;
	}
	m.p->period_type.type = profile__intern_str(m.p, pt);
	m.p->period_type.unit = profile__intern_str(m.p, pu);
	m.p->period = t.period;
	m.p->time_nanos = from * 1000000000;
	m.p->duration_nanos = to > from ? (to - from) * 1000000000 : 0;
	if (to <= from)
		goto done;
	if ((rc = series__select(s, m.txn, t.id, sel, &ss)))
		goto out;
	if (!ss.all && !ss.n)
		goto done;
	m.ss = &ss;
	if ((rc = intern__find(s, m.txn, DB_STR, DB_STR_IDX, "comm", 4, &m.comm_key)) ||
	    (rc = intern__find(s, m.txn, DB_STR, DB_STR_IDX, "pid", 3, &m.pid_key)))
		goto out;

	rc = mdb_cursor_open(m.txn, s->dbi[DB_BLOCK], &c);
	if (rc) {
		rc = store__errno(rc);
		goto out;
	}
	block_key(kb, t.id, (uint64_t)from, 0);
	k = (MDB_val){ BLOCK_KEY_LEN, kb };
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	while (!rc) {
		uint64_t st;
		uint32_t h;
		MDB_val rd;

		if (k.mv_size != BLOCK_KEY_LEN || be32_get(k.mv_data) != t.id)
			break;
		st = be64_get((uint8_t *)k.mv_data + 4);
		if (st >= (uint64_t)to)
			break;
		h = (uint32_t)(st / HOUR_S);
		/* A whole hour inside the range with a clean rollup: one
		 * block instead of hundreds. */
		if ((uint64_t)h * HOUR_S >= (uint64_t)from &&
		    (uint64_t)(h + 1) * HOUR_S <= (uint64_t)to && hour_rollup(&m, t.id, h, &rd)) {
			if ((rc = m_block(&m, &rd)))
				goto out;
			block_key(kb, t.id, (uint64_t)(h + 1) * HOUR_S, 0);
			k = (MDB_val){ BLOCK_KEY_LEN, kb };
			rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
			continue;
		}
		if ((rc = m_block(&m, &d)))
			goto out;
		rc = mdb_cursor_get(c, &k, &d, MDB_NEXT);
	}
	if (rc && rc != MDB_NOTFOUND) {
		rc = store__errno(rc);
		goto out;
	}
done:
	rc = 0;
	*out = m.p;
	m.p = NULL;
out:
	mdb_cursor_close(c);
	store__txn_abort(s, m.txn);
	profile__free(m.p);
	series_set__free(&ss);
	for (int i = 0; i < PROF_MAX_VALUES; i++) {
		free(tstr[i]);
		free(ustr[i]);
	}
	free(pt);
	free(pu);
	u64map__free(&m.str);
	u64map__free(&m.func);
	u64map__free(&m.map);
	u64map__free(&m.loc);
	u64map__free(&m.node);
	u64map__free(&m.stk);
	u64map__free(&m.ser);
	free(m.locpool);
	free(m.serlab);
	free(m.sernl);
	free(m.tmp);
	return rc;
}
