/*
 * store.h - the proffs store: one LMDB environment holding every sample.
 *
 * Writers hand whole batches to store__append(), one LMDB write
 * transaction each, so a crash loses at most the batch being written.
 * Readers (the FUSE tree, `proffs cat`) call the query functions, each of
 * which runs in its own read-only snapshot, so they never block the writer
 * and never see half a batch. Several processes may use one store at once
 * (a mount and an import); LMDB serialises the writers.
 *
 * All times are Unix seconds (UTC) unless a name says _ns.
 * Thread-safety: a struct store may be shared by any number of reader
 * threads; appends must come from one thread at a time.
 */
#ifndef PROFFS_STORE_H
#define PROFFS_STORE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/profile/profile.h"

struct store;

struct store_opts {
	const char *dir;        /* created if missing (unless readonly) */
	uint64_t max_size;      /* bytes; LMDB map size. 0 = 4 GiB */
	int64_t retention_s;    /* drop data older than this; 0 = keep */
	bool readonly;          /* open for queries only */
	/* Tests and benches only (never set by a proffs command): commits
	 * without an fsync, so a crash may lose them. */
	bool nosync;
};

/* Opens (creating if needed) the store in o->dir. On success *out owns the
 * environment until store__close(). Returns 0 or -errno; a message naming
 * the cause is logged. */
int store__open(struct store **out, const struct store_opts *o);
void store__close(struct store *s);

/* A label pair, C strings owned by the caller. */
struct store_label {
	const char *name, *value;
};

/* The longest profile type name the store keeps. */
#define STORE_TYPE_MAX 256

/*
 * Whether the len bytes at t make a type name the store accepts: 1 to
 * STORE_TYPE_MAX bytes of letters, digits, '_', '-' and '.', not starting
 * with '.'. A type becomes a directory under /prof, so the rule is one for
 * every writer (store__append, import) and the path parser.
 */
bool store__type_ok(const char *t, size_t len);

/*
 * Appends one batch: every sample of p, in the window
 * [time_ns, time_ns + duration_ns) of profile type `type` ("cpu", "heap"...).
 * A sample's string labels, plus the extra labels (which win on a name
 * clash), form its series' label set; numeric labels are not kept.
 * The first append of a type fixes its value types; a later batch whose
 * value types are not a subset of them is refused with -EINVAL.
 * One write transaction: either all of it is stored or none. When the
 * map nears max_size the oldest data is deleted first, so an append does
 * not fail because the store filled. Returns 0 or -errno.
 * p is not modified and stays the caller's.
 */
int store__append(struct store *s, const char *type, int64_t time_ns,
		  int64_t duration_ns, const struct profile *p,
		  const struct store_label *extra, size_t nextra);

/* Label matcher for selections. */
enum store_match_op { STORE_EQ, STORE_NEQ, STORE_RE };

struct store_matcher {
	const char *name, *value; /* owned by the caller */
	enum store_match_op op;
	regex_t re; /* compiled by store_matcher__init for STORE_RE */
};

/* Compiles m->value as an anchored POSIX ERE when op is STORE_RE.
 * Returns 0 or -EINVAL. Release with store_matcher__fini(). */
int store_matcher__init(struct store_matcher *m);
void store_matcher__fini(struct store_matcher *m);

/* A selection: a type and matchers that AND together. A label a series
 * lacks never matches (not even with !=). */
struct store_sel {
	const char *type;
	const struct store_matcher *m;
	size_t nm;
	/* When set, only these series (ids ascending, as store__minute_series
	 * gives them) are selected, ANDed with the matchers. */
	const uint32_t *ids;
	size_t nids;
};

/* Names of the types that have data, sorted. *names is a malloc'd array of
 * malloc'd strings; free with store__free_strv(). Returns 0 or -errno. */
int store__types(struct store *s, char ***names, size_t *n);
void store__free_strv(char **v, size_t n);

/* What a directory under a selection lists: every "name=value" pair of the
 * series that match (sorted, unencoded), and every minute (Unix seconds,
 * multiple of 60, ascending) that holds data of those series.
 * *pairs: free with store__free_strv(); *minutes: free(). */
