/*
 * store_env.c - opening and closing the LMDB environment, transactions that
 * survive another process growing the map, meta counters, statistics.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <zstd.h>

#include "store/db/store_int.h"

const char *const store_db_names[DB__N] = {
	[DB_META] = "meta",	[DB_STR] = "str",	[DB_STR_IDX] = "str_idx",
	[DB_FUNC] = "func",	[DB_MAP] = "map",	[DB_LOC] = "loc",
	[DB_STACK] = "stacks",	[DB_TYPE] = "type",	[DB_SERIES] = "series",
	[DB_SERIES_IDX] = "series_idx",			[DB_POST] = "post",
	[DB_BLOCK] = "block",	[DB_MINUTE] = "minute", [DB_ROLLUP] = "rollup",
	[DB_DIRTY] = "dirty",	[DB_LATE] = "late",	[DB_BINS] = "bins",
};

/* Databases added after format 4 began: a read-only open of an older
 * store goes on without them. */
static bool db_optional(int db)
{
	return db == DB_LATE || db == DB_BINS;
}

/* Content indexes format 4 no longer fills (see store__open). */
static const char *const legacy_db_names[] = { "func_idx", "map_idx", "loc_idx", "stacks_idx" };
#define LEGACY_DBS (int)(sizeof(legacy_db_names) / sizeof(legacy_db_names[0]))

static unsigned int db_flags(int db)
{
	switch (db) {
	case DB_STR_IDX:
	case DB_SERIES_IDX:
	case DB_POST:
	case DB_MINUTE:
		return MDB_DUPSORT | MDB_DUPFIXED;
	default:
		return 0;
	}
}

