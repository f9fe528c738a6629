/*
 * store_check.c - proffs check: walks every database and every
 * cross-reference, one line per problem.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_int.h"

#define MAX_LINES 200

struct cctx {
	struct store *s;
	MDB_txn *txn;
	FILE *f;
	long problems;
	struct u64map stacks_ok, series_type;
	struct type_ent *types;
	size_t ntypes;
	/* current block */
	const char *what;
	uint32_t btype;
	uint64_t bstart;
	bool is_rollup;
	/* the entries of the rollup being checked */
	struct blk_entry *re;
	size_t nre, capre;
};

static void problem(struct cctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void problem(struct cctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->problems++ >= MAX_LINES) {
		if (c->problems == MAX_LINES + 1)
			fprintf(c->f, "... (further problems not shown)\n");
		return;
	}
	va_start(ap, fmt);
	vfprintf(c->f, fmt, ap);
	va_end(ap);
	fputc('\n', c->f);
}

static bool exists(struct cctx *c, int db, uint32_t id)
{
	MDB_val v;

	return !table__read(c->s, c->txn, db, id, &v);
}

static bool str_ok(struct cctx *c, uint32_t sid)
{
	return !sid || exists(c, DB_STR, sid);
}

/* Checks one record of an interned table: it decodes and refers to
 * existing records. */
static void check_record(struct cctx *c, int db, uint32_t id, const MDB_val *rec)
{
	const MDB_val *d = rec;

	if (db == DB_FUNC) {
		struct sym_func f;

		if (func__dec(d->mv_data, d->mv_size, &f))
			problem(c, "func %u: undecodable", id);
		else if (!str_ok(c, f.name) || !str_ok(c, f.system_name) ||
			 !str_ok(c, f.filename))
			problem(c, "func %u: refers to a missing string", id);
	} else if (db == DB_MAP) {
		struct sym_mapping m;

		if (mapping__dec(d->mv_data, d->mv_size, &m))
			problem(c, "map %u: undecodable", id);
		else if (!str_ok(c, m.file) || !str_ok(c, m.build_id))
			problem(c, "map %u: refers to a missing string", id);
	} else if (db == DB_LOC) {
		struct sym_line *l;
		uint32_t mapping, nl;
		uint64_t addr;

		if (loc__dec(d->mv_data, d->mv_size, &mapping, &addr, &l, &nl)) {
			problem(c, "loc %u: undecodable", id);
		} else {
			if (mapping && !exists(c, DB_MAP, mapping))
				problem(c, "loc %u: missing mapping %u", id, mapping);
			for (uint32_t i = 0; i < nl; i++)
				if (!exists(c, DB_FUNC, l[i].func))
					problem(c, "loc %u: missing function %u", id, l[i].func);
			free(l);
		}
	} else if (db == DB_STACK) {
		uint32_t locs[STACK_MAX_DEPTH];
		int n = stack__dec(d->mv_data, d->mv_size, locs, STACK_MAX_DEPTH);

		if (n < 0)
			problem(c, "stack %u: undecodable", id);
		for (int i = 0; i < n; i++)
			if (!exists(c, DB_LOC, locs[i])) {
				problem(c, "stack %u: missing location %u", id, locs[i]);
				break;
			}
	}
}

/* Interned id tables: records decode and refer to existing records. The
 * strings' index (idx >= 0; label strings only, so it may hold fewer
 * entries than records) points at records of matching hash; the other
 * tables have no index since format 4 (their old databases stay empty). */