int store__list(struct store *s, const struct store_sel *sel, char ***pairs,
		size_t *npairs, int64_t **minutes, size_t *nminutes);

/* Newest minute with data under sel, or -ENOENT. */
int store__latest_minute(struct store *s, const struct store_sel *sel,
			 int64_t *minute);

/*
 * Merges the samples of every series matching sel whose batch starts in
 * [from, to) into a new profile: value types of the type, period, and
 * time_nanos/duration_nanos = the window [from, to). Series labels comm and
 * pid become sample labels. Symbols come from the store's tables. An empty
 * selection or range gives an empty but valid profile. Uses the hourly
 * rollups for whole, closed hours. *out is the caller's (profile__free).
 * Returns 0 or -errno (-ENOENT if the type does not exist).
 */
int store__merge(struct store *s, const struct store_sel *sel, int64_t from,
		 int64_t to, struct profile **out);

/*
 * The writer's mark: every sample taken before time_ns is stored. The
 * daemon sets it after each flush; it never moves back (a smaller time_ns
 * is ignored). One small write transaction. Returns 0 or -errno.
 */
int store__set_complete(struct store *s, int64_t time_ns);

/* The mark, or -ENOENT if no writer ever set one (a store filled by
 * `proffs import` alone: its minutes are complete once their end passed). */
int store__complete(struct store *s, int64_t *time_ns);

/* The store's directory (as given to store__open; owned by s). */
const char *store__dir(struct store *s);

/*
 * Builds the rollup of every hour of every type that ended at or before
 * until_s (Unix seconds) and whose raw data changed since it was last
 * built. An append does this for the hours before its batch; data that no
 * later batch follows (an import of past hours) needs it said. One write
 * transaction, none when nothing is due; *built (may be NULL) gets the
 * number of hours built. Returns 0 or -errno.
 */
int store__close_hours(struct store *s, int64_t until_s, size_t *built);

/* A number that changes whenever committed data changes (cache keys). */
uint64_t store__version(struct store *s);


/* Figures for /prof/metrics. */
struct store_stats {
	uint64_t map_size, used_bytes, file_bytes;
	uint64_t nseries, nstacks, nlocations, nstrings, nblocks;
	int64_t last_commit; /* Unix seconds of the last append, 0 = none */
	uint64_t dropped_blocks; /* deleted by retention or the size bound */
	uint64_t index_bytes;    /* the writer's content -> id maps in memory */
};
int store__stats(struct store *s, struct store_stats *st);

/* Applies retention and the size bound now (the daemon calls this
 * periodically; store__append also does). Returns 0 or -errno. */
int store__expire(struct store *s, int64_t now);

/* Writes a consistent, compacted copy of s (one read snapshot, free pages
 * left out) as DEST/data.mdb; DEST is created if missing and must not
 * hold a store already (-EEXIST). Runs beside appends of any process
 * without blocking them. The copy opens as a store of its own. Returns 0
 * or -errno (a partial copy is removed). */
int store__copy(struct store *s, const char *dest);

/* A series holding data in a minute: its id (stable within this store)
 * and its labels (malloc'd strings). */
struct store_series {
	uint32_t id;
	struct store_label *labels;
	size_t nlabels;
};

/* The series of type with data in minute (Unix s, multiple of 60),
 * ascending by id. *out: free with store__free_series(). Returns 0 (none:
 * *n = 0), -ENOENT for an unknown type, or -errno. */
int store__minute_series(struct store *s, const char *type, int64_t minute,
			 struct store_series **out, size_t *n);
void store__free_series(struct store_series *v, size_t n);

/* Named u64 values of the store's users (e.g. the push cursor), kept in
 * the store so they survive restarts and travel with copies. get: -ENOENT
 * when never put. put: one write transaction; -EROFS on a read-only
 * store. Names are at most 100 bytes. Return 0 or -errno. */
int store__meta_get(struct store *s, const char *name, uint64_t *v);
int store__meta_put(struct store *s, const char *name, uint64_t v);

