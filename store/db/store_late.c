/*
 * store_late.c - names found later, and the binaries the daemon read
 * (issue 30).
 *
 * Why a table beside the locations instead of rewriting them: location
 * records are grouped 32 to an LMDB entry and written once, blocks and
 * rollups name stacks by id, and a copy or a reader may hold any of them.
 * A late record keyed by the location id is one small put, and a read
 * merges it in where it reads the location (store_merge.c), so every
 * minute and rollup holding the frame reads the name from then on without
 * a byte of them changing. A location gets at most one (MDB_NOOVERWRITE),
 * and only when it was stored without lines: a named frame never changes,
 * an unnamed one changes once (SPEC §2, Minutes).
 *
 * The binaries table is what /binaries serves from: build id -> where the
 * file was read and what it was then (dev, inode, size, mtime). Serving
 * opens the path again and checks that identity, so a file replaced since
 * (an upgrade) is not served under the old build id.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store_writer.h"

/* ---- the scan for unnamed locations ---- */

/* A mapping as the scan needs it, cached per scan (a table's neighbouring
 * locations share a handful of mappings). */
struct smap {
	uint64_t start, offset;
	char *bid, *file; /* NULL bid: no build id (skipped) */
};

struct sctx {
	struct store *s;
	MDB_txn *txn;
	struct u64map maps; /* mapping id -> index + 1 into v */
	struct smap *v;
	size_t n, cap;
	const uint32_t *ids;
	bool late_empty;
	int (*fn)(void *ctx, const struct store_unnamed *u);
	void *ctx;
};

static int scan_map(struct sctx *c, uint32_t id, const struct smap **out)
{
	struct sym_mapping m;
	struct smap *e;
	uint64_t ix;
	MDB_val v;
	int rc;

	if (u64map__get(&c->maps, id, &ix)) {
		*out = &c->v[ix - 1];
		return 0;
	}
	if (GROW(c->v, &c->cap, c->n + 1))
		return -ENOMEM;
	e = &c->v[c->n];
	memset(e, 0, sizeof(*e));
	if ((rc = table__read(c->s, c->txn, DB_MAP, id, &v)) ||
	    (rc = mapping__dec(v.mv_data, v.mv_size, &m)))
		return rc == -ENOENT ? -EBADMSG : rc;
	e->start = m.start;
	e->offset = m.offset;
	if (m.build_id) {
		if (!(e->bid = str__dup(c->s, c->txn, m.build_id)) ||
		    !(e->file = str__dup(c->s, c->txn, m.file))) {
			free(e->bid);
			return -ENOMEM;
		}
		if (!store__build_id_ok(e->bid)) { /* imported: not ours to name */
			free(e->bid);
			free(e->file);
			e->bid = e->file = NULL;
		}
	}
	if ((rc = u64map__put(&c->maps, id, ++c->n)))
		return rc;
	*out = e;
	return 0;
}

static bool has_late(struct sctx *c, uint32_t loc)
{
	uint8_t kb[4];
	MDB_val k = { 4, kb }, d;

	if (c->late_empty)
		return false;
	be32_put(kb, loc);
	return !mdb_get(c->txn, c->s->dbi[DB_LATE], &k, &d);
}

static int scan_loc(void *ctx, size_t i, const MDB_val *rec)
{
	struct sctx *c = ctx;
	struct sym_line l[1];
	const struct smap *m;
	uint32_t map, nl;
	uint64_t addr;
	int rc;

	/* Only line-less records are of interest: cap 0 lines, and a record
	 * with lines answers -EBADMSG (more than cap), which is skipped. */
	rc = loc__dec_into(rec->mv_data, rec->mv_size, &map, &addr, l, 0, &nl);
	if (rc == -EBADMSG || (!rc && nl) || !map)
		return 0;
	if (rc)
		return rc;
	if (has_late(c, c->ids[i]))
		return 0;
	if ((rc = scan_map(c, map, &m)) || !m->bid)
		return rc;
	struct store_unnamed u = { .loc = c->ids[i], .build_id = m->bid, .file = m->file,
				   .off = addr - m->start + m->offset };
	return c->fn(c->ctx, &u);
}

