/*
 * test_store: append, list, latest, merge, selections (=, !=, =~ anchored),
 * value-type mapping, rollup equivalence (a day via rollups == the same day
 * merged minute by minute from raw blocks), retention, diff of values,
 * persistence across reopen, and a check that finds planted corruption.
 * Each scenario builds its own store in a temp directory of its own:
 * "test_store NAME" runs one alone, "test_store --list" names them.
 */
#include <errno.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/profile/profile.h"
#include "store/db/store.h"
#include "store/db/store_int.h"
#include "tests/unit/rss.h"
#include "tests/test.h"
#include "tests/xorshift.h"

static const char *vt[] = { "samples", "cpu" }, *vu[] = { "count", "nanoseconds" };

static struct profile *mk(void)
{
	struct profile *p = profile__new();

	profile__set_value_types(p, 2, vt, vu);
	p->period_type.type = profile__intern_str(p, "cpu");
	p->period_type.unit = profile__intern_str(p, "nanoseconds");
	p->period = 10000000;
	p->default_sample_type = profile__intern_str(p, "samples");
	return p;
}

/* Adds a sample: frames root first in a "a;b;c" string. */
static void add(struct profile *p, const char *comm, const char *pid, const char *stack,
		int64_t n)
{
	struct prof_mapping m = { .start = 0x400000, .limit = 0x500000,
				  .file = profile__intern_str(p, "/usr/bin/app"),
				  .build_id = profile__intern_str(p, "abcdef"),
				  .has_functions = true };
	uint64_t mid = profile__add_mapping(p, &m), locs[64];
	char buf[512], *save, *tok;
	uint32_t n_ = 0;
	struct prof_label l[2] = { { .key = profile__intern_str(p, "comm"),
				     .str = profile__intern_str(p, comm) },
				   { .key = profile__intern_str(p, "pid"),
				     .str = profile__intern_str(p, pid) } };
	int64_t v[2] = { n, n * 10000000 };
	char *frames[64];
	int nf = 0;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		frames[nf++] = tok;
	for (int i = nf - 1; i >= 0; i--) { /* leaf first */
		struct prof_function f = { .name = profile__intern_str(p, frames[i]),
					   .system_name = profile__intern_str(p, frames[i]),
					   .filename = profile__intern_str(p, "app.c") };
		struct prof_line ln = { profile__add_function(p, &f), 10 + i };
		struct prof_location L = { mid, 0x400000 + 16 * (uint64_t)(frames[i][0] + 7 * i), 1, &ln };

		locs[n_++] = profile__add_location(p, &L);
	}
	profile__add_sample(p, locs, n_, l, 2, v);
}

/* Appends the batch p to s as type from t (Unix s) lasting len ns, with the
 * extra labels ex[0..nex), and frees p. store__append's result. */
static int append_batch(struct store *s, const char *type, int64_t t, int64_t len,
			struct profile *p, const struct store_label *ex, size_t nex)
{
	int rc = store__append(s, type, t * 1000000000LL, len, p, ex, nex);

	profile__free(p);
	return rc;
}

/* Canonical text of a profile: sorted lines "comm pid root;..;leaf v0 v1". */
static char *canon(const struct profile *p)
{
	char **lines = calloc(p->nsamples + 1, sizeof(char *));
	size_t total = 1, o = 0;
	char *out;

	for (uint32_t i = 0; i < p->nsamples; i++) {
		const struct prof_sample *s = &p->samples[i];
		const char *c = profile__sample_label(p, s, "comm"), *pid = profile__sample_label(p, s, "pid");
		char st[4096] = "";
		size_t sl = 0;

		for (uint32_t j = s->nlocs; j-- > 0;) {
			const struct prof_location *L = &p->locations[s->locs[j] - 1];
			const struct prof_function *f = &p->functions[L->lines[0].function_id - 1];
			const struct prof_mapping *m = &p->mappings[L->mapping_id - 1];

			sl += snprintf(st + sl, sizeof(st) - sl, "%s%s@%s:%llx", sl ? ";" : "",
				       p->strs[f->name], p->strs[m->file], (unsigned long long)L->address);
		}
		if (asprintf(&lines[i], "%s %s %s %lld %lld\n", c ? c : "-", pid ? pid : "-", st,
			     (long long)s->values[0], (long long)s->values[1]) < 0)
			abort();
		total += strlen(lines[i]);
	}
	out = malloc(total);
	out[0] = 0;
	for (uint32_t i = 0; i < p->nsamples; i++) {
		size_t l = strlen(lines[i]);

		memcpy(out + o, lines[i], l + 1);
		o += l;
		free(lines[i]);
	}
	free(lines);
	return out;
}