/*
 * Names found later (issue 30). A frame stored without a name keeps its
 * mapping (file, build id) and address, so its build id and file offset.
 * When symbols for that build id turn up (a debug file installed or
 * fetched, a file that could not be read becomes readable), the daemon
 * scans for such locations and gives each its lines once, in a table of
 * its own (`late`): blocks, stacks and location records stay as written,
 * and every read (store__merge) takes a location's late lines in place of
 * none. store__names_version moves with each such commit, so caches of
 * complete minutes know their bytes changed.
 */

/* A location stored without lines whose mapping has a build id. Strings
 * point into the scan's memory, valid during the callback. */
struct store_unnamed {
	uint32_t loc;         /* store location id */
	const char *build_id; /* lowercase hex, as stored */
	const char *file;     /* the mapping's file */
	uint64_t off;         /* file offset: address - start + mapping offset */
};

/*
 * Calls fn for every location with id in [from, from + max) that has no
 * lines, no late name yet and a mapping with a build id, in one read
 * snapshot; *next gets the first id not looked at (the table's end when
 * it ends before from + max). fn returns 0 to go on, else the scan stops
 * and returns that value. Returns 0 or -errno.
 */
int store__unnamed(struct store *s, uint32_t from, uint32_t max, uint32_t *next,
		   int (*fn)(void *ctx, const struct store_unnamed *u), void *ctx);

/* A name for location loc of the store: the lines of location plid of
 * the profile given beside it (functions and strings of that profile). */
struct store_late {
	uint32_t loc;
	uint64_t plid;
};

/*
 * Records late names, one write transaction: for each v[i] whose store
 * location still has no lines and no late name, a late record (same
 * mapping and address, p's lines; functions and strings interned like an
 * append's). Others are skipped (a location is named once). *named (may
 * be NULL) gets the count written. Appends' rule: one thread at a time.
 * Returns 0 or -errno.
 */
int store__name_late(struct store *s, const struct profile *p, const struct store_late *v,
		     size_t n, size_t *named);

/* A number that moves whenever late names are committed (0: none ever):
 * what a complete minute's bytes depend on besides its data. It is the
 * Unix second of the last such commit (one more than the version before
 * when that is not earlier), so it also dates the change. Cheap: read
 * again only when the store's version moved. */
uint64_t store__names_version(struct store *s);

/* A file the daemon read symbols from, by build id: where it was (a path
 * in the host's mount namespace), whose it was (the effective ids of the
 * process that mapped it: only they may have it served) and what it was
 * then (so that a file replaced under that path is not served for it). */
#define STORE_BIN_LOADS 16
#define STORE_BIN_HOST 1u /* path is in the host's mount namespace: servable */
struct store_binary {
	char build_id[129]; /* lowercase hex */
	char *path;         /* malloc'd by store__binary_get */
	uint32_t uid, gid, flags;
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	/* Its PT_LOAD segments (file offset -> link-time address): a
	 * separate debug file has none that say where code is in the file,
	 * so naming a frame's file offset later needs the binary's. */
	struct { uint64_t vaddr, off, filesz; } loads[STORE_BIN_LOADS];
	uint32_t nloads;
};

/* Records b (replacing a record of the same build id). One write
 * transaction; the appends' one-thread rule. Returns 0 or -errno. */
int store__binary_put(struct store *s, const struct store_binary *b);
/* The record of build_id into *b (b->path malloc'd: free it), or -ENOENT. */
int store__binary_get(struct store *s, const char *build_id, struct store_binary *b);
/* Every recorded build id, sorted; free with store__free_strv(). */
int store__binaries(struct store *s, char ***ids, size_t *n);
/* Whether s is a build id as the store keeps them: 2 to 128 lowercase hex
 * digits, an even count. */
bool store__build_id_ok(const char *s);

/* Walks every database and cross-reference. Problems are printed to f,
 * one line each. Returns 0 when the store is sound, else the count of
 * problems (> 0), or -errno if it could not be read. */
int store__check(struct store *s, void *f /* FILE* */);

#endif
