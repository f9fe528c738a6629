/* test_path: the /prof path grammar - what parses, what is ENOENT, the
 * canonical form (sorted, deduplicated, re-encoded, parses to itself),
 * calendar checks, percent-decoding, regex guards, windows and
 * immutability. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/path/path.h"
#include "store/db/store.h"
#include "tests/test.h"

/* 2023-10-11T11:11 UTC */
#define T_1111 1697022660LL

static int parse(const char *p, struct path_query *q)
{
	return path__parse(p, q);
}

/* Parses p, expects success, node kind and canonical form. */
static void ok(const char *p, enum path_node node, const char *canon)
{
	struct path_query q, q2;
	int err = parse(p, &q);

	CHECK(err == 0, "parses: %s (err %d)", p, err);
	if (err)
		return;
	CHECK(q.node == node, "%s: node %d (want %d)", p, q.node, node);
	if (canon)
		CHECK(!strcmp(q.canon, canon), "%s: canon %s (want %s)", p, q.canon, canon);
	err = parse(q.canon, &q2);
	CHECK(err == 0 && !strcmp(q2.canon, q.canon) && q2.node == q.node,
	      "%s: canon parses to itself", p);
	path_query__fini(&q2);
	path_query__fini(&q);
}

static void bad(const char *p)
{
	struct path_query q;
	int err = parse(p, &q);

	CHECK(err == -ENOENT, "ENOENT: %s (got %d)", p, err);
	path_query__fini(&q);
}