static int scmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *canon_sorted(const struct profile *p)
{
	char *c = canon(p), *save, *tok, **v = NULL, *out;
	size_t n = 0, total = 1, o = 0;

	for (tok = strtok_r(c, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		v = realloc(v, (n + 1) * sizeof(*v));
		v[n++] = tok;
		total += strlen(tok) + 1;
	}
	qsort(v, n, sizeof(*v), scmp);
	out = malloc(total);
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		o += sprintf(out + o, "%s\n", v[i]);
	free(v);
	free(c);
	return out;
}

static int64_t total0(const struct profile *p)
{
	return p ? profile__total(p, 0) : -1;
}

static struct profile *merge(struct store *s, const char *type,
			     const struct store_matcher *m, size_t nm, int64_t from,
			     int64_t to)
{
	struct store_sel sel = { type, m, nm };
	struct profile *p = NULL;
	int rc = store__merge(s, &sel, from, to, &p);

	if (rc)
		printf("merge: %s\n", strerror(-rc));
	return p;
}

static int64_t sel_total(struct store *s, const char *name, const char *value,
			 enum store_match_op op, int64_t from, int64_t to)
{
	struct store_matcher m = { name, value, op };
	struct profile *p;
	int64_t t;

	if (store_matcher__init(&m))
		return -2;
	p = merge(s, "cpu", &m, 1, from, to);
	t = total0(p);
	profile__free(p);
	store_matcher__fini(&m);
	return t;
}

static int raw_count(struct store *s, int db)
{
	MDB_txn *txn;
	MDB_stat st;

	if (store__txn_begin(s, true, &txn))
		return -1;
	mdb_stat(txn, s->dbi[db], &st);
	store__txn_abort(s, txn);
	return (int)st.ms_entries;
}

static uint64_t rnd = 88172645463325252ULL;
static uint64_t xr(void)
{
	return xorshift64(&rnd);
}

struct rd {
	struct store *s;
	atomic_int *stop;
	int64_t t0;
	int errors, merges;
};

/* A reader thread: merges, lists and latest while the main thread
 * appends; every call must succeed (or say the type is not there yet). */
static void *reader(void *arg)
{
	struct rd *r = arg;

	while (!atomic_load(r->stop)) {
		struct store_sel sel = { "cpu", NULL, 0 };
		struct store_matcher m = { "comm", "api", STORE_EQ };
		struct store_sel sel2 = { "cpu", &m, 1 };
		struct profile *p = NULL;
		char **pairs;
		int64_t *mins, lm;
		size_t np, nm;
		int rc;

		rc = store__merge(r->s, (r->merges & 1) ? &sel2 : &sel, r->t0, r->t0 + 7200, &p);
		if (rc && rc != -ENOENT)
			r->errors++;
		profile__free(p);
		rc = store__list(r->s, &sel, &pairs, &np, &mins, &nm);
		if (!rc) {
			store__free_strv(pairs, np);
			free(mins);
		} else if (rc != -ENOENT) {
			r->errors++;
		}
		rc = store__latest_minute(r->s, &sel2, &lm);
		if (rc && rc != -ENOENT)
			r->errors++;
		(void)store__version(r->s);
		r->merges++;
	}
	return NULL;
}

static const int64_t T0 = 1697022660; /* 2023-10-11T11:11:00 */
static const int64_t D0 = 1697068800; /* 2023-10-12T00:00 */
static const struct store_label extra[] = { { "node", "web-3" } };

/* The small store most scenarios read, opened in dir: batch 1 at T0,
 * batch 2 at T0+10, batch 3 a minute later (all with the extra label
 * node=web-3), and a batch of type "other" whose sample label comm clashes
 * with an extra label. Returns the open store (the caller closes it) or
 * NULL if it could not be opened. */
static struct store *basic_store(const char *dir)
{
	struct store_opts o = { .dir = dir };
	struct store_label ex2[] = { { "comm", "override" } };
	struct store *s = NULL;
	struct profile *p;
	int rc;

	CHECK(store__open(&s, &o) == 0, "open a new store in %s", dir);
	if (!s)
		return NULL;
	p = mk();
	add(p, "api", "100", "main;serve;parse", 5);
	add(p, "api", "100", "main;serve;write", 3);
	add(p, "apix", "200", "main;loop", 7);
	add(p, "db", "300", "main;query;scan", 11);
	rc = append_batch(s, "cpu", T0, 10000000000LL, p, extra, 1);
	CHECK(rc == 0, "append batch 1 (%d)", rc);
	p = mk();
	add(p, "api", "100", "main;serve;parse", 2);
	add(p, "db", "300", "main;query", 1);
	CHECK(append_batch(s, "cpu", T0 + 10, 10000000000LL, p, extra, 1) == 0, "append batch 2");
	p = mk();
	add(p, "api", "101", "main;serve;parse", 4);
	CHECK(append_batch(s, "cpu", T0 + 60, 10000000000LL, p, extra, 1) == 0,
	      "append batch 3 (next minute)");
	p = mk();
	add(p, "orig", "5", "main;x", 2);
	CHECK(append_batch(s, "other", T0, 10000000000LL, p, ex2, 1) == 0,
	      "append with a clashing extra label");
	return s;
}

/* Runs the scenario fn on basic_store's store in dir, closing it after;
 * nothing when the store could not be made (basic_store's check failed). */
static void on_basic_store(const char *dir, void (*fn)(struct store *s))
{
	struct store *s = basic_store(dir);

	if (!s)
		return;
	fn(s);
	store__close(s);
}

/* Appends at minute t a batch of one unlabelled sample of 500 under the
 * single value type type/unit. Returns store__append's result. */
static int append_one_type(struct store *s, const char *type, const char *unit, int64_t t)
{
	const char *t1[] = { type }, *u1[] = { unit };
	struct profile *r = profile__new();
	uint64_t loc;
	struct prof_function f = { .name = profile__intern_str(r, "only") };
	struct prof_line ln = { 0, 1 };
	struct prof_location L = { 0, 0x10, 1, &ln };
	int64_t v = 500;
	int rc;

	profile__set_value_types(r, 1, t1, u1);
	ln.function_id = profile__add_function(r, &f);
	loc = profile__add_location(r, &L);
	profile__add_sample(r, &loc, 1, NULL, 0, &v);
	rc = store__append(s, "cpu", t * 1000000000LL, 10000000000LL, r, NULL, 0);
	profile__free(r);
	return rc;
}

/* A sample label named like an extra label: the extra one wins. */
static void t_extra_label_clash_on(struct store *s)
{
	struct store_matcher m = { "comm", "override", STORE_EQ };
	struct profile *p;

	store_matcher__init(&m);
	p = merge(s, "other", &m, 1, T0, T0 + 60);
	CHECK(total0(p) == 2 && p->nsamples == 1 &&
	      !strcmp(profile__sample_label(p, &p->samples[0], "comm"), "override"),
	      "extra labels win a name clash");
	profile__free(p);
	store_matcher__fini(&m);
}

static void t_extra_label_clash(const char *dir) { on_basic_store(dir, t_extra_label_clash_on); }

static void t_types_on(struct store *s)
{
	char **types;
	size_t nt;

	CHECK(store__types(s, &types, &nt) == 0 && nt == 2 && !strcmp(types[0], "cpu") &&
	      !strcmp(types[1], "other"),
	      "types: cpu and other, sorted");
	store__free_strv(types, nt);
}

static void t_types(const char *dir) { on_basic_store(dir, t_types_on); }

static void t_list_on(struct store *s)
{
	struct store_sel sel = { "cpu", NULL, 0 };
	const char *want[] = { "comm=api", "comm=apix", "comm=db", "node=web-3",
			       "pid=100", "pid=101", "pid=200", "pid=300" };
	char **pairs;
	int64_t *mins, latest;
	size_t np, nmin;
	bool same;
	int rc;

	rc = store__list(s, &sel, &pairs, &np, &mins, &nmin);
	CHECK(rc == 0, "list cpu");
	same = np == 8;
	for (size_t i = 0; same && i < np; i++)
		same = !strcmp(pairs[i], want[i]);
	CHECK(same, "list pairs are every pair, sorted (%zu)", np);
	for (size_t i = 0; i < np; i++)
		printf("     pair %s\n", pairs[i]);
	CHECK(nmin == 2 && mins[0] == T0 && mins[1] == T0 + 60, "list minutes (%zu)", nmin);
	store__free_strv(pairs, np);
	free(mins);
	CHECK(store__latest_minute(s, &sel, &latest) == 0 && latest == T0 + 60, "latest minute");
}

static void t_list(const char *dir) { on_basic_store(dir, t_list_on); }

static void t_list_selection_on(struct store *s)
{
	struct store_matcher m = { "comm", "db", STORE_EQ };
	struct store_sel sel = { "cpu", &m, 1 };
	char **pairs;
	int64_t *mins, latest;
	size_t np, nmin;
	int rc;

	store_matcher__init(&m);
	rc = store__list(s, &sel, &pairs, &np, &mins, &nmin);
	CHECK(rc == 0 && np == 3 && !strcmp(pairs[0], "comm=db") &&
	      !strcmp(pairs[1], "node=web-3") && !strcmp(pairs[2], "pid=300"),
	      "list under comm=db narrows pairs (%zu)", np);
	CHECK(rc == 0 && nmin == 1 && mins[0] == T0, "list under comm=db: one minute");
	store__free_strv(pairs, np);
	free(mins);
	CHECK(store__latest_minute(s, &sel, &latest) == 0 && latest == T0,
	      "latest minute under comm=db");
	store_matcher__fini(&m);
}

static void t_list_selection(const char *dir) { on_basic_store(dir, t_list_selection_on); }

static void t_unknown_type_on(struct store *s)
{
	struct store_sel sel = { "heap", NULL, 0 };
	struct profile *p = NULL;
	char **pairs;
	int64_t *mins;
	size_t np, nmin;

	CHECK(store__list(s, &sel, &pairs, &np, &mins, &nmin) == -ENOENT, "unknown type: -ENOENT");
	CHECK(store__merge(s, &sel, T0, T0 + 60, &p) == -ENOENT, "merge unknown type: -ENOENT");
}

static void t_unknown_type(const char *dir) { on_basic_store(dir, t_unknown_type_on); }

/* Merge of the first minute. */
static void t_merge_minute_on(struct store *s)
{
	struct profile *p;

	p = merge(s, "cpu", NULL, 0, T0, T0 + 60);
	CHECK(p && total0(p) == 5 + 3 + 7 + 11 + 2 + 1, "merge minute total %lld", (long long)total0(p));
	CHECK(p && profile__total(p, 1) == 29 * 10000000LL, "second value type summed");
	CHECK(p && p->nvalues == 2 && !strcmp(p->strs[p->sample_types[1].type], "cpu") &&
	      !strcmp(p->strs[p->sample_types[1].unit], "nanoseconds"), "value types kept");
	CHECK(p && p->period == 10000000 && !strcmp(p->strs[p->period_type.type], "cpu"),
	      "period kept");
	CHECK(p && p->default_sample_type &&
	      !strcmp(p->strs[p->default_sample_type], "samples"),
	      "default sample type kept");
	CHECK(p && p->time_nanos == T0 * 1000000000LL && p->duration_nanos == 60000000000LL,
	      "window = the minute");
	if (p) {
		char *c = canon_sorted(p);
		int has = 0;

		printf("%s", c);
		CHECK(strstr(c, "api 100 main@/usr/bin/app:") && strstr(c, " 7 70000000\n"),
		      "stacks, mapping files and labels survive");
		CHECK(!strstr(c, "node"), "only comm and pid become sample labels");
		for (uint32_t i = 0; i < p->nsamples; i++) {
			const char *cm = profile__sample_label(p, &p->samples[i], "comm");
			const struct prof_sample *sm = &p->samples[i];
			if (cm && !strcmp(cm, "api") && sm->values[0] == 7 && sm->nlocs == 3) {
				const struct prof_location *L = &p->locations[sm->locs[0] - 1];
				has = !strcmp(p->strs[p->functions[L->lines[0].function_id - 1].name],
					      "parse") &&
				      L->lines[0].line == 12 &&
				      !strcmp(p->strs[p->mappings[L->mapping_id - 1].build_id], "abcdef");
			}
		}
		CHECK(has, "api parse stack aggregated over two batches (5+2), leaf first, line and build id kept");
		free(c);
	}
	profile__free(p);
}

static void t_merge_minute(const char *dir) { on_basic_store(dir, t_merge_minute_on); }

static void t_selections_on(struct store *s)
{
	struct store_matcher m[2] = { { "comm", "api", STORE_EQ }, { "pid", "100", STORE_EQ } };
	struct profile *p;

	CHECK(sel_total(s, "comm", "api", STORE_EQ, T0, T0 + 120) == 5 + 3 + 2 + 4, "comm=api");
	CHECK(sel_total(s, "comm", "api", STORE_NEQ, T0, T0 + 120) == 7 + 11 + 1, "comm!=api");
	CHECK(sel_total(s, "comm", "ap", STORE_RE, T0, T0 + 120) == 0, "comm=~ap is anchored");
	CHECK(sel_total(s, "comm", "ap.*", STORE_RE, T0, T0 + 120) == 14 + 7, "comm=~ap.*");
	CHECK(sel_total(s, "comm", "api|db", STORE_RE, T0, T0 + 120) == 14 + 12, "comm=~api|db");
	CHECK(sel_total(s, "pid", "101", STORE_EQ, T0, T0 + 120) == 4, "pid=101");
	CHECK(sel_total(s, "nolabel", "x", STORE_NEQ, T0, T0 + 120) == 0,
	      "a label a series lacks never matches, not even !=");
	CHECK(sel_total(s, "comm", "nosuch", STORE_EQ, T0, T0 + 120) == 0, "unknown value: empty");
	p = merge(s, "cpu", m, 2, T0, T0 + 120);
	CHECK(total0(p) == 10, "two matchers AND together");
	profile__free(p);
	p = merge(s, "cpu", NULL, 0, T0 + 120, T0 + 180);
	CHECK(p && p->nsamples == 0 && p->nvalues == 2, "empty range: empty valid profile");
	profile__free(p);
}

static void t_selections(const char *dir) { on_basic_store(dir, t_selections_on); }

/* Value types: a subset maps by name, an unknown type is refused. */
static void t_value_types_on(struct store *s)
{
	struct profile *p;

	CHECK(append_one_type(s, "cpu", "nanoseconds", T0 + 180) == 0,
	      "a batch with a subset of the value types is accepted");
	p = merge(s, "cpu", NULL, 0, T0 + 180, T0 + 240);
	CHECK(p && profile__total(p, 0) == 0 && profile__total(p, 1) == 500,
	      "subset values land in their own column");
	CHECK(p && p->nsamples == 1 && p->samples[0].nlabels == 0, "no labels: none invented");
	profile__free(p);
	CHECK(append_one_type(s, "alloc_space", "bytes", T0 + 240) == -EINVAL,
	      "a batch with an unknown value type is refused");
}

static void t_value_types(const char *dir) { on_basic_store(dir, t_value_types_on); }

/* Diff of two minutes. */
static void t_diff_on(struct store *s)
{
	struct profile *a, *b, *d;

	a = merge(s, "cpu", NULL, 0, T0, T0 + 60);
	b = merge(s, "cpu", NULL, 0, T0 + 60, T0 + 120);
	d = a && b ? profile__diff(a, b) : NULL;
	CHECK(d && profile__total(d, 0) == 4 - 29, "diff total = B - A (%lld)", (long long)total0(d));
	profile__free(a);
	profile__free(b);
	profile__free(d);
}

static void t_diff(const char *dir) { on_basic_store(dir, t_diff_on); }

/* check on the small store with the subset-of-value-types batch in it. */
static void t_check_sound_on(struct store *s)
{
	CHECK(append_one_type(s, "cpu", "nanoseconds", T0 + 180) == 0,
	      "a batch with a subset of the value types is accepted");
	CHECK(store__check(s, stdout) == 0, "check: sound");
}

static void t_check_sound(const char *dir) { on_basic_store(dir, t_check_sound_on); }

/* Persistence. */
static void t_reopen_readonly(const char *dir)
{
	struct store_opts o = { .dir = dir, .readonly = true };
	struct store *s = basic_store(dir);
	struct profile *p;

	if (!s)
		return;
	store__close(s);
	s = NULL;
	CHECK(store__open(&s, &o) == 0, "reopen read-only");
	if (!s)
		return;
	CHECK(sel_total(s, "comm", "api", STORE_EQ, T0, T0 + 120) == 14, "data survives reopen");
	p = mk();
	CHECK(store__append(s, "cpu", T0 * 1000000000LL, 1, p, NULL, 0) == -EROFS,
	      "read-only store refuses appends");
	profile__free(p);
	store__close(s);
}

/* Opens a new store in dir and appends 26 hours of random batches every
 * 5 minutes around day D0 (the same ones each call: the generator is
 * reseeded). Stores the day's total of value 0 in *sum. Returns the open
 * store (the caller closes it) or NULL if it could not be opened.
 * Five scenarios build this store; opened without an fsync per commit
 * (store_opts.nosync, which no proffs command sets) it costs a tenth. No
 * check here is about durability: store_crash.sh is. */
static struct store *day_store(const char *dir, int64_t *sum)
{
	const char *comms[] = { "a", "b", "c" }, *fr[] = { "x", "y", "z", "w" };
	struct store_opts o = { .dir = dir, .nosync = true };
	struct store *s = NULL;
	struct profile *p;
	bool ok = true;

	*sum = 0;
	rnd = 88172645463325252ULL;
	CHECK(store__open(&s, &o) == 0, "fresh store for rollups");
	if (!s)
		return NULL;
	for (int64_t t = D0 - 1800; t < D0 + 86400 + 3600; t += 300) {
		p = mk();
		for (int i = 0; i < 12; i++) {
			char st[128] = "main";
			int d = 1 + xr() % 4;
			int64_t n = 1 + xr() % 9;

			for (int j = 0; j < d; j++) {
				strcat(st, ";");
				strcat(st, fr[xr() % 4]);
			}
			add(p, comms[xr() % 3], "1", st, n);
			if (t >= D0 && t < D0 + 86400)
				*sum += n;
		}
		ok &= store__append(s, "cpu", t * 1000000000LL, 300000000000LL, p, NULL, 0) == 0;
		profile__free(p);
	}
	CHECK(ok, "appended 26 hours of batches");
	return s;
}

/* An old batch into a closed hour (it re-dirties the hour). */
static void append_late(struct store *s)
{
	struct profile *p = mk();

	add(p, "a", "1", "main;late", 1000);
	CHECK(append_batch(s, "cpu", D0 + 7200 + 5, 1000000000LL, p, NULL, 0) == 0,
	      "late batch into a closed hour");
}

/* The day store plus a late batch and a series seen only in data that
 * will expire, reopened with a retention of 2 hours and expired at "now" =
 * its end. Returns the open store (the caller closes it) or NULL. */
static struct store *expired_store(const char *dir, int64_t *sum)
{
	struct store_opts o = { .dir = dir, .retention_s = 2 * 3600 };
	struct store *s = day_store(dir, sum);
	struct profile *p;

	if (!s)
		return NULL;
	append_late(s);
	p = mk();
	add(p, "gone", "77", "main;old", 5);
	CHECK(append_batch(s, "cpu", D0 + 60, 1000000000LL, p, NULL, 0) == 0,
	      "batch of a short-lived process");
	store__close(s);
	s = NULL;
	CHECK(store__open(&s, &o) == 0, "reopen with retention 2h");
	if (!s)
		return NULL;
	CHECK(store__expire(s, D0 + 86400 + 3600) == 0, "expire");
	return s;
}

/* Runs the scenario fn on the store make (day_store, expired_store) makes
 * in dir, with the day's total make counted, closing it after; nothing
 * when the store could not be made (make's check failed). */
static void on_day_store(const char *dir, struct store *(*make)(const char *dir, int64_t *sum),
			 void (*fn)(struct store *s, int64_t sum))
{
	int64_t sum;
	struct store *s = make(dir, &sum);

	if (!s)
		return;
	fn(s, sum);
	store__close(s);
}

/* [from, to) of s's cpu merged minute by minute (a minute's merge never
 * reads a rollup): the sum of the raw blocks. *ok is set false when a
 * minute's merge fails. The caller frees it. */
static struct profile *by_minutes(struct store *s, int64_t from, int64_t to, bool *ok)
{
	struct profile *acc = mk(), *p;

	for (int64_t t = from; t < to; t += 60) {
		p = merge(s, "cpu", NULL, 0, t, t + 60);
		if (!p || profile__merge(acc, p, 1, NULL, 0))
			*ok = false;
		profile__free(p);
	}
	return acc;
}

/* Whether a and b hold the same samples (their canon_sorted texts are
 * equal); *len, when asked, the length of a's. */
static bool same_samples(const struct profile *a, const struct profile *b, size_t *len)
{
	char *c1 = canon_sorted(a), *c2 = canon_sorted(b);
	bool same = !strcmp(c1, c2);

	if (len)
		*len = strlen(c1);
	free(c1);
	free(c2);
	return same;
}

/* Rollups: a day via rollups == the same day merged minute by minute. */
static void t_rollups_on(struct store *s, int64_t sum)
{
	struct profile *day, *acc;
	size_t len;
	bool ok = true;

	CHECK(raw_count(s, DB_ROLLUP) >= 25, "rollups built for closed hours (%d)",
	      raw_count(s, DB_ROLLUP));
	CHECK(raw_count(s, DB_DIRTY) == 1, "only the open hour is dirty (%d)",
	      raw_count(s, DB_DIRTY));
	day = merge(s, "cpu", NULL, 0, D0, D0 + 86400);
	acc = by_minutes(s, D0, D0 + 86400, &ok);
	CHECK(ok, "merged the day minute by minute");
	CHECK(total0(day) == sum && total0(acc) == sum, "day totals: rollups %lld, raw %lld, expected %lld",
	      (long long)total0(day), (long long)total0(acc), (long long)sum);
	CHECK(same_samples(day, acc, &len),
	      "day via rollups == day via raw blocks, sample for sample (%zu bytes)", len);
	profile__free(day);
	profile__free(acc);
	/* A half-hour-aligned range mixes rollups and raw blocks. */
	day = merge(s, "cpu", NULL, 0, D0 + 1800, D0 + 3 * 3600 + 1800);
	acc = by_minutes(s, D0 + 1800, D0 + 3 * 3600 + 1800, &ok);
	CHECK(same_samples(day, acc, NULL) && total0(day) > 0, "partial hours + whole hours == raw");
	profile__free(day);
	profile__free(acc);
}

static void t_rollups(const char *dir) { on_day_store(dir, day_store, t_rollups_on); }

/* An hour no later batch closes (the last hour of an import of the past)
 * gets its rollup when asked, once it has ended, and the rollup is its raw
 * blocks' sum. */
static void t_close_hours_on(struct store *s, int64_t sum)
{
	int64_t h = D0 + 86400; /* day_store's last hour, still dirty */
	struct profile *whole, *acc;
	size_t n = 99;
	bool ok = true;
	int r0;

	(void)sum;
	r0 = raw_count(s, DB_ROLLUP);
	CHECK(store__close_hours(s, h + 3599, &n) == 0 && n == 0 && raw_count(s, DB_DIRTY) == 1,
	      "an hour not yet ended stays open (%zu built, %d dirty)", n, raw_count(s, DB_DIRTY));
	CHECK(store__close_hours(s, h + 3600, &n) == 0 && n == 1 && raw_count(s, DB_DIRTY) == 0 &&
		      raw_count(s, DB_ROLLUP) == r0 + 1,
	      "the hour that ended gets its rollup (%zu built, %d dirty, %d rollups, %d before)", n,
	      raw_count(s, DB_DIRTY), raw_count(s, DB_ROLLUP), r0);
	CHECK(store__close_hours(s, h + 7200, &n) == 0 && n == 0, "nothing is built twice (%zu)", n);
	whole = merge(s, "cpu", NULL, 0, h, h + 3600);
	acc = by_minutes(s, h, h + 3600, &ok);
	CHECK(total0(whole) > 0 && same_samples(whole, acc, NULL),
	      "the hour via its rollup == minute by minute (%lld)", (long long)total0(whole));
	profile__free(whole);
	profile__free(acc);
}

static void t_close_hours(const char *dir) { on_day_store(dir, day_store, t_close_hours_on); }

/* An old batch into a closed hour re-dirties it; the rollup is rebuilt in
 * the same transaction. */
static void t_late_batch_on(struct store *s, int64_t sum)
{
	struct profile *day;

	append_late(s);
	day = merge(s, "cpu", NULL, 0, D0, D0 + 86400);
	CHECK(total0(day) == sum + 1000, "rollup rebuilt after a late batch (%lld)",
	      (long long)total0(day));
	profile__free(day);
	CHECK(store__check(s, stdout) == 0, "check after rollups: sound");
}

static void t_late_batch(const char *dir) { on_day_store(dir, day_store, t_late_batch_on); }

/* Retention: keep the last 2 hours relative to "now" = end. */
static void t_retention_on(struct store *s, int64_t sum)
{
	struct store_sel sel = { "cpu", NULL, 0 };
	struct store_stats st;
	struct profile *day;
	char **pairs;
	int64_t *mins;
	size_t np, nmin;
	int rc;

	rc = store__list(s, &sel, &pairs, &np, &mins, &nmin);
	CHECK(rc == 0 && nmin > 0 && mins[0] == D0 + 86400 - 3600,
	      "retention: oldest minute is now-2h (%lld)", nmin ? (long long)mins[0] : 0LL);
	store__free_strv(pairs, np);
	free(mins);
	store__stats(s, &st);
	CHECK(st.dropped_blocks > 250, "dropped blocks counted (%llu)",
	      (unsigned long long)st.dropped_blocks);
	CHECK(st.nblocks == 24, "24 blocks left (%llu)", (unsigned long long)st.nblocks);
	day = merge(s, "cpu", NULL, 0, D0, D0 + 86400);
	CHECK(day && total0(day) > 0 && total0(day) < sum / 10, "expired data is gone from merges");
	profile__free(day);
	CHECK(store__check(s, stdout) == 0, "check after retention: sound");
}

static void t_retention(const char *dir) { on_day_store(dir, expired_store, t_retention_on); }

/* Series GC: a series seen only in expired data disappears. */
static void t_series_gc_on(struct store *s, int64_t sum)
{
	struct store_sel sel = { "cpu", NULL, 0 };
	bool hasb = false;
	char **pairs;
	int64_t *mins;
	size_t np, nmin;
	int rc;

	(void)sum;
	rc = store__list(s, &sel, &pairs, &np, &mins, &nmin);
	for (size_t i = 0; i < np; i++)
		hasb |= !strcmp(pairs[i], "comm=b");
	CHECK(rc == 0 && hasb, "recent series still listed");
	for (size_t i = 0; i < np; i++)
		hasb &= strcmp(pairs[i], "comm=gone") && strcmp(pairs[i], "pid=77");
	CHECK(hasb, "a series whose data all expired is no longer listed");
	store__free_strv(pairs, np);
	free(mins);
}

static void t_series_gc(const char *dir) { on_day_store(dir, expired_store, t_series_gc_on); }

/* check must find corruption: drop the first group (ids from 1) of
 * strings and of stacks; then store a raw block's bytes as a rollup. */
static void t_check_finds_corruption(const char *dir)
{
	int64_t sum;
	struct store *s = expired_store(dir, &sum);
	FILE *devnull = fopen("/dev/null", "w");
	MDB_txn *txn;
	uint8_t kb[4];
	MDB_val k = { 4, kb };
	int rc;

	if (!s || !devnull) {
		CHECK(devnull, "open /dev/null");
		goto out;
	}
	store__txn_begin(s, false, &txn);
	be32_put(kb, 1);
	CHECK(mdb_del(txn, s->dbi[DB_STR], &k, NULL) == 0, "planted: string group 1 deleted");
	CHECK(mdb_del(txn, s->dbi[DB_STACK], &k, NULL) == 0, "planted: stack group 1 deleted");
	store__txn_commit(s, txn);
	rc = store__check(s, devnull);
	CHECK(rc >= 2, "check finds a deleted string and stack node (%d problems)", rc);
	{
		/* A merge over the lost records says so, and makes nothing. */
		struct store_sel sel = { "cpu", NULL, 0 };
		struct profile *p = NULL;

		rc = store__merge(s, &sel, D0, D0 + 86400, &p);
		CHECK(rc == -EBADMSG && !p, "a merge needing deleted records: -EBADMSG (%d)", rc);
		profile__free(p);
	}
	/* A rollup that is not the sum of its hour: a raw block's bytes
	 * stored as the rollup. */
	{
		const int64_t H = (D0 + 86400 - 3600) / 3600;
		uint8_t rk[8], bk[BLOCK_KEY_LEN];
		MDB_val x = { 8, rk }, y, bx = { BLOCK_KEY_LEN, bk }, by;
		MDB_cursor *c;
		char line[256];
		FILE *tf = tmpfile();
		bool found = false;

		store__txn_begin(s, false, &txn);
		key2(rk, 1, (uint32_t)H);
		rc = mdb_get(txn, s->dbi[DB_ROLLUP], &x, &y);
		CHECK(rc == 0, "the last full hour has a rollup");
		mdb_cursor_open(txn, s->dbi[DB_BLOCK], &c);
		block_key(bk, 1, H * 3600, 0);
		mdb_cursor_get(c, &bx, &by, MDB_SET_RANGE);
		mdb_put(txn, s->dbi[DB_ROLLUP], &x, &by, 0);
		mdb_cursor_close(c);
		store__txn_commit(s, txn);
		store__check(s, tf);
		rewind(tf);
		while (fgets(line, sizeof(line), tf))
			found |= strstr(line, "differs from the sum") != NULL;
		fclose(tf);
		CHECK(found, "check finds a rollup that is not the sum of its hour");
	}
	store__check(s, stdout);
out:
	if (devnull)
		fclose(devnull);
	if (s)
		store__close(s);
}

/* Readers in threads while one thread appends. */
static void t_concurrent_readers(const char *dir)
{
	struct store_opts so = { .dir = dir };
	struct store *s = NULL;
	struct profile *p;
	atomic_int stop = 0;
	struct rd rds[4];
	pthread_t th[4];
	int64_t want = 0, errors = 0, merges = 0;
	bool ok = true;

	CHECK(store__open(&s, &so) == 0, "store for concurrent readers");
	if (!s)
		return;
	for (int i = 0; i < 4; i++) {
		rds[i] = (struct rd){ s, &stop, T0, 0, 0 };
		pthread_create(&th[i], NULL, reader, &rds[i]);
	}
	for (int b = 0; b < 60; b++) {
		p = mk();
		add(p, "api", "1", "main;a;b", 3);
		add(p, b % 2 ? "api" : "web", "2", "main;c", 2);
		want += 5;
		ok &= store__append(s, "cpu", (T0 + 60 * b) * 1000000000LL, 60000000000LL, p,
				    NULL, 0) == 0;
		profile__free(p);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		errors += rds[i].errors;
		merges += rds[i].merges;
	}
	CHECK(ok, "60 appends while 4 threads read");
	CHECK(errors == 0 && merges >= 4, "readers: %lld rounds, %lld errors", (long long)merges,
	      (long long)errors);
	p = merge(s, "cpu", NULL, 0, T0, T0 + 7200);
	CHECK(total0(p) == want, "all appended data visible (%lld)", (long long)total0(p));
	profile__free(p);
	store__close(s);
}

/* KiB of dir's data.mdb resident in this process's page tables. */
static long mdb_rss_kib(const char *dir)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return file_rss_kib(path);
}

