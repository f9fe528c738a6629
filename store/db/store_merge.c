/*
 * store_merge.c - the read side's merge: the blocks of a time range and
 * selection summed into one struct profile, in its own read snapshot.
 *
 * Entries of every block are first summed per (series, stack) (an hour of
 * raw blocks repeats most pairs hundreds of times). Then everything the
 * sums name is resolved in phases, one walk of each table (m_resolve):
 * series to label sets (their comm, pid and offcpu state), stacks to
 * locations, locations to mappings and functions, and all of those to
 * strings. Last, each (label set, stack) becomes one profile sample.
 * The profile takes store symbols without looking for duplicates: ids are
 * distinct, and content repeated under two ids (a symbol the writer had
 * forgotten, store_writer_cache.c) stays two rows, as pprof allows; every
 * render names frames by their text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "store/db/store_merge_int.h"

/*
 * The sums' index: open addressing over entry numbers, the keys read from
 * m->akey. 4 bytes a slot where a u64map takes 16: the busy hour's 40k
 * sums fault in 0.5 MB instead of 2 MB (a fresh page costs ~10 us here).
 */
static int sums_resize(struct mctx *m, size_t cap)
{
	uint32_t *ns = calloc(cap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < m->nagg; i++) {
		size_t j = hash_mix64(m->akey[i]) & (cap - 1);

		while (ns[j])
			j = (j + 1) & (cap - 1);
		ns[j] = (uint32_t)i + 1;
	}
	free(m->sumix);
	m->sumix = ns;
	m->sumcap = cap;
	return 0;
}

/* Room for n sums without a resize. */
static int sums_reserve(struct mctx *m, size_t n)
{
	size_t cap = m->sumcap ? m->sumcap : 1024;

	while ((n + 1) * 2 > cap)
		cap *= 2;
	return cap == m->sumcap ? 0 : sums_resize(m, cap);
}

/* The entry summing key k: true and *i, or false and *slot for it. */
static bool sums_find(const struct mctx *m, uint64_t k, uint64_t *i, size_t *slot)
{
	size_t j = hash_mix64(k) & (m->sumcap - 1);

	for (; m->sumix[j]; j = (j + 1) & (m->sumcap - 1))
		if (m->akey[m->sumix[j] - 1] == k) {
			*i = m->sumix[j] - 1;
			return true;
		}
	*slot = j;
	return false;
}

