/*
 * test_late: names found later (store/db/store_late.c). A frame stored
 * without a name is found by the scan with its build id and file offset,
 * named once, and read named by every merge from then on, with the
 * stored blocks untouched; a named frame is never renamed; the names
 * version moves only when a name is written; the binaries table; a store
 * made before these tables opens read-only.
 */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/tree/tree.h"
#include "store/db/store.h"
#include "store/profile/profile.h"
#include "store/util/util.h"
#include "tests/test.h"

static const char *vt[] = { "samples", "cpu" }, *vu[] = { "count", "nanoseconds" };

/* One sample: leaf "unnamed" frame of app (build id ab12, file offset
 * 0x1234 + k), under a named frame "main". */
static struct profile *mk(int k)
{
	struct profile *p = profile__new();
	struct prof_mapping m = { .start = 0x400000, .limit = 0x500000, .offset = 0x1000 };
	struct prof_function f = { 0 };
	struct prof_line ln;
	struct prof_label l = { 0 };
	uint64_t mid, locs[2];
	int64_t v[2] = { 3, 30 };

	profile__set_value_types(p, 2, vt, vu);
	m.file = profile__intern_str(p, "/usr/bin/app");
	m.build_id = profile__intern_str(p, "ab12");
	mid = profile__add_mapping(p, &m);
	locs[0] = profile__add_location(p, &(struct prof_location){ mid, 0x400234 + k, 0, NULL });
	f.name = f.system_name = profile__intern_str(p, "main");
	ln = (struct prof_line){ profile__add_function(p, &f), 7 };
	locs[1] = profile__add_location(p, &(struct prof_location){ mid, 0x400100, 1, &ln });
	l.key = profile__intern_str(p, "comm");
	l.str = profile__intern_str(p, "app");
	profile__add_sample(p, locs, 2, &l, 1, v);
	return p;
}

struct found {
	uint32_t loc[8];
	uint64_t off[8];
	int n;
	char bid[16];
};

static int on_unnamed(void *ctx, const struct store_unnamed *u)
{
	struct found *f = ctx;

	if (f->n < 8) {
		f->loc[f->n] = u->loc;
		f->off[f->n] = u->off;
		snprintf(f->bid, sizeof(f->bid), "%s", u->build_id);
		f->n++;
	}
	return 0;
}

/* The leaf frame's name in a merge of everything stored. */
static void leaf_name(struct store *s, char *out, size_t size)
{
	struct store_sel sel = { .type = "cpu" };
	struct profile *p = NULL;

	out[0] = 0;
	if (store__merge(s, &sel, 0, INT64_MAX / 2, &p) || !p || !p->nsamples)
		snprintf(out, size, "(merge failed)");
	else
		profile__frame_name(p, p->samples[0].locs[0], 0, true, out, size);
	profile__free(p);
}

/* A profile holding one location named name (file f, line n): what the
 * daemon's namer hands store__name_late. */
static struct profile *names(const char *name, const char *file, int line, uint64_t *plid)
{
	struct profile *p = profile__new();
	struct prof_function f = { 0 };
	struct prof_line ln;

	f.name = f.system_name = profile__intern_str(p, name);
	f.filename = profile__intern_str(p, file);
	ln = (struct prof_line){ profile__add_function(p, &f), line };
	*plid = profile__add_location(p, &(struct prof_location){ 0, 0, 1, &ln });
	return p;
}

#define MINUTE "/cpu/1970-01-01T00:01/folded.txt"

