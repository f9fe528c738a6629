/* test_pyline: CPython line tables (sampler/python/linetable.c).
 *
 * Hand-made tables pin the rules (3.10's -128 and empty pairs, 3.11+'s
 * forms and "no location" keeping the running line) and the refusals of
 * bytes no CPython writes. Then the oracle: for each CPython installed
 * here (Debian's python3.11, pyenv's 3.10-3.13), tests/tools/pyline_dump.py
 * compiles that version's whole standard library (every .py below its
 * lib folder but site-packages; files that do not compile are skipped and
 * counted) and prints each code object's co_firstlineno, co_linetable and
 * co_lines(); every code unit's line as we decode it must equal CPython's
 * (a line, None, or no range at all). Per version it prints code objects,
 * code units and mismatches; a version not installed fails the test.
 * No cap in the normal build: the full standard library of each version
 * (~70 s in all here); the sanitizer build reads the first 200 files.
 * With no interpreter at all, the oracle part is skipped (exit 77 when
 * nothing else failed). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler/python/linetable.h"
#include "tests/test.h"

#define NOLINE INT32_MIN     /* expected None */
#define NORANGE (INT32_MIN + 1) /* expected: no range holds it */

/* Our answer for byte offset off, in the same terms. */
static int32_t ours(const struct pyline *t, uint32_t off)
{
	int32_t line = 0;
	int err = pyline__line_at(t, off, &line);

	return err == -ENODATA ? NOLINE : err == -ERANGE ? NORANGE : err ? NORANGE - 1 : line;
}

static int expect(int minor, const uint8_t *tab, size_t len, int32_t first, const int32_t *want,
		  size_t nunits)
{
	struct pyline *t = pyline__decode(minor, tab, len, first);
	int bad = 0;

	if (!t)
		return -1;
	for (size_t u = 0; u < nunits; u++)
		bad += ours(t, 2 * u) != want[u] || ours(t, 2 * u + 1) != want[u];
	pyline__free(t);
	return bad;
}

static void test_310(void)
{
	/* Lines from 10: +0 over 4 bytes; no line over 2 (running stays 10);
	 * two empty pairs (+3, +2) then 2 bytes at line 15; -128 then +1 after
	 * it: line 16; a negative line is None. */
	const uint8_t tab[] = { 4, 0, 2, 0x80, 0, 3, 0, 2, 2, 0, 2, 0x80, 2, 1, 2, (uint8_t)-20 };
	const int32_t want[] = { 10, 10, NOLINE, 15, NOLINE, 16, NOLINE, NORANGE };
	const uint8_t trail[] = { 2, 1, 0, 5 };
	const int32_t want_trail[] = { 11, NORANGE };

	CHECK(expect(10, tab, sizeof(tab), 10, want, 8) == 0, "3.10: deltas, -128, empty pairs");
	CHECK(expect(10, tab, sizeof(tab), 30, (int32_t[]){ 30, 30, NOLINE, 35, NOLINE, 36, 16,
							  NORANGE },
		     8) == 0,
	      "3.10: the same from line 30 (the last range is line 16)");
	CHECK(expect(10, trail, sizeof(trail), 10, want_trail, 2) == 0,
	      "3.10: a trailing empty pair covers nothing");
	errno = 0;
	CHECK(!pyline__decode(10, tab, 3, 1) && errno == EINVAL, "3.10: an odd length is refused");
	CHECK(!pyline__decode(10, (const uint8_t[]){ 3, 0 }, 2, 1) && errno == EINVAL,
	      "3.10: an odd byte delta is refused");
}