static int m_add(void *ctx, uint32_t series, uint32_t stack, const int64_t *v, uint32_t nv)
{
	struct mctx *m = ctx;
	uint64_t k = (uint64_t)series << 32 | stack, i;
	size_t slot;
	int rc;

	if (m->nagg >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((rc = sums_reserve(m, m->nagg + 1)))
		return rc;
	if (!sums_find(m, k, &i, &slot)) {
		size_t cap = m->capagg; /* akey and aval (nv a row) grow in step */

		if (GROW(m->akey, &cap, m->nagg + 1) ||
		    grow((void **)&m->aval, &m->capagg, m->nagg + 1, nv * sizeof(*m->aval)))
			return -ENOMEM;
		i = m->nagg++;
		m->akey[i] = k;
		memset(m->aval + i * nv, 0, nv * sizeof(int64_t));
		m->sumix[slot] = (uint32_t)i + 1;
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

/*
 * The order of n keys: out[0..n) gets their indexes, sorted by key, equal
 * keys in index order (stable). An LSD radix sort over 11-bit digits,
 * skipping the digits no key sets (series, stack and label set ids are
 * small): three or four passes for a busy hour's 40k sums, where a
 * comparison sort takes milliseconds. Returns 0 or -ENOMEM.
 */
static int keys_order(const uint64_t *key, size_t n, uint32_t *out)
{
	uint64_t all = 0;
	uint32_t *tmp, cnt[2048];

	for (size_t i = 0; i < n; i++) {
		out[i] = (uint32_t)i;
		all |= key[i];
	}
	tmp = n ? malloc(n * sizeof(*tmp)) : NULL;
	if (n && !tmp)
		return -ENOMEM;
	for (int sh = 0; sh < 64; sh += 11) {
		uint32_t sum = 0;

		if (!((all >> sh) & 2047))
			continue;
		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(key[out[i]] >> sh) & 2047]++;
		for (size_t d = 0; d < 2048; d++) {
			uint32_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(key[out[i]] >> sh) & 2047]++] = out[i];
		memcpy(out, tmp, n * sizeof(*out));
	}
	free(tmp);
	return 0;
}

/*
 * Series of one label set (a pid's series under two units or exes) make
 * one sample per stack. keep[o], for the sums in canonical order ord, is
 * 1 for a non-zero sum on entry; on return only the first of each (label
 * set, stack) keeps it, the others added to it. Grouped by a second
 * stable sort of the (label set, stack) keys, where a map of every pair
 * seen took 32-64 bytes a sum; this takes 16. Returns 0 or -errno.
 */
static int fold_sums(struct mctx *m, const uint32_t *ord, uint8_t *keep)
{
	uint32_t nv = m->p->nvalues, *grp = NULL;
	uint64_t *key = malloc((m->nagg ? m->nagg : 1) * sizeof(*key)), v;
	int rc = -ENOMEM;

	if (!key || !(grp = malloc((m->nagg ? m->nagg : 1) * sizeof(*grp))))
		goto out;
	for (size_t o = 0; o < m->nagg; o++) {
		/* (a zero sum's series is not resolved: it joins no group) */
		if (!keep[o]) {
			key[o] = 0;
			continue;
		}
		if (!u64map__get(&m->ser, m->akey[ord[o]] >> 32, &v)) {
			rc = -EBADMSG;
			goto out;
		}
		key[o] = v << 32 | (uint32_t)m->akey[ord[o]];
	}
	if ((rc = keys_order(key, m->nagg, grp)))
		goto out;
	for (size_t g = 0; g < m->nagg;) {
		size_t end = g, first = SIZE_MAX;

		while (end < m->nagg && key[grp[end]] == key[grp[g]])
			end++;
		for (; g < end; g++) {
			size_t i = ord[grp[g]];

			if (!keep[grp[g]])
				continue;
			if (first == SIZE_MAX) {
				first = i;
				continue;
			}
			keep[grp[g]] = 0;
			for (uint32_t k = 0; k < nv; k++)
				m->aval[first * nv + k] += m->aval[i * nv + k];
		}
	}
	rc = 0;
out:
	free(key);
	free(grp);
	return rc;
}

/* The summed entries become the profile's samples, in the order of their
 * (series, stack) keys: a canonical order, so a range renders to the same
 * bytes whichever blocks summed it (raw batches, or the hour's rollup
 * once the hour has closed: SPEC §2, a complete range never changes). */
static int m_emit(struct mctx *m)
{
	uint32_t nv = m->p->nvalues, *ord;
	uint8_t *keep = NULL;
	size_t nkeep = 0;
	int rc;

	if ((rc = m_resolve(m)))
		return rc;
	/* (the sums are all found: their index goes before the samples come) */
	free(m->sumix);
	m->sumix = NULL;
	m->sumcap = 0;
	ord = malloc((m->nagg ? m->nagg : 1) * sizeof(*ord));
	if (!ord)
		return -ENOMEM;
	if ((rc = keys_order(m->akey, m->nagg, ord)))
		goto out;
	if (!(keep = malloc(m->nagg ? m->nagg : 1))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t o = 0; o < m->nagg; o++)
		keep[o] = m_nonzero(m, ord[o]);
	if (m->nls < m->ser.n && (rc = fold_sums(m, ord, keep)))
		goto out;
	for (size_t o = 0; o < m->nagg; o++)
		nkeep += keep[o];
	/* (one array of the samples' size, not the copies of doubling it) */
	if ((rc = profile__reserve(m->p, 0, 0, 0, 0, nkeep)))
		goto out;
	for (size_t o = 0; o < m->nagg; o++) {
		size_t i = ord[o];
		uint32_t stack = (uint32_t)m->akey[i];
		uint64_t v, j;

		if (!keep[o])
			continue;
		if (!u64map__get(&m->ser, m->akey[i] >> 32, &v) ||
		    !idmap_get(&m->stk, stack, &j)) {
			rc = -EBADMSG;
			goto out;
		}
		/* Distinct (label set, stack) pairs: distinct samples. */
		if ((rc = profile__append_sample(m->p, m->locpool + (j >> 16), j & 0xffff,
						 m->plab[(uint32_t)v], m->nlab[(uint32_t)v],
						 m->aval + i * nv)))
			goto out;
	}
out:
	free(ord);
	free(keep);
	return rc;
}

/* The series the selection holds: block__decode's filter. */
static bool m_want(void *ctx, uint32_t series)
{
	struct mctx *m = ctx;

	return series_set__has(m->ss, series);
}

static int m_block(struct mctx *m, const MDB_val *d)
{
	int rc;

	size_t raw;

	if (m->snap)
		snap__block(m->snap);
	/* The first block sizes the sums: an entry takes ~6 bytes of
	 * payload (7 in a batch, 6.2 in a busy hour's rollup), and a merge of
	 * one rollup would otherwise double the map five times, and copy the
	 * keys and values as often (their old and new arrays both held). */
	if (!m->sumcap && !m->snap && !block__raw_len(d->mv_data, d->mv_size, &raw)) {
		size_t cap = m->capagg;

		if ((rc = sums_reserve(m, raw / 6)))
			return rc;
		if (GROW(m->akey, &cap, raw / 6) ||
		    grow((void **)&m->aval, &m->capagg, raw / 6, m->p->nvalues * sizeof(*m->aval)))
			return -ENOMEM;
	}
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

/* Store string sid is p's string idx (sid 0: nothing). */
static int str_known(struct mctx *m, uint32_t sid, uint32_t idx)
{
	return sid ? idmap_put(&m->str, sid, idx) : 0;
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
	    (rc = idmap_init(&m.stk, s, m.txn, DB_STACK)) ||
	    (rc = idset_init(&m.need, m.stk.n > m.loc.n ? m.stk.n : m.loc.n)) ||
	    (rc = idset_init(&m.mneed, m.map.n)) || (rc = idset_init(&m.fneed, m.func.n)) ||
	    (rc = idset_init(&m.sneed, m.str.n)))
		goto out;
	/* The type's strings are in p already (interned by content above):
	 * the resolution must not add them again. */
	for (uint32_t i = 0; i < t.nvalues && !rc; i++)
		if (!(rc = str_known(&m, t.vtype[i], m.p->sample_types[i].type)))
			rc = str_known(&m, t.vunit[i], m.p->sample_types[i].unit);
	if (rc || (rc = str_known(&m, t.period_type, m.p->period_type.type)) ||
	    (rc = str_known(&m, t.period_unit, m.p->period_type.unit)) ||
	    (rc = str_known(&m, t.default_type, m.p->default_sample_type)))
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
		/* (the blocks are read once: a window's worth of them need
		 * not be resident at once) */
		store__touched(s, d.mv_data, d.mv_size);
		rc = mdb_cursor_get(c, &k, &d, MDB_NEXT);
	}
	if (rc && rc != MDB_NOTFOUND) {
		rc = store__errno(rc);
		goto out;
	}
	store__unmap(s);
	if ((m.snap && (rc = snap__fold(m.snap, m_add, &m))) || (rc = m_emit(&m)))
		goto out;
	store__unmap(s); /* the tables' pages m_emit read */
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
	free(m.sumix);
	idmap_free(&m.stk);
	free(m.spool);
	idset_free(&m.need);
	idset_free(&m.mneed);
	idset_free(&m.fneed);
	idset_free(&m.sneed);
	free(m.plab);
	free(m.nlab);
	free(m.akey);
	free(m.aval);
	snap__free(m.snap);
	return rc;
}
