/*
 * store_merge_resolve.c - the merge's second half: everything the summed
 * entries name, read from the store in phases (store_merge.c sums them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_merge_int.h"

/*
 * Resolution, in phases: the distinct stacks the summed entries name, then
 * the locations those stacks hold, then their mappings and functions, then
 * the strings those name. Each phase collects the ids it needs (an idset:
 * a bitmap over the snapshot's ids, so they come out ascending and
 * distinct) and reads them with one cursor walk of its table
 * (table__read_many), decoding each group of 32 records once. Reading id
 * by id as the stacks were met cost a B-tree search and a group decode per
 * record, in an order that jumped across the table: two fifths of a cold
 * render of a busy hour. Profile ids then follow store ids (ascending).
 */

/* One phase's decoded records, parallel to its idset's ids. */
struct rctx {
	struct mctx *m;
	struct idset *next[2]; /* what the records name: collected here */
	struct sym_mapping *maps;
	struct sym_func *funcs;
	struct rloc {
		uint64_t addr;
		uint32_t map, off, nl; /* mapping; lines[off, off + nl) */
	} *locs;
	struct sym_line *lines;
	size_t nlines, caplines;
};

/* A string, mapping, function or location id the profile lacks yet. */
static int want(struct idset *x, const struct idmap *have, uint32_t id)
{
	uint64_t v;

	return !id || idmap_get(have, id, &v) ? 0 : idset_add(x, id);
}

static int r_stack(void *ctx, size_t i, const MDB_val *d)
{
	struct rctx *r = ctx;
	struct mctx *m = r->m;
	uint32_t stack = m->need.ids[i];
	int n, rc;

	/* n is the first varint; at most the record's length. */
	if (GROW(m->spool, &m->capspool, m->nspool + d->mv_size))
		return -ENOMEM;
	n = stack__dec(d->mv_data, d->mv_size, m->spool + m->nspool, d->mv_size);
	if (n < 0 || n > 0xffff)
		return -EBADMSG;
	for (int j = 0; j < n; j++)
		if ((rc = want(r->next[0], &m->loc, m->spool[m->nspool + j])))
			return rc;
	if ((rc = idmap_put(&m->stk, stack, (uint64_t)m->nspool << 16 | (uint32_t)n)))
		return rc;
	m->nspool += (size_t)n;
	return 0;
}

static int r_location(void *ctx, size_t i, const MDB_val *d)
{
	struct rctx *r = ctx;
	struct rloc *l = &r->locs[i];
	size_t cap = d->mv_size / 2 + 1;
	int rc;

	if (GROW(r->lines, &r->caplines, r->nlines + cap))
		return -ENOMEM;
	if ((rc = loc__dec_into(d->mv_data, d->mv_size, &l->map, &l->addr, r->lines + r->nlines,
				cap, &l->nl)))
		return rc;
	l->off = (uint32_t)r->nlines;
	if ((rc = want(r->next[0], &r->m->map, l->map)))
		return rc;
	for (uint32_t j = 0; j < l->nl; j++)
		if ((rc = want(r->next[1], &r->m->func, r->lines[l->off + j].func)))
			return rc;
	r->nlines += l->nl;
	return 0;
}

static int r_mapping(void *ctx, size_t i, const MDB_val *d)
{
	struct rctx *r = ctx;
	int rc;

	if ((rc = mapping__dec(d->mv_data, d->mv_size, &r->maps[i])) ||
	    (rc = want(r->next[0], &r->m->str, r->maps[i].file)) ||
	    (rc = want(r->next[0], &r->m->str, r->maps[i].build_id)))
		return rc;
	return 0;
}

static int r_function(void *ctx, size_t i, const MDB_val *d)
{
	struct rctx *r = ctx;
	int rc;

	if ((rc = func__dec(d->mv_data, d->mv_size, &r->funcs[i])) ||
	    (rc = want(r->next[0], &r->m->str, r->funcs[i].name)) ||
	    (rc = want(r->next[0], &r->m->str, r->funcs[i].system_name)) ||
	    (rc = want(r->next[0], &r->m->str, r->funcs[i].filename)))
		return rc;
	return 0;
}

static int r_string(void *ctx, size_t i, const MDB_val *d)
{
	struct rctx *r = ctx;
	uint32_t v = profile__intern(r->m->p, d->mv_data, d->mv_size);

	if (v == UINT32_MAX)
		return -ENOMEM;
	return idmap_put(&r->m->str, r->m->sneed.ids[i], v);
}

/* A store id the phases resolved: its profile id. */
static uint64_t have(const struct idmap *x, uint32_t id)
{
	uint64_t v = 0;

	if (id)
		idmap_get(x, id, &v);
	return v;
}

static int m_series(struct mctx *m, uint32_t series, uint32_t *ls);
static int m_labels(struct mctx *m);

/*
 * Names found later (store_late.c): a location read without lines takes
 * the lines of its late record, whose functions join the function phase.
 * The record repeats the location's mapping and address; one that does
 * not (a corrupt store) is ignored rather than trusted. A store with no
 * late record (most) pays one mdb_stat. The mappings of named locations
 * go into *maps: the profile says they have functions, so pprof does not
 * try to symbolize them again from a binary it may not have.
 */