static void test_311(void)
{
	/* From line 5: short form (code 0, 2 units) at 5; one-line +2 (code 12,
	 * 1 unit) at 7; no location (1 unit): None, running line stays 7;
	 * no-columns (code 13) +3 over 3 units: 10; long form (14) -4, end +0,
	 * cols 1, 2: line 6, 1 unit. */
	const uint8_t tab[] = {
		0x80 | (0 << 3) | 1, 0x05,	    /* short */
		0x80 | (12 << 3) | 0, 0x01, 0x02, /* one line +2 */
		0x80 | (15 << 3) | 0,		    /* none */
		0x80 | (13 << 3) | 2, 6,	    /* +3 */
		0x80 | (14 << 3) | 0, 9, 0, 2, 3, /* -4 */
	};
	const int32_t want[] = { 5, 5, 7, NOLINE, 10, 10, 10, 6, NORANGE };
	/* A varint of two chunks: +100 = svarint 200 = 8 | 64, 3. */
	const uint8_t big[] = { 0x80 | (13 << 3) | 7, 8 | 64, 3 };
	int32_t want_big[9];

	for (int i = 0; i < 8; i++)
		want_big[i] = 101;
	want_big[8] = NORANGE;
	for (int minor = 11; minor <= 13; minor++) {
		CHECK(expect(minor, tab, sizeof(tab), 5, want, 9) == 0,
		      "3.%d: every form; no location keeps the running line", minor);
		CHECK(expect(minor, big, sizeof(big), 1, want_big, 9) == 0,
		      "3.%d: a two-chunk svarint, 8 units", minor);
	}
	/* A computed line of exactly -1 is None (as co_lines() says); -2 is -2. */
	CHECK(expect(11, (const uint8_t[]){ 0x80 | (13 << 3), 3, 0x80 | (13 << 3), 3 }, 4, 0,
		     (int32_t[]){ NOLINE, -2, NORANGE }, 3) == 0,
	      "3.11: line -1 is None, line -2 is -2");

	static const struct {
		const char *what;
		uint8_t b[8];
		size_t n;
	} bad[] = {
		{ "a first byte without bit 7", { 0x05, 0x80 }, 2 },
		{ "a short form without its column byte", { 0x80 }, 1 },
		{ "a short form with two column bytes", { 0x80, 1, 2 }, 3 },
		{ "a one-line form with one column byte", { 0x80 | (10 << 3), 1 }, 2 },
		{ "no location with a payload", { 0x80 | (15 << 3), 1 }, 2 },
		{ "an unfinished svarint", { 0x80 | (13 << 3), 64 }, 2 },
		{ "an svarint of 7 chunks", { 0x80 | (13 << 3), 64, 64, 64, 64, 64, 64, 0 }, 8 },
		{ "a long form missing its columns", { 0x80 | (14 << 3), 2, 0 }, 3 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK(!pyline__decode(11, bad[i].b, bad[i].n, 1) && errno == EINVAL, "3.11: %s is refused",
		      bad[i].what);
	}
}

static void test_api(void)
{
	static uint8_t huge[PYLINE_MAX_TABLE + 2];
	struct pyline *t;
	int32_t line = 0;

	errno = 0;
	CHECK(!pyline__decode(9, huge, 2, 1) && errno == EOPNOTSUPP, "3.9 is not supported");
	CHECK(!pyline__decode(14, huge, 2, 1) && errno == EOPNOTSUPP, "3.14 is not supported");
	CHECK(!pyline__decode(11, huge, sizeof(huge), 1) && errno == EFBIG, "an oversized table: EFBIG");
	CHECK(!pyline__decode(11, NULL, 4, 1) && errno == EINVAL, "NULL bytes: EINVAL");
	t = pyline__decode(12, NULL, 0, 1);
	CHECK(t && t->n == 0 && pyline__line_at(t, 0, &line) == -ERANGE,
	      "an empty table decodes; every offset is past it");
	pyline__free(t);
	/* 3.10 at the cap: 2^19 pairs of 254 bytes each, one range. */
	for (size_t i = 0; i < PYLINE_MAX_TABLE; i += 2)
		huge[i] = 254, huge[i + 1] = 0;
	t = pyline__decode(10, huge, PYLINE_MAX_TABLE, 7);
	CHECK(t && t->n == 1 && t->r[0].end == 254u * (PYLINE_MAX_TABLE / 2) &&
		      pyline__line_at(t, t->r[0].end - 1, &line) == 0 && line == 7,
	      "3.10: a table at the cap, ranges merged");
	pyline__free(t);
	pyline__free(NULL);
}

/* ---- the oracle ---- */

struct version {
	const char *name, *python, *libdir;
	int minor;
};

static const struct version versions[] = {
	{ "3.11 (Debian)", "/usr/bin/python3.11", "/usr/lib/python3.11", 11 },
	{ "3.10.13 (pyenv)", "/root/.pyenv/versions/3.10.13/bin/python3.10",
	  "/root/.pyenv/versions/3.10.13/lib/python3.10", 10 },
	{ "3.11.7 (pyenv)", "/root/.pyenv/versions/3.11.7/bin/python3.11",
	  "/root/.pyenv/versions/3.11.7/lib/python3.11", 11 },
	{ "3.12.1 (pyenv)", "/root/.pyenv/versions/3.12.1/bin/python3.12",
	  "/root/.pyenv/versions/3.12.1/lib/python3.12", 12 },
	{ "3.13.0 (pyenv)", "/root/.pyenv/versions/3.13.0/bin/python3.13",
	  "/root/.pyenv/versions/3.13.0/lib/python3.13", 13 },
};

static char script[4096];

/* The sanitizer build's pass looks for memory errors in the decoder, not
 * for coverage (the normal pass reads every file): the first 200 files of
 * each version, a tenth of the time (compiling them is most of it). */
#if defined(__SANITIZE_ADDRESS__)
#define ORACLE_MAX_FILES 200
#else
#define ORACLE_MAX_FILES 0
#endif

/* tests/tools/pyline_dump.py from the tree root (where tests/run.sh runs
 * us), else from this binary's place (build/tests/). */
static int find_script(void)
{
	char exe[4000];
	ssize_t n;

	if (!access("tests/tools/pyline_dump.py", R_OK)) {
		snprintf(script, sizeof(script), "tests/tools/pyline_dump.py");
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(script, sizeof(script), "%.*s/../../tests/tools/pyline_dump.py",
		 (int)(strrchr(exe, '/') - exe), exe);
	return access(script, R_OK) ? -1 : 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

struct tally {
	uint64_t codes, units, mismatches, refused;
	int shown;
};

/* One "C first codelen hex triples..." line: decode and compare. */
static int one_code(const struct version *v, char *line, uint8_t **tab, size_t *cap,
		    struct tally *tl)
{
	char *save = NULL, *tok;
	long first, codelen;
	size_t len = 0;
	struct pyline *t;
	uint32_t pos = 0;

	strtok_r(line, " \n", &save); /* "C" */
	tok = strtok_r(NULL, " \n", &save);
	if (!tok)
		return -1;
	first = strtol(tok, NULL, 10);
	tok = strtok_r(NULL, " \n", &save);
	if (!tok)
		return -1;
	codelen = strtol(tok, NULL, 10);
	tok = strtok_r(NULL, " \n", &save);
	if (!tok)
		return -1;
	if (strcmp(tok, "-")) {
		size_t h = strlen(tok);

		if (h % 2)
			return -1;
		if (h / 2 > *cap) {
			uint8_t *nt = realloc(*tab, h / 2);

			if (!nt)
				return -1;
			*tab = nt;
			*cap = h / 2;
		}
		for (len = 0; len < h / 2; len++) {
			int hi = hexval(tok[2 * len]), lo = hexval(tok[2 * len + 1]);

			if (hi < 0 || lo < 0)
				return -1;
			(*tab)[len] = (uint8_t)(hi << 4 | lo);
		}
	}
	tl->codes++;
	tl->units += (uint64_t)codelen / 2;
	t = pyline__decode(v->minor, *tab, len, (int32_t)first);
	if (!t) {
		tl->refused++;
		tl->mismatches += (uint64_t)codelen / 2;
		if (tl->shown++ < 5)
			printf("  %s: a table of %zu bytes refused: %s\n", v->name, len, strerror(errno));
		return 0;
	}
	/* Walk co_lines()'s triples; units outside all of them have no range. */
	while ((tok = strtok_r(NULL, " \n", &save)) || pos < (uint32_t)codelen) {
		long s = codelen, e = codelen;
		int32_t want = NORANGE;
		char l[32];

		if (tok) {
			if (sscanf(tok, "%ld,%ld,%31s", &s, &e, l) != 3)
				return -1;
			want = !strcmp(l, "N") ? NOLINE : (int32_t)strtol(l, NULL, 10);
		}
		for (; pos < (uint32_t)s && pos < (uint32_t)codelen; pos += 2) /* a gap */
			if (ours(t, pos) != NORANGE) {
				tl->mismatches++;
				if (tl->shown++ < 5)
					printf("  %s: first %ld offset %u: no range expected, ours %d\n",
					       v->name, first, pos, ours(t, pos));
			}
		for (; pos < (uint32_t)e && pos < (uint32_t)codelen; pos += 2) {
			int32_t got = ours(t, pos);

			if (got != want || ours(t, pos + 1) != want) {
				tl->mismatches++;
				if (tl->shown++ < 5)
					printf("  %s: first %ld offset %u: CPython %d, ours %d\n", v->name,
					       first, pos, want, got);
			}
		}
		if (!tok)
			break;
	}
	pyline__free(t);
	return 0;
}

/* Returns 1 when the version ran, 0 when skipped. */
static int oracle(const struct version *v)
{
	char cmd[8192], *line = NULL;
	size_t linecap = 0, cap = 0;
	uint8_t *tab = NULL;
	struct tally tl = { 0 };
	long files = -1, skipped = -1, codes = -1;
	int major = 0, minor = 0, parse_err = 0, rc;
	FILE *p;

	if (access(v->python, X_OK)) {
		/* Every version is provided here: missing is a failure. */
		CHECK(0, "%s: %s: %s", v->name, v->python, strerror(errno));
		return 0;
	}
	if (access(v->libdir, R_OK)) {
		CHECK(0, "%s: %s: %s", v->name, v->libdir, strerror(errno));
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "'%s' -I -S '%s' '%s' %d", v->python, script, v->libdir,
		 ORACLE_MAX_FILES);
	p = popen(cmd, "r");
	if (!p) {
		CHECK(0, "%s: popen: %s", v->name, strerror(errno));
		return 1;
	}
	while (getline(&line, &linecap, p) > 0) {
		if (line[0] == 'C')
			parse_err += one_code(v, line, &tab, &cap, &tl) != 0;
		else if (line[0] == 'V')
			sscanf(line, "V %d %d", &major, &minor);
		else if (line[0] == 'E')
			sscanf(line, "E %ld %ld %ld", &files, &skipped, &codes);
	}
	rc = pclose(p);
	free(line);
	free(tab);
	CHECK(rc == 0 && major == 3 && minor == v->minor && codes == (long)tl.codes && !parse_err,
	      "%s: the dump ran (exit %d, version %d.%d, %ld files compiled, %ld skipped, %ld code "
	      "objects announced, %d lines unparsed)",
	      v->name, rc, major, minor, files, skipped, codes, parse_err);
	CHECK(tl.mismatches == 0 && tl.codes > 1000,
	      "%s: %" PRIu64 " code objects, %" PRIu64 " code units, %" PRIu64 " mismatches (%" PRIu64
	      " tables refused)",
	      v->name, tl.codes, tl.units, tl.mismatches, tl.refused);
	return 1;
}

int main(void)
{
	int ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_310();
	test_311();
	test_api();
	if (find_script()) {
		CHECK(0, "tests/tools/pyline_dump.py not found (run from the tree root)");
		return test_done();
	}
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		ran += oracle(&versions[i]);
	if (!ran && !test_fail_) {
		test_done();
		printf("SKIP: no CPython 3.10-3.13 installed for the oracle\n");
		return 77;
	}
	return test_done();
}