static void t_late(const char *dir)
{
	struct store_opts o = { .dir = dir, .nosync = true };
	struct store *s = NULL;
	struct profile *p = mk(0), *q;
	struct found f = { 0 };
	struct store_late v;
	uint32_t next = 0;
	uint64_t ver0, ver1;
	size_t named = 0;
	char name[128];
	struct tree *t;
	struct node n0 = { 0 }, n1 = { 0 };

	CHECK(!store__open(&s, &o), "open");
	CHECK(!store__append(s, "cpu", 60e9, 10e9, p, NULL, 0), "append");
	profile__free(p);
	leaf_name(s, name, sizeof(name));
	CHECK(!strcmp(name, "app+0x1234"), "unnamed frame reads module+offset: %s", name);
	t = tree__new(s, NULL);
	CHECK(t && !tree__resolve(t, MINUTE, &n0) && n0.immutable && n0.ctime == n0.mtime && n0.mtime == 120,
	      "the minute's file: immutable, mtime = ctime = its end (%lld)", (long long)n0.mtime);

	CHECK(!store__unnamed(s, 0, 1000, &next, on_unnamed, &f), "scan");
	CHECK(f.n == 1 && f.off[0] == 0x1234 && !strcmp(f.bid, "ab12"),
	      "scan finds the one unnamed frame with build id and offset (n %d off %#llx)", f.n,
	      f.n ? (unsigned long long)f.off[0] : 0ULL);
	CHECK(next >= 3, "scan reports where it stopped (%u)", next);

	ver0 = store__names_version(s);
	q = names("iterateLong", "/src/truth.c", 42, &v.plid);
	v.loc = f.loc[0];
	CHECK(!store__name_late(s, q, &v, 1, &named) && named == 1, "named once (%zu)", named);
	ver1 = store__names_version(s);
	CHECK(ver1 != ver0 && (int64_t)ver1 >= now_s() - 5 && (int64_t)ver1 <= now_s(),
	      "names version moved to the commit's second (%llu -> %llu)", (unsigned long long)ver0,
	      (unsigned long long)ver1);
	CHECK(t && !tree__resolve(t, MINUTE, &n1) && n1.mtime == 120 && n1.ctime == (int64_t)ver1,
	      "mtime stays its end, ctime is when names came (%lld, %lld)", (long long)n1.mtime,
	      (long long)n1.ctime);
	node__fini(&n0);
	node__fini(&n1);
	leaf_name(s, name, sizeof(name));
	CHECK(!strcmp(name, "iterateLong"), "the stored minute now reads the name: %s", name);
	profile__free(q);

	/* Once: a second name for the same frame is refused. */
	q = names("other", "", 0, &v.plid);
	CHECK(!store__name_late(s, q, &v, 1, &named) && named == 0, "never renamed (%zu)", named);
	CHECK(store__names_version(s) == ver1, "version unchanged when nothing was named");
	leaf_name(s, name, sizeof(name));
	CHECK(!strcmp(name, "iterateLong"), "still the first name: %s", name);
	f.n = 0;
	CHECK(!store__unnamed(s, 0, 1000, &next, on_unnamed, &f) && f.n == 0,
	      "the scan no longer finds it (%d)", f.n);
	/* A frame stored with a name is never named late. */
	v.loc = 2;
	CHECK(!store__name_late(s, q, &v, 1, &named) && named == 0, "a named frame is left alone");
	profile__free(q);

	/* New data of the same binary: a new unnamed location, found by a
	 * scan from where the last one stopped. */
	p = mk(8);
	CHECK(!store__append(s, "cpu", 120e9, 10e9, p, NULL, 0), "append more");
	profile__free(p);
	f.n = 0;
	CHECK(!store__unnamed(s, next, 1000, &next, on_unnamed, &f) && f.n == 1 &&
		      f.off[0] == 0x123c,
	      "incremental scan finds the new frame only (n %d)", f.n);
	CHECK(store__check(s, stdout) == 0, "check passes with late names");
	if (t)
		tree__free(t);
	store__close(s);

	/* Read-only, as `proffs mount` and `proffs cat` open it. */
	o.readonly = true;
	CHECK(!store__open(&s, &o), "reopen read-only");
	if (s) {
		struct store_sel sel = { .type = "cpu" };
		struct profile *m = NULL;

		CHECK(!store__merge(s, &sel, 60, 120, &m) && m && m->nsamples, "merge first minute");
		if (m && m->nsamples) {
			profile__frame_name(m, m->samples[0].locs[0], 0, true, name, sizeof(name));
			CHECK(!strcmp(name, "iterateLong"), "read-only merge names it: %s", name);
			const struct prof_location *l = &m->locations[m->samples[0].locs[0] - 1];
			const struct prof_function *fn = &m->functions[l->lines[0].function_id - 1];

			CHECK(l->lines[0].line == 42 && !strcmp(m->strs[fn->filename], "/src/truth.c"),
			      "with file and line for pprof -list");
			CHECK(m->mappings[l->mapping_id - 1].has_functions,
			      "its mapping says it has functions");
		}
		profile__free(m);
		CHECK(store__names_version(s) == ver1, "read-only sees the same names version");
		store__close(s);
	}
}