static int check_interned(struct cctx *c, int db, int idx)
{
	const char *name = store_db_names[db];
	MDB_cursor *cur;
	MDB_val k, d, v;
	uint64_t nrec = 0, nidx = 0;
	uint32_t next_id = 0;
	int rc;

	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[db], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		struct group g;

		if (group__dec(&k, &d, &g)) {
			problem(c, "%s: undecodable group (key of %zu bytes)", name, k.mv_size);
			continue;
		}
		if (!g.first)
			problem(c, "%s: record with reserved id 0", name);
		if (g.first < next_id)
			problem(c, "%s: group at %u overlaps the previous one", name, g.first);
		next_id = g.first + g.n;
		for (uint32_t r = 0; r < g.n; r++) {
			MDB_val rec = { g.off[r + 1] - g.off[r], (void *)(g.data + g.off[r]) };

			nrec++;
			check_record(c, db, g.first + r, &rec);
		}
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return store__errno(rc);

	if (idx < 0)
		return 0;
	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[idx], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		uint32_t id;

		nidx++;
		if (k.mv_size != 8 || d.mv_size != 4) {
			problem(c, "%s: malformed entry", store_db_names[idx]);
			continue;
		}
		id = be32_get(d.mv_data);
		if (table__read(c->s, c->txn, db, id, &v))
			problem(c, "%s: points at missing %s %u", store_db_names[idx], name, id);
		else if (hash64(v.mv_data, v.mv_size, STORE_HASH_SEED) != be64_get(k.mv_data))
			problem(c, "%s: hash of %s %u does not match", store_db_names[idx], name, id);
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return store__errno(rc);
	if (nidx > nrec)
		problem(c, "%s: %llu records but %llu index entries", name,
			(unsigned long long)nrec, (unsigned long long)nidx);
	return 0;
}

static bool type_known(struct cctx *c, uint32_t id, uint32_t *nv)
{
	for (size_t i = 0; i < c->ntypes; i++)
		if (c->types[i].t.id == id) {
			if (nv)
				*nv = c->types[i].t.nvalues;
			return true;
		}
	return false;
}

static int check_types(struct cctx *c)
{
	int rc = types__all(c->s, c->txn, &c->types, &c->ntypes);

	if (rc == -EBADMSG) {
		problem(c, "type: undecodable record");
		return 0;
	}
	if (rc)
		return rc;
	for (size_t i = 0; i < c->ntypes; i++) {
		const struct store_type *t = &c->types[i].t;

		for (size_t j = 0; j < i; j++)
			if (c->types[j].t.id == t->id)
				problem(c, "type %s: id %u also used by %s", c->types[i].name, t->id,
					c->types[j].name);
		if (!str_ok(c, t->period_type) || !str_ok(c, t->period_unit) ||
		    !str_ok(c, t->default_type))
			problem(c, "type %s: missing period strings", c->types[i].name);
		for (uint32_t v = 0; v < t->nvalues; v++)
			if (!str_ok(c, t->vtype[v]) || !str_ok(c, t->vunit[v]))
				problem(c, "type %s: missing value type strings", c->types[i].name);
	}
	return 0;
}

static int check_series(struct cctx *c)
{
	MDB_cursor *cur;
	MDB_val k, d, v;
	uint64_t n = 0, next = 0;
	int rc;

	meta__get_u64(c->s, c->txn, "series_next", &next);
	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[DB_SERIES], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		struct series_rec r;
		uint32_t id;
		uint8_t hk[8];
		MDB_val ik = { 8, hk }, iv;

		n++;
		if (k.mv_size != 4 || series__dec(d.mv_data, d.mv_size, &r)) {
			problem(c, "series: malformed record");
			continue;
		}
		id = be32_get(k.mv_data);
		if (!id || id >= next)
			problem(c, "series %u: id not below the counter %llu", id,
				(unsigned long long)next);
		if (!type_known(c, r.type, NULL))
			problem(c, "series %u: unknown type %u", id, r.type);
		u64map__put(&c->series_type, id, r.type);
		for (uint32_t i = 0; i < r.npairs; i++) {
			uint32_t ns = be32_get(r.pairs + 8 * i), vs = be32_get(r.pairs + 8 * i + 4);
			uint8_t pk[12];
			MDB_val pkv = { 12, pk }, pd = { 4, k.mv_data };
			MDB_cursor *pc;

			if (!exists(c, DB_STR, ns) || !str_ok(c, vs))
				problem(c, "series %u: label refers to a missing string", id);
			be32_put(pk, r.type);
			memcpy(pk + 4, r.pairs + 8 * i, 8);
			if (mdb_cursor_open(c->txn, c->s->dbi[DB_POST], &pc))
				continue;
			if (mdb_cursor_get(pc, &pkv, &pd, MDB_GET_BOTH))
				problem(c, "series %u: no posting for its label %u=%u", id, ns, vs);
			mdb_cursor_close(pc);
		}
		be64_put(hk, hash64(d.mv_data, d.mv_size - 8, STORE_HASH_SEED));
		{
			MDB_cursor *ic;

			iv = (MDB_val){ 4, k.mv_data };
			if (!mdb_cursor_open(c->txn, c->s->dbi[DB_SERIES_IDX], &ic)) {
				if (mdb_cursor_get(ic, &ik, &iv, MDB_GET_BOTH))
					problem(c, "series %u: not in series_idx", id);
				mdb_cursor_close(ic);
			}
		}
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return store__errno(rc);
	{
		MDB_stat st;

		mdb_stat(c->txn, c->s->dbi[DB_SERIES_IDX], &st);
		if (st.ms_entries != n)
			problem(c, "series: %llu records but %llu index entries",
				(unsigned long long)n, (unsigned long long)st.ms_entries);
	}
	/* Postings point at series carrying the pair. */
	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[DB_POST], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		struct series_rec r;
		uint32_t sid;
		bool found = false;

		if (k.mv_size != 12 || d.mv_size != 4) {
			problem(c, "post: malformed entry");
			continue;
		}
		sid = be32_get(d.mv_data);
		if (table__read(c->s, c->txn, DB_SERIES, sid, &v) ||
		    series__dec(v.mv_data, v.mv_size, &r)) {
			problem(c, "post: points at missing series %u", sid);
			continue;
		}
		for (uint32_t i = 0; i < r.npairs && !found; i++)
			found = !memcmp(r.pairs + 8 * i, (uint8_t *)k.mv_data + 4, 8);
		if (!found || r.type != be32_get(k.mv_data))
			problem(c, "post: series %u does not carry the posting's label", sid);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
}

