/*
 * store_writer_cache.c - the writer's caches: profile indexes -> store ids.
 *
 * Symbols of the profile are interned (each profile string, mapping,
 * function and location looked up once per batch in in-memory maps of
 * content hash -> id, the only index of those tables), and every sample's
 * locations become one interned stack record; samples' labels become
 * series. What a transaction adds is kept aside (wctx.tx*) and joins the
 * store's caches only when it commits.
 *
 * The maps forget. A host that runs a new binary every few minutes brings
 * new mappings, locations and stacks all day, and maps that kept every
 * record grew with the store's history (+1.5 MB per 1,000 one-shot
 * binaries), never with what runs now. So the maps live in generations
 * (PC_WINDOW_S, an hour): a hit stamps its entry with the generation
 * now, and when a generation ends the entries it did not use go. What
 * runs keeps its entries forever; what stopped is gone one to two hours
 * later, and the maps hold what the host ran in the last two windows.
 *
 * A symbol seen again after it was forgotten is interned again under a new
 * id: the tables are distinct by content within a window, not across
 * windows, as in Pyroscope's per-block symbol tables. Readers never needed
 * more: renders name frames by text (folded, top, svg), pprof merges
 * equal functions by name, and a label string, the one thing readers look
 * up by content, is found through str_idx on disk, never re-interned.
 * The price is a record again for a frame sampled less than once an
 * hour, and a merge over both windows that lists it twice. Shorter
 * windows cost more than they save: with 10 minutes, a synthetic busy
 * host's day stored 8.6x the stacks and its merged day rendered 2.4x
 * slower (DESIGN-NOTES, "The writer's maps forget").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_writer.h"

#define PC_SEED1 0x63616368653a3161ULL
#define PC_SEED_STACK 0x737461636b3a3161ULL

static const int sym_dbs[] = { DB_STR, DB_FUNC, DB_MAP, DB_LOC, DB_STACK };

/* A committed entry: its id, and the stamp of the generation now (the
 * caller's lookup is a use). 0: absent; 1: found, used already in this
 * generation; 2: found, first use in it. */
int wctx__pc_get(const struct store *s, struct u64map *m, uint64_t k, uint32_t *id)
{
	uint64_t *v = u64map__getp(m, k);
	bool first;

	if (!v)
		return 0;
	*id = (uint32_t)*v;
	first = (uint32_t)(*v >> 32) != s->pc_gen;
	*v = (uint64_t)s->pc_gen << 32 | *id;
	return 1 + first;
}

/* An entry this transaction added (unstamped until it commits). */
bool wctx__tx_get(const struct u64map *m, uint64_t k, uint32_t *id)
{
	uint64_t v;

	if (!u64map__get(m, k, &v))
		return false;
	*id = (uint32_t)v;
	return true;
}

/* Finds content b[len] of table dbi, or adds it, through the in-memory
 * maps keyed by a 64-bit hash of the content (a collision needs ~2^32
 * distinct symbols to become likely). Content the maps forgot is added
 * again under a new id. */
static int w_intern(struct wctx *w, int dbi, const void *b, size_t len, uint32_t *id)
{
	uint64_t h;
	int rc;

	if (dbi == DB_STR && !len) {
		*id = 0;
		return 0;
	}
	h = fhash(b, len, PC_SEED1);
	if (wctx__pc_get(w->s, &w->s->pc_sym[dbi], h, id) || wctx__tx_get(&w->txsym[dbi], h, id))
		return 0;
	rc = intern__add(w->s, w->txn, dbi, b, len, &w->next[dbi], id);
	if (!rc)
		rc = u64map__put(&w->txsym[dbi], h, *id);
	return rc;
}

/* Offers s->pc_sym the records committed since the last append (when the
 * store was just opened, the newest PC_RELOAD of each table: what ran
 * last is what runs next; then only what another process added): a write
 * transaction sees them all and no other writes meanwhile. */
