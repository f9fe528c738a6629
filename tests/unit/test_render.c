/*
 * test_render.c - folded.txt, top.txt, the differential folded format and
 * flamegraph.svg on a hand-built profile whose expected output is worked
 * out by hand: comm first, ';' in names, kernel "_[k]", unsymbolized
 * "module+0xOFFSET", inlined frames, label-only differences merged, zero
 * counts dropped, recursion counted once in cum; XML escaping and validity
 * (xmllint when installed); a large random profile stays light.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/profile/profile.h"
#include "fs/render/render.h"
#include "tests/test.h"

#ifdef __SANITIZE_ADDRESS__
#define BIG_STACKS 3000
#else
#define BIG_STACKS 30000
#endif

struct ids {
	uint64_t main_, ab, work, evil, rec, ksys, lib, inl;
};

static uint64_t fn_loc(struct profile *p, uint64_t map, const char *name, uint64_t addr)
{
	struct prof_function f = { .name = profile__intern_str(p, name),
				   .system_name = profile__intern_str(p, name) };
	struct prof_line l = { profile__add_function(p, &f), 1 };
	struct prof_location loc = { .mapping_id = map, .address = addr, .nlines = 1, .lines = &l };

	return profile__add_location(p, &loc);
}

static void add(struct profile *p, const char *comm, const char *pid, int64_t n,
		uint32_t nl, const uint64_t *locs)
{
	struct prof_label lab[2];
	uint32_t k = 0;
	int64_t v[2] = { n, n * 10 };

	if (comm)
		lab[k++] = (struct prof_label){ .key = profile__intern_str(p, "comm"),
						.str = profile__intern_str(p, comm) };
	if (pid)
		lab[k++] = (struct prof_label){ .key = profile__intern_str(p, "pid"),
						.str = profile__intern_str(p, pid) };
	profile__add_sample(p, locs, nl, lab, k, v);
}

/* The hand-worked profile; `work_scale` multiplies the samples ending in
 * work so a second copy makes a diff. */
static struct profile *build(int64_t work_scale)
{
	struct profile *p = profile__new();
	const char *types[] = { "samples", "cpu" }, *units[] = { "count", "nanoseconds" };
	struct prof_mapping m1 = { .start = 0x400000, .limit = 0x500000,
				   .file = profile__intern_str(p, "/usr/bin/prog"), .has_functions = true };
	struct prof_mapping mk = { .start = 0xffffffff81000000ULL, .limit = 0xffffffff82000000ULL,
				   .file = profile__intern_str(p, "[kernel.kallsyms]"), .has_functions = true };
	struct prof_mapping ml = { .start = 0x7f0000000000ULL, .limit = 0x7f0000100000ULL, .offset = 0x1000,
				   .file = profile__intern_str(p, "/usr/lib/libfoo.so") };
	uint64_t a1, ak, al;
	struct ids i;