/* Another process grows the map (a bigger --max-size) while this one
 * has the store open: the next transaction here must adopt the new
 * size (MDB_MAP_RESIZED) instead of failing. */
static void t_map_resize(const char *dir)
{
	struct store_opts so = { .dir = dir, .max_size = 1 << 20 };
	struct store *s = NULL;
	struct profile *p;
	int64_t big = 0;
	pid_t pid;
	int st = 0;

	CHECK(store__open(&s, &so) == 0, "small store (1 MiB map)");
	if (!s)
		return;
	store__close(s);
	s = NULL;
	so.readonly = true;
	CHECK(store__open(&s, &so) == 0, "reader holds it open");
	if (!s)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct store_opts co = { .dir = dir, .max_size = 64 << 20 };
		struct store *w;
		char st_[160];

		if (store__open(&w, &co))
			_exit(3);
		for (int b = 0; b < 400; b++) {
			p = mk();
			for (int i = 0; i < 400; i++) {
				/* Long names: symbols must outgrow the map
				 * (their index is no longer stored). */
				snprintf(st_, sizeof(st_),
					 "main;f%d_some_namespace_Class_method;g%d_other_"
					 "namespace_function;h%d",
					 b, i, i * 7 + b);
				add(p, "grow", "9", st_, 1);
			}
			if (store__append(w, "cpu", (T0 + 10 * b) * 1000000000LL, 10000000000LL, p,
					  NULL, 0))
				_exit(4);
			profile__free(p);
		}
		store__close(w);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process wrote past our map size (%d)",
	      WEXITSTATUS(st));
	{
		struct stat fs;
		char path[300];

		snprintf(path, sizeof(path), "%s/data.mdb", dir);
		CHECK(!stat(path, &fs) && fs.st_size > (2 << 20), "the file grew beyond 1 MiB (%lld)",
		      (long long)fs.st_size);
	}
	p = merge(s, "cpu", NULL, 0, T0, T0 + 4000);
	big = total0(p);
	profile__free(p);
	CHECK(big == 400 * 400, "the reader sees everything after the map grew (%lld)", (long long)big);
	/* The merge read every page of the store once; it leaves them in
	 * the page cache, not in this process (store__unmap, found again
	 * after the map moved). */
	CHECK(mdb_rss_kib(dir) >= 0 && mdb_rss_kib(dir) < 256,
	      "after the merge %ld KiB of the store stay mapped", mdb_rss_kib(dir));
	CHECK(store__check(s, stdout) == 0, "check through the grown map");
	store__close(s);
}