int wctx__sync(struct wctx *w)
{
	struct store *s = w->s;
	uint32_t *ids = NULL;
	int rc = 0;

	for (size_t i = 0; i < sizeof(sym_dbs) / sizeof(sym_dbs[0]); i++) {
		int dbi = sym_dbs[i];
		uint8_t kb[4];
		MDB_val k = { 4, kb }, d;
		MDB_cursor *c;
		uint32_t from = s->pc_upto[dbi];

		if (!from) {
			if ((rc = table__next_id(s, w->txn, dbi, &from)))
				break;
			from = from > PC_RELOAD ? from - PC_RELOAD : 0;
		}
		rc = mdb_cursor_open(w->txn, s->dbi[dbi], &c);
		if (rc)
			break;
		be32_put(kb, from);
		for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); !rc;
		     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
			struct group g;

			if (group__dec(&k, &d, &g))
				continue; /* store__check reports it */
			for (uint32_t r = 0; r < g.n && !rc; r++) {
				const uint8_t *rb = g.data + g.off[r];
				size_t rl = g.off[r + 1] - g.off[r];
				uint64_t h = fhash(rb, rl, PC_SEED1);

				if (dbi == DB_STACK) { /* w_stack's key: the hash of the ids */
					int n;

					if (!ids && !(ids = malloc(STACK_MAX_DEPTH * sizeof(*ids)))) {
						rc = -ENOMEM;
						break;
					}
					n = stack__dec(rb, rl, ids, STACK_MAX_DEPTH);
					if (n < 0)
						continue; /* store__check reports it */
					h = fhash(ids, n * sizeof(*ids), PC_SEED_STACK);
				}
				if (u64map__put(&s->pc_sym[dbi], h,
						(uint64_t)s->pc_gen << 32 | (g.first + r)))
					rc = -ENOMEM;
			}
			if (rc) {
				u64map__free(&s->pc_sym[dbi]);
				s->pc_upto[dbi] = 0;
				break;
			}
			s->pc_upto[dbi] = g.first + g.n;
		}
		mdb_cursor_close(c);
		if (rc == MDB_NOTFOUND)
			rc = 0;
		if (rc)
			break;
	}
	free(ids);
	return store__errno(rc);
}

/* Label names and values: readers find them by content (matchers), so
 * they, and only they, are indexed on disk in str_idx. */
int wctx__label_str(struct wctx *w, const char *b, size_t len, uint32_t *sid)
{
	uint64_t h;
	uint32_t id;
	int rc;

	if (!len) {
		*sid = 0;
		return 0;
	}
	h = fhash(b, len, PC_SEED1);
	if (wctx__pc_get(w->s, w->s->pc_lstr, h, sid) || wctx__tx_get(&w->txlstr, h, sid))
		return 0;
	/* The id readers find is the one to use. */
	rc = intern__find(w->s, w->txn, DB_STR, DB_STR_IDX, b, len, &id);
	if (!rc && !id) {
		rc = w_intern(w, DB_STR, b, len, &id);
		if (!rc)
			rc = intern__index(w->s, w->txn, DB_STR_IDX, b, len, id);
	}
	if (!rc)
		rc = u64map__put(&w->txlstr, h, id);
	*sid = id;
	return rc;
}

/* Adds src to dst, stamped with generation gen. On ENOMEM dst is dropped
 * (a cache does without). */
static void pc_merge(struct u64map *dst, const struct u64map *src, uint32_t gen)
{
	uint64_t g = (uint64_t)gen << 32;

	if (src->has_max && u64map__put(dst, U64MAP_EMPTY, g | (uint32_t)src->max_v))
		goto oom;
	for (size_t i = 0; i < src->cap; i++)
		if (src->e[i].k != U64MAP_EMPTY &&
		    u64map__put(dst, src->e[i].k, g | (uint32_t)src->e[i].v))
			goto oom;
	return;
oom:
	u64map__free(dst);
}

/* Keeps the entries of m that generation gen used, in a table sized for
 * them (the old one's memory goes back). A table still over
 * PC_MAX_ENTRIES, or one that cannot be allocated, starts empty. */
