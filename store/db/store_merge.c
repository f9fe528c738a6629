/*
 * store_merge.c - the read side's merge: the blocks of a time range and
 * selection summed into one struct profile, in its own read snapshot.
 *
 * Entries of every block are first summed per (label set, stack) in a
 * hash map (an hour of raw blocks repeats most pairs hundreds of times),
 * then each distinct pair becomes one profile sample. Label sets are the
 * (comm, pid) of the series.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/db/store_int.h"

/* Store id -> value for one merge: a dense array over the ids the
 * snapshot holds (ids are allocated sequentially; the pages of a large,
 * lazily zeroed array cost only where touched), a hash map beyond. */
struct idmap {
	uint64_t *a; /* bit 63 set = present */
	uint32_t n;
	struct u64map m;
};

#define IDMAP_SET (1ULL << 63)

static bool idmap_get(const struct idmap *x, uint32_t id, uint64_t *v)
{
	if (id < x->n) {
		if (!(x->a[id] & IDMAP_SET))
			return false;
		*v = x->a[id] & ~IDMAP_SET;
		return true;
	}
	return u64map__get(&x->m, id, v);
}

static int idmap_put(struct idmap *x, uint32_t id, uint64_t v)
{
	if (id < x->n) {
		x->a[id] = v | IDMAP_SET;
		return 0;
	}
	return u64map__put(&x->m, id, v);
}

/* Sized by the last id of table dbi in this snapshot. */
static int idmap_init(struct idmap *x, struct store *s, MDB_txn *txn, int dbi)
{
	uint32_t next;
	int rc;

	memset(x, 0, sizeof(*x));
	if ((rc = table__next_id(s, txn, dbi, &next)))
		return rc;
	x->n = next;
	if (x->n > (64u << 20))
		x->n = 64u << 20; /* beyond: the hash map */
	if (x->n && !(x->a = calloc(x->n, sizeof(*x->a))))
		return -ENOMEM;
	return 0;
}

static void idmap_free(struct idmap *x)
{
	free(x->a);
	u64map__free(&x->m);
	memset(x, 0, sizeof(*x));
}