int store__errno(int rc)
{
	if (!rc)
		return 0;
	if (rc > 0)
		return -rc; /* an errno from LMDB itself */
	if (rc < MDB_KEYEXIST || rc > MDB_LAST_ERRCODE)
		return rc; /* already -errno */
	switch (rc) {
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
		return -ENOSPC;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_READERS_FULL:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

static void map_find(struct store *s);

int store__txn_begin(struct store *s, bool rdonly, MDB_txn **txn)
{
	int rc;

	for (int tries = 0;; tries++) {
		pthread_rwlock_rdlock(&s->resize_lock);
		rc = mdb_txn_begin(s->env, NULL, rdonly ? MDB_RDONLY : 0, txn);
		if (!rc)
			return 0; /* the shared lock is held until the txn ends */
		pthread_rwlock_unlock(&s->resize_lock);
		if (rc != MDB_MAP_RESIZED || tries >= 3)
			break;
		/* Another process grew the map: adopt its size. */
		pthread_rwlock_wrlock(&s->resize_lock);
		rc = mdb_env_set_mapsize(s->env, 0);
		map_find(s); /* the map moved */
		pthread_rwlock_unlock(&s->resize_lock);
		if (rc)
			break;
	}
	pr_err("store: cannot begin transaction: %s", mdb_strerror(rc));
	return store__errno(rc);
}

/* A write transaction's B-tree walks read through LMDB's map, and the
 * kernel maps the 64 KiB around each page faulted in: on the busy host a
 * batch mapped ~3 MB of the store again within seconds of an unmap, and
 * without one the daemon held 6 MB of it after 15 minutes, growing with
 * the store (RssFile, issue 26). The pages stay in the page cache: the
 * next write faults back those it needs (the daemon's CPU did not move
 * measurably). Unmapped before the unlock: the map cannot move meanwhile. */
int store__txn_commit(struct store *s, MDB_txn *txn)
{
	int rc = mdb_txn_commit(txn);

	store__unmap(s);
	pthread_rwlock_unlock(&s->resize_lock);
	return store__errno(rc);
}

/* Where LMDB mapped the store's data.mdb: LMDB does not say (its
 * me_mapaddr is only a fixed map's), the kernel does. None found leaves
 * the range unknown. */
static void map_find(struct store *s)
{
	char path[4096];
	struct stat st;
	uintptr_t lo, hi;

	s->map_lo = s->map_hi = 0;
	snprintf(path, sizeof(path), "%s/data.mdb", s->dir);
	if (stat(path, &st) || self_file_map(st.st_dev, st.st_ino, 0, true, &lo, &hi))
		return;
	s->map_lo = lo;
	s->map_hi = hi;
}

/*
 * Reads through a file mapping cost more resident memory than they read:
 * the kernel maps, with each page faulted in, the pages around it in the
 * same 64 KiB that the page cache holds (fault-around; madvise(MADV_RANDOM)
 * does not stop it), and counts them all in the process's RSS. A render
 * reading the stacks of a busy window had ~4 MB of the stack table mapped
 * at its peak, and ~5 MB of the series table (issue 26). So a reader
 * counts the windows its reads enter, per thread, and gives the pages back
 * every STORE_MAP_WINDOWS; a page read again faults in from the page cache
 * (a minor fault). Records read in key order enter each window once.
 */
#define STORE_MAP_WINDOWS 16u

static __thread struct {
	uintptr_t last; /* the window of the last read */
	unsigned n;     /* windows entered since the last unmap */
} touched;

void store__touched(struct store *s, const void *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p >> 16, hi = ((uintptr_t)p + (len ? len - 1 : 0)) >> 16;

	if (lo == touched.last && hi == lo)
		return;
	touched.n += (unsigned)(hi - lo) + (lo != touched.last);
	touched.last = hi;
	if (touched.n >= STORE_MAP_WINDOWS)
		store__unmap(s);
}

void store__unmap(struct store *s)
{
	MDB_envinfo info;
	MDB_stat st;
	uint64_t used;

	touched.n = 0;
	touched.last = 0;
	if (!s->map_lo || mdb_env_info(s->env, &info) || mdb_env_stat(s->env, &st))
		return;
	used = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
	if (used > s->map_hi - s->map_lo)
		used = s->map_hi - s->map_lo;
	/* A shared file mapping: the pages stay in the page cache, only this
	 * process's page table entries go (LMDB maps read-only, no WRITEMAP). */
	madvise((void *)s->map_lo, used, MADV_DONTNEED);
}

void store__txn_abort(struct store *s, MDB_txn *txn)
{
	if (!txn)
		return;
	mdb_txn_abort(txn);
	pthread_rwlock_unlock(&s->resize_lock);
}

int store__open(struct store **out, const struct store_opts *o)
{
	struct store *s;
	char path[4096];
	unsigned int flags = MDB_NOTLS;
	MDB_txn *txn = NULL;
	struct stat st;
	int rc;

	if (!o || !o->dir || !*o->dir)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_rwlock_init(&s->resize_lock, NULL);
	s->dir = strdup(o->dir);
	s->max_size = o->max_size ? o->max_size : 4ULL << 30;
	s->retention_s = o->retention_s;
	s->readonly = o->readonly;
	/* The writer's generations: PROFFS_STORE_INDEX_WINDOW_S=N (README,
	 * Debugging) makes them N seconds, 0 every commit, so tests see one
	 * end. */
	{
		const char *window = getenv("PROFFS_STORE_INDEX_WINDOW_S");

		s->pc_window_s = window && *window ? atoll(window) : -1;
		if (s->pc_window_s < 0)
			s->pc_window_s = PC_WINDOW_S;
	}
	s->pc_gen_start = now_mono_ns() / 1000000000;
	if (!s->dir) {
		rc = -ENOMEM;
		goto err;
	}
	if (s->readonly) {
		snprintf(path, sizeof(path), "%s/data.mdb", o->dir);
		if (stat(path, &st)) {
			rc = -errno;
			pr_err("store: %s: no store here (%s)", o->dir, strerror(errno));
			goto err;
		}
		flags |= MDB_RDONLY;
	} else if (mkdir(o->dir, 0700) && errno != EEXIST) {
		rc = -errno;
		pr_err("store: cannot create %s: %s", o->dir, strerror(errno));
		goto err;
	}
	if (o->nosync)
		flags |= MDB_NOSYNC; /* tests and benchmarks only */
	rc = mdb_env_create(&s->env);
	if (rc)
		goto lmdb_err;
	rc = mdb_env_set_maxdbs(s->env, DB__N + LEGACY_DBS + 2);
	if (!rc)
		rc = mdb_env_set_maxreaders(s->env, 512);
	if (!rc)
		rc = mdb_env_set_mapsize(s->env, s->max_size);
	if (rc)
		goto lmdb_err;
	rc = mdb_env_open(s->env, o->dir, flags, 0600);
	if (rc)
		goto lmdb_err;
	/* Readers left behind by a killed process would pin old pages. */
	mdb_reader_check(s->env, NULL);
	map_find(s);

	rc = store__txn_begin(s, s->readonly, &txn);
	if (rc)
		goto err;
	for (int i = 0; i < DB__N; i++) {
		rc = mdb_dbi_open(txn, store_db_names[i],
				  db_flags(i) | (s->readonly ? 0 : MDB_CREATE), &s->dbi[i]);
		if (rc == MDB_NOTFOUND && s->readonly && db_optional(i)) {
			s->absent[i] = true;
			rc = 0;
			continue;
		}
		if (rc) {
			if (rc == MDB_NOTFOUND)
				pr_err("store: %s: no database %s: not a proffs store of format %d",
				       o->dir, store_db_names[i], STORE_FORMAT);
			else
				pr_err("store: %s: database %s: %s", o->dir, store_db_names[i],
				       mdb_strerror(rc));
			store__txn_abort(s, txn);
			rc = rc == MDB_NOTFOUND ? -ENOENT : store__errno(rc);
			goto err;
		}
	}
	/* Format 4 stores have always held these, empty: created (never
	 * opened otherwise) so that a proffs built before they went out of
	 * use still opens a store made now. Drop at the next format. */
	for (int i = 0; i < LEGACY_DBS && !s->readonly; i++) {
		MDB_dbi dbi;

		rc = mdb_dbi_open(txn, legacy_db_names[i], MDB_DUPSORT | MDB_DUPFIXED | MDB_CREATE,
				  &dbi);
		if (rc) {
			pr_err("store: %s: database %s: %s", o->dir, legacy_db_names[i],
			       mdb_strerror(rc));
			store__txn_abort(s, txn);
			rc = store__errno(rc);
			goto err;
		}
	}
	/* The on-disk format: written into a new store, checked otherwise
	 * (a store holding data but no format predates format 2; format 3:
	 * types keep the default sample type; format 4: only label strings
	 * are indexed by content). */
	{
		uint64_t fmt = 0;
		MDB_stat st = { 0 };

		rc = meta__get_u64(s, txn, "format", &fmt);
		if (!rc)
			rc = store__errno(mdb_stat(txn, s->dbi[DB_BLOCK], &st));
		if (!rc && !fmt && !st.ms_entries && !s->readonly)
			rc = meta__put_u64(s, txn, "format", fmt = STORE_FORMAT);
		if (!rc && fmt != STORE_FORMAT && (fmt || st.ms_entries)) {
			pr_err("store: %s: store format %llu, this proffs reads format %d",
			       o->dir, (unsigned long long)fmt, STORE_FORMAT);
			rc = -EPROTO;
		}
		if (rc) {
			store__txn_abort(s, txn);
			goto err;
		}
	}
	rc = store__txn_commit(s, txn);
	if (rc) {
		pr_err("store: %s: cannot commit: %s", o->dir, strerror(-rc));
		goto err;
	}
	*out = s;
	return 0;

lmdb_err:
	pr_err("store: %s: %s", o->dir, mdb_strerror(rc));
	rc = store__errno(rc);
err:
	store__close(s);
	return rc;
}

void store__close(struct store *s)
{
	if (!s)
		return;
	if (s->env)
		mdb_env_close(s->env);
	ZSTD_freeCCtx(s->zc);
	ZSTD_freeDCtx(s->zd);
	if (s->pc_sym)
		for (int i = 0; i < DB__N; i++)
			u64map__free(&s->pc_sym[i]);
	free(s->pc_sym);
	if (s->pc_series)
		u64map__free(s->pc_series);
	free(s->pc_series);
	if (s->pc_locfp)
		u64map__free(s->pc_locfp);
	free(s->pc_locfp);
	if (s->pc_lstr)
		u64map__free(s->pc_lstr);
	free(s->pc_lstr);
	intern__free(s);
	pthread_rwlock_destroy(&s->resize_lock);
	free(s->dir);
	free(s);
}

int meta__get_u64(struct store *s, MDB_txn *txn, const char *name, uint64_t *v)
{
	MDB_val k = { strlen(name), (void *)name }, d;
	int rc = mdb_get(txn, s->dbi[DB_META], &k, &d);

	*v = 0;
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return store__errno(rc);
	if (d.mv_size != 8)
		return -EBADMSG;
	*v = be64_get(d.mv_data);
	return 0;
}

int meta__put_u64(struct store *s, MDB_txn *txn, const char *name, uint64_t v)
{
	uint8_t b[8];
	MDB_val k = { strlen(name), (void *)name }, d = { 8, b };

	be64_put(b, v);
	return store__errno(mdb_put(txn, s->dbi[DB_META], &k, &d, 0));
}

uint64_t store__used_pages(struct store *s, MDB_txn *txn)
{
	MDB_stat st;
	uint64_t used = 0;

	/* The main DB (holding the named DB records) and the free list. */
	for (MDB_dbi d = 0; d < 2; d++)
		if (!mdb_stat(txn, d, &st))
			used += st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
	for (int i = 0; i < DB__N; i++)
		if (!s->absent[i] && !mdb_stat(txn, s->dbi[i], &st))
			used += st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
	return used;
}

const char *store__dir(struct store *s)
{
	return s->dir;
}

uint64_t store__version(struct store *s)
{
	MDB_envinfo info;

	if (mdb_env_info(s->env, &info))
		return 0;
	return info.me_last_txnid;
}

int store__stats(struct store *s, struct store_stats *out)
{
	MDB_txn *txn;
	MDB_stat st;
	MDB_envinfo info;
	char path[4096];
	struct stat fst;
	uint64_t v;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	mdb_env_info(s->env, &info);
	mdb_env_stat(s->env, &st);
	out->map_size = s->max_size;
	out->index_bytes = atomic_load(&s->pc_bytes);
	out->used_bytes = store__used_pages(s, txn) * st.ms_psize;
	snprintf(path, sizeof(path), "%s/data.mdb", s->dir);
	if (!stat(path, &fst))
		out->file_bytes = fst.st_size;
	if (!mdb_stat(txn, s->dbi[DB_SERIES], &st))
		out->nseries = st.ms_entries;
	/* Grouped tables: ids are dense from 1, entries are groups. */
	{
		uint32_t next;

		if (!table__next_id(s, txn, DB_STACK, &next))
			out->nstacks = next - 1;
		if (!table__next_id(s, txn, DB_LOC, &next))
			out->nlocations = next - 1;
		if (!table__next_id(s, txn, DB_STR, &next))
			out->nstrings = next - 1;
	}
	if (!mdb_stat(txn, s->dbi[DB_BLOCK], &st))
		out->nblocks = st.ms_entries;
	if (!meta__get_u64(s, txn, "last_commit", &v))
		out->last_commit = (int64_t)v;
	if (!meta__get_u64(s, txn, "dropped", &v))
		out->dropped_blocks = v;
	store__txn_abort(s, txn);
	return 0;
}