static bool stack_ok(struct cctx *c, uint32_t stack)
{
	uint64_t v;

	if (u64map__get(&c->stacks_ok, stack, &v))
		return true;
	if (!exists(c, DB_STACK, stack))
		return false;
	u64map__put(&c->stacks_ok, stack, 1);
	return true;
}

static int chk_entry(void *ctx, uint32_t series, uint32_t stack, const int64_t *v, uint32_t nv)
{
	struct cctx *c = ctx;
	uint64_t t;

	if (c->is_rollup && nv <= PROF_MAX_VALUES) {
		if (GROW(c->re, &c->capre, c->nre + 1))
			return -ENOMEM;
		c->re[c->nre] = (struct blk_entry){ .series = series, .stack = stack };
		memcpy(c->re[c->nre].v, v, nv * sizeof(*v));
		c->nre++;
	}

	if (!u64map__get(&c->series_type, series, &t) || t != c->btype)
		problem(c, "%s %u/%llu: series %u missing or of another type", c->what, c->btype,
			(unsigned long long)c->bstart, series);
	if (!stack_ok(c, stack))
		problem(c, "%s %u/%llu: missing stack %u", c->what, c->btype,
			(unsigned long long)c->bstart, stack);
	return 0;
}

static bool chk_series(void *ctx, uint32_t series)
{
	struct cctx *c = ctx;

	if (!c->is_rollup) {
		uint8_t mk[8], sb[4];
		MDB_val k = { 8, mk }, d = { 4, sb };
		MDB_cursor *mc;

		key2(mk, c->btype, (uint32_t)(c->bstart / 60));
		be32_put(sb, series);
		if (!mdb_cursor_open(c->txn, c->s->dbi[DB_MINUTE], &mc)) {
			if (mdb_cursor_get(mc, &k, &d, MDB_GET_BOTH))
				problem(c, "block %u/%llu: series %u missing from the minute index",
					c->btype, (unsigned long long)c->bstart, series);
			mdb_cursor_close(mc);
		}
	}
	return true;
}

