/*
 * store_int.h - private to store/store_*.c: the LMDB schema, transaction
 * helpers, the block codec and small hash maps.
 *
 * Schema (all integer keys big-endian so byte order == numeric order):
 *   meta       "name" -> value (counters: series_next, dropped, last_commit)
 *   str        id u32 -> bytes (grouped: see store_intern.c; so are func,
 *              map, loc and stacks)
 *   str_idx    hash64 u64 -> id (dup): label names and values only
 *   func       id u32 -> enc(function)
 *   map        id u32 -> enc(mapping)
 *   loc        id u32 -> enc(location)
 *   stacks     id u32 -> enc(stack): location ids, leaf first
 *   func_idx, map_idx, loc_idx, stacks_idx: empty since format 4 (the
 *   writer rebuilds content -> id maps in memory from the tables; readers
 *   never look these records up by content). Only created, so that older
 *   format-4 readers, which open them, still open the store.
 *   type       name -> type record (id, period, value types)
 *   series     id u32 -> (type u32, npairs u32, (name sid, value sid)*, last_seen u64)
 *   series_idx hash64(content) -> id (dup)
 *   post       (type u32, name sid, value sid) -> series ids (dup, fixed)
 *   block      (type u32, start s u64, seq u32) -> block of one batch
 *   minute     (type u32, minute u32) -> series ids (dup, fixed)
 *   rollup     (type u32, hour u32) -> block merging that hour's batches
 *   dirty      (type u32, hour u32) -> 1 byte: raw data changed, rollup stale
 *   late       location id u32 -> enc(location): the same mapping and address
 *              with the lines a name found later gives it (issue 30); written
 *              once per location, never for one stored with lines
 *   bins       build id (hex) -> enc(binary): where the daemon read the file
 *              of that build id, for /binaries (store_late.c)
 * late and bins came after format 4 without a format change: an older
 * proffs ignores them (frames read unnamed, no /binaries), and a store
 * opened read-only that predates them reads as if they were empty.
 * Id 0 is reserved everywhere: string 0 is "", mapping 0 "none".
 * meta "format" holds STORE_FORMAT; a store without it is refused.
 */
#ifndef PROFFS_STORE_INT_H
#define PROFFS_STORE_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "store/db/store.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

enum store_db {
	DB_META,
	DB_STR,
	DB_STR_IDX,
	DB_FUNC,
	DB_MAP,
	DB_LOC,
	DB_STACK,
	DB_TYPE,
	DB_SERIES,
	DB_SERIES_IDX,
	DB_POST,
	DB_BLOCK,
	DB_MINUTE,
	DB_ROLLUP,
	DB_DIRTY,
	DB_LATE,
	DB_BINS,
	DB__N
};

extern const char *const store_db_names[DB__N];

#define STORE_HASH_SEED 0x70726f6666737331ULL /* "proffss1" */
#define BLOCK_KEY_LEN 16
#define STORE_FORMAT 4
#define STACK_MAX_DEPTH 4096
#define HOUR_S 3600

/* ---- fhash: a fast 64-bit hash for in-memory maps only (never stored:
 * on-disk hashes are hash64's). 16 bytes per step through one 64x64->128
 * multiply instead of hash64's serial mix per 8 bytes: the writer hashes
 * every symbol of every batch. ---- */
#define FH_K1 0xa0761d6478bd642fULL
#define FH_K2 0xe7037ed1a0b428dbULL
#define FH_K3 0x8ebc6af09c88c6e3ULL
static inline uint64_t fh_mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}
static inline uint64_t fhash(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = seed ^ fh_mum(n ^ FH_K1, FH_K2), x = 0, y = 0;
	uint32_t u, v;

	while (n > 16) {
		memcpy(&x, b, 8);
		memcpy(&y, b + 8, 8);
		h ^= fh_mum(x ^ h ^ FH_K1, y ^ FH_K2);
		b += 16;
		n -= 16;
	}
	/* Tail of 0..16 bytes (overlapping reads, as n is known). */
	if (n > 8) {
		memcpy(&x, b, 8);
		memcpy(&y, b + n - 8, 8);
	} else if (n >= 4) {
		memcpy(&u, b, 4);
		memcpy(&v, b + n - 4, 4);
		x = u;
		y = v;
	} else if (n) {
		x = (uint64_t)b[0] << 16 | (uint64_t)b[n >> 1] << 8 | b[n - 1];
		y = 0;
	} else {
		x = y = 0;
	}
	h ^= fh_mum(x ^ h ^ FH_K1, y ^ FH_K3 ^ n);
	return fh_mum(h ^ FH_K2, h ^ FH_K3);
}

