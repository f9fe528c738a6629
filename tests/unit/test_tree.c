/* test_tree: the /prof tree over a real store built here: listings (types,
 * label pairs, minutes, latest), ENOENT for unknown types and bad paths,
 * renders of minute, merged and diff files checked by decoding them again,
 * empty windows, determinism, canonical names and /metrics. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "store/db/store.h"
#include "tests/test.h"
#include "tests/unit/twostacks.h"
#include "fs/render/render.h"
#include "fs/tree/tree.h"
#include "store/util/util.h"

#define T_1111 1697022660LL /* 2023-10-11T11:11 */

/* A CPU profile with one stack main;work (count a) and one stack main
 * (count b), 10 ms a sample; a stack of count 0 left out. */
static struct profile *mk(int64_t a, int64_t b)
{
	struct profile *p = two_stacks("work", a, b, 10000000, true);

	p->period = 10000000;
	p->period_type.type = profile__intern_str(p, "cpu");
	p->period_type.unit = profile__intern_str(p, "nanoseconds");
	return p;
}

static int append(struct store *s, int64_t t, const char *comm, const char *pid,
		  int64_t a, int64_t b)
{
	struct store_label l[] = { { "comm", comm }, { "pid", pid } };
	struct profile *p = mk(a, b);
	int err = store__append(s, "cpu", t * 1000000000LL, 10000000000LL, p, l, 2);

	profile__free(p);
	return err;
}

static int render(struct tree *t, const char *path, struct buf *b)
{
	struct node n;
	int err;

	memset(b, 0, sizeof(*b));
	err = tree__resolve(t, path, &n);
	if (err)
		return err;
	err = n.kind == NODE_FILE ? tree__render(t, &n, b) : -EISDIR;
	node__fini(&n);
	return err;
}

/* Lists path into one string "a b c " (kinds: dirs end with '/', links
 * with '@'). */
static char *ls(struct tree *t, const char *path)
{
	static char out[8192];
	char **names;
	enum node_kind *kinds;
	size_t n;
	struct node nd;

	out[0] = 0;
	if (tree__resolve(t, path, &nd))
		return strcpy(out, "<ENOENT>");
	if (tree__list(t, &nd, &names, &kinds, &n)) {
		node__fini(&nd);
		return strcpy(out, "<ERR>");
	}
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s ", names[i],
			 kinds[i] == NODE_DIR ? "/" : kinds[i] == NODE_SYMLINK ? "@" : "");
	tree__free_list(names, kinds, n);
	node__fini(&nd);
	return out;
}

/* Decodes rendered pprof bytes and returns total of value vi, or -1. */
static int64_t pb_total(const struct buf *b, uint32_t vi, uint32_t *nsamples)
{
	struct profile *p;
	char err[128];
	int64_t tot;

	if (pprof__decode(b->data ? b->data : "", b->len, &p, err, sizeof(err))) {
		printf("decode: %s\n", err);
		return -1;
	}
	tot = profile__total(p, vi);
	if (nsamples)
		*nsamples = p->nsamples;
	profile__free(p);
	return tot;
}

static bool resolves(struct tree *t, const char *path)
{
	struct node n;
	int err = tree__resolve(t, path, &n);

	node__fini(&n);
	return err == 0;
}

/* A counter of the tree's /metrics, or -1. */
static long long metric(struct tree *t, const char *name)
{
	struct buf b;
	char key[128];
	const char *at;
	long long v = -1;

	if (render(t, "/metrics", &b) || !b.data)
		return -1;
	snprintf(key, sizeof(key), "\n%s ", name);
	at = strstr(b.data, key);
	if (at)
		v = atoll(at + strlen(key));
	buf__free(&b);
	return v;
}

/* folded.txt of the window [from, to) merged whole (the reference). */
static int folded_whole(struct store *s, int64_t from, int64_t to, struct buf *out)
{
	struct store_sel sel = { .type = "cpu" };
	struct profile *p;
	int err = store__merge(s, &sel, from, to, &p);

	memset(out, 0, sizeof(*out));
	if (err)
		return err;
	err = render__folded(p, out);
	profile__free(p);
	return err;
}