	profile__set_value_types(p, 2, types, units);
	p->period_type.type = profile__intern_str(p, "cpu");
	p->period_type.unit = profile__intern_str(p, "nanoseconds");
	p->period = 10;
	a1 = profile__add_mapping(p, &m1);
	ak = profile__add_mapping(p, &mk);
	al = profile__add_mapping(p, &ml);
	i.main_ = fn_loc(p, a1, "main", 0x401000);
	i.ab = fn_loc(p, a1, "a;b", 0x401100);
	i.work = fn_loc(p, a1, "work", 0x401200);
	i.evil = fn_loc(p, a1, "evil<&>\"'x", 0x401300);
	i.rec = fn_loc(p, a1, "rec", 0x401400);
	i.ksys = fn_loc(p, ak, "do_syscall_64", 0xffffffff81001000ULL);
	{
		struct prof_location l = { .mapping_id = al, .address = 0x7f0000000234ULL };

		i.lib = profile__add_location(p, &l);
	}
	{
		struct prof_function fi = { .name = profile__intern_str(p, "inl_inner") };
		struct prof_function fo = { .name = profile__intern_str(p, "inl_outer") };
		struct prof_line lines[2] = { { profile__add_function(p, &fi), 5 },
					      { profile__add_function(p, &fo), 9 } };
		struct prof_location l = { .mapping_id = a1, .address = 0x401500, .nlines = 2, .lines = lines };

		i.inl = profile__add_location(p, &l);
	}
	{
		uint64_t s1[] = { i.work, i.ab, i.main_ };
		uint64_t s2[] = { i.ksys, i.work, i.main_ };
		uint64_t s3[] = { i.rec, i.rec, i.rec, i.main_ };
		uint64_t s4[] = { i.lib, i.main_ };
		uint64_t s5[] = { i.inl, i.main_ };
		uint64_t s7[] = { i.evil, i.main_ };

		add(p, "prog", "1", 5 * work_scale, 3, s1);
		add(p, "prog", "1", 3, 3, s2);
		add(p, NULL, NULL, 4, 4, s3);
		add(p, "prog", "1", 2, 2, s4);
		add(p, "prog", "1", 1, 2, s5);
		add(p, "prog", "2", 5 * work_scale, 3, s1); /* same text, other pid */
		add(p, "prog", "3", 0, 2, s7);             /* zero: omitted */
		add(p, "prog", "1", 6, 2, s7);
	}
	return p;
}

static const char expect_folded[] =
	"main;rec;rec;rec 4\n"
	"prog;main;a:b;work 10\n"
	"prog;main;evil<&>\"'x 6\n"
	"prog;main;inl_outer;inl_inner 1\n"
	"prog;main;libfoo.so+0x1234 2\n"
	"prog;main;work;do_syscall_64_[k] 3\n";

static const char expect_top[] =
	"File: prog\n"
	"Type: cpu\n"
	"Showing nodes accounting for 260ns, 100% of 260ns total\n"
	"      flat  flat%   sum%        cum   cum%\n"
	"     100ns 38.46% 38.46%      130ns 50.00%  work\n"
	"      60ns 23.08% 61.54%       60ns 23.08%  evil<&>\"'x\n"
	"      40ns 15.38% 76.92%       40ns 15.38%  rec\n"
	"      30ns 11.54% 88.46%       30ns 11.54%  do_syscall_64\n"
	"      20ns  7.69% 96.15%       20ns  7.69%  [libfoo.so]\n"
	"      10ns  3.85%   100%       10ns  3.85%  inl_inner (inline)\n"
	"         0     0%   100%      100ns 38.46%  a:b\n"
	"         0     0%   100%       10ns  3.85%  inl_outer\n"
	"         0     0%   100%      260ns   100%  main\n";

/* Finds the top.txt row for name; returns 1 and fills flat/cum (in ns). */
static int top_row(const char *top, const char *name, long long *flat, long long *cum)
{
	const char *l = top;

	while (l && *l) {
		const char *e = strchr(l, '\n');
		char nm[256];
		double a, b, c;

		if (sscanf(l, "%lld%*[a-z] %lf%% %lf%% %lld%*[a-z] %lf%% %255[^\n]", flat, &a, &b, cum, &c, nm) == 6 &&
		    !strcmp(nm, name))
			return 1;
		l = e ? e + 1 : NULL;
	}
	return 0;
}