/* A clean rollup must hold exactly the sum of its hour's raw blocks. */
static int check_rollup_sum(struct cctx *c, uint32_t nv)
{
	uint8_t dk[8];
	MDB_val k = { 8, dk }, d;
	struct blk_entry *e = NULL;
	size_t n = 0;
	bool same;
	int rc;

	key2(dk, c->btype, (uint32_t)(c->bstart / HOUR_S));
	if (!mdb_get(c->txn, c->s->dbi[DB_DIRTY], &k, &d))
		return 0; /* stale by design until rebuilt */
	rc = rollup__entries(c->s, c->txn, c->btype, nv, (uint32_t)(c->bstart / HOUR_S), NULL,
			     &e, &n);
	if (rc == -EBADMSG)
		return 0; /* the bad raw block is reported on its own */
	if (rc)
		return rc;
	same = n == c->nre;
	for (size_t i = 0; same && i < n; i++)
		same = e[i].series == c->re[i].series && e[i].stack == c->re[i].stack &&
		       !memcmp(e[i].v, c->re[i].v, nv * sizeof(int64_t));
	if (!same)
		problem(c, "rollup %u/%llu: differs from the sum of its hour's raw blocks", c->btype,
			(unsigned long long)c->bstart);
	free(e);
	return 0;
}

static int check_blocks(struct cctx *c, int db)
{
	MDB_cursor *cur;
	MDB_val k, d;
	int rc;

	c->is_rollup = db == DB_ROLLUP;
	c->what = c->is_rollup ? "rollup" : "block";
	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[db], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		struct block_hdr h;
		uint32_t nv = 0;
		int r;

		if (k.mv_size != (c->is_rollup ? 8u : (unsigned)BLOCK_KEY_LEN)) {
			problem(c, "%s: malformed key", c->what);
			continue;
		}
		c->btype = be32_get(k.mv_data);
		c->bstart = c->is_rollup ? (uint64_t)be32_get((uint8_t *)k.mv_data + 4) * HOUR_S
					 : be64_get((uint8_t *)k.mv_data + 4);
		if (!type_known(c, c->btype, &nv)) {
			problem(c, "%s %u/%llu: unknown type", c->what, c->btype,
				(unsigned long long)c->bstart);
			continue;
		}
		c->nre = 0;
		r = block__decode(d.mv_data, d.mv_size, chk_series, chk_entry, c, &h);
		if (r) {
			problem(c, "%s %u/%llu: cannot decode (%s)", c->what, c->btype,
				(unsigned long long)c->bstart, strerror(-r));
			continue;
		}
		if (h.nvalues != nv)
			problem(c, "%s %u/%llu: %u values, type has %u", c->what, c->btype,
				(unsigned long long)c->bstart, h.nvalues, nv);
		if (c->is_rollup) {
			/* A rollup needs raw blocks in its hour. */
			uint8_t bk[BLOCK_KEY_LEN];
			MDB_val x = { BLOCK_KEY_LEN, bk }, y;
			MDB_cursor *bc;

			block_key(bk, c->btype, c->bstart, 0);
			if (!mdb_cursor_open(c->txn, c->s->dbi[DB_BLOCK], &bc)) {
				if (mdb_cursor_get(bc, &x, &y, MDB_SET_RANGE) ||
				    be32_get(x.mv_data) != c->btype ||
				    be64_get((uint8_t *)x.mv_data + 4) >= c->bstart + HOUR_S)
					problem(c, "rollup %u/%llu: no raw blocks in its hour",
						c->btype, (unsigned long long)c->bstart);
				mdb_cursor_close(bc);
			}
			if ((r = check_rollup_sum(c, nv)))
				return r;
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
}

static int check_minutes(struct cctx *c)
{
	MDB_cursor *cur;
	MDB_val k, d;
	int rc;

	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[DB_MINUTE], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		uint64_t t;
		uint32_t type, min, sid;
		uint8_t bk[BLOCK_KEY_LEN];
		MDB_val x = { BLOCK_KEY_LEN, bk }, y;
		MDB_cursor *bc;

		if (k.mv_size != 8 || d.mv_size != 4) {
			problem(c, "minute: malformed entry");
			continue;
		}
		type = be32_get(k.mv_data);
		min = be32_get((uint8_t *)k.mv_data + 4);
		sid = be32_get(d.mv_data);
		if (!u64map__get(&c->series_type, sid, &t) || t != type)
			problem(c, "minute %u/%u: series %u missing or of another type", type, min,
				sid);
		block_key(bk, type, (uint64_t)min * 60, 0);
		if (!mdb_cursor_open(c->txn, c->s->dbi[DB_BLOCK], &bc)) {
			if (mdb_cursor_get(bc, &x, &y, MDB_SET_RANGE) ||
			    be32_get(x.mv_data) != type ||
			    be64_get((uint8_t *)x.mv_data + 4) >= (uint64_t)min * 60 + 60)
				problem(c, "minute %u/%u: no block in that minute", type, min);
			mdb_cursor_close(bc);
		}
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
}

static int check_dirty(struct cctx *c)
{
	MDB_cursor *cur;
	MDB_val k, d;
	int rc;

	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[DB_DIRTY], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT))
		if (k.mv_size != 8 || !type_known(c, be32_get(k.mv_data), NULL))
			problem(c, "dirty: malformed entry or unknown type");
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
}