/* Records added by the running append, not yet written (intern__add). */
struct pend_tab {
	uint32_t first, n; /* ids first .. first + n - 1 */
	uint8_t *buf;
	size_t len, cap;
	uint32_t *off; /* n + 1 offsets into buf */
	size_t offcap;
};
struct store {
	MDB_env *env;
	MDB_dbi dbi[DB__N];
	char *dir;
	uint64_t max_size;
	int64_t retention_s;
	bool readonly;
	/* Databases a read-only open did not find (added after the store was
	 * made, e.g. late and bins): read as empty. */
	bool absent[DB__N];
	/* store__names_version's answer and the LMDB txn id it was read at. */
	_Atomic uint64_t names_txnid, names_ver;
	/* Held shared by every open transaction of this process and
	 * exclusively to adopt a map grown by another process
	 * (mdb_env_set_mapsize needs no transaction open). */
	pthread_rwlock_t resize_lock;
	/* LMDB's map [map_lo, map_hi) in this process (0: not known), found
	 * when the map is made or moved, under resize_lock held exclusively
	 * or before any other thread has the store (store__unmap). */
	uintptr_t map_lo, map_hi;
	int64_t last_retention; /* when append last applied retention */
	void *zc;               /* ZSTD_CCtx of the (single) appending thread */
	void *zd;               /* its ZSTD_DCtx (rollups) */
	/* Caches of the appending thread, holding committed ids only (ids of
	 * interned tables never change once committed): content hash ->
	 * id per table (stacks included), series content hash -> id
	 * (verified on use: series can expire). Each value is the id with,
	 * in its upper 32 bits, the generation that last used it: an entry
	 * unused for a whole generation is forgotten when the next one
	 * starts (store_writer_cache.c says why that is safe). */
	struct u64map *pc_sym; /* [DB__N] */
	struct u64map *pc_series;
	struct u64map *pc_locfp; /* profile location fingerprint -> location */
	/* Every record below pc_upto[dbi] has been offered to pc_sym[dbi]:
	 * each append transaction first adds the records committed since
	 * (by this or another process); 0 = not yet, then only the newest
	 * PC_RELOAD are taken. */
	uint32_t pc_upto[DB__N];
	struct pend_tab pend[DB__N];
	MDB_txn *pend_txn; /* the append txn they belong to (atomic access) */
	struct u64map *pc_lstr; /* label string hash -> sid indexed in str_idx */
	uint32_t pc_gen;        /* the generation now */
	int64_t pc_gen_start;   /* when it began, CLOCK_MONOTONIC seconds */
	int64_t pc_window_s;    /* how long a generation lasts */
	/* Bytes of those caches' slots after the last commit (a metric,
	 * read by other threads). */
	_Atomic uint64_t pc_bytes;
};

#define PC_MAX_ENTRIES (4u << 20) /* a cache this full ends its generation early */
#define PC_RELOAD 16384u          /* newest records per table taken at open */
#define PC_WINDOW_S 3600          /* a generation: an hour (DESIGN-NOTES) */

/* For tests and benches, which append faster than the clock runs: the
 * next commit ends the writer's generation. */
static inline void store__gen_end_next(struct store *s)
{
	s->pc_gen_start -= s->pc_window_s + 1;
}


/* Maps an LMDB return code to -errno (MDB_MAP_FULL -> -ENOSPC,
 * MDB_NOTFOUND -> -ENOENT, other LMDB codes -> -EIO). */
int store__errno(int rc);

/* Begins a transaction (write unless rdonly), adopting a map another
 * process grew. End it with store__txn_commit() or store__txn_abort() only. */