static int m_late(struct mctx *m, struct rctx *r, const uint32_t *lids, size_t nloc,
		  struct u64map *maps)
{
	struct store *s = m->s;
	MDB_stat st;
	int rc;

	if (s->absent[DB_LATE] || mdb_stat(m->txn, s->dbi[DB_LATE], &st) || !st.ms_entries)
		return 0;
	for (size_t i = 0; i < nloc; i++) {
		struct rloc *l = &r->locs[i];
		uint8_t kb[4];
		MDB_val k = { 4, kb }, d;
		uint32_t map, nl;
		uint64_t addr;
		size_t cap;

		if (l->nl)
			continue;
		be32_put(kb, lids[i]);
		if (mdb_get(m->txn, s->dbi[DB_LATE], &k, &d))
			continue;
		cap = d.mv_size / 2 + 1;
		if (GROW(r->lines, &r->caplines, r->nlines + cap))
			return -ENOMEM;
		if (loc__dec_into(d.mv_data, d.mv_size, &map, &addr, r->lines + r->nlines, cap, &nl) ||
		    map != l->map || addr != l->addr || !nl)
			continue;
		l->off = (uint32_t)r->nlines;
		l->nl = nl;
		for (uint32_t j = 0; j < nl; j++)
			if ((rc = want(r->next[1], &m->func, r->lines[l->off + j].func)))
				return rc;
		r->nlines += nl;
		if (map && (rc = u64map__put(maps, map, 1)))
			return rc;
	}
	return 0;
}

/* Makes every stack the summed entries name resolvable (m->stk, then
 * m->spool/m->locpool hold its profile location ids). Called once per
 * merge. */