static void pc_keep(struct u64map *m, uint32_t gen)
{
	struct u64map k = { 0 };
	size_t n = 0;

	for (size_t i = 0; i < m->cap; i++)
		n += m->e[i].k != U64MAP_EMPTY && (uint32_t)(m->e[i].v >> 32) == gen;
	if (n <= PC_MAX_ENTRIES && !u64map__reserve(&k, n)) {
		if (m->has_max && (uint32_t)(m->max_v >> 32) == gen)
			u64map__put(&k, U64MAP_EMPTY, m->max_v);
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].k != U64MAP_EMPTY && (uint32_t)(m->e[i].v >> 32) == gen)
				u64map__put(&k, m->e[i].k, m->e[i].v); /* reserved: no ENOMEM */
	}
	u64map__free(m);
	*m = k;
}

/* After a commit: what this txn resolved is now safe to keep; a
 * generation that has lasted its window (or filled a map) ends. */
void wctx__commit_caches(struct wctx *w)
{
	struct store *s = w->s;
	struct u64map *all[8];
	size_t nall = 0;
	int64_t now = now_mono_ns() / 1000000000;
	bool full = false;
	uint64_t bytes = 0;

	for (size_t i = 0; i < sizeof(sym_dbs) / sizeof(sym_dbs[0]); i++) {
		int dbi = sym_dbs[i];

		if (w->txsym[dbi].n)
			pc_merge(&s->pc_sym[dbi], &w->txsym[dbi], s->pc_gen);
		/* wctx__sync left pc_upto at this txn's first new id. */
		if (w->next[dbi] > s->pc_upto[dbi])
			s->pc_upto[dbi] = w->next[dbi];
		all[nall++] = &s->pc_sym[dbi];
	}
	pc_merge(s->pc_series, &w->txseries, s->pc_gen);
	pc_merge(s->pc_locfp, &w->txlocfp, s->pc_gen);
	pc_merge(s->pc_lstr, &w->txlstr, s->pc_gen);
	all[nall++] = s->pc_series;
	all[nall++] = s->pc_locfp;
	all[nall++] = s->pc_lstr;
	for (size_t i = 0; i < nall; i++)
		full |= all[i]->n > PC_MAX_ENTRIES;
	if (full || now - s->pc_gen_start >= s->pc_window_s) {
		uint32_t ended = s->pc_gen++;

		for (size_t i = 0; i < nall; i++)
			pc_keep(all[i], ended);
		s->pc_gen_start = now;
	}
	for (size_t i = 0; i < nall; i++)
		bytes += all[i]->cap * sizeof(struct u64map_ent);
	atomic_store(&s->pc_bytes, bytes);
}

static int w_str(struct wctx *w, uint32_t pi, uint32_t *sid)
{
	int rc;

	if (pi >= w->p->nstrs)
		return -EINVAL;
	if (w->strs[pi] != NO_ID) {
		*sid = w->strs[pi];
		return 0;
	}
	rc = w_intern(w, DB_STR, w->p->strs[pi],
		      w->p->str_lens ? w->p->str_lens[pi] : strlen(w->p->strs[pi]), sid);
	if (!rc)
		w->strs[pi] = *sid;
	return rc;
}

static int w_mapping(struct wctx *w, uint64_t mid, uint32_t *out)
{
	const struct prof_mapping *pm;
	struct sym_mapping m;
	uint8_t b[64];
	int rc;

	if (!mid) {
		*out = 0;
		return 0;
	}
	if (mid > w->p->nmappings)
		return -EINVAL;
	if (w->maps[mid - 1] != NO_ID) {
		*out = w->maps[mid - 1];
		return 0;
	}
	pm = &w->p->mappings[mid - 1];
	m.start = pm->start;
	m.limit = pm->limit;
	m.offset = pm->offset;
	m.has_functions = pm->has_functions;
	if ((rc = w_str(w, pm->file, &m.file)) || (rc = w_str(w, pm->build_id, &m.build_id)))
		return rc;
	rc = w_intern(w, DB_MAP, b, mapping__enc(&m, b), out);
	if (!rc)
		w->maps[mid - 1] = *out;
	return rc;
}