int store__unnamed(struct store *s, uint32_t from, uint32_t max, uint32_t *next,
		   int (*fn)(void *ctx, const struct store_unnamed *u), void *ctx)
{
	struct sctx c = { .s = s, .fn = fn, .ctx = ctx };
	uint32_t end, n, *ids = NULL;
	MDB_stat st;
	int rc;

	from = from ? from : 1;
	*next = from;
	if ((rc = store__txn_begin(s, true, &c.txn)))
		return rc;
	c.late_empty = s->absent[DB_LATE] ||
		       (!mdb_stat(c.txn, s->dbi[DB_LATE], &st) && !st.ms_entries);
	if ((rc = table__next_id(s, c.txn, DB_LOC, &end)))
		goto out;
	if (end <= from)
		goto out;
	n = end - from < max ? end - from : max;
	if (!(ids = malloc((size_t)n * sizeof(*ids)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		ids[i] = from + i;
	c.ids = ids;
	rc = table__read_many(s, c.txn, DB_LOC, ids, n, scan_loc, &c);
	if (rc == -ENOENT)
		rc = -EBADMSG; /* ids below the next one are all there */
	if (!rc)
		*next = from + n;
out:
	store__txn_abort(s, c.txn);
	for (size_t i = 0; i < c.n; i++) {
		free(c.v[i].bid);
		free(c.v[i].file);
	}
	free(c.v);
	u64map__free(&c.maps);
	free(ids);
	return rc;
}

/* ---- writing late names ---- */

static int late_one(struct wctx *w, const struct store_late *v, bool *named)
{
	struct store *s = w->s;
	const struct prof_location *pl;
	struct sym_line lines[16];
	uint8_t kb[4], *enc = NULL;
	MDB_val k = { 4, kb }, d, cur;
	uint32_t map, nl;
	uint64_t addr;
	int rc;

	*named = false;
	if (!v->plid || v->plid > w->p->nlocations)
		return -EINVAL;
	pl = &w->p->locations[v->plid - 1];
	if (!pl->nlines || pl->nlines > 16)
		return -EINVAL;
	if ((rc = table__read(s, w->txn, DB_LOC, v->loc, &cur)))
		return rc == -ENOENT ? 0 : rc; /* not in this store: nothing to name */
	rc = loc__dec_into(cur.mv_data, cur.mv_size, &map, &addr, lines, 0, &nl);
	if (rc == -EBADMSG || (!rc && nl))
		return 0; /* it has lines: named when stored */
	if (rc)
		return rc;
	for (uint32_t j = 0; j < pl->nlines; j++) {
		if ((rc = wctx__function(w, pl->lines[j].function_id, &lines[j].func)))
			return rc;
		lines[j].line = pl->lines[j].line;
	}
	if (!(enc = malloc(32 + 16 * (size_t)pl->nlines)))
		return -ENOMEM;
	be32_put(kb, v->loc);
	d = (MDB_val){ loc__enc(map, addr, lines, pl->nlines, enc), enc };
	rc = mdb_put(w->txn, s->dbi[DB_LATE], &k, &d, MDB_NOOVERWRITE);
	free(enc);
	if (rc == MDB_KEYEXIST)
		return 0; /* named already: once */
	*named = !rc;
	return store__errno(rc);
}

int store__name_late(struct store *s, const struct profile *p, const struct store_late *v,
		     size_t n, size_t *named)
{
	struct wctx w = { .s = s, .p = p };
	size_t count = 0;
	uint64_t ver;
	int rc;

	if (named)
		*named = 0;
	if (s->readonly)
		return -EROFS;
	if (!n)
		return 0;
	if ((rc = wctx__init(&w)))
		goto out_free;
	if ((rc = store__txn_begin(s, false, &w.txn)))
		goto out_free;
	intern__discard(s);
	__atomic_store_n(&s->pend_txn, w.txn, __ATOMIC_RELAXED);
	if ((rc = wctx__sync(&w)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		bool one;

		if ((rc = late_one(&w, &v[i], &one)))
			goto out;
		count += one;
	}
	if (!count)
		goto out; /* nothing new: no commit, the version stays */
	/* The commit's wall-clock second (or one past the last version):
	 * it only grows, and it dates the change (the mount's ctime). */
	if ((rc = meta__get_u64(s, w.txn, "names_version", &ver)) ||
	    (rc = meta__put_u64(s, w.txn, "names_version",
				ver + 1 > (uint64_t)now_s() ? ver + 1 : (uint64_t)now_s())) ||
	    (rc = intern__flush(s, w.txn)))
		goto out;
	__atomic_store_n(&s->pend_txn, NULL, __ATOMIC_RELAXED);
	rc = store__txn_commit(s, w.txn);
	w.txn = NULL;
	if (!rc) {
		wctx__commit_caches(&w);
		if (named)
			*named = count;
	}
out:
	__atomic_store_n(&s->pend_txn, NULL, __ATOMIC_RELAXED);
	intern__discard(s);
	store__txn_abort(s, w.txn);
out_free:
	wctx__free(&w);
	return rc;
}

uint64_t store__names_version(struct store *s)
{
	uint64_t txnid = store__version(s), v = 0;
	MDB_txn *txn;

	if (txnid && atomic_load(&s->names_txnid) == txnid)
		return atomic_load(&s->names_ver);
	if (store__txn_begin(s, true, &txn))
		return atomic_load(&s->names_ver);
	if (meta__get_u64(s, txn, "names_version", &v))
		v = atomic_load(&s->names_ver);
	store__txn_abort(s, txn);
	/* Two readers may race here; both store what a snapshot at least as
	 * new as txnid says, and the version only grows. */
	atomic_store(&s->names_ver, v);
	atomic_store(&s->names_txnid, txnid);
	return v;
}

/* ---- binaries ---- */

bool store__build_id_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (n >= 128 || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n >= 2 && n % 2 == 0;
}

/* Record: uid, gid, flags, nloads (u32 each), dev, ino, size, mtime_ns
 * (u64 each), nloads x (vaddr, off, filesz) u64, then the path's bytes;
 * all big-endian. */
#define BIN_HDR 48
#define BIN_PATH_MAX 4096

int store__binary_put(struct store *s, const struct store_binary *b)
{
	size_t plen = b->path ? strlen(b->path) : 0, len;
	MDB_val k = { strlen(b->build_id), (void *)b->build_id }, d;
	uint8_t *rec, *p;
	MDB_txn *txn;
	int rc;

	if (s->readonly)
		return -EROFS;
	if (!store__build_id_ok(b->build_id) || !plen || plen > BIN_PATH_MAX ||
	    b->nloads > STORE_BIN_LOADS)
		return -EINVAL;
	len = BIN_HDR + 24 * (size_t)b->nloads + plen;
	if (!(rec = malloc(len)))
		return -ENOMEM;
	be32_put(rec, b->uid);
	be32_put(rec + 4, b->gid);
	be32_put(rec + 8, b->flags);
	be32_put(rec + 12, b->nloads);
	be64_put(rec + 16, b->dev);
	be64_put(rec + 24, b->ino);
	be64_put(rec + 32, b->size);
	be64_put(rec + 40, (uint64_t)b->mtime_ns);
	p = rec + BIN_HDR;
	for (uint32_t i = 0; i < b->nloads; i++, p += 24) {
		be64_put(p, b->loads[i].vaddr);
		be64_put(p + 8, b->loads[i].off);
		be64_put(p + 16, b->loads[i].filesz);
	}
	memcpy(p, b->path, plen);
	d = (MDB_val){ len, rec };
	if (!(rc = store__txn_begin(s, false, &txn))) {
		rc = store__errno(mdb_put(txn, s->dbi[DB_BINS], &k, &d, 0));
		if (!rc)
			rc = store__txn_commit(s, txn);
		else
			store__txn_abort(s, txn);
	}
	free(rec);
	return rc;
}

/* Decodes a record; b->path is malloc'd. 0, -EBADMSG or -ENOMEM. */
static int binary_dec(const MDB_val *d, struct store_binary *b)
{
	const uint8_t *r = d->mv_data, *p;
	size_t plen;

	if (d->mv_size < BIN_HDR)
		return -EBADMSG;
	b->uid = be32_get(r);
	b->gid = be32_get(r + 4);
	b->flags = be32_get(r + 8);
	b->nloads = be32_get(r + 12);
	if (b->nloads > STORE_BIN_LOADS || d->mv_size <= BIN_HDR + 24 * (size_t)b->nloads)
		return -EBADMSG;
	plen = d->mv_size - BIN_HDR - 24 * (size_t)b->nloads;
	if (plen > BIN_PATH_MAX)
		return -EBADMSG;
	b->dev = be64_get(r + 16);
	b->ino = be64_get(r + 24);
	b->size = be64_get(r + 32);
	b->mtime_ns = (int64_t)be64_get(r + 40);
	p = r + BIN_HDR;
	for (uint32_t i = 0; i < b->nloads; i++, p += 24) {
		b->loads[i].vaddr = be64_get(p);
		b->loads[i].off = be64_get(p + 8);
		b->loads[i].filesz = be64_get(p + 16);
	}
	b->path = strndup((const char *)p, plen);
	return b->path ? 0 : -ENOMEM;
}

int store__binary_get(struct store *s, const char *build_id, struct store_binary *b)
{
	MDB_val k = { strlen(build_id), (void *)build_id }, d;
	MDB_txn *txn;
	int rc;

	memset(b, 0, sizeof(*b));
	if (!store__build_id_ok(build_id) || s->absent[DB_BINS])
		return -ENOENT;
	if ((rc = store__txn_begin(s, true, &txn)))
		return rc;
	rc = store__errno(mdb_get(txn, s->dbi[DB_BINS], &k, &d));
	if (!rc)
		rc = binary_dec(&d, b);
	if (!rc)
		snprintf(b->build_id, sizeof(b->build_id), "%s", build_id);
	store__txn_abort(s, txn);
	return rc;
}

int store__binaries(struct store *s, char ***ids, size_t *n)
{
	MDB_cursor *c = NULL;
	MDB_val k, d;
	MDB_txn *txn;
	size_t cap = 0;
	char **v = NULL;
	int rc;

	*ids = NULL;
	*n = 0;
	if (s->absent[DB_BINS])
		return 0;
	if ((rc = store__txn_begin(s, true, &txn)))
		return rc;
	if ((rc = store__errno(mdb_cursor_open(txn, s->dbi[DB_BINS], &c))))
		goto out;
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); !rc; rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		char *id;

		if (GROW(v, &cap, *n + 1) || !(id = strndup(k.mv_data, k.mv_size))) {
			rc = -ENOMEM;
			break;
		}
		if (!store__build_id_ok(id)) {
			free(id);
			continue;
		}
		v[(*n)++] = id;
	}
	rc = rc == MDB_NOTFOUND ? 0 : store__errno(rc);
out:
	if (c)
		mdb_cursor_close(c);
	store__txn_abort(s, txn);
	if (rc) {
		store__free_strv(v, *n);
		*n = 0;
		return rc;
	}
	*ids = v;
	return 0;
}