int m_resolve(struct mctx *m)
{
	struct rctx r = { .m = m };
	struct idset *ls = &m->need, *ms = &m->mneed, *fs = &m->fneed, *ss = &m->sneed;
	struct sym_mapping *maps = NULL;
	struct sym_func *funcs = NULL;
	size_t nloc = 0, nmap = 0, nfunc = 0;
	const uint32_t *lids = NULL;
	struct u64map late_maps = { 0 }; /* mappings some late name named */
	int rc;

	/* Series (their label sets, whose strings join the string phase) and
	 * the distinct stacks. */
	for (size_t i = 0; i < m->nagg; i++) {
		uint32_t set;

		if (m_nonzero(m, i) &&
		    ((rc = m_series(m, (uint32_t)(m->akey[i] >> 32), &set)) ||
		     (rc = idset_add(ls, (uint32_t)m->akey[i]))))
			return rc;
	}
	/* (the last of the series reads' pages: store__touched bounds them
	 * while they go, this ends the phase with none) */
	store__unmap(m->s);
	for (size_t i = 0; i < m->nls; i++) {
		const uint32_t keys[3] = { m->comm_key, m->pid_key, m->state_key };

		for (int j = 0; j < 3; j++)
			if (m->lskey[i][j] && ((rc = want(ss, &m->str, keys[j])) ||
					       (rc = want(ss, &m->str, m->lskey[i][j]))))
				return rc;
	}
	if ((rc = idset_list(ls)))
		return rc;
	/* The stacks' locations go into the same set: idset_list cleared
	 * its bitmap and r_stack reads only the list. */
	r.next[0] = ls;
	if ((rc = table__read_many(m->s, m->txn, DB_STACK, ls->ids, ls->nids, r_stack, &r)))
		goto out;
	store__unmap(m->s);
	/* Locations. */
	if ((rc = idset_list(ls)))
		goto out;
	/* (ls->ids stays the locations' list: nothing lists ls again) */
	nloc = ls->nids;
	lids = ls->ids;
	if (!(r.locs = malloc((nloc + 1) * sizeof(*r.locs)))) {
		rc = -ENOMEM;
		goto out;
	}
	r.next[0] = ms;
	r.next[1] = fs;
	if ((rc = table__read_many(m->s, m->txn, DB_LOC, lids, nloc, r_location, &r)) ||
	    (rc = m_late(m, &r, lids, nloc, &late_maps)))
		goto out;
	store__unmap(m->s);
	/* Mappings and functions, then the strings they name. */
	if ((rc = idset_list(ms)) || (rc = idset_list(fs)))
		goto out;
	nmap = ms->nids;
	nfunc = fs->nids;
	rc = -ENOMEM;
	maps = calloc(nmap + 1, sizeof(*maps));
	funcs = calloc(nfunc + 1, sizeof(*funcs));
	if (!maps || !funcs)
		goto out;
	r.maps = maps;
	r.funcs = funcs;
	r.next[0] = ss;
	/* Store ids are distinct, and the idmaps keep out what p has
	 * already: no lookups. */
	profile__distinct(m->p, true);
	if ((rc = table__read_many(m->s, m->txn, DB_MAP, ms->ids, nmap, r_mapping, &r)) ||
	    (rc = table__read_many(m->s, m->txn, DB_FUNC, fs->ids, nfunc, r_function, &r)) ||
	    (rc = idset_list(ss)) ||
	    (rc = profile__reserve(m->p, ss->nids, nmap, nfunc, nloc, m->nagg)) ||
	    (rc = table__read_many(m->s, m->txn, DB_STR, ss->ids, ss->nids, r_string, &r)))
		goto out;
	/* The profile's mappings, functions and locations, in store order. */
	for (size_t i = 0; i < nmap; i++) {
		uint64_t named;
		struct prof_mapping pm = { .start = maps[i].start, .limit = maps[i].limit,
					   .offset = maps[i].offset,
					   .has_functions = maps[i].has_functions ||
							    u64map__get(&late_maps, ms->ids[i], &named),
					   .file = (uint32_t)have(&m->str, maps[i].file),
					   .build_id = (uint32_t)have(&m->str, maps[i].build_id) };
		uint64_t id = profile__add_mapping(m->p, &pm);

		if (!id || (rc = idmap_put(&m->map, ms->ids[i], id)))
			goto fail;
	}
	for (size_t i = 0; i < nfunc; i++) {
		struct prof_function pf = { .start_line = funcs[i].start_line,
					    .name = (uint32_t)have(&m->str, funcs[i].name),
					    .system_name = (uint32_t)have(&m->str, funcs[i].system_name),
					    .filename = (uint32_t)have(&m->str, funcs[i].filename) };
		uint64_t id = profile__add_function(m->p, &pf);

		if (!id || (rc = idmap_put(&m->func, fs->ids[i], id)))
			goto fail;
	}
	for (size_t i = 0; i < nloc; i++) {
		struct prof_line ln[64], *pln = ln;
		const struct rloc *l = &r.locs[i];
		struct prof_location pl = { .address = l->addr, .nlines = l->nl,
					    .mapping_id = have(&m->map, l->map) };
		uint64_t id;

		if (pl.nlines > 64 && !(pln = malloc(pl.nlines * sizeof(*pln)))) {
			rc = -ENOMEM;
			goto out;
		}
		for (uint32_t j = 0; j < pl.nlines; j++) {
			pln[j].function_id = have(&m->func, r.lines[l->off + j].func);
			pln[j].line = r.lines[l->off + j].line;
		}
		pl.lines = pln;
		id = profile__add_location(m->p, &pl);
		if (pln != ln)
			free(pln);
		if (!id || (rc = idmap_put(&m->loc, lids[i], id)))
			goto fail;
	}
	/* The stacks' profile location ids, beside their store ids, in
	 * memory of the profile: its samples point into it. */
	if (!(m->locpool = profile__alloc(m->p, (m->nspool + 1) * sizeof(*m->locpool)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->nspool; i++)
		if (!(m->locpool[i] = have(&m->loc, m->spool[i]))) {
			rc = -EBADMSG; /* a function or location the store lacks */
			goto out;
		}
	rc = m_labels(m);
	goto out;
fail:
	if (!rc)
		rc = -ENOMEM;
out:
	profile__distinct(m->p, false);
	u64map__free(&late_maps);
	free(r.locs);
	free(r.lines);
	free(maps);
	free(funcs);
	return rc == -ENOENT ? -EBADMSG : rc;
}

static bool lskey_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct mctx *m = ctx;

	return !memcmp(m->lskey[idx], key, sizeof(m->lskey[idx]));
}

/* Label set of a series: its comm and pid, and offcpu's state (the
 * sample labels pprof filters on: -tagfocus state=disk), as store string
 * ids in m->lskey; the labels are built once the strings are read
 * (m_labels). */
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
		if (GROW(m->lskey, &m->caplskey, m->nls + 1))
			return -ENOMEM;
		memcpy(m->lskey[m->nls], key, sizeof(key));
		v = m->nls++;
		if ((rc = hidx__insert(&m->lsidx, h, (uint32_t)v)))
			return rc;
	}
	*ls = (uint32_t)v;
	return u64map__put(&m->ser, series, v);
}

/* The label sets' labels, in p's memory (their samples share them), once
 * their strings are in p. An empty value cannot be a string label: left
 * out. */
static int m_labels(struct mctx *m)
{
	const uint32_t keys[3] = { m->comm_key, m->pid_key, m->state_key };

	if (!(m->plab = calloc(m->nls + 1, sizeof(*m->plab))) ||
	    !(m->nlab = calloc(m->nls + 1, sizeof(*m->nlab))))
		return -ENOMEM;
	for (size_t i = 0; i < m->nls; i++) {
		struct prof_label lab[3] = { { 0 } };
		uint8_t n = 0;

		for (int j = 0; j < 3; j++)
			if (m->lskey[i][j]) {
				lab[n].key = (uint32_t)have(&m->str, keys[j]);
				lab[n++].str = (uint32_t)have(&m->str, m->lskey[i][j]);
			}
		m->nlab[i] = n;
		if (!(m->plab[i] = profile__labels(m->p, lab, n)))
			return -ENOMEM;
	}
	return 0;
}