static int w_function(struct wctx *w, uint64_t fid, uint32_t *out)
{
	const struct prof_function *pf;
	struct sym_func f;
	uint8_t b[48];
	int rc;

	if (!fid || fid > w->p->nfunctions)
		return -EINVAL;
	if (w->funcs[fid - 1] != NO_ID) {
		*out = w->funcs[fid - 1];
		return 0;
	}
	pf = &w->p->functions[fid - 1];
	f.start_line = pf->start_line;
	if ((rc = w_str(w, pf->name, &f.name)) ||
	    (rc = w_str(w, pf->system_name, &f.system_name)) ||
	    (rc = w_str(w, pf->filename, &f.filename)))
		return rc;
	rc = w_intern(w, DB_FUNC, b, func__enc(&f, b), out);
	if (!rc)
		w->funcs[fid - 1] = *out;
	return rc;
}

int wctx__function(struct wctx *w, uint64_t fid, uint32_t *out)
{
	return w_function(w, fid, out);
}

/* Hash of profile string si, computed once per batch. */
static uint64_t w_strhash(struct wctx *w, uint32_t si)
{
	const struct profile *p = w->p;

	if (si >= p->nstrs)
		return 0;
	if (!w->strh[si])
		w->strh[si] = fhash(p->strs[si], p->str_lens ? p->str_lens[si] : strlen(p->strs[si]),
				     0x73747268) | 1;
	return w->strh[si];
}

/* Hash of the content of profile mapping mid (> 0), once per batch. */
static uint64_t w_maphash(struct wctx *w, uint64_t mid)
{
	const struct prof_mapping *pm = &w->p->mappings[mid - 1];
	uint64_t b[5];

	if (w->maph[mid - 1])
		return w->maph[mid - 1];
	b[0] = pm->start;
	b[1] = pm->limit;
	b[2] = pm->offset | (uint64_t)pm->has_functions << 63;
	b[3] = w_strhash(w, pm->file);
	b[4] = w_strhash(w, pm->build_id);
	return w->maph[mid - 1] = fhash(b, sizeof(b), 0x6d6170) | 1;
}

/* Hash of the content of profile function fid (> 0), once per batch. */
static uint64_t w_funchash(struct wctx *w, uint64_t fid)
{
	const struct prof_function *f = &w->p->functions[fid - 1];
	uint64_t b[4];

	if (w->funch[fid - 1])
		return w->funch[fid - 1];
	b[0] = (uint64_t)f->start_line;
	b[1] = w_strhash(w, f->name);
	b[2] = w_strhash(w, f->system_name);
	b[3] = w_strhash(w, f->filename);
	return w->funch[fid - 1] = fhash(b, sizeof(b), 0x66756e63) | 1;
}

/* A fingerprint of a location by its content in the profile (strings, not
 * ids), so a location seen in an earlier batch is found with one hash and
 * one lookup, without interning its functions and strings again. Mapping
 * and function hashes are shared by the locations of a batch. 0: none
 * (inline chains deeper than 8, rare, are never served from the cache). */
static uint64_t w_locfp(struct wctx *w, uint64_t lid)
{
	const struct profile *p = w->p;
	const struct prof_location *pl = &p->locations[lid - 1];
	uint64_t b[3 + 2 * 8], *q = b;

	if (w->locfp[lid - 1])
		return w->locfp[lid - 1];
	if (pl->nlines > 8)
		return 0;
	*q++ = pl->address;
	*q++ = pl->nlines;
	*q++ = pl->mapping_id && pl->mapping_id <= p->nmappings ? w_maphash(w, pl->mapping_id) : 0;
	for (uint32_t i = 0; i < pl->nlines; i++) {
		const struct prof_line *l = &pl->lines[i];

		*q++ = (uint64_t)l->line;
		*q++ = l->function_id && l->function_id <= p->nfunctions
			       ? w_funchash(w, l->function_id)
			       : 0;
	}
	return w->locfp[lid - 1] = fhash(b, (q - b) * sizeof(*b), 0x6c6f63667032ULL) | 1;
}

/* Resolves, before anything else, every location of the profile that the
 * location cache knows (almost all of them, batch after batch). The cache
 * is large, so each lookup would wait for memory: fingerprints are computed
 * and their slots prefetched FP_AHEAD lookups ahead. Locations left
 * unresolved go through w_location as usual. */