static int xmllint_ok(const struct buf *b, const char *what)
{
	char path[] = "/tmp/test_render_XXXXXX";
	int fd = mkstemp(path), rc;
	char cmd[256];

	if (fd < 0)
		return -1;
	if (write(fd, b->data, b->len) != (ssize_t)b->len) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	if (system("command -v xmllint >/dev/null 2>&1")) {
		printf("skip %s: xmllint not installed\n", what);
		unlink(path);
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	rc = system(cmd);
	unlink(path);
	return rc == 0;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* folded.txt is sorted by ranks of frame names, not by text: random
 * stacks over names that are prefixes of one another, followed by bytes
 * below and above ';' (' ', ':', '<', 'b'), must still come out in byte
 * order, every line once, the counts summed. */
static void folded_order(void)
{
	static const char *const names[] = { "a", "a:b", "a b", "ab", "a;c", "b", "a<", "", "zz", "a:" };
	const int nn = sizeof(names) / sizeof(names[0]);
	const char *types[] = { "samples", "cpu" }, *units[] = { "count", "nanoseconds" };
	struct profile *p = profile__new();
	struct prof_mapping m = { .start = 0x400000, .limit = 0x500000,
				  .file = profile__intern_str(p, "/usr/bin/x"), .has_functions = true };
	uint64_t map, loc[10], stack[6], total = 0, seed = 42, sum = 0;
	struct buf out = { 0 };
	int sorted = 1, lines = 0;
	const char *prev = NULL, *l;

	profile__set_value_types(p, 2, types, units);
	map = profile__add_mapping(p, &m);
	for (int i = 0; i < nn; i++)
		loc[i] = fn_loc(p, map, names[i], 0x401000 + 16 * i);
	for (int i = 0; i < 3000; i++) {
		uint32_t d = 1;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		d += (seed >> 33) % 6;
		for (uint32_t k = 0; k < d; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			stack[k] = loc[(seed >> 33) % nn];
		}
		add(p, (seed >> 40) & 1 ? "x" : "x:", NULL, 1 + (int64_t)(i % 3), d, stack);
		total += 1 + i % 3;
	}
	CHECK(render__folded(p, &out) == 0, "folded of 3000 random stacks over prefix names");
	for (l = out.data; l && *l; l = strchr(l, '\n') + 1) {
		const char *e = strchr(l, '\n'), *sp = e;

		while (sp > l && *sp != ' ')
			sp--;
		sum += strtoull(sp + 1, NULL, 10);
		if (prev) {
			size_t lp = (size_t)(strrchr(prev, ' ') - prev), lc = (size_t)(sp - l);
			int c = memcmp(prev, l, lp < lc ? lp : lc);

			if (c > 0 || (c == 0 && lp >= lc))
				sorted = 0; /* out of order, or a line twice */
		}
		prev = l;
		lines++;
	}
	CHECK(sorted && sum == total, "%d lines in strict byte order of their text, counts sum to %llu (%llu)",
	      lines, (unsigned long long)sum, (unsigned long long)total);
	buf__free(&out);
	profile__free(p);
}

int main(void)
{
	struct profile *a = build(1), *b = build(2), *d = NULL;
	struct buf f1 = { 0 }, f2 = { 0 }, t = { 0 }, fd = { 0 }, s1 = { 0 }, s2 = { 0 }, sd = { 0 }, td = { 0 };
	long long flat, cum;

	folded_order();
	/* folded.txt */
	CHECK(render__folded(a, &f1) == 0, "render folded");
	CHECK(f1.data && !strcmp(f1.data, expect_folded), "folded output is exactly as worked out:\n%s", f1.data);
	CHECK(render__folded(a, &f2) == 0 && f1.len == f2.len && !memcmp(f1.data, f2.data, f1.len),
	      "folded is deterministic");

	/* top.txt */
	CHECK(render__top(a, &t) == 0, "render top:\n%s", t.data);
	/* Worked out with pprof's rules (render_top.c): all nodes kept (cutoff
	 * 1ns), unit ns for 10ns..260ns, flat then name order, kernel frames
	 * unmarked, an unsymbolized frame named by its file, inline marked. */
	CHECK(t.data && !strcmp(t.data, expect_top), "top.txt is exactly as pprof -top would print it");
	CHECK(top_row(t.data, "rec", &flat, &cum) && flat == 40 && cum == 40, "rec cum counted once despite recursion (40)");
	{
		struct buf t2 = { 0 };

		CHECK(render__top(a, &t2) == 0 && t2.len == t.len && !memcmp(t.data, t2.data, t.len),
		      "top is deterministic");
		buf__free(&t2);
	}

	/* differential folded */
	CHECK(render__folded_diff(a, b, &fd) == 0, "render folded diff:\n%s", fd.data);
	CHECK(fd.data && strstr(fd.data, "prog;main;a:b;work 10 20\n") &&
	      strstr(fd.data, "main;rec;rec;rec 4 4\n"), "diff lines carry countA countB, in samples");
	{
		int lines = count(fd.data, "\n"), ok = 1;
		const char *l = fd.data;

		for (int k = 0; k < lines; k++) {
			const char *e = strchr(l, '\n');
			long long x, y;
			const char *sp = e - 1;

			while (sp > l && *sp != ' ')
				sp--;
			sp--;
			while (sp > l && *sp != ' ')
				sp--;
			if (sscanf(sp, " %lld %lld", &x, &y) != 2)
				ok = 0;
			l = e + 1;
		}
		CHECK(lines == 6 && ok, "every diff line has two count columns (%d lines)", lines);
	}

	/* flamegraph.svg */
	CHECK(render__svg(a, "test <profile> & co", &s1) == 0, "render svg (%zu bytes)", s1.len);
	CHECK(s1.data && strstr(s1.data, ">work<") && strstr(s1.data, "do_syscall_64_[k]") &&
	      strstr(s1.data, "all (26 samples, 100.00%)") && strstr(s1.data, "prog (22 samples, 84.62%)"),
	      "svg names the heaviest frames with counts in samples and shares");
	CHECK(strstr(s1.data, "evil&lt;&amp;&gt;&quot;&apos;x") && !strstr(s1.data, "evil<"),
	      "svg escapes markup in names");
	CHECK(strstr(s1.data, "<script") &&
	      count(s1.data, "http") == 1, "svg is self-contained (one http: the xmlns)");
	CHECK(xmllint_ok(&s1, "svg") == 1, "svg is well-formed XML (xmllint)");
	CHECK(render__svg(a, "test <profile> & co", &s2) == 0 && s1.len == s2.len &&
	      !memcmp(s1.data, s2.data, s1.len), "svg is deterministic");

	/* the pprof-style diff renders: base percentages, coloured flame */
	d = profile__diff(a, b);
	CHECK(d != NULL, "profile__diff");
	if (d) {
		CHECK(render__top(d, &td) == 0 && strstr(td.data, "of 260ns total\n"),
		      "top of a diff is relative to the base total:\n%s", td.data);
		CHECK(top_row(td.data, "work", &flat, &cum) && flat == 100 && cum == 100,
		      "diff top: work grew by 100");
		CHECK(render__svg(d, "diff", &sd) == 0 && strstr(sd.data, "A total 26, B total 36 samples"),
		      "diff svg states both totals");
		CHECK(strstr(sd.data, "rgb(255,") && xmllint_ok(&sd, "diff svg") == 1,
		      "diff svg colours growth red and is well-formed");
	}

	/* offcpu counts microseconds (SPEC §2 Files): 1,234,567 ns of one
	 * stack and 499 ns of another are 1235 us and 0 (dropped). */
	{
		struct profile *o = profile__new();
		const char *types[] = { "events", "offcpu" }, *units[] = { "count", "nanoseconds" };
		struct prof_mapping m = { .start = 0x1000, .limit = 0x2000,
					  .file = profile__intern_str(o, "/bin/o"), .has_functions = true };
		uint64_t mid, l1, l2;
		int64_t v1[2] = { 3, 1234567 }, v2[2] = { 1, 499 };
		struct buf of = { 0 }, os = { 0 };

		profile__set_value_types(o, 2, types, units);
		mid = profile__add_mapping(o, &m);
		l1 = fn_loc(o, mid, "sleepy", 0x1100);
		l2 = fn_loc(o, mid, "brief", 0x1200);
		profile__add_sample(o, &l1, 1, NULL, 0, v1);
		profile__add_sample(o, &l2, 1, NULL, 0, v2);
		CHECK(render__folded(o, &of) == 0 && of.data && !strcmp(of.data, "sleepy 1235\n"),
		      "offcpu folded counts microseconds: '%s'", of.data ? of.data : "");
		CHECK(render__svg(o, "o", &os) == 0 && strstr(os.data, "sleepy (1235 microseconds,"),
		      "offcpu svg hover names microseconds");
		buf__free(&of);
		buf__free(&os);
		profile__free(o);
	}

	/* empty profile: valid, tiny outputs */
	{
		struct profile *e = profile__new();
		const char *types[] = { "samples" }, *units[] = { "count" };
		struct buf ef = { 0 }, et = { 0 }, es = { 0 };

		profile__set_value_types(e, 1, types, units);
		CHECK(render__folded(e, &ef) == 0 && ef.len == 0, "empty profile: empty folded");
		CHECK(render__top(e, &et) == 0 && strstr(et.data, "Showing nodes accounting for 0, 0% of 0 total\n"),
		      "empty profile: top with total 0");
		CHECK(render__svg(e, "empty", &es) == 0 && xmllint_ok(&es, "empty svg") == 1,
		      "empty profile: valid svg");
		buf__free(&ef);
		buf__free(&et);
		buf__free(&es);
		profile__free(e);
	}

	/* a large random profile: 30k stacks stay light (3k under ASan,
	 * which slows this tree building a hundredfold) */
	{
		struct profile *big = profile__new();
		const char *types[] = { "samples" }, *units[] = { "count" };
		struct prof_mapping m = { .start = 0x1000, .limit = 0x100000,
					  .file = profile__intern_str(big, "/bin/big"), .has_functions = true };
		uint64_t mid, locs[2000], stack[48];
		struct buf bs = { 0 }, bf = { 0 };
		unsigned seed = 12345;
		char name[32];
		struct timespec t0, t1;
		double ms;

		profile__set_value_types(big, 1, types, units);
		mid = profile__add_mapping(big, &m);
		for (int k = 0; k < 2000; k++) {
			snprintf(name, sizeof(name), "func_%04d", k);
			locs[k] = fn_loc(big, mid, name, 0x1000 + 16 * k);
		}
		for (int s = 0; s < BIG_STACKS; s++) {
			int depth = 10 + (int)(rand_r(&seed) % 38);
			int64_t v = 1 + (rand_r(&seed) % 100 == 0 ? 1000 : rand_r(&seed) % 5);

			for (int k = 0; k < depth; k++) {
				/* shared roots, diverse leaves */
				unsigned r = rand_r(&seed);
				int idx = k < 3 ? k : (int)(r % (k < 8 ? 20u : 2000u));

				stack[depth - 1 - k] = locs[idx];
			}
			profile__add_sample(big, stack, (uint32_t)depth, NULL, 0, &v);
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(render__svg(big, "big", &bs) == 0, "big svg renders");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
		CHECK(bs.len < 4u << 20, "30k stacks give a light svg: %zu bytes, %d frames, %.0f ms",
		      bs.len, count(bs.data, "<g class=\"f\""), ms);
		CHECK(strstr(bs.data, "small frames)") != NULL, "narrow frames are coalesced");
		CHECK(xmllint_ok(&bs, "big svg") == 1, "big svg is well-formed");
		CHECK(render__folded(big, &bf) == 0 && count(bf.data, "\n") == BIG_STACKS,
		      "big folded has %d lines (%d)", BIG_STACKS, count(bf.data, "\n"));
		buf__free(&bs);
		buf__free(&bf);
		profile__free(big);
	}

	buf__free(&f1);
	buf__free(&f2);
	buf__free(&t);
	buf__free(&fd);
	buf__free(&s1);
	buf__free(&s2);
	buf__free(&sd);
	buf__free(&td);
	profile__free(a);
	profile__free(b);
	profile__free(d);
	return test_done();
}