struct mctx {
	struct store *s;
	MDB_txn *txn;
	struct profile *p;
	const struct series_set *ss;
	struct idmap str, func, map, loc; /* store id -> profile id */
	uint32_t *spath;                   /* one stack's store locations */
	size_t spcap;
	struct idmap stk; /* stack -> (offset in locpool << 16 | length) */
	uint64_t *locpool;
	size_t npool, cappool;
	struct u64map ser;   /* series -> label set index */
	struct hidx lsidx;   /* (comm, pid, state) sids -> label set index */
	uint32_t (*lskey)[3]; /* per label set: its (comm, pid, state) sids */
	struct prof_label (*lab)[3];
	uint8_t *nlab;
	size_t nls, caplab;
	struct u64map agg; /* (label set << 32 | stack) -> entry */
	uint64_t *akey;
	int64_t *aval;
	size_t nagg, capagg;
	uint32_t comm_key, pid_key, state_key; /* store sids (0: not in this store) */
	void *zd;                   /* ZSTD_DCtx for this call */
	uint8_t *rbuf;              /* one symbol record (symcache__read) */
	size_t rcap;
	struct snap_acc *snap;      /* heap, goroutine: means (store_snap.c) */
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
	if (idmap_get(&m->str, sid, &v)) {
		*out = (uint32_t)v;
		return 0;
	}
	if ((rc = symcache__read(m->s, m->txn, DB_STR, sid, &m->rbuf, &m->rcap, &d)))
		return rc == -ENOENT ? -EBADMSG : rc;
	*out = profile__intern(m->p, d.mv_data, d.mv_size);
	if (*out == UINT32_MAX)
		return -ENOMEM;
	return idmap_put(&m->str, sid, *out);
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
	if (idmap_get(&m->map, id, &v)) {
		*out = v;
		return 0;
	}
	if ((rc = symcache__read(m->s, m->txn, DB_MAP, id, &m->rbuf, &m->rcap, &d)) ||
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
	return idmap_put(&m->map, id, *out);
}

static int m_function(struct mctx *m, uint32_t id, uint64_t *out)
{
	struct prof_function pf;
	struct sym_func sf;
	uint64_t v;
	MDB_val d;
	int rc;

	if (idmap_get(&m->func, id, &v)) {
		*out = v;
		return 0;
	}
	if ((rc = symcache__read(m->s, m->txn, DB_FUNC, id, &m->rbuf, &m->rcap, &d)) ||
	    (rc = func__dec(d.mv_data, d.mv_size, &sf)))
		return rc == -ENOENT ? -EBADMSG : rc;
	pf.start_line = sf.start_line;
	if ((rc = m_str(m, sf.name, &pf.name)) || (rc = m_str(m, sf.system_name, &pf.system_name)) ||
	    (rc = m_str(m, sf.filename, &pf.filename)))
		return rc;
	*out = profile__add_function(m->p, &pf);
	if (!*out)
		return -ENOMEM;
	return idmap_put(&m->func, id, *out);
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

	if (idmap_get(&m->loc, id, &v)) {
		*out = v;
		return 0;
	}
	if ((rc = symcache__read(m->s, m->txn, DB_LOC, id, &m->rbuf, &m->rcap, &d)) ||
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
	rc = *out ? idmap_put(&m->loc, id, *out) : -ENOMEM;
out:
	free(sl);
	free(pln);
	return rc;
}

/* Store locations of a stack, leaf first, into m->spath. */
static int m_path(struct mctx *m, uint32_t stack, uint32_t *n)
{
	MDB_val d;
	int rc = stackcache__get(m->s, stack, &m->spath, &m->spcap, n);

	if (rc)
		return rc < 0 ? rc : 0;
	if ((rc = table__read(m->s, m->txn, DB_STACK, stack, &d)))
		return rc == -ENOENT ? -EBADMSG : rc;
	/* n is the first varint; at most the record's length. */
	if (GROW(m->spath, &m->spcap, d.mv_size))
		return -ENOMEM;
	rc = stack__dec(d.mv_data, d.mv_size, m->spath, m->spcap);
	if (rc < 0)
		return rc;
	*n = rc;
	stackcache__put(m->s, stack, m->spath, *n);
	return 0;
}

/* Profile locations of a stack, leaf first: *locs points into m->locpool
 * (valid until the next call). */
static int m_stack(struct mctx *m, uint32_t stack, uint64_t **locs, uint32_t *n)
{
	uint64_t v;
	int rc;

	if (idmap_get(&m->stk, stack, &v)) {
		*locs = m->locpool + (v >> 16);
		*n = v & 0xffff;
		return 0;
	}
	if ((rc = m_path(m, stack, n)))
		return rc;
	if (GROW(m->locpool, &m->cappool, m->npool + *n))
		return -ENOMEM;
	for (uint32_t i = 0; i < *n; i++)
		if ((rc = m_location(m, m->spath[i], &m->locpool[m->npool + i])))
			return rc;
	if ((rc = idmap_put(&m->stk, stack, (uint64_t)m->npool << 16 | *n)))
		return rc;
	*locs = m->locpool + m->npool;
	m->npool += *n;
	return 0;
}

static bool m_want(void *ctx, uint32_t series)
{
	struct mctx *m = ctx;

	return series_set__has(m->ss, series);
}

static bool lskey_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct mctx *m = ctx;

	return !memcmp(m->lskey[idx], key, sizeof(m->lskey[idx]));
}

/* Label set of a series: its comm and pid, and offcpu's state (the
 * sample labels pprof filters on: -tagfocus state=disk). */
static int m_series(struct mctx *m, uint32_t series, uint32_t *ls)
{
	struct series_rec r;
	uint32_t comm = 0, pid = 0, state = 0, key[3], idx;
	uint64_t v, h;
	int rc;

	if (u64map__get(&m->ser, series, &v)) {
		*ls = (uint32_t)v;
		return 0;
	}
	if ((rc = series__read(m->s, m->txn, series, &r)))
		return rc == -ENOENT ? -EBADMSG : rc;
	for (uint32_t i = 0; i < r.npairs; i++) {
		uint32_t ns = be32_get(r.pairs + 8 * i), vs = be32_get(r.pairs + 8 * i + 4);

		if (ns && ns == m->comm_key)
			comm = vs;
		else if (ns && ns == m->pid_key)
			pid = vs;
		else if (ns && ns == m->state_key)
			state = vs;
	}
	key[0] = comm;
	key[1] = pid;
	key[2] = state;
	h = hash64(key, sizeof(key), 0x15e7);
	idx = hidx__find(&m->lsidx, h, lskey_eq, m, key);
	if (idx != UINT32_MAX) {
		v = idx;
	} else {
		uint8_t n = 0;
		size_t cap = m->caplab, cap2 = m->caplab; /* lab, lskey and nlab grow in step */

		if (GROW(m->lab, &cap, m->nls + 1) || GROW(m->lskey, &cap2, m->nls + 1) ||
		    GROW(m->nlab, &m->caplab, m->nls + 1))
			return -ENOMEM;
		memcpy(m->lskey[m->nls], key, sizeof(key));
		/* An empty value cannot be a string label: left out. */
		if (comm) {
			m->lab[m->nls][n] = (struct prof_label){ 0 };
			if ((rc = m_str(m, m->comm_key, &m->lab[m->nls][n].key)) ||
			    (rc = m_str(m, comm, &m->lab[m->nls][n].str)))
				return rc;
			n++;
		}
		if (pid) {
			m->lab[m->nls][n] = (struct prof_label){ 0 };
			if ((rc = m_str(m, m->pid_key, &m->lab[m->nls][n].key)) ||
			    (rc = m_str(m, pid, &m->lab[m->nls][n].str)))
				return rc;
			n++;
		}
		if (state) {
			m->lab[m->nls][n] = (struct prof_label){ 0 };
			if ((rc = m_str(m, m->state_key, &m->lab[m->nls][n].key)) ||
			    (rc = m_str(m, state, &m->lab[m->nls][n].str)))
				return rc;
			n++;
		}
		m->nlab[m->nls] = n;
		v = m->nls++;
		if ((rc = hidx__insert(&m->lsidx, h, (uint32_t)v)))
			return rc;
	}
	*ls = (uint32_t)v;
	return u64map__put(&m->ser, series, v);
}

static int m_add(void *ctx, uint32_t series, uint32_t stack, const int64_t *v, uint32_t nv)
{
	struct mctx *m = ctx;
	uint32_t ls;
	uint64_t k, i;
	int rc;

	if ((rc = m_series(m, series, &ls)))
		return rc;
	k = (uint64_t)ls << 32 | stack;
	if (!u64map__get(&m->agg, k, &i)) {
		size_t cap = m->capagg; /* akey and aval (nv a row) grow in step */

		if (GROW(m->akey, &cap, m->nagg + 1) ||
		    grow((void **)&m->aval, &m->capagg, m->nagg + 1, nv * sizeof(*m->aval)))
			return -ENOMEM;
		i = m->nagg++;
		m->akey[i] = k;
		memset(m->aval + i * nv, 0, nv * sizeof(int64_t));
		if ((rc = u64map__put(&m->agg, k, i)))
			return rc;
	}
	for (uint32_t j = 0; j < nv; j++)
		m->aval[i * nv + j] += v[j];
	return 0;
}

static int m_entry(void *ctx, uint32_t series, uint32_t stack, const int64_t *v, uint32_t nv)
{
	struct mctx *m = ctx;

	if (nv != m->p->nvalues)
		return -EBADMSG;
	return m->snap ? snap__add(m->snap, series, stack, v) : m_add(m, series, stack, v, nv);
}

/* The summed entries become the profile's samples, in first-seen order
 * (deterministic: blocks are read in key order). */
static int m_emit(struct mctx *m)
{
	uint32_t nv = m->p->nvalues;
	int rc;

	for (size_t i = 0; i < m->nagg; i++) {
		uint32_t ls = m->akey[i] >> 32, n;
		uint64_t *locs;
		bool nz = false;

		for (uint32_t j = 0; j < nv; j++)
			nz |= m->aval[i * nv + j] != 0;
		if (!nz)
			continue;
		if ((rc = m_stack(m, (uint32_t)m->akey[i], &locs, &n)))
			return rc;
		if ((rc = profile__add_sample(m->p, locs, n, m->lab[ls], m->nlab[ls],
					      m->aval + i * nv)))
			return rc;
	}
	return 0;
}

static int m_block(struct mctx *m, const MDB_val *d)
{
	int rc;

	if (m->snap)
		snap__block(m->snap);
	rc = block__decode_dctx(m->zd, d->mv_data, d->mv_size, m_want, m_entry, m, NULL);

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

/* Why str__dup failed: a string the type names is missing (a corrupt
 * store) or memory ran out, which must not read as corruption. */
static int dup_err(void)
{
	return errno == ENOMEM ? -ENOMEM : -EBADMSG;
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
	MDB_cursor *c = NULL, *mc = NULL;
	uint8_t kb[BLOCK_KEY_LEN];
	uint64_t skip_checked = UINT64_MAX;
	MDB_val k, d;
	int rc;

	*out = NULL;
	/* Times far outside any data (year 2242+) are clamped so that the
	 * window in nanoseconds cannot overflow. */
	if (from < 0)
		from = 0;
	if (to > (int64_t)1 << 33)
		to = (int64_t)1 << 33;
	if (from > (int64_t)1 << 33)
		from = (int64_t)1 << 33;
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
			rc = dup_err();
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
		rc = dup_err();
		goto out;
	}
	if (t.default_type) {
		char *dt = str__dup(s, m.txn, t.default_type);

		if (!dt) {
			rc = dup_err();
			goto out;
		}
		m.p->default_sample_type = profile__intern_str(m.p, dt);
		free(dt);
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
	if ((rc = idmap_init(&m.str, s, m.txn, DB_STR)) ||
	    (rc = idmap_init(&m.func, s, m.txn, DB_FUNC)) ||
	    (rc = idmap_init(&m.map, s, m.txn, DB_MAP)) ||
	    (rc = idmap_init(&m.loc, s, m.txn, DB_LOC)) ||
	    (rc = idmap_init(&m.stk, s, m.txn, DB_STACK)))
		goto out;
	if ((rc = intern__find(s, m.txn, DB_STR, DB_STR_IDX, "comm", 4, &m.comm_key)) ||
	    (rc = intern__find(s, m.txn, DB_STR, DB_STR_IDX, "pid", 3, &m.pid_key)) ||
	    (rc = intern__find(s, m.txn, DB_STR, DB_STR_IDX, "state", 5, &m.state_key)))
		goto out;

	if (snap__type(sel->type) && !(m.snap = snap__new(t.nvalues))) {
		rc = -ENOMEM;
		goto out;
	}
	m.zd = ZSTD_createDCtx();
	if (!m.zd) {
		rc = -ENOMEM;
		goto out;
	}
	rc = mdb_cursor_open(m.txn, s->dbi[DB_BLOCK], &c);
	if (!rc && !ss.all)
		rc = mdb_cursor_open(m.txn, s->dbi[DB_MINUTE], &mc);
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
		if (!m.snap && (uint64_t)h * HOUR_S >= (uint64_t)from &&
		    (uint64_t)(h + 1) * HOUR_S <= (uint64_t)to && hour_rollup(&m, t.id, h, &rd)) {
			if ((rc = m_block(&m, &rd)))
				goto out;
			block_key(kb, t.id, (uint64_t)(h + 1) * HOUR_S, 0);
			k = (MDB_val){ BLOCK_KEY_LEN, kb };
			rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
			continue;
		}
		/* A narrow selection skips minutes none of its series has
		 * data in (the minute index says so without decoding). */
		if (mc && st / 60 != skip_checked) {
			uint8_t mk[8];
			MDB_val x = { 8, mk }, y;

			skip_checked = st / 60;
			key2(mk, t.id, (uint32_t)(st / 60));
			if (mdb_cursor_get(mc, &x, &y, MDB_SET_KEY) || !series_set__in_minute(mc, &ss)) {
				block_key(kb, t.id, (st / 60 + 1) * 60, 0);
				k = (MDB_val){ BLOCK_KEY_LEN, kb };
				rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
				continue;
			}
		}
		if ((rc = m_block(&m, &d)))
			goto out;
		rc = mdb_cursor_get(c, &k, &d, MDB_NEXT);
	}
	if (rc && rc != MDB_NOTFOUND) {
		rc = store__errno(rc);
		goto out;
	}
	if ((m.snap && (rc = snap__fold(m.snap, m_add, &m))) || (rc = m_emit(&m)))
		goto out;
done:
	rc = 0;
	*out = m.p;
	m.p = NULL;
out:
	mdb_cursor_close(c);
	mdb_cursor_close(mc);
	ZSTD_freeDCtx(m.zd);
	store__txn_abort(s, m.txn);
	profile__free(m.p);
	series_set__free(&ss);
	for (int i = 0; i < PROF_MAX_VALUES; i++) {
		free(tstr[i]);
		free(ustr[i]);
	}
	free(pt);
	free(pu);
	idmap_free(&m.str);
	idmap_free(&m.func);
	idmap_free(&m.map);
	idmap_free(&m.loc);
	u64map__free(&m.ser);
	hidx__free(&m.lsidx);
	free(m.lskey);
	u64map__free(&m.agg);
	free(m.spath);
	idmap_free(&m.stk);
	free(m.locpool);
	free(m.lab);
	free(m.nlab);
	free(m.akey);
	free(m.aval);
	free(m.rbuf);
	snap__free(m.snap);
	return rc;
}