#define FP_AHEAD 16
void wctx__known_locs(struct wctx *w)
{
	const struct profile *p = w->p;
	struct u64map *m = w->s->pc_locfp;
	uint64_t ring_fp[FP_AHEAD];
	uint32_t ring_lid[FP_AHEAD], v;
	size_t head = 0, n = 0;

	/* The location table in order (a batch's table holds the locations
	 * its samples use): sequential memory, no per-frame dedupe. */
	for (uint64_t lid = 1; lid <= p->nlocations; lid++) {
		uint64_t fp = w_locfp(w, lid);

		if (!fp)
			continue;
		u64map__prefetch(m, fp);
		if (n == FP_AHEAD) {
			if ((w->fresh[ring_lid[head] - 1] = wctx__pc_get(w->s, m, ring_fp[head], &v)))
				w->locs[ring_lid[head] - 1] = v;
			n--;
		}
		ring_fp[head] = fp;
		ring_lid[head] = (uint32_t)lid;
		head = (head + 1) % FP_AHEAD;
		n++;
	}
	for (; n; n--) {
		size_t k = (head + FP_AHEAD - n) % FP_AHEAD;

		if ((w->fresh[ring_lid[k] - 1] = wctx__pc_get(w->s, m, ring_fp[k], &v)))
			w->locs[ring_lid[k] - 1] = v;
	}
}

/* A location found by its fingerprint skips its mapping and functions,
 * so they are looked up here as a use, once a generation (the first batch
 * that finds the location in it): otherwise they would be forgotten while
 * their locations are sampled, and the next new location of that binary
 * would intern them again. */
int wctx__touch_known(struct wctx *w)
{
	const struct profile *p = w->p;
	uint32_t id;
	int rc = 0;

	for (uint64_t lid = 1; lid <= p->nlocations && !rc; lid++) {
		const struct prof_location *pl = &p->locations[lid - 1];

		if (w->fresh[lid - 1] != 2)
			continue; /* unknown (w_location resolves it all) or done */
		if (pl->mapping_id && pl->mapping_id <= p->nmappings)
			rc = w_mapping(w, pl->mapping_id, &id);
		for (uint32_t i = 0; i < pl->nlines && !rc; i++)
			if (pl->lines[i].function_id)
				rc = w_function(w, pl->lines[i].function_id, &id);
	}
	return rc;
}

static int w_location(struct wctx *w, uint64_t lid, uint32_t *out)
{
	const struct prof_location *pl;
	struct sym_line *lines = NULL;
	uint8_t stackbuf[512], *b = stackbuf;
	uint32_t mapping;
	uint64_t fp;
	int rc;

	if (!lid || lid > w->p->nlocations)
		return -EINVAL;
	if (w->locs[lid - 1] != NO_ID) {
		*out = w->locs[lid - 1];
		return 0;
	}
	pl = &w->p->locations[lid - 1];
	fp = w_locfp(w, lid);
	if (fp && (wctx__pc_get(w->s, w->s->pc_locfp, fp, out) || wctx__tx_get(&w->txlocfp, fp, out))) {
		w->locs[lid - 1] = *out;
		return 0;
	}
	if ((rc = w_mapping(w, pl->mapping_id, &mapping)))
		return rc;
	if (pl->nlines) {
		lines = calloc(pl->nlines, sizeof(*lines));
		if (!lines)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < pl->nlines; i++) {
		lines[i].line = pl->lines[i].line;
		if ((rc = w_function(w, pl->lines[i].function_id, &lines[i].func)))
			goto out;
	}
	if (32 + 16 * (size_t)pl->nlines > sizeof(stackbuf)) {
		b = malloc(32 + 16 * (size_t)pl->nlines);
		if (!b) {
			rc = -ENOMEM;
			goto out;
		}
	}
	rc = w_intern(w, DB_LOC, b,
		      loc__enc(mapping, pl->address, lines, pl->nlines, b), out);
	if (!rc) {
		w->locs[lid - 1] = *out;
		if (fp)
			rc = u64map__put(&w->txlocfp, fp, *out);
	}
out:
	if (b != stackbuf)
		free(b);
	free(lines);
	return rc;
}