int store__txn_begin(struct store *s, bool rdonly, MDB_txn **txn);
/* Unmaps the store's pages this process has mapped (LMDB reads through
 * its map); the page cache keeps them and a later read faults them in
 * again. For a merge, which reads a window's pages once: each page it
 * touched stayed resident in the daemon, with the kernel's fault-around
 * neighbours, as long as the daemon ran. Each write does it too, as it
 * commits (store__txn_commit). Call with a transaction open
 * (the map cannot move under it). */
void store__unmap(struct store *s);
/* Notes that the calling thread read p[len] through the store's map, and
 * unmaps (store__unmap) once its reads since the last unmap have entered
 * STORE_MAP_WINDOWS of the kernel's 64 KiB fault-around windows. For a
 * reader of many records (a table, a window's series): what it has mapped
 * stays bounded (~1 MiB) rather than growing to the table's size. p must
 * point into the map of a transaction still open. */
void store__touched(struct store *s, const void *p, size_t len);
int store__txn_commit(struct store *s, MDB_txn *txn);
void store__txn_abort(struct store *s, MDB_txn *txn);



/* ---- interned tables ---- */
/* Finds content b[len] in table dbi (with index idx); *id = 0 if absent.
 * Returns 0 or -errno. */
int intern__find(struct store *s, MDB_txn *txn, int dbi, int idx,
		 const void *b, size_t len, uint32_t *id);
/* Adds content b[len] to table dbi under the next free id (next caches
 * it for this txn, 0 = not loaded yet), without looking for it first: the
 * writer's in-memory maps (store_append.c) did. Returns 0 or -errno. */
int intern__add(struct store *s, MDB_txn *txn, int dbi, const void *b, size_t len,
		uint32_t *next, uint32_t *id);
/* Puts an index entry hash64(b) -> id into idx (str_idx, for label
 * strings), unless it is there already. Returns 0 or -errno. */
int intern__index(struct store *s, MDB_txn *txn, int idx, const void *b, size_t len,
		  uint32_t id);
/* Grouped tables (see store_intern.c): records of consecutive ids in one
 * entry keyed by the first id. */
#define GROUP_MAX 32
#define GROUP_BYTES 768
struct group {
	uint32_t first, n;
	const uint8_t *data;           /* the records' bytes */
	uint32_t off[GROUP_MAX + 1]; /* record i is data[off[i], off[i+1]) */
};
bool table__grouped(int dbi);
/* Decodes the entry k -> d of a grouped table; data points into d. */
int group__dec(const MDB_val *k, const MDB_val *d, struct group *g);
/* The next free id of table dbi (1 when empty). Returns 0 or -errno. */
int table__next_id(struct store *s, MDB_txn *txn, int dbi, uint32_t *next);
/* Writes the records intern__add collected as groups (before commit). */
int intern__flush(struct store *s, MDB_txn *txn);
/* Forgets them (the transaction was aborted). */
void intern__discard(struct store *s);
void intern__free(struct store *s);
/* Reads record id of table dbi; *v points into the transaction's memory
 * (or, for a record added by the running append, into s->pend until the
 * next intern__add). Returns 0, -ENOENT or -errno. */
int table__read(struct store *s, MDB_txn *txn, int dbi, uint32_t id,
		MDB_val *v);
/* Reads records ids[0..n) (ascending, distinct) of table dbi and calls
 * fn(ctx, i, rec) for each; rec points into the transaction's memory and
 * is valid during the call. One cursor walks the table and decodes each
 * group once, however many of its records are asked for (a merge asks
 * for thousands of neighbouring ids; table__read pays a B-tree search and
 * a group decode for each). Returns 0, the first non-zero fn result,
 * -ENOENT (an id not in the table) or -errno. */
int table__read_many(struct store *s, MDB_txn *txn, int dbi, const uint32_t *ids, size_t n,
		     int (*fn)(void *ctx, size_t i, const MDB_val *rec), void *ctx);
/* A string as a malloc'd C string (NUL-terminated copy) or NULL. */
char *str__dup(struct store *s, MDB_txn *txn, uint32_t sid);