int main(void)
{
	struct path_query q;
	int64_t from, to, t;
	char longre[400], longp[PATH_MAX_LEN + 10];

	/* Fixed names. */
	ok("/", PN_ROOT, "/");
	ok("/README", PN_README, "/README");
	ok("/metrics", PN_METRICS, "/metrics");
	ok("/merged", PN_AREA, "/merged");
	ok("/diff", PN_AREA, "/diff");
	bad("");
	bad("cpu");
	bad("//");
	bad("/cpu/");
	bad("/cpu//comm=x");
	bad("/README/x");
	bad("/metrics/x");
	bad("/.");
	bad("/..");
	bad("/cpu/..");
	bad("/cpu/./2023-10-11T11:11");
	bad("/.hidden");
	bad("/cp u");

	/* Plain selections and minutes. */
	ok("/cpu", PN_SEL, "/cpu");
	ok("/cpu/comm=api", PN_SEL, "/cpu/comm=api");
	ok("/cpu/pid=3/comm=api", PN_SEL, "/cpu/comm=api/pid=3");
	ok("/cpu/comm=api/pid=3", PN_SEL, "/cpu/comm=api/pid=3");
	ok("/cpu/comm=api/comm=api", PN_SEL, "/cpu/comm=api");
	ok("/cpu/comm=b/comm=a", PN_SEL, "/cpu/comm=a/comm=b");
	ok("/cpu/comm!=x", PN_SEL, "/cpu/comm!=x");
	ok("/cpu/comm=~ap.*", PN_SEL, "/cpu/comm=~ap.*");
	ok("/cpu/comm=~a/comm!=b/comm=c", PN_SEL, "/cpu/comm=c/comm!=b/comm=~a");
	ok("/cpu/comm=", PN_SEL, "/cpu/comm=");
	ok("/cpu/latest", PN_LATEST, "/cpu/latest");
	ok("/cpu/comm=x/latest", PN_LATEST, "/cpu/comm=x/latest");
	bad("/cpu/latest/profile.pb");
	ok("/cpu/2023-10-11T11:11", PN_WINDOW, "/cpu/2023-10-11T11:11");
	ok("/cpu/pid=1/2023-10-11T11:11/profile.pb", PN_FILE, "/cpu/pid=1/2023-10-11T11:11/profile.pb");
	ok("/cpu/2023-10-11T11:11/folded.txt", PN_FILE, NULL);
	ok("/cpu/2023-10-11T11:11/flamegraph.svg", PN_FILE, NULL);
	ok("/cpu/2023-10-11T11:11/top.txt", PN_FILE, NULL);
	bad("/cpu/2023-10-11T11:11/nope.txt");
	bad("/cpu/2023-10-11T11:11/top.txt/x");
	bad("/cpu/2023-10-11T11:11/comm=x");
	bad("/cpu/2023-10-11T11");  /* ranges only under merged/ */
	bad("/cpu/last-1h");
	bad("/cpu/profile.pb");
	bad("/cpu/vs");
	bad("/cpu/=x");
	bad("/cpu/!=x");
	bad("/merged/cpu/latest");
	bad("/README=x");
	bad("/merged/README");
	bad("/diff/merged");
	bad("/merged/cpu/comm=x/2023-10-11/profile.pb/x");

	/* Parsed content. */
	if (!parse("/cpu/pid!=7/comm=~a%2Fb/2023-10-11T11:11/top.txt", &q)) {
		CHECK(q.area == AREA_PLAIN && !strcmp(q.type, "cpu"), "type cpu");
		CHECK(q.a.nm == 2, "two matchers");
		CHECK(!strcmp(q.a.m[0].name, "comm") && q.a.m[0].op == STORE_RE &&
		      !strcmp(q.a.m[0].value, "a/b"), "regex decoded");
		CHECK(!strcmp(q.a.m[1].name, "pid") && q.a.m[1].op == STORE_NEQ &&
		      !strcmp(q.a.m[1].value, "7"), "!= parsed");
		CHECK(q.has_ra && q.ra.kind == RANGE_MINUTE && q.ra.from == T_1111 &&
		      q.ra.to == T_1111 + 60, "minute window [m, m+60)");
		CHECK(q.file == PF_TOP, "file top");
		path_query__fini(&q);
	} else {
		CHECK(0, "content path parses");
	}

	/* Percent-encoding. */
	ok("/cpu/exe=%2Fusr%2Fbin%2Fpython3", PN_SEL, "/cpu/exe=%2Fusr%2Fbin%2Fpython3");
	ok("/cpu/exe=%2fusr", PN_SEL, "/cpu/exe=%2Fusr");
	ok("/cpu/comm=%61pi", PN_SEL, "/cpu/comm=api");
	ok("/cpu/comm=a%25b", PN_SEL, "/cpu/comm=a%25b");
	ok("/cpu/comm=a b", PN_SEL, "/cpu/comm=a b");
	ok("/cpu/comm=\xc3\xa9", PN_SEL, "/cpu/comm=%C3%A9");
	ok("/cpu/comm=%7Ex", PN_SEL, "/cpu/comm=%7Ex");
	ok("/cpu/comm=x~", PN_SEL, "/cpu/comm=x~");
	ok("/cpu/a%3Db=c", PN_SEL, "/cpu/a%3Db=c");
	ok("/cpu/a%21=c", PN_SEL, "/cpu/a%21=c");
	ok("/cpu/comm=a=b", PN_SEL, "/cpu/comm=a=b");
	ok("/cpu/comm=%0A", PN_SEL, "/cpu/comm=%0A");
	bad("/cpu/comm=%");
	bad("/cpu/comm=%4");
	bad("/cpu/comm=%zz");
	bad("/cpu/comm=%4g");
	bad("/cpu/comm=%00");
	bad("/cpu/co%00mm=x");
	bad("/cpu/%=x");
	{
		char *e = path__encode_pair("a=!~/%", "~/x%\x01\xff~");

		CHECK(e && !strcmp(e, "a%3D%21%7E%2F%25=%7E%2Fx%25%01%FF~"), "encode_pair (%s)", e);
		free(e);
		e = path__encode_pair("exe", "/usr/bin/python3");
		CHECK(e && !strcmp(e, "exe=%2Fusr%2Fbin%2Fpython3"), "SPEC's example encodes (%s)", e);
		free(e);
	}

	/* Regex guards. */
	ok("/cpu/comm=~(a|b)c+[[:alpha:]]{2,3}", PN_SEL, NULL);
	ok("/cpu/comm=~[]a]x", PN_SEL, NULL);
	bad("/cpu/comm=~(");
	bad("/cpu/comm=~a)");
	bad("/cpu/comm=~[abc");
	bad("/cpu/comm=~(a+)+");
	bad("/cpu/comm=~(a*)*b");
	bad("/cpu/comm=~((a|b)*)+");
	bad("/cpu/comm=~a**");
	bad("/cpu/comm=~(a)\\1");
	bad("/cpu/comm=~a{1000}");
	bad("/cpu/comm=~a{1,1000}");
	bad("/cpu/comm=~a{2");
	bad("/cpu/comm=~((((((((((((((((((a))))))))))))))))))");
	memset(longre, 'a', sizeof(longre));
	memcpy(longre, "/cpu/comm=~", 11);
	longre[11 + PATH_MAX_REGEX] = 0;
	ok(longre, PN_SEL, NULL);
	longre[11 + PATH_MAX_REGEX] = 'a';
	longre[12 + PATH_MAX_REGEX] = 0;
	bad(longre);

	/* Calendar. */
	bad("/cpu/2023-13-01T00:00");
	bad("/cpu/2023-00-01T00:00");
	bad("/cpu/2023-02-29T00:00");
	ok("/cpu/2024-02-29T00:00", PN_WINDOW, NULL);
	bad("/cpu/1900-02-29T00:00");
	bad("/cpu/2100-02-29T00:00");
	ok("/cpu/2000-02-29T00:00", PN_WINDOW, NULL);
	bad("/cpu/2023-04-31T00:00");
	bad("/cpu/2023-10-11T24:00");
	bad("/cpu/2023-10-11T23:60");
	bad("/cpu/2023-10-11T1:11");
	bad("/cpu/2023-10-11 11:11");
	bad("/cpu/2023-10-11T11:11:00");
	bad("/cpu/+023-10-11T11:11");
	bad("/cpu/1969-12-31T23:59");
	CHECK(path__parse_minute("1970-01-01T00:00", 16, &t) == 0 && t == 0, "epoch");
	CHECK(path__parse_minute("2023-10-11T11:11", 16, &t) == 0 && t == T_1111, "2023-10-11T11:11 = %lld", (long long)t);
	CHECK(path__parse_minute("2024-03-01T00:00", 16, &t) == 0 && t == 1709251200LL, "leap year day");

	/* merged/ ranges. */
	ok("/merged/cpu", PN_SEL, "/merged/cpu");
	ok("/merged/cpu/comm=x/2023-10-11T11:00..2023-10-11T12:00", PN_WINDOW,
	   "/merged/cpu/comm=x/2023-10-11T11:00..2023-10-11T12:00");
	ok("/merged/cpu/2023-10-11T11/profile.pb", PN_FILE, "/merged/cpu/2023-10-11T11/profile.pb");
	ok("/merged/cpu/2023-10-11", PN_WINDOW, "/merged/cpu/2023-10-11");
	ok("/merged/cpu/2023-10-11T11:11", PN_WINDOW, "/merged/cpu/2023-10-11T11:11");
	ok("/merged/cpu/last-15m/top.txt", PN_FILE, "/merged/cpu/last-15m/top.txt");
	ok("/merged/cpu/last-6h", PN_WINDOW, NULL);
	ok("/merged/cpu/last-7d", PN_WINDOW, NULL);
	bad("/merged/cpu/last-0m");
	bad("/merged/cpu/last-07m");
	bad("/merged/cpu/last-m");
	bad("/merged/cpu/last-5");
	bad("/merged/cpu/last-5s");
	bad("/merged/cpu/last-5w");
	bad("/merged/cpu/last--5m");
	bad("/merged/cpu/last-99999999d");
	bad("/merged/cpu/2262-01-01"); /* past int64 nanoseconds */
	bad("/merged/cpu/2023-10-11T12:00..2023-10-11T11:00");
	bad("/merged/cpu/2023-10-11T12:00..2023-10-11T12:00");
	bad("/merged/cpu/2023-10-11T12:00..");
	bad("/merged/cpu/2023-10-11T12..2023-10-11T13");
	bad("/merged/cpu/2023-10-11T12:00...2023-10-11T13:00");
	bad("/merged/cpu/2023-10-32");
	bad("/merged/cpu/2023-10");
	bad("/merged/cpu/2023-10-11T11/vs");
	if (!parse("/merged/cpu/2023-10-11T11", &q)) {
		CHECK(q.ra.kind == RANGE_HOUR && q.ra.from == T_1111 - 660 && q.ra.to == q.ra.from + 3600, "hour window");
		path_query__fini(&q);
	}
	if (!parse("/merged/cpu/2023-10-11", &q)) {
		CHECK(q.ra.kind == RANGE_DAY && q.ra.from == T_1111 - 11 * 3600 - 660 && q.ra.to == q.ra.from + 86400, "day window");
		path_query__fini(&q);
	}
	if (!parse("/merged/cpu/last-15m", &q)) {
		path_range__window(&q.ra, T_1111 + 30, &from, &to);
		CHECK(from == T_1111 - 14 * 60 && to == T_1111 + 60,
		      "last-15m = 15 minutes ending with the current one");
		CHECK(!path_query__immutable(&q, T_1111 + 86400), "last-* is never immutable");
		path_query__fini(&q);
	}
	if (!parse("/merged/cpu/last-2h", &q)) {
		path_range__window(&q.ra, T_1111, &from, &to);
		CHECK(to - from == 7200 && to == T_1111 + 60, "last-2h covers 2 h");
		path_query__fini(&q);
	}

	/* Immutability. */
	if (!parse("/cpu/2023-10-11T11:11/profile.pb", &q)) {
		CHECK(!path_query__immutable(&q, T_1111 + 60), "a minute is open at its end");
		CHECK(!path_query__immutable(&q, T_1111 + 120), "... and for 60 s more");
		CHECK(path_query__immutable(&q, T_1111 + 121), "closed afterwards");
		path_query__fini(&q);
	}
	if (!parse("/cpu/comm=x", &q)) {
		CHECK(!path_query__immutable(&q, T_1111 + 86400 * 100), "selection dirs are not immutable");
		path_query__fini(&q);
	}

	/* diff/ */
	ok("/diff/cpu", PN_SEL, "/diff/cpu");
	ok("/diff/cpu/comm=api", PN_SEL, "/diff/cpu/comm=api");
	ok("/diff/cpu/comm=api/2023-10-11T11", PN_DIFF_A, "/diff/cpu/comm=api/2023-10-11T11");
	ok("/diff/cpu/comm=api/2023-10-11T11/vs", PN_SEL, "/diff/cpu/comm=api/2023-10-11T11/vs");
	ok("/diff/cpu/comm=api/2023-10-11T11/vs/2023-10-11T12", PN_WINDOW, NULL);
	ok("/diff/cpu/comm=api/2023-10-11T11/vs/2023-10-11T12/profile.pb", PN_FILE,
	   "/diff/cpu/comm=api/2023-10-11T11/vs/2023-10-11T12/profile.pb");
	ok("/diff/cpu/version=1/comm=api/last-1h/vs/version=2/last-1h/folded.txt", PN_FILE,
	   "/diff/cpu/comm=api/version=1/last-1h/vs/version=2/last-1h/folded.txt");
	ok("/diff/cpu/comm=api/last-1h/vs/pid=2/comm=b", PN_SEL, "/diff/cpu/comm=api/last-1h/vs/comm=b/pid=2");
	bad("/diff/cpu/comm=api/last-1h/profile.pb");
	bad("/diff/cpu/comm=api/last-1h/vs/profile.pb");
	bad("/diff/cpu/comm=api/last-1h/vs/last-1h/vs");
	bad("/diff/cpu/comm=api/last-1h/vs/last-1h/comm=x");
	bad("/diff/cpu/comm=api/last-1h/versus");
	bad("/diff/cpu/vs/last-1h");
	bad("/diff/cpu/comm=api/last-1h/vs/last-1h/profile.pb/x");
	if (!parse("/diff/cpu/comm=api/version=1/pid!=3/last-1h/vs/version=2/pid=~4.*/2023-10-11T11/top.txt", &q)) {
		struct path_matcher *m;
		size_t n;

		CHECK(q.a.nm == 3 && q.b.nm == 2, "diff sides: 3 and 2 matchers");
		CHECK(path_query__sel_b(&q, &m, &n) == 0 && n == 3, "B inherits: 3 effective matchers (%zu)", n);
		CHECK(!strcmp(m[0].name, "comm") && !strcmp(m[0].value, "api"), "B keeps comm=api");
		CHECK(!strcmp(m[1].name, "pid") && m[1].op == STORE_RE, "B's pid=~ replaces A's pid!=");
		CHECK(!strcmp(m[2].name, "version") && !strcmp(m[2].value, "2"), "B's version=2 replaces version=1");
		free(m);
		CHECK(!path_query__immutable(&q, T_1111 + 86400), "diff with a last-* side is not immutable");
		path_query__fini(&q);
	} else {
		CHECK(0, "diff path parses");
	}
	if (!parse("/diff/cpu/2023-10-11T10/vs/2023-10-11T11/top.txt", &q)) {
		CHECK(path_query__immutable(&q, T_1111 + 86400), "closed diff is immutable");
		CHECK(!path_query__immutable(&q, T_1111), "open diff is not");
		path_query__fini(&q);
	}

	/* Limits. */
	{
		char p[4096] = "/cpu";

		for (int i = 0; i <= PATH_MAX_MATCHERS; i++)
			snprintf(p + strlen(p), sizeof(p) - strlen(p), "/l%d=v", i);
		bad(p);
	}
	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "/cpu/comm=", 10);
	longp[PATH_MAX_LEN + 5] = 0;
	bad(longp);
	bad(NULL);
	/* A type name is what the store accepts: up to STORE_TYPE_MAX bytes
	 * (not import's old 64). */
	{
		char t[STORE_TYPE_MAX + 3] = "/";

		memset(t + 1, 't', STORE_TYPE_MAX);
		t[STORE_TYPE_MAX + 1] = 0;
		ok(t, PN_SEL, t);
		t[STORE_TYPE_MAX + 1] = 't';
		t[STORE_TYPE_MAX + 2] = 0;
		bad(t);
	}

	return test_done();
}