/* The stack id of a sample: its store location ids, leaf first, interned
 * as one record. */
int wctx__stack_path(struct wctx *w, const struct prof_sample *sm, uint32_t *np_)
{
	uint32_t n = sm->nlocs < STACK_MAX_DEPTH ? sm->nlocs : STACK_MAX_DEPTH;
	int rc;

	if (n > w->npath) {
		uint32_t *np = realloc(w->path, n * sizeof(*np));
		uint8_t *nb = realloc(w->sbuf, 5 + 5 * (size_t)n);

		if (np)
			w->path = np;
		if (nb)
			w->sbuf = nb;
		if (!np || !nb)
			return -ENOMEM;
		w->npath = n;
	}
	if (!w->sbuf && !(w->sbuf = malloc(5)))
		return -ENOMEM;
	/* Deeper stacks keep their leaf end (the kernel caps depth anyway). */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t lid = sm->locs[i];

		/* Resolved already in this batch (nearly always): inline. */
		if (lid && lid <= w->p->nlocations && w->locs[lid - 1] != NO_ID)
			w->path[i] = w->locs[lid - 1];
		else if ((rc = w_location(w, lid, &w->path[i])))
			return rc;
	}
	*np_ = n;
	return 0;
}

/* Stacks are keyed by the hash of their location ids (not of their
 * encoding: only new ones get encoded). */
uint64_t wctx__stack_hash(struct wctx *w, uint32_t n)
{
	return fhash(w->path, n * sizeof(*w->path), PC_SEED_STACK);
}

/* The stack id of sample sm, whose stack hash is h. */
int wctx__stack_id(struct wctx *w, const struct prof_sample *sm, uint64_t h, uint32_t *id)
{
	uint32_t n;
	int rc;

	if (wctx__pc_get(w->s, &w->s->pc_sym[DB_STACK], h, id) || wctx__tx_get(&w->txsym[DB_STACK], h, id))
		return 0;
	/* New: its locations are all resolved by now, so this is cheap. */
	if ((rc = wctx__stack_path(w, sm, &n)))
		return rc;
	rc = intern__add(w->s, w->txn, DB_STACK, w->sbuf, stack__enc(w->path, n, w->sbuf),
			 &w->next[DB_STACK], id);
	if (!rc)
		rc = u64map__put(&w->txsym[DB_STACK], h, *id);
	return rc;
}

/* The type record, created from p on first use; vmap[i] = the type's
 * value index of p's value i. */
/* Whether store string sid holds the text of profile string pi. By text,
 * not id: the type's strings may have been forgotten and interned again
 * since the type was made. */
static bool w_str_is(struct wctx *w, uint32_t sid, uint32_t pi)
{
	const struct profile *p = w->p;
	size_t len;
	MDB_val v;

	if (pi >= p->nstrs)
		return false;
	len = p->str_lens ? p->str_lens[pi] : strlen(p->strs[pi]);
	if (!sid)
		return !len;
	return !table__read(w->s, w->txn, DB_STR, sid, &v) && v.mv_size == len &&
	       !memcmp(v.mv_data, p->strs[pi], len);
}