static void t_binaries(const char *dir)
{
	struct store_opts o = { .dir = dir, .nosync = true };
	struct store_binary b = { .path = "/usr/bin/app", .uid = 1000, .gid = 100, .dev = 8,
				  .ino = 1234, .size = 99, .mtime_ns = 1700000000123456789LL,
				  .flags = STORE_BIN_HOST, .nloads = 2,
				  .loads = { { 0, 0, 0x670 }, { 0x1000, 0x1000, 0x3a9 } } },
			    g;
	struct store *s = NULL;
	char **ids = NULL;
	size_t n = 0;

	CHECK(!store__open(&s, &o), "open");
	snprintf(b.build_id, sizeof(b.build_id), "0123abcd");
	CHECK(!store__binary_put(s, &b), "put");
	snprintf(b.build_id, sizeof(b.build_id), "0123ABCD");
	CHECK(store__binary_put(s, &b) == -EINVAL, "upper-case build id refused");
	snprintf(b.build_id, sizeof(b.build_id), "abc");
	CHECK(store__binary_put(s, &b) == -EINVAL, "odd length refused");
	CHECK(!store__binary_get(s, "0123abcd", &g) && !strcmp(g.path, "/usr/bin/app") &&
		      g.uid == 1000 && g.gid == 100 && g.ino == 1234 && g.size == 99 &&
		      g.mtime_ns == 1700000000123456789LL && g.flags == STORE_BIN_HOST &&
		      g.nloads == 2 && g.loads[1].vaddr == 0x1000 && g.loads[1].filesz == 0x3a9,
	      "get returns what was put");
	free(g.path);
	CHECK(store__binary_get(s, "ffff", &g) == -ENOENT, "unknown: ENOENT");
	CHECK(store__binary_get(s, "../x", &g) == -ENOENT, "malformed: ENOENT");
	CHECK(!store__binaries(s, &ids, &n) && n == 1 && !strcmp(ids[0], "0123abcd"), "list");
	store__free_strv(ids, n);
	CHECK(store__check(s, stdout) == 0, "check passes");
	store__close(s);
}

/* A store whose late and bins tables do not exist (made before them),
 * opened read-only: reads as if they were empty. */
static void t_old_store(const char *dir)
{
	struct store_opts o = { .dir = dir, .nosync = true };
	struct store *s = NULL;
	struct profile *p = mk(0);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi d;
	char name[128], **ids = NULL;
	size_t n = 5;

	CHECK(!store__open(&s, &o), "open");
	CHECK(!store__append(s, "cpu", 60e9, 10e9, p, NULL, 0), "append");
	profile__free(p);
	store__close(s);
	/* Drop the two tables as an old proffs never made them. */
	CHECK(!mdb_env_create(&env) && !mdb_env_set_maxdbs(env, 64) &&
		      !mdb_env_open(env, dir, 0, 0600) && !mdb_txn_begin(env, NULL, 0, &txn),
	      "lmdb open");
	CHECK(!mdb_dbi_open(txn, "late", 0, &d) && !mdb_drop(txn, d, 1) &&
		      !mdb_dbi_open(txn, "bins", 0, &d) && !mdb_drop(txn, d, 1) &&
		      !mdb_txn_commit(txn),
	      "tables dropped");
	mdb_env_close(env);
	o.readonly = true;
	CHECK(!store__open(&s, &o), "an older store opens read-only");
	if (!s)
		return;
	leaf_name(s, name, sizeof(name));
	CHECK(!strcmp(name, "app+0x1234"), "reads as before: %s", name);
	CHECK(!store__binaries(s, &ids, &n) && n == 0, "no binaries");
	CHECK(store__names_version(s) == 0, "names version 0");
	CHECK(store__check(s, stdout) == 0, "check passes");
	store__close(s);
}

static const struct test_scenario scenarios[] = {
	{ "late", t_late },
	{ "binaries", t_binaries },
	{ "old_store", t_old_store },
};

TEST_SCENARIOS_MAIN(scenarios)