/* Encoded symbol records. */
struct sym_func {
	uint32_t name, system_name, filename;
	int64_t start_line;
};
struct sym_mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id;
	bool has_functions;
};
struct sym_line {
	uint32_t func;
	int64_t line;
};
size_t func__enc(const struct sym_func *f, uint8_t *out /* >= 40 */);
int func__dec(const void *b, size_t len, struct sym_func *f);
size_t mapping__enc(const struct sym_mapping *m, uint8_t *out /* >= 48 */);
int mapping__dec(const void *b, size_t len, struct sym_mapping *m);
/* Location: mapping, address, lines. enc needs 32 + 16 * nlines bytes. */
size_t loc__enc(uint32_t mapping, uint64_t addr, const struct sym_line *l,
		uint32_t n, uint8_t *out);
/* Decodes; *lines points into a malloc'd array the caller frees (NULL
 * when the location has no lines). */
int loc__dec(const void *b, size_t len, uint32_t *mapping, uint64_t *addr,
	     struct sym_line **lines, uint32_t *n);
/* The same into the caller's l (cap entries; len / 2 + 1 always do);
 * -EBADMSG when the record is corrupt or holds more than cap lines. */
int loc__dec_into(const void *b, size_t len, uint32_t *mapping, uint64_t *addr,
		  struct sym_line *l, size_t cap, uint32_t *n);
/* Stack: varint n, then n zigzag deltas of location ids, leaf first (a
 * stack's locations tend to have neighbouring ids). enc needs 5 + 5 * n
 * bytes. dec writes up to cap ids into locs and returns the count, or
 * -EBADMSG (also when the stack has more than cap locations). */
size_t stack__enc(const uint32_t *locs, uint32_t n, uint8_t *out);
int stack__dec(const void *b, size_t len, uint32_t *locs, uint32_t cap);

/* ---- types ---- */
struct store_type {
	uint32_t id;
	int64_t period;
	uint32_t period_type, period_unit; /* sids */
	uint32_t nvalues;
	uint32_t vtype[PROF_MAX_VALUES], vunit[PROF_MAX_VALUES]; /* sids */
	uint32_t default_type; /* sid of the default sample type's name, 0 = none */
};
int type__get(struct store *s, MDB_txn *txn, const char *name,
	      struct store_type *t); /* 0 or -ENOENT */
int type__put(struct store *s, MDB_txn *txn, const char *name,
	      const struct store_type *t);
int type__dec(const void *b, size_t len, struct store_type *t);

/* ---- series ---- */
/* Series record: parsed view into LMDB memory (valid for the txn). */
struct series_rec {
	uint32_t type, npairs;
	const uint8_t *pairs; /* npairs * 8 bytes: name sid BE, value sid BE */
	int64_t last_seen;
};
int series__dec(const void *b, size_t len, struct series_rec *r);
int series__read(struct store *s, MDB_txn *txn, uint32_t id,
		 struct series_rec *r);

/* Matching series of a selection: all (no matchers) or a sorted id set. */
struct series_set {
	bool all;
	uint32_t *ids;
	size_t n;
};
int series__select(struct store *s, MDB_txn *txn, uint32_t type,
		   const struct store_sel *sel, struct series_set *out);
bool series_set__has(const struct series_set *ss, uint32_t id);
void series_set__free(struct series_set *ss);
/* Does the minute key (type, minute) cursor c is positioned on hold any
 * series of ss? */
bool series_set__in_minute(MDB_cursor *c, const struct series_set *ss);

/* ---- blocks ---- */
struct blk_entry {
	uint32_t series, stack;
	int64_t v[PROF_MAX_VALUES];
};
/* Sorts e by (series, stack) and sums duplicates in place; returns the
 * new count. */
size_t blk_entries__normalize(struct blk_entry *e, size_t n, uint32_t nvalues);
/* Encodes normalized entries; *out is malloc'd. zc: ZSTD_CCtx or NULL. */
int block__encode(const struct blk_entry *e, size_t n, uint32_t nvalues,
		  int64_t duration_ns, void *zc, uint8_t **out, size_t *outlen);

struct block_hdr {
	uint32_t nvalues;
	int64_t duration_ns;
	bool zstd;
	size_t raw_len, stored_len;
};
/* Called per series of a block: return true to receive its entries. */
typedef bool (*block_series_fn)(void *ctx, uint32_t series);
typedef int (*block_entry_fn)(void *ctx, uint32_t series, uint32_t stack,
			      const int64_t *v, uint32_t nvalues);