/* A writer's B-tree walks map store pages too; the daemon writes all day
 * and never merges between, so each commit gives them back
 * (store__txn_commit). */
static void t_write_unmap(const char *dir)
{
	struct store_opts so = { .dir = dir };
	struct store *s = NULL;
	char st_[160];
	long during = -1, read, after;
	bool ok = true;

	CHECK(store__open(&s, &so) == 0, "write_unmap: fresh store");
	if (!s)
		return;
	for (int b = 0; b < 200 && ok; b++) {
		struct profile *p = mk();

		for (int i = 0; i < 200; i++) {
			snprintf(st_, sizeof(st_), "main;writer_%d;stack_%d;leaf_%d", b, i, i * 13 + b);
			add(p, "w", "7", st_, 1);
		}
		ok = store__append(s, "cpu", (T0 + 10 * b) * 1000000000LL, 10000000000LL, p, NULL, 0) == 0;
		profile__free(p);
		if (b == 199)
			during = mdb_rss_kib(dir);
	}
	CHECK(ok && during >= 0 && during < 64, "200 batches appended, %ld KiB of the store mapped after",
	      during);
	/* (a check reads every page and keeps them: the test can fail) */
	CHECK(store__check(s, NULL) == 0, "the store checks");
	read = mdb_rss_kib(dir);
	CHECK(read >= 256, "a full read leaves %ld KiB mapped", read);
	{
		struct profile *p = mk();

		add(p, "w", "7", "main;one_more", 1);
		ok = store__append(s, "cpu", (T0 + 2000) * 1000000000LL, 10000000000LL, p, NULL, 0) == 0;
		profile__free(p);
	}
	after = mdb_rss_kib(dir);
	CHECK(ok && after >= 0 && after < 64, "one more write leaves %ld KiB mapped", after);
	store__close(s);
}