/* Late names (store_late.c): each names an existing location stored
 * without lines, with the same mapping and address, and functions that
 * exist. Binaries: a build id key and a record of the right shape. */
static int check_late(struct cctx *c)
{
	MDB_cursor *cur;
	MDB_val k, d, v;
	int rc;

	if (c->s->absent[DB_LATE])
		return 0;
	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[DB_LATE], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		struct sym_line *l = NULL, none[1];
		uint32_t map, nl, lmap, lnl, id;
		uint64_t addr, laddr;

		if (k.mv_size != 4) {
			problem(c, "late: malformed key");
			continue;
		}
		id = be32_get(k.mv_data);
		if (loc__dec(d.mv_data, d.mv_size, &map, &addr, &l, &nl) || !nl) {
			problem(c, "late %u: undecodable or without lines", id);
			free(l);
			continue;
		}
		if (table__read(c->s, c->txn, DB_LOC, id, &v))
			problem(c, "late %u: no such location", id);
		else if (loc__dec_into(v.mv_data, v.mv_size, &lmap, &laddr, none, 0, &lnl) || lnl)
			problem(c, "late %u: the location has lines of its own", id);
		else if (lmap != map || laddr != addr)
			problem(c, "late %u: mapping or address differs from the location's", id);
		for (uint32_t i = 0; i < nl; i++)
			if (!exists(c, DB_FUNC, l[i].func))
				problem(c, "late %u: function %u missing", id, l[i].func);
		free(l);
	}
	mdb_cursor_close(cur);
	if (rc != MDB_NOTFOUND)
		return store__errno(rc);
	if (c->s->absent[DB_BINS])
		return 0;
	if ((rc = mdb_cursor_open(c->txn, c->s->dbi[DB_BINS], &cur)))
		return store__errno(rc);
	for (rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
		char id[130];

		snprintf(id, sizeof(id), "%.*s", (int)(k.mv_size < 129 ? k.mv_size : 129),
			 (const char *)k.mv_data);
		if (k.mv_size > 128 || !store__build_id_ok(id) || d.mv_size <= 48 ||
		    d.mv_size > 48 + 24 * STORE_BIN_LOADS + 4096)
			problem(c, "bins: malformed entry %s", id);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : store__errno(rc);
}

int store__check(struct store *s, void *fp)
{
	struct cctx c = { .s = s, .f = fp ? fp : stderr };
	int rc;

	rc = store__txn_begin(s, true, &c.txn);
	if (rc)
		return rc;
	if ((rc = check_interned(&c, DB_STR, DB_STR_IDX)) ||
	    (rc = check_interned(&c, DB_FUNC, -1)) ||
	    (rc = check_interned(&c, DB_MAP, -1)) ||
	    (rc = check_interned(&c, DB_LOC, -1)) ||
	    (rc = check_interned(&c, DB_STACK, -1)) ||
	    (rc = check_types(&c)) || (rc = check_series(&c)) ||
	    (rc = check_blocks(&c, DB_BLOCK)) || (rc = check_blocks(&c, DB_ROLLUP)) ||
	    (rc = check_minutes(&c)) || (rc = check_dirty(&c)) || (rc = check_late(&c)))
		goto out;
	rc = c.problems > INT32_MAX ? INT32_MAX : (int)c.problems;
out:
	store__txn_abort(s, c.txn);
	types__free(c.types, c.ntypes);
	u64map__free(&c.stacks_ok);
	free(c.re);
	u64map__free(&c.series_type);
	return rc;
}