/* folded.txt of rendered pprof bytes (decoded again). */
static int folded_of_pb(const struct buf *pb, struct buf *out)
{
	struct profile *p;
	char e[128];
	int err;

	memset(out, 0, sizeof(*out));
	if (pprof__decode(pb->data ? pb->data : "", pb->len, &p, e, sizeof(e))) {
		printf("  decode: %s\n", e);
		return -EINVAL;
	}
	err = render__folded(p, out);
	profile__free(p);
	return err;
}

static bool same_text(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

/* Reads last-15m's profile.pb and folded.txt: total samples in the
 * profile, and both the window [from, to) merged whole (folded text). */
static void read_last15(struct tree *t, struct store *s, int64_t from, int64_t to, int64_t total,
			const char *what)
{
	struct buf pb, fo, want, got;

	CHECK(render(t, "/merged/cpu/last-15m/profile.pb", &pb) == 0 && pb_total(&pb, 0, NULL) == total,
	      "%s: last-15m/profile.pb holds %lld samples", what, (long long)total);
	CHECK(folded_of_pb(&pb, &got) == 0 && folded_whole(s, from, to, &want) == 0 && same_text(&got, &want),
	      "%s: its stacks and counts are the whole window's:\n%.*s", what, (int)got.len,
	      got.data ? got.data : "");
	CHECK(render(t, "/merged/cpu/last-15m/folded.txt", &fo) == 0 && same_text(&fo, &want),
	      "%s: last-15m/folded.txt is the whole window's: %.*s", what, (int)fo.len,
	      fo.data ? fo.data : "");
	buf__free(&pb);
	buf__free(&got);
	buf__free(&fo);
	buf__free(&want);
}

/*
 * A window that holds the open minute: its complete minutes are rendered
 * once and kept (fs/tree/closed.c), the open part at each read. Every
 * read must equal the whole window merged at that moment, and a read
 * after new data in the open minute must take the kept part.
 */
static void open_window(void)
{
	char dir[] = "/tmp/test_tree_open.XXXXXX", cmd[128];
	struct store_opts so = { 0 };
	struct store *s = NULL;
	struct tree *t = NULL;
	struct buf fo;
	int64_t now = now_s(), m, from, to;
	long long kept0, kept1, opens0;

	/* the minute must not turn under the test */
	if (now % 60 > 45) {
		sleep((unsigned)(61 - now % 60));
		now = now_s();
	}
	m = now - now % 60;
	from = m - 14 * 60;
	to = m + 60;
	if (!mkdtemp(dir))
		return;
	so.dir = dir;
	CHECK(store__open(&s, &so) == 0, "open-window store opens");
	if (!s)
		goto out;
	/* complete minutes: three of them, two processes; the open one */
	CHECK(append(s, m - 600, "api", "1", 3, 1) == 0 && append(s, m - 120, "db", "2", 4, 0) == 0 &&
	      append(s, m - 60, "api", "1", 0, 6) == 0 && append(s, m, "api", "1", 2, 0) == 0,
	      "appends around the open minute");
	/* the writer's mark: every sample before m + 1 s stored */
	CHECK(store__set_complete(s, (m + 1) * 1000000000LL) == 0, "the writer's mark");
	t = tree__new(s, NULL);
	if (!t)
		goto out;
	opens0 = metric(t, "proffs_open_window_renders_total");
	kept0 = metric(t, "proffs_open_window_kept_total");

	read_last15(t, s, from, to, 16, "a first read");
	CHECK(metric(t, "proffs_open_window_renders_total") == opens0 + 2 &&
	      metric(t, "proffs_open_window_kept_total") == kept0,
	      "both rendered in two parts, the complete minutes rendered anew");

	/* new data in the open minute: a later read keeps the complete part */
	CHECK(append(s, m + 1, "db", "2", 5, 5) == 0, "more in the open minute");
	kept1 = metric(t, "proffs_open_window_kept_total");
	read_last15(t, s, from, to, 26, "a later read, with the new samples");
	CHECK(metric(t, "proffs_open_window_kept_total") == kept1 + 2,
	      "both later reads took the kept complete minutes (%lld -> %lld)", kept1,
	      metric(t, "proffs_open_window_kept_total"));
	/* a selection is a window of its own */
	CHECK(render(t, "/merged/cpu/comm=db/last-15m/folded.txt", &fo) == 0 && fo.data &&
	      !strcmp(fo.data, "db;main 5\ndb;main;work 9\n"), "comm=db: %s", fo.data ? fo.data : "");
	buf__free(&fo);
out:
	tree__free(t);
	store__close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("cleanup failed\n");
}

int main(void)
{
	char dir[] = "/tmp/test_tree.XXXXXX", cmd[128], *s1;
	struct store_opts so = { 0 };
	struct store *s = NULL;
	struct tree *t;
	struct node n, n2;
	struct buf b, b2;
	int64_t now = now_s(), recent = now - (now % 60) - 120;
	char recent_s[17], path[256];
	uint32_t ns;
	int err;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	so.dir = dir;
	err = store__open(&s, &so);
	CHECK(err == 0, "store opens (%d)", err);
	if (err)
		return 1;
	/* comm=api pid=1: minute 11:11 (3 work + 1 main), 11:12 (5 + 0);
	 * comm=db pid=2: minute 11:11 (0 + 7); comm=api pid=1 recently. */
	CHECK(append(s, T_1111, "api", "1", 3, 1) == 0, "append api 11:11");
	CHECK(append(s, T_1111 + 60, "api", "1", 5, 0) == 0, "append api 11:12");
	CHECK(append(s, T_1111 + 10, "db", "2", 0, 7) == 0, "append db 11:11");
	CHECK(append(s, recent, "api", "1", 2, 0) == 0, "append api recently");
	fmt_minute(recent, recent_s);

	t = tree__new(s, NULL);
	CHECK(t != NULL, "tree__new");

	/* Root and types. */
	CHECK(!strcmp(ls(t, "/"), "README metrics merged/ diff/ binaries/ cpu/ "), "root lists: %s", ls(t, "/"));
	CHECK(!strcmp(ls(t, "/merged"), "cpu/ "), "merged lists types: %s", ls(t, "/merged"));
	CHECK(!strcmp(ls(t, "/diff"), "cpu/ "), "diff lists types: %s", ls(t, "/diff"));
	CHECK(!resolves(t, "/heap"), "unknown type is ENOENT");
	CHECK(!resolves(t, "/merged/heap/last-1h"), "unknown type under merged is ENOENT");
	CHECK(!resolves(t, "/cpu/2023-02-30T00:00"), "bad date is ENOENT");
	CHECK(!resolves(t, "/cpu/2023-10-11T11:11/x.txt"), "unknown file is ENOENT");
	CHECK(!resolves(t, "/cpu/../cpu"), ".. is ENOENT");

	/* Type directory. */
	snprintf(path, sizeof(path), "comm=api/ comm=db/ pid=1/ pid=2/ 2023-10-11T11:11/ 2023-10-11T11:12/ %s/ latest@ ", recent_s);
	CHECK(!strcmp(ls(t, "/cpu"), path), "cpu lists pairs, minutes, latest: %s", ls(t, "/cpu"));
	snprintf(path, sizeof(path), "pid=1/ 2023-10-11T11:11/ 2023-10-11T11:12/ %s/ latest@ ", recent_s);
	CHECK(!strcmp(ls(t, "/cpu/comm=api"), path), "comm=api narrows: %s", ls(t, "/cpu/comm=api"));
	CHECK(!strcmp(ls(t, "/cpu/comm=db"), "pid=2/ 2023-10-11T11:11/ latest@ "), "comm=db narrows: %s", ls(t, "/cpu/comm=db"));
	CHECK(!strcmp(ls(t, "/cpu/comm!=api"), "comm=db/ pid=2/ 2023-10-11T11:11/ latest@ "), "comm!=api: %s", ls(t, "/cpu/comm!=api"));
	CHECK(!strcmp(ls(t, "/cpu/comm=~d.*"), "comm=db/ pid=2/ 2023-10-11T11:11/ latest@ "), "comm=~d.*: %s", ls(t, "/cpu/comm=~d.*"));
	CHECK(!strcmp(ls(t, "/cpu/comm=~d"), ""), "regex is anchored: %s", ls(t, "/cpu/comm=~d"));
	CHECK(!strcmp(ls(t, "/cpu/comm=nope"), ""), "no match lists nothing: %s", ls(t, "/cpu/comm=nope"));
	CHECK(!strcmp(ls(t, "/cpu/2023-10-11T11:11"), "profile.pb folded.txt flamegraph.svg top.txt "), "minute dir lists the 4 files");

	/* latest. */
	err = tree__resolve(t, "/cpu/comm=db/latest", &n);
	CHECK(err == 0 && n.kind == NODE_SYMLINK, "latest is a symlink");
	if (!err) {
		CHECK(tree__readlink(t, &n, &s1) == 0 && !strcmp(s1, "2023-10-11T11:11"), "comm=db/latest -> 2023-10-11T11:11");
		free(s1);
		node__fini(&n);
	}
	err = tree__resolve(t, "/cpu/latest", &n);
	if (!err) {
		CHECK(tree__readlink(t, &n, &s1) == 0 && !strcmp(s1, recent_s), "cpu/latest -> %s", recent_s);
		free(s1);
		node__fini(&n);
	}
	CHECK(!resolves(t, "/cpu/comm=nope/latest"), "no data, no latest");

	/* Minute files. */
	CHECK(render(t, "/cpu/2023-10-11T11:11/profile.pb", &b) == 0, "render minute profile.pb");
	CHECK(pb_total(&b, 0, &ns) == 11 && ns == 3, "minute 11:11 holds 11 samples in 3 (stack, comm, pid) rows (%u)", ns);
	buf__free(&b);
	CHECK(render(t, "/cpu/comm=api/2023-10-11T11:11/profile.pb", &b) == 0 && pb_total(&b, 0, NULL) == 4, "comm=api 11:11 holds 4");
	buf__free(&b);
	CHECK(render(t, "/cpu/comm=api/2023-10-11T11:11/folded.txt", &b) == 0, "render folded");
	CHECK(b.data && !strcmp(b.data, "api;main 1\napi;main;work 3\n"), "folded: %s", b.data ? b.data : "");
	buf__free(&b);
	CHECK(render(t, "/cpu/2023-10-11T11:11/top.txt", &b) == 0 && b.data && strstr(b.data, "work"), "top.txt names work");
	buf__free(&b);
	CHECK(render(t, "/cpu/2023-10-11T11:11/flamegraph.svg", &b) == 0 && b.data && strstr(b.data, "<svg") &&
	      strstr(b.data, "/cpu/2023-10-11T11:11/flamegraph.svg"), "svg with the canonical path as title");
	buf__free(&b);

	/* Determinism and canonical names. */
	render(t, "/cpu/pid=1/comm=api/2023-10-11T11:11/profile.pb", &b);
	render(t, "/cpu/comm=api/pid=1/2023-10-11T11:11/profile.pb", &b2);
	CHECK(b.len > 0 && b.len == b2.len && !memcmp(b.data, b2.data, b.len), "same query, same bytes");
	buf__free(&b);
	buf__free(&b2);
	tree__resolve(t, "/cpu/pid=1/comm=%61pi/2023-10-11T11:11", &n);
	tree__resolve(t, "/cpu/comm=api/pid=1/2023-10-11T11:11", &n2);
	CHECK(n.canon && n2.canon && !strcmp(n.canon, n2.canon), "equal queries share a canon (%s)", n.canon);
	CHECK(n.immutable && n.mtime == T_1111 + 60, "a closed minute is immutable, mtime its end");
	CHECK(tree__node_version(t, &n) == tree__version(t), "closed minute version = store version");
	node__fini(&n);
	node__fini(&n2);
	tree__resolve(t, "/cpu/comm=api", &n);
	tree__resolve(t, "/cpu/comm=api", &n2);
	CHECK(!n.immutable && n.mtime > 0 && n.mtime == n2.mtime && n.mtime <= now_s(),
	      "a selection's mtime is stable (the last commit, %lld)", (long long)n.mtime);
	node__fini(&n);
	node__fini(&n2);

	/* Empty windows are valid, empty files. */
	CHECK(render(t, "/cpu/2023-10-11T11:20/profile.pb", &b) == 0, "empty minute renders");
	CHECK(pb_total(&b, 0, &ns) == 0 && ns == 0, "empty minute: valid profile, no samples");
	buf__free(&b);
	CHECK(render(t, "/cpu/comm=nope/2023-10-11T11:11/folded.txt", &b) == 0 && b.len == 0, "empty folded");
	buf__free(&b);

	/* merged/ */
	CHECK(render(t, "/merged/cpu/2023-10-11T11/profile.pb", &b) == 0 && pb_total(&b, 0, NULL) == 16, "hour merge: 16");
	buf__free(&b);
	CHECK(render(t, "/merged/cpu/comm=api/2023-10-11/profile.pb", &b) == 0 && pb_total(&b, 0, NULL) == 9, "day merge comm=api: 9");
	buf__free(&b);
	CHECK(render(t, "/merged/cpu/2023-10-11T11:12..2023-10-11T11:13/profile.pb", &b) == 0 && pb_total(&b, 0, NULL) == 5, "span merge: 5");
	buf__free(&b);
	CHECK(render(t, "/merged/cpu/last-15m/profile.pb", &b) == 0 && pb_total(&b, 0, NULL) == 2, "last-15m holds the recent batch");
	buf__free(&b);
	CHECK(!resolves(t, "/merged/cpu/2023-10-11T11:12..2023-10-11T11:12"), "empty range is ENOENT");
	err = tree__resolve(t, "/merged/cpu/last-15m/top.txt", &n);
	CHECK(err == 0 && !n.immutable, "last-* is not immutable");
	if (!err) {
		CHECK(tree__node_version(t, &n) != tree__version(t), "last-* version moves with the minute");
		node__fini(&n);
	}
	s1 = strdup(ls(t, "/merged/cpu/comm=db"));
	CHECK(!strcmp(s1, "pid=2/ last-15m/ last-1h/ last-6h/ last-24h/ last-7d/ 2023-10-11/ 2023-10-11T11/ "), "merged selection lists: %s", s1);
	free(s1);

	/* diff/ */
	CHECK(!strcmp(ls(t, "/diff/cpu/comm=api/2023-10-11T11:11"), "vs/ "), "diff range A lists vs");
	CHECK(render(t, "/diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:12/folded.txt", &b) == 0, "diff folded renders");
	CHECK(b.data && !strcmp(b.data, "api;main 1 0\napi;main;work 3 5\n"), "diff folded: %s", b.data ? b.data : "");
	buf__free(&b);
	CHECK(render(t, "/diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:12/profile.pb", &b) == 0 &&
	      pb_total(&b, 0, NULL) == 5 - 4, "diff profile total = B - A");
	buf__free(&b);
	/* B inherits 2023-10-11T11:11 comm=api, replaces comm with db. */
	CHECK(render(t, "/diff/cpu/comm=api/2023-10-11T11:11/vs/comm=db/2023-10-11T11:11/folded.txt", &b) == 0 &&
	      b.data && !strcmp(b.data, "api;main 1 0\napi;main;work 3 0\ndb;main 0 7\n"), "diff B replaces comm: %s", b.data ? b.data : "");
	buf__free(&b);
	CHECK(render(t, "/diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:12/top.txt", &b) == 0 && b.len > 0, "diff top");
	buf__free(&b);
	CHECK(render(t, "/diff/cpu/comm=api/2023-10-11T11:11/vs/2023-10-11T11:12/flamegraph.svg", &b) == 0 && b.len > 0, "diff svg");
	buf__free(&b);

	/* README and metrics. */
	CHECK(render(t, "/README", &b) == 0 && b.data && strstr(b.data, "last-15m") && strstr(b.data, "=~"), "README explains the grammar");
	buf__free(&b);
	CHECK(render(t, "/metrics", &b) == 0 && b.data &&
	      strstr(b.data, "proffs_renders_total{kind=\"profile.pb\"}") &&
	      strstr(b.data, "proffs_store_series 2\n") &&
	      strstr(b.data, "proffs_render_duration_seconds_bucket{kind=\"folded.txt\",le=\"+Inf\"}"),
	      "metrics has render counters and store figures");
	buf__free(&b);
	err = tree__resolve(t, "/README", &n);
	CHECK(err == 0 && n.immutable && n.kind == NODE_FILE, "README is an immutable file");
	node__fini(&n);

	tree__free(t);
	store__close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("cleanup failed\n");
	open_window();
	return test_done();
}