/* Format 4 keeps no content index of symbols and stacks on disk: the
 * writer rebuilds it from the (grouped) tables. Appending known data
 * after a reopen, or after another process added symbols, must add
 * no duplicate records. */
/* Two series of one (comm, pid), told apart by a label the samples do
 * not carry (exe): a merge makes one sample per stack, summed. */
static void t_label_set_fold(const char *dir)
{
	struct store_opts so = { .dir = dir };
	struct store_label ea = { "exe", "/a" }, eb = { "exe", "/b" };
	struct store *s = NULL;
	struct profile *p, *q = NULL;
	struct store_sel sel = { "cpu", NULL, 0 };
	int rc;

	CHECK(store__open(&s, &so) == 0, "fold: fresh store");
	if (!s)
		return;
	p = mk();
	add(p, "api", "100", "main;serve", 3);
	add(p, "api", "100", "main;idle", 1);
	CHECK(append_batch(s, "cpu", T0, 10000000000LL, p, &ea, 1) == 0, "fold: exe /a");
	p = mk();
	add(p, "api", "100", "main;serve", 4);
	add(p, "db", "7", "main;serve", 5);
	CHECK(append_batch(s, "cpu", T0 + 10, 10000000000LL, p, &eb, 1) == 0, "fold: exe /b");
	rc = store__merge(s, &sel, T0, T0 + 60, &q);
	CHECK(rc == 0 && q, "fold: merge (%d)", rc);
	if (q) {
		int64_t serve = -1;

		CHECK(q->nsamples == 3, "fold: api's two series make one sample per stack (%u samples)",
		      q->nsamples);
		for (uint32_t i = 0; i < q->nsamples; i++) {
			const char *c = profile__sample_label(q, &q->samples[i], "comm");
			char name[64];

			profile__frame_name(q, q->samples[i].locs[0], 0, false, name, sizeof(name));
			if (c && !strcmp(c, "api") && !strcmp(name, "serve"))
				serve = q->samples[i].values[0];
		}
		CHECK(serve == 7, "fold: api's serve sums both series (%lld)", (long long)serve);
		CHECK(profile__total(q, 0) == 13, "fold: total 13 (%lld)", (long long)profile__total(q, 0));
	}
	profile__free(q);
	store__close(s);
}