/* Decodes a block, calling want() per series and fn() per entry of the
 * wanted ones. Returns 0, a non-zero return of fn, or -EBADMSG. */
int block__decode(const void *b, size_t len, block_series_fn want,
		  block_entry_fn fn, void *ctx, struct block_hdr *hdr);
/* The same with a caller's ZSTD_DCtx (NULL: one per call), so a merge of
 * hundreds of blocks does not set up a decompression context for each. */
/* The length of block b's payload once decompressed (its header says),
 * or -EBADMSG. */
int block__raw_len(const void *b, size_t len, size_t *raw);
int block__decode_dctx(void *dctx, const void *b, size_t len, block_series_fn want,
		       block_entry_fn fn, void *ctx, struct block_hdr *hdr);

static inline void block_key(uint8_t k[BLOCK_KEY_LEN], uint32_t type,
			     uint64_t start, uint32_t seq)
{
	be32_put(k, type);
	be64_put(k + 4, start);
	be32_put(k + 12, seq);
}

static inline void key2(uint8_t k[8], uint32_t a, uint32_t b)
{
	be32_put(k, a);
	be32_put(k + 4, b);
}

/* ---- rollups, expiry ---- */
/* The summed, normalized entries of every raw block of (type, hour);
 * *out is malloc'd (NULL when none). zd: a ZSTD_DCtx or NULL. */
int rollup__entries(struct store *s, MDB_txn *txn, uint32_t type, uint32_t nvalues,
		    uint32_t hour, void *zd, struct blk_entry **out, size_t *nout);
/* Rebuilds the rollups of dirty hours of type t that ended at or before
 * newest (Unix s), at most 64 a call; *built (if not NULL) gets how many. */
int rollup__update(struct store *s, MDB_txn *txn, const struct store_type *t,
		   uint64_t newest, size_t *built);
/* Deletes the blocks of type in [from, to) (seconds) with their minute
 * index entries, rollups and dirty marks of the touched hours. *ndel gets
 * the count of blocks deleted. */
int expire__range(struct store *s, MDB_txn *txn, uint32_t type, uint64_t from,
		  uint64_t to, uint64_t *ndel);
/* Live pages of all databases in txn's view. */
uint64_t store__used_pages(struct store *s, MDB_txn *txn);
/* Deletes oldest data until used pages < target fraction of max_size. */
int expire__size(struct store *s, MDB_txn *txn, double target, uint64_t *ndel);
/* Oldest block start of a type (UINT64_MAX if none). 0 or -errno. */
int block__oldest(struct store *s, MDB_txn *txn, uint32_t type, uint64_t *t);
/* Newest block start of a type, 0 if none. */
int block__newest(struct store *s, MDB_txn *txn, uint32_t type,
		  uint64_t *newest);

/* meta counters */
int meta__get_u64(struct store *s, MDB_txn *txn, const char *name,
		  uint64_t *v); /* 0 (v=0 if absent) or -errno */
int meta__put_u64(struct store *s, MDB_txn *txn, const char *name, uint64_t v);

/* List of (name, id) of every type. */
struct type_ent {
	char *name;
	struct store_type t;
};
int types__all(struct store *s, MDB_txn *txn, struct type_ent **out,
	       size_t *n);
void types__free(struct type_ent *t, size_t n);

/* store_snap.c: merging snapshot types as a mean per series. */
struct snap_acc;
typedef int (*snap_emit_fn)(void *ctx, uint32_t series, uint32_t stack, const int64_t *v,
			    uint32_t nv);
bool snap__type(const char *type); /* heap, goroutine */
/* NULL with errno on failure; free with snap__free(). */
struct snap_acc *snap__new(uint32_t nvalues);
void snap__block(struct snap_acc *a); /* the next entries are a new block */
int snap__add(struct snap_acc *a, uint32_t series, uint32_t stack, const int64_t *v);
/* Emits each (series, stack) once with its mean over the series'
 * snapshots. Returns 0 or emit's error. */
int snap__fold(struct snap_acc *a, snap_emit_fn emit, void *ctx);
void snap__free(struct snap_acc *a);

#endif