int wctx__type(struct wctx *w, const char *name, struct store_type *t,
		  int *vmap)
{
	const struct profile *p = w->p;
	int rc = type__get(w->s, w->txn, name, t);

	if (rc == -ENOENT) {
		struct type_ent *all;
		size_t n;
		uint32_t maxid = 0;

		if ((rc = types__all(w->s, w->txn, &all, &n)))
			return rc;
		for (size_t i = 0; i < n; i++)
			if (all[i].t.id > maxid)
				maxid = all[i].t.id;
		types__free(all, n);
		memset(t, 0, sizeof(*t));
		t->id = maxid + 1;
		t->period = p->period;
		t->nvalues = p->nvalues;
		if ((rc = w_str(w, p->period_type.type, &t->period_type)) ||
		    (rc = w_str(w, p->period_type.unit, &t->period_unit)))
			return rc;
		for (uint32_t i = 0; i < p->nvalues; i++)
			if ((rc = w_str(w, p->sample_types[i].type, &t->vtype[i])) ||
			    (rc = w_str(w, p->sample_types[i].unit, &t->vunit[i])))
				return rc;
		/* pprof's default_sample_type (e.g. alloc_space of an allocs
		 * profile) is what `go tool pprof` shows first. */
		if (p->default_sample_type &&
		    (rc = w_str(w, p->default_sample_type, &t->default_type)))
			return rc;
		if ((rc = type__put(w->s, w->txn, name, t)))
			return rc;
	} else if (rc) {
		return rc;
	}
	for (uint32_t i = 0; i < p->nvalues; i++) {
		vmap[i] = -1;
		for (uint32_t j = 0; j < t->nvalues; j++)
			if (w_str_is(w, t->vtype[j], p->sample_types[i].type) &&
			    w_str_is(w, t->vunit[j], p->sample_types[i].unit))
				vmap[i] = j;
		if (vmap[i] < 0) {
			pr_err("store: type %s has no value type %s/%s", name,
			       p->strs[p->sample_types[i].type], p->strs[p->sample_types[i].unit]);
			return -EINVAL;
		}
	}
	return 0;
}

int wctx__init(struct wctx *w)
{
	const struct profile *p = w->p;
	struct store *s = w->s;

	w->strs = malloc((p->nstrs + 1) * sizeof(uint32_t));
	w->maps = malloc((p->nmappings + 1) * sizeof(uint32_t));
	w->funcs = malloc((p->nfunctions + 1) * sizeof(uint32_t));
	w->locs = malloc((p->nlocations + 1) * sizeof(uint32_t));
	w->strh = calloc(p->nstrs + 1, sizeof(uint64_t));
	w->maph = calloc(p->nmappings + 1, sizeof(uint64_t));
	w->funch = calloc(p->nfunctions + 1, sizeof(uint64_t));
	w->locfp = calloc(p->nlocations + 1, sizeof(uint64_t));
	w->fresh = calloc(p->nlocations + 1, 1);
	if (!w->strs || !w->maps || !w->funcs || !w->locs || !w->strh || !w->maph ||
	    !w->funch || !w->locfp || !w->fresh)
		return -ENOMEM;
	memset(w->strs, 0xff, (p->nstrs + 1) * sizeof(uint32_t));
	memset(w->maps, 0xff, (p->nmappings + 1) * sizeof(uint32_t));
	memset(w->funcs, 0xff, (p->nfunctions + 1) * sizeof(uint32_t));
	memset(w->locs, 0xff, (p->nlocations + 1) * sizeof(uint32_t));
	if (p->nstrs)
		w->strs[0] = 0;

	/* The store's caches outlive the transaction (store__close frees them). */
	if (!s->pc_sym)
		s->pc_sym = calloc(DB__N, sizeof(*s->pc_sym));
	if (!s->pc_series)
		s->pc_series = calloc(1, sizeof(*s->pc_series));
	if (!s->pc_locfp)
		s->pc_locfp = calloc(1, sizeof(*s->pc_locfp));
	if (!s->pc_lstr)
		s->pc_lstr = calloc(1, sizeof(*s->pc_lstr));
	if (!s->pc_sym || !s->pc_series || !s->pc_locfp || !s->pc_lstr)
		return -ENOMEM;
	return 0;
}

void wctx__free(struct wctx *w)
{
	free(w->strs);
	free(w->strh);
	free(w->maph);
	free(w->funch);
	free(w->locfp);
	free(w->fresh);
	free(w->maps);
	free(w->funcs);
	free(w->locs);
	u64map__free(&w->ser_hash);
	u64map__free(&w->txseries);
	u64map__free(&w->txlocfp);
	u64map__free(&w->txlstr);
	free(w->path);
	free(w->sbuf);
	for (int i = 0; i < DB__N; i++)
		u64map__free(&w->txsym[i]);
	for (size_t i = 0; i < w->nsc; i++)
		free(w->sc[i].pairs);
	free(w->sc);
}