static void t_dedupe(const char *dir)
{
	struct store_opts so = { .dir = dir };
	struct store_stats st0, st1;
	struct store *s = NULL;
	struct profile *p;
	pid_t pid;
	int st = 0;

	CHECK(store__open(&s, &so) == 0, "dedupe: fresh store");
	if (!s)
		return;
	p = mk();
	for (int i = 0; i < 100; i++) {
		char st_[96];

		snprintf(st_, sizeof(st_), "main;mod%d;fn%d;leaf%d", i % 7, i, i % 13);
		add(p, "api", "100", st_, 1);
	}
	CHECK(store__append(s, "cpu", T0 * 1000000000LL, 10000000000LL, p, NULL, 0) == 0,
	      "dedupe: batch 1");
	CHECK(store__stats(s, &st0) == 0 && st0.nstacks == 100, "dedupe: 100 stacks (%llu)",
	      (unsigned long long)st0.nstacks);
	store__close(s);
	s = NULL;
	CHECK(store__open(&s, &so) == 0, "dedupe: reopened");
	if (!s) {
		profile__free(p);
		return;
	}
	CHECK(store__append(s, "cpu", (T0 + 10) * 1000000000LL, 10000000000LL, p, NULL, 0) == 0,
	      "dedupe: the same batch again after reopen");
	CHECK(store__stats(s, &st1) == 0 && st1.nstacks == st0.nstacks &&
		      st1.nlocations == st0.nlocations && st1.nstrings == st0.nstrings,
	      "dedupe: no new stacks, locations or strings (%llu %llu %llu)",
	      (unsigned long long)st1.nstacks, (unsigned long long)st1.nlocations,
	      (unsigned long long)st1.nstrings);
	fflush(stdout);
	pid = fork();
	if (pid == 0) { /* another writer adds one new stack */
		struct store *w;
		struct profile *q = mk();

		add(q, "api", "100", "main;other;process", 1);
		if (store__open(&w, &so) ||
		    store__append(w, "cpu", (T0 + 20) * 1000000000LL, 10000000000LL, q, NULL, 0))
			_exit(3);
		profile__free(q);
		store__close(w);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dedupe: another process appended");
	add(p, "api", "100", "main;other;process", 1);
	CHECK(store__append(s, "cpu", (T0 + 30) * 1000000000LL, 10000000000LL, p, NULL, 0) == 0,
	      "dedupe: this process appends its stack too");
	CHECK(store__stats(s, &st1) == 0 && st1.nstacks == st0.nstacks + 1,
	      "dedupe: one stack more, not two (%llu)", (unsigned long long)st1.nstacks);
	profile__free(p);
	p = merge(s, "cpu", NULL, 0, T0, T0 + 60);
	CHECK(p && total0(p) == 100 * 3 + 2, "dedupe: every sample reads back (%lld)",
	      p ? (long long)total0(p) : -1LL);
	profile__free(p);
	CHECK(store__check(s, stdout) == 0, "dedupe: check sound");
	store__close(s);
}

/* Sums of a merged profile by stack text (a store may hold the same
 * content under two ids once its writer forgot it): "root;..;leaf v0"
 * lines, sorted. */
static char *by_text(const struct profile *p)
{
	char *c = canon_sorted(p), *save, *tok, *out, prev[4200] = "";
	size_t cap = strlen(c) + 1, o = 0;
	long long sum = 0;

	out = calloc(1, cap + 64);
	o = snprintf(out, cap + 64, "\n"); /* every line between newlines */
	for (tok = strtok_r(c, "\n", &save);; tok = strtok_r(NULL, "\n", &save)) {
		char key[4200] = "";
		long long v0 = 0;

		if (tok) { /* "comm pid stack v0 v1": the pid is kept, the ids are not */
			char *v = strrchr(tok, ' ');

			*v = 0;
			v = strrchr(tok, ' ');
			v0 = atoll(v + 1);
			*v = 0;
			snprintf(key, sizeof(key), "%s", tok);
		}
		if (*prev && (!tok || strcmp(key, prev))) {
			o += snprintf(out + o, cap + 64 - o, "%s %lld\n", prev, sum);
			sum = 0;
		}
		if (!tok)
			break;
		snprintf(prev, sizeof(prev), "%s", key);
		sum += v0;
	}
	free(c);
	return out;
}

/* Adds one sample "main;fn" of comm at leaf address addr. */
static void add_at(struct profile *p, const char *comm, const char *fn, uint64_t addr)
{
	struct prof_mapping m = { .start = 0x400000, .limit = 0x500000,
				  .file = profile__intern_str(p, "/usr/bin/app"),
				  .build_id = profile__intern_str(p, "abcdef"),
				  .has_functions = true };
	uint64_t mid = profile__add_mapping(p, &m), locs[2];
	struct prof_label l = { .key = profile__intern_str(p, "comm"),
				.str = profile__intern_str(p, comm) };
	const char *names[2] = { fn, "main" };
	int64_t v[2] = { 1, 10000000 };

	for (int i = 0; i < 2; i++) {
		struct prof_function f = { .name = profile__intern_str(p, names[i]),
					   .system_name = profile__intern_str(p, names[i]),
					   .filename = profile__intern_str(p, "app.c") };
		struct prof_line ln = { profile__add_function(p, &f), 10 };
		struct prof_location L = { mid, i ? 0x400010 : addr, 1, &ln };

		locs[i] = profile__add_location(p, &L);
	}
	profile__add_sample(p, locs, 2, &l, 1, v);
}

/* The writer's maps forget what a whole generation did not use, keep what
 * it did, and a forgotten symbol seen again gets a record again, which
 * readers sum by content. A generation is ended by moving its start back. */
static void t_forget(const char *dir)
{
	struct store_opts so = { .dir = dir };
	struct store_stats st[8];
	struct store *s = NULL;
	struct profile *a = mk(), *b = mk(), *k1 = mk(), *k2 = mk(), *m;
	char *got;
	int64_t t = T0;
	int i = 0;

	for (int j = 0; j < 50; j++) {
		char st_[64];

		snprintf(st_, sizeof(st_), "main;a%d;leafA", j);
		add(a, "one", "1", st_, 1);
		snprintf(st_, sizeof(st_), "main;b%d;leafB", j);
		add(b, "two", "2", st_, 1);
	}
	add_at(k1, "three", "known", 0x400100);
	add_at(k2, "three", "known", 0x400200); /* a new address of a known function */
	CHECK(store__open(&s, &so) == 0, "forget: fresh store");
	if (!s)
		goto out;
#define APPEND(p, what)                                                                     \
	do {                                                                                \
		CHECK(store__append(s, "cpu", t * 1000000000LL, 10000000000LL, p, NULL, 0) == 0 && \
			      store__stats(s, &st[i]) == 0,                                  \
		      "forget: %s", what);                                                   \
		t += 10;                                                                    \
		i++;                                                                        \
	} while (0)
#define END_GEN() store__gen_end_next(s)
	APPEND(a, "a");              /* 0 */
	APPEND(k1, "k1");            /* 1 */
	END_GEN();
	APPEND(b, "b, generation 0 ends: all of it was used"); /* 2 */
	APPEND(k1, "k1 again");      /* 3 */
	CHECK(st[3].nstacks == st[2].nstacks && st[3].nstrings == st[2].nstrings,
	      "forget: k1 again within its window: nothing new (%llu stacks)",
	      (unsigned long long)st[3].nstacks);
	END_GEN();
	APPEND(b, "b again, generation 1 ends: a was not used in it"); /* 4 */
	CHECK(st[4].nstacks == st[3].nstacks && st[4].nlocations == st[3].nlocations,
	      "forget: b again: no new stacks or locations (%llu, %llu)",
	      (unsigned long long)st[4].nstacks, (unsigned long long)st[4].nlocations);
	CHECK(st[4].index_bytes < st[3].index_bytes,
	      "forget: the maps shrank when a's entries went (%llu -> %llu bytes)",
	      (unsigned long long)st[3].index_bytes, (unsigned long long)st[4].index_bytes);
	APPEND(k2, "k2: a new location of a function known only through k1's location"); /* 5 */
	CHECK(st[5].nlocations == st[4].nlocations + 1 && st[5].nstrings == st[4].nstrings,
	      "forget: k2 adds its location only, not its function's strings again "
	      "(locations %llu -> %llu, strings %llu -> %llu)",
	      (unsigned long long)st[4].nlocations, (unsigned long long)st[5].nlocations,
	      (unsigned long long)st[4].nstrings, (unsigned long long)st[5].nstrings);
	APPEND(a, "a after it was forgotten"); /* 6 */
	CHECK(st[6].nstacks == st[5].nstacks + 50 && st[6].nlocations == st[5].nlocations + 51,
	      "forget: a's 50 stacks and 51 locations recorded again, main's kept "
	      "(stacks %llu -> %llu, locations %llu -> %llu)",
	      (unsigned long long)st[5].nstacks, (unsigned long long)st[6].nstacks,
	      (unsigned long long)st[5].nlocations, (unsigned long long)st[6].nlocations);
	m = merge(s, "cpu", NULL, 0, T0, t);
	got = m ? by_text(m) : NULL;
	{
		int found = 0;

		for (int j = 0; j < 50 && got; j++) {
			char want[256];

			snprintf(want, sizeof(want),
				 "\none 1 main@/usr/bin/app:%llx;a%d@/usr/bin/app:%llx;leafA@/usr/bin/app:%llx 2\n",
				 0x400000ULL + 16 * 'm', j, 0x400000ULL + 16 * ('a' + 7),
				 0x400000ULL + 16 * ('l' + 14));
			found += strstr(got, want) != NULL;
		}
		CHECK(found == 50, "forget: a's 50 stacks read back by content with both batches' counts (%d)",
		      found);
	}
	CHECK(m && total0(m) == 50 * 4 + 3, "forget: every sample reads back (%lld)",
	      m ? (long long)total0(m) : -1LL);
	free(got);
	profile__free(m);
	CHECK(store__check(s, stdout) == 0, "forget: check sound");
	store__close(s);
#undef APPEND
#undef END_GEN
out:
	profile__free(a);
	profile__free(b);
	profile__free(k1);
	profile__free(k2);
}

static const struct test_scenario scenarios[] = {
	{ "extra_label_clash", t_extra_label_clash },
	{ "types", t_types },
	{ "list", t_list },
	{ "list_selection", t_list_selection },
	{ "unknown_type", t_unknown_type },
	{ "merge_minute", t_merge_minute },
	{ "selections", t_selections },
	{ "value_types", t_value_types },
	{ "diff", t_diff },
	{ "check_sound", t_check_sound },
	{ "reopen_readonly", t_reopen_readonly },
	{ "rollups", t_rollups },
	{ "close_hours", t_close_hours },
	{ "late_batch", t_late_batch },
	{ "retention", t_retention },
	{ "series_gc", t_series_gc },
	{ "check_finds_corruption", t_check_finds_corruption },
	{ "concurrent_readers", t_concurrent_readers },
	{ "map_resize", t_map_resize },
	{ "write_unmap", t_write_unmap },
	{ "dedupe", t_dedupe },
	{ "forget", t_forget },
	{ "label_set_fold", t_label_set_fold },
};

TEST_SCENARIOS_MAIN(scenarios)
