/* test_pycode: naming code objects of live CPython processes
 * (sampler/python/pycode.c). For each installed interpreter (Debian's
 * python3.11, pyenv's 3.10.13, 3.11.7, 3.12.1, 3.13.0; one not installed
 * fails naming it) a script defines functions with ASCII, Latin-1,
 * UCS-2 and UCS-4 names, a method, an exec'd function with an empty file
 * name, code objects renamed "" and one of 2000 characters, prints for
 * each its address, the addresses of its co_filename and co_name (the
 * stamp, as BPF computes it, from Python's own view, not our layout's)
 * and co_lines(), then waits on stdin inside a function. The checks: the
 * names, file names, first lines and every range's line equal Python's;
 * the line of the waiting frame, from the instruction offset read out of
 * its live frame the way the BPF walk reads it, is the line it waits on;
 * a wrong stamp is -ESTALE; hits and misses are counted; a small budget
 * evicts and still names right; a freed code object whose address
 * another took is -ESTALE for the old stamp; a pid that exited is an
 * error. Plus the str decoder on synthetic bytes of every layout, and
 * forged objects in our own memory before an unreadable page: read-ahead
 * stopped short, forged table sizes and bytes, strings refused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf/python.h"
#include "sampler/python/layout.h"
#include "sampler/python/pycode.h"
#include "tests/spawn.h"
#include "tests/test.h"


/* ---- the str decoder on synthetic bytes ---- */

#define ST_COMPACT (1u << 5)
#define ST_ASCII (1u << 6)
#define ST_READY (1u << 7)

/* A str object of layout l: header, then n code points of `kind`. */
static size_t mkstr(const struct pylayout *l, uint8_t *buf, size_t cap, int64_t length,
		    uint32_t state, const uint32_t *cp, size_t n)
{
	unsigned kind = (state >> 2) & 7;
	size_t data = (size_t)(state & ST_ASCII ? l->ascii_data : l->compact_data);

	memset(buf, 0xab, cap);
	memset(buf, 0, data);
	memcpy(buf + 16, &length, 8);
	memcpy(buf + 32, &state, 4);
	for (size_t i = 0; i < n && data + (i + 1) * kind <= cap; i++) {
		if (kind == 1)
			buf[data + i] = (uint8_t)cp[i];
		else if (kind == 2) {
			uint16_t u = (uint16_t)cp[i];

			memcpy(buf + data + i * 2, &u, 2);
		} else
			memcpy(buf + data + i * 4, &cp[i], 4);
	}
	return data + n * (kind ? kind : 1);
}

static uint32_t st(const struct pylayout *l, unsigned kind, bool ascii)
{
	return kind << 2 | ST_COMPACT | (ascii ? ST_ASCII : 0) | (l->minor <= 11 ? ST_READY : 0);
}

static void str_one(const struct pylayout *l)
{
	uint8_t b[512];
	char out[256];
	struct pystr s;
	size_t len;
	int err;
	const uint32_t hello[] = { 'h', 'e', 'l', 'l', 'o' };
	const uint32_t grosse[] = { 'g', 'r', 0xf6, 0xdf, 'e' };
	const uint32_t kansu[] = { 0x95a2, 0x6570 };
	const uint32_t astral[] = { 0x20000, 0x20001 };
	const uint32_t bad2[] = { 'a', 0xd800, 'b' };
	const uint32_t bad4[] = { 0x110000, 0, 0xdfff, 0x10ffff };
	const uint32_t hi_ascii[] = { 'a', 0xe9 };
	int m = l->minor;

	len = mkstr(l, b, sizeof(b), 5, st(l, 1, true), hello, 5);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "hello") && s.bytes == 5 && s.chars == 5 && !s.cut &&
		      s.need == len && s.length == 5,
	      "3.%d: compact ASCII at %d: '%s' (need %zu) %d", m, l->ascii_data, out, s.need, err);

	len = mkstr(l, b, sizeof(b), 5, st(l, 1, false), grosse, 5);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "gr\xc3\xb6\xc3\x9f" "e") && s.bytes == 7,
	      "3.%d: UCS1 (Latin-1) at %d -> UTF-8 '%s'", m, l->compact_data, out);
	err = pystr__decode(l, b, len, 100, out, 4, &s);
	CHECK(!err && !strcmp(out, "gr") && s.cut && s.chars == 2,
	      "3.%d: cap 4: whole characters only: '%s', cut", m, out);
	err = pystr__decode(l, b, len, 3, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "gr\xc3\xb6") && s.cut && s.chars == 3 && s.length == 5,
	      "3.%d: max_chars 3: '%s', cut", m, out);

	len = mkstr(l, b, sizeof(b), 2, st(l, 2, false), kansu, 2);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "\xe9\x96\xa2\xe6\x95\xb0") && s.need == len,
	      "3.%d: UCS2 -> UTF-8 '%s'", m, out);

	len = mkstr(l, b, sizeof(b), 2, st(l, 4, false), astral, 2);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "\xf0\xa0\x80\x80\xf0\xa0\x80\x81"),
	      "3.%d: UCS4 -> UTF-8 '%s'", m, out);
	err = pystr__decode(l, b, len - 1, 100, out, sizeof(out), &s);
	CHECK(err == -EAGAIN && s.need == len, "3.%d: one byte short: -EAGAIN, need %zu", m,
	      s.need);
	err = pystr__decode(l, b, 20, 100, out, sizeof(out), &s);
	CHECK(err == -EAGAIN && s.need == (size_t)l->compact_data,
	      "3.%d: 20 bytes (no state yet): -EAGAIN, need %zu", m, s.need);

	len = mkstr(l, b, sizeof(b), 3, st(l, 2, false), bad2, 3);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "a\xef\xbf\xbd" "b"), "3.%d: lone surrogate -> U+FFFD", m);
	len = mkstr(l, b, sizeof(b), 4, st(l, 4, false), bad4, 4);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xf4\x8f\xbf\xbf"),
	      "3.%d: past U+10FFFF, NUL, surrogate -> U+FFFD; U+10FFFF kept", m);
	len = mkstr(l, b, sizeof(b), 2, st(l, 1, true), hi_ascii, 2);
	err = pystr__decode(l, b, len, 100, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "a\xef\xbf\xbd"), "3.%d: 0xe9 in an ASCII str -> U+FFFD", m);

	/* A forged length: only max_chars are asked for and decoded. */
	len = mkstr(l, b, sizeof(b), INT64_MAX, st(l, 1, true), hello, 5);
	err = pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s);
	CHECK(!err && !strcmp(out, "hello") && s.cut && s.length == INT64_MAX &&
		      s.need == (size_t)l->ascii_data + 5,
	      "3.%d: length 2^63-1: 5 characters read, cut", m);
	err = pystr__decode(l, b, sizeof(b), SIZE_MAX, out, sizeof(out), &s);
	CHECK(err == -EAGAIN && s.need > sizeof(b), "3.%d: ... without a cap: -EAGAIN (need %zu)",
	      m, s.need);
	mkstr(l, b, sizeof(b), -1, st(l, 1, true), hello, 5);
	CHECK(pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s) == -EINVAL,
	      "3.%d: negative length refused", m);

	/* Strings this reader does not take. */
	mkstr(l, b, sizeof(b), 5, st(l, 1, true) & ~ST_COMPACT, hello, 5);
	CHECK(pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s) == -EINVAL,
	      "3.%d: not compact refused", m);
	mkstr(l, b, sizeof(b), 5, st(l, 1, true) & ~ST_READY, hello, 5);
	err = pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s);
	CHECK(m <= 11 ? err == -EINVAL : err == 0,
	      "3.%d: ready bit clear: %s", m, m <= 11 ? "refused" : "fine (no such bit)");
	mkstr(l, b, sizeof(b), 5, st(l, 0, false), hello, 5);
	CHECK(pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s) == -EINVAL,
	      "3.%d: kind 0 (wchar_t) refused", m);
	mkstr(l, b, sizeof(b), 5, st(l, 3, false), hello, 5);
	CHECK(pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s) == -EINVAL,
	      "3.%d: kind 3 refused", m);
	mkstr(l, b, sizeof(b), 2, st(l, 2, true), kansu, 2);
	CHECK(pystr__decode(l, b, sizeof(b), 5, out, sizeof(out), &s) == -EINVAL,
	      "3.%d: ASCII of kind 2 refused", m);
	CHECK(pystr__decode(l, b, sizeof(b), 5, out, 0, &s) == -EINVAL, "3.%d: cap 0 refused", m);
	len = mkstr(l, b, sizeof(b), 0, st(l, 1, true), hello, 0);
	err = pystr__decode(l, b, len, 5, out, sizeof(out), &s);
	CHECK(!err && !out[0] && !s.bytes && !s.cut, "3.%d: empty str", m);
}

static void t_pystr(const char *dir)
{
	struct pylayout bad = *pylayout__get(12);
	char out[8];
	struct pystr s;
	uint8_t b[64] = { 0 };

	(void)dir;
	for (int m = 10; m <= 13; m++)
		str_one(pylayout__get(m));
	bad.minor = 9;
	CHECK(pystr__decode(&bad, b, sizeof(b), 5, out, sizeof(out), &s) == -EOPNOTSUPP &&
		      pystr__decode(NULL, b, sizeof(b), 5, out, sizeof(out), &s) == -EOPNOTSUPP,
	      "a layout of no known version (or none) refused");
}

/* ---- forged objects in our own memory ---- */

/* A page of objects laid out as CPython 3.12 would, followed by a page
 * that cannot be read: objects that end at the page's end make every
 * read-ahead stop short there. */
struct forge {
	uint8_t *page;
	size_t psz;
	const struct pylayout *l;
	uint64_t code, file, name, tab;
	uint64_t str_type, bytes_type;
};

static void put_str(uint8_t *at, uint64_t type, int64_t length, uint32_t state, const char *txt)
{
	size_t n = strlen(txt);

	memset(at, 0, 40);
	memcpy(at + 8, &type, 8);
	memcpy(at + 16, &length, 8);
	memcpy(at + 32, &state, 4);
	memcpy(at + 40, txt, n); /* 3.12: ASCII data after PyASCIIObject */
}

static void put_bytes(uint8_t *at, uint64_t type, int64_t size, const uint8_t *b, size_t n)
{
	memset(at, 0, 32);
	memcpy(at + 8, &type, 8);
	memcpy(at + 16, &size, 8);
	memcpy(at + 32, b, n);
}

/* 3.12 table: code 13 (line delta, no columns) entries of 1 and 2 code
 * units: lines first, first + 1. */
static const uint8_t tab312[] = { 0xe8, 0x00, 0xe9, 0x02 };
#define ASCII_STATE (1u << 2 | 1u << 5 | 1u << 6)

/* The code object at the page's start naming file, name and table, which
 * the caller places; returns its stamp. */
static uint32_t put_code(struct forge *f, int32_t first)
{
	uint8_t *co = f->page;

	memset(co, 0, 256);
	memcpy(co + f->l->co_filename, &f->file, 8);
	memcpy(co + f->l->co_name, &f->name, 8);
	memcpy(co + f->l->co_qualname, &f->name, 8);
	memcpy(co + f->l->co_linetable, &f->tab, 8);
	memcpy(co + f->l->co_firstlineno, &first, 4);
	return py_stamp(f->file, f->name, first);
}

/* Lays out the good case: file name at 256, the name and the table each
 * ending exactly at the page's end. */
static uint32_t forge_good(struct forge *f)
{
	uint8_t *end = f->page + f->psz;

	f->file = (uint64_t)(uintptr_t)(f->page + 256);
	put_str(f->page + 256, f->str_type, 13, ASCII_STATE, "/srv/app/x.py");
	f->tab = (uint64_t)(uintptr_t)(end - 32 - sizeof(tab312) - 64);
	put_bytes(end - 32 - sizeof(tab312) - 64, f->bytes_type, sizeof(tab312), tab312,
		  sizeof(tab312));
	f->name = (uint64_t)(uintptr_t)(end - 40 - 7);
	put_str(end - 40 - 7, f->str_type, 7, ASCII_STATE, "handler");
	return put_code(f, 7);
}

static void t_forged(const char *dir)
{
	struct forge f = { .l = pylayout__get(12), .str_type = 0x1111000, .bytes_type = 0x2222000 };
	struct pycodes *c = pycodes__new(0);
	struct pycodes_stats s;
	const struct pycode *pc = NULL;
	pid_t me = getpid();
	uint32_t stamp;
	int32_t line = 0;
	uint8_t *end;
	int err;

	(void)dir;
	f.psz = (size_t)sysconf(_SC_PAGESIZE);
	f.page = mmap(NULL, 2 * f.psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f.page == MAP_FAILED || mprotect(f.page + f.psz, f.psz, PROT_NONE) || !c) {
		CHECK(0, "forged: mmap: %s", strerror(errno));
		pycodes__free(c);
		return;
	}
	end = f.page + f.psz;

	stamp = forge_good(&f);
	err = pycodes__get(c, me, f.l, f.code = (uint64_t)(uintptr_t)f.page, stamp, &pc);
	CHECK(!err && !strcmp(pc->qualname, "handler") && !strcmp(pc->filename, "/srv/app/x.py") &&
		      pc->firstlineno == 7 && pc->lines,
	      "forged: a name and a table that end where the readable memory ends (%s)",
	      strerror(-err));
	CHECK(pc && !pycode__line(pc, 0, &line) && line == 7 && !pycode__line(pc, 2, &line) &&
		      line == 8 && !pycode__line(pc, 5, &line) && line == 8 &&
		      pycode__line(pc, 6, &line) == -ERANGE && line == 7,
	      "forged: lines 7, 8, then past the table");

	/* Forged table sizes and bytes: named, without lines. */
	put_bytes((uint8_t *)(uintptr_t)f.tab, f.bytes_type, INT64_C(1) << 40, tab312,
		  sizeof(tab312));
	pycodes__forget(c, me);
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(!err && !pc->lines && s.table_big == 1 && pycode__line(pc, 0, &line) == -ENOENT &&
		      line == 7,
	      "forged: a table of 2^40 bytes: not read, no lines (%s)", strerror(-err));
	put_bytes((uint8_t *)(uintptr_t)f.tab, f.bytes_type, PYLINE_MAX_TABLE, tab312,
		  sizeof(tab312));
	pycodes__forget(c, me);
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(!err && !pc->lines && s.table_bad == 1,
	      "forged: a table of PYLINE_MAX_TABLE bytes past the readable memory: no lines");
	put_bytes((uint8_t *)(uintptr_t)f.tab, f.bytes_type, -5, tab312, sizeof(tab312));
	pycodes__forget(c, me);
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(!err && !pc->lines && s.table_bad == 2, "forged: a table of size -5: no lines");
	put_bytes((uint8_t *)(uintptr_t)f.tab, f.bytes_type, 3, (const uint8_t *)"\x01\x02\x03", 3);
	pycodes__forget(c, me);
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(!err && !pc->lines && s.table_bad == 3, "forged: bytes that are no table: no lines");

	/* Names the reader refuses. */
	stamp = forge_good(&f);
	put_str((uint8_t *)(uintptr_t)f.name, f.str_type, 7, ASCII_STATE & ~(1u << 5), "handler");
	pycodes__forget(c, me);
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(err == -EBADMSG && !pc && s.err_string == 1, "forged: a name not compact: %s",
	      strerror(-err));
	put_str((uint8_t *)(uintptr_t)f.name, f.str_type + 8, 7, ASCII_STATE, "handler");
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(err == -EBADMSG && s.err_string == 2, "forged: a name of another type: %s",
	      strerror(-err));
	put_str((uint8_t *)(uintptr_t)f.name, f.str_type, INT64_C(1) << 40, ASCII_STATE, "handler");
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(err == -EFAULT && s.err_read == 1,
	      "forged: a name of 2^40 characters at the page's end: only 1024 tried, %s",
	      strerror(-err));
	/* ... and with room after it: its first 1024 characters. */
	f.name = (uint64_t)(uintptr_t)(f.page + 1024);
	put_str(f.page + 1024, f.str_type, INT64_C(1) << 40, ASCII_STATE, "");
	memset(f.page + 1024 + 40, 'n', PYCODE_NAME_CHARS);
	stamp = put_code(&f, 7);
	err = pycodes__get(c, me, f.l, f.code, stamp, &pc);
	CHECK(!err && strlen(pc->qualname) == PYCODE_NAME_CHARS && (pc->flags & PYCODE_NAME_CUT),
	      "forged: ... with room: its first %d characters, cut (%s)", PYCODE_NAME_CHARS,
	      strerror(-err));

	/* A code object whose fields lie past the readable memory. */
	stamp = forge_good(&f);
	memmove(end - 100, f.page, 100);
	err = pycodes__get(c, me, f.l, (uint64_t)(uintptr_t)(end - 100), stamp, &pc);
	pycodes__stats(c, &s);
	CHECK(err == -EFAULT && s.err_read == 2, "forged: a code object cut by the page's end: %s",
	      strerror(-err));
	pycodes__stats(c, &s);
	CHECK(s.stale == 0 && s.misses == 10 && s.hits == 0, "forged: %" PRIu64 " misses, no hits",
	      s.misses);
	munmap(f.page, 2 * f.psz);
	pycodes__free(c);
}

/* ---- live interpreters ---- */

static const char script[] =
	"import sys\n"
	"sys.stdout.reconfigure(encoding='utf-8')\n"
	"\n"
	"def plain(a, b):\n"
	"    c = a + b\n"
	"    for i in range(3):\n"
	"        c += i\n"
	"    return c\n"
	"\n"
	"def gr\xc3\xb6\xc3\x9f" "e(x):\n"
	"    return x * 2\n"
	"\n"
	"def \xe9\x96\xa2\xe6\x95\xb0():\n"
	"    return 1\n"
	"\n"
	"def \xf0\xa0\x80\x80\xf0\xa0\x80\x81():\n"
	"    return 2\n"
	"\n"
	"class Klass:\n"
	"    def method(self):\n"
	"        y = 1\n"
	"        if y:\n"
	"            y += 1\n"
	"        return y\n"
	"\n"
	"def renamed(co, name):\n"
	"    if sys.version_info >= (3, 11):\n"
	"        return co.replace(co_name=name, co_qualname=name)\n"
	"    return co.replace(co_name=name)\n"
	"\n"
	"def dump(tag, co):\n"
	"    qn = co.co_qualname if sys.version_info >= (3, 11) else co.co_name\n"
	"    ln = ' '.join('%d:%d:%s' % (s, e, 'N' if l is None else l) for s, e, l in "
	"co.co_lines())\n"
	"    print('CODE %s %d %d %d %d' % (tag, id(co), id(co.co_filename), id(co.co_name), "
	"co.co_firstlineno))\n"
	"    print('QN ' + qn)\n"
	"    print('FN ' + co.co_filename)\n"
	"    print('LN ' + ln, flush=True)\n"
	"\n"
	"def waiter():\n"
	"    fr = sys._getframe()\n"
	"    print('FRAME %d %d %d' % (id(fr), id(fr.f_code), fr.f_lineno + 2))\n"
	"    print('READY', flush=True)\n"
	"    return sys.stdin.readline()\n"
	"\n"
	"ns = {}\n"
	"exec(compile('def anon(a):\\n    return a + 3\\n', '', 'exec'), ns)\n"
	"ns2 = {}\n"
	"exec('def ' + 'x' * 2000 + '():\\n    return 4\\n', ns2)\n"
	"# A line table longer than what the first read brings.\n"
	"exec('def big(n):\\n' + ''.join('    n += %d\\n' % i for i in range(400)) + "
	"'    return n\\n', ns2)\n"
	"empty = renamed(plain.__code__, '')\n"
	"# Not in any co_consts: its only reference is this name.\n"
	"victim = renamed(plain.__code__, 'victim')\n"
	"\n"
	"def main():\n"
	"    dump('plain', plain.__code__)\n"
	"    dump('grosse', gr\xc3\xb6\xc3\x9f" "e.__code__)\n"
	"    dump('kansu', \xe9\x96\xa2\xe6\x95\xb0.__code__)\n"
	"    dump('astral', \xf0\xa0\x80\x80\xf0\xa0\x80\x81.__code__)\n"
	"    dump('method', Klass.method.__code__)\n"
	"    dump('anon', ns['anon'].__code__)\n"
	"    dump('long', ns2['x' * 2000].__code__)\n"
	"    dump('big', ns2['big'].__code__)\n"
	"    dump('empty', empty)\n"
	"    dump('victim', victim)\n"
	"    dump('waiter', waiter.__code__)\n"
	"main()\n"
	"if waiter().strip() == 'reuse':\n"
	"    a = id(victim)\n"
	"    c2 = renamed(victim, 'victim2')\n"
	"    del victim\n"
	"    keep = []\n"
	"    for i in range(10000):\n"
	"        c = c2.replace(co_firstlineno=1000 + i)\n"
	"        if id(c) == a:\n"
	"            dump('reused', c)\n"
	"            break\n"
	"        keep.append(c)\n"
	"        del c\n"
	"    else:\n"
	"        print('NOREUSE %d' % len(keep), flush=True)\n"
	"    waiter()\n";

struct interp {
	const char *name, *path;
	int minor;
};

#define MAX_CODES 16

struct code {
	char tag[16];
	uint64_t addr, fn, nm;
	int32_t first;
	uint32_t stamp;
	char *qn, *file; /* as Python printed them */
	size_t nr;
	struct range {
		uint32_t s, e;
		int32_t line; /* PYLINE_NONE for None */
	} *r; /* co_lines(): 3.11 yields one range per instruction */
};

struct child {
	pid_t pid;
	FILE *out;   /* its stdout */
	int in;	     /* its stdin */
	size_t n;
	struct code codes[MAX_CODES];
	uint64_t frame, frame_code;
	int32_t frame_line;
	bool noreuse;
};

static void code_fini(struct code *c)
{
	free(c->qn);
	free(c->file);
	free(c->r);
	c->qn = c->file = NULL;
	c->r = NULL;
}

static struct code *code_by_tag(struct child *ch, const char *tag)
{
	for (size_t i = 0; i < ch->n; i++)
		if (!strcmp(ch->codes[i].tag, tag))
			return &ch->codes[i];
	return NULL;
}

/* Reads the child's lines up to READY (or NOREUSE / its end): 0, or -1. */
static int parse(struct child *ch)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	struct code *c = NULL;
	int ret = -1;

	while ((n = getline(&line, &cap, ch->out)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = 0;
		if (!strncmp(line, "CODE ", 5) && ch->n < MAX_CODES) {
			c = &ch->codes[ch->n++];
			memset(c, 0, sizeof(*c));
			if (sscanf(line + 5, "%15s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd32,
				   c->tag, &c->addr, &c->fn, &c->nm, &c->first) != 5)
				break;
			c->stamp = py_stamp(c->fn, c->nm, c->first);
		} else if (!strncmp(line, "QN ", 3) && c) {
			c->qn = strdup(line + 3);
		} else if (!strncmp(line, "FN ", 3) && c) {
			c->file = strdup(line + 3);
		} else if (!strncmp(line, "LN ", 3) && c) {
			char *p = line + 3;

			while (*p) {
				char *end;
				unsigned s = (unsigned)strtoul(p, &end, 10), e;
				struct range *r = realloc(c->r, (c->nr + 1) * sizeof(*r));

				if (!r)
					break;
				c->r = r;
				if (*end != ':')
					break;
				e = (unsigned)strtoul(end + 1, &end, 10);
				if (*end != ':')
					break;
				c->r[c->nr].s = s;
				c->r[c->nr].e = e;
				c->r[c->nr].line =
					end[1] == 'N' ? PYLINE_NONE : (int32_t)strtol(end + 1, NULL, 10);
				c->nr++;
				p = strchr(end, ' ');
				if (!p)
					break;
				p++;
			}
		} else if (!strncmp(line, "FRAME ", 6)) {
			sscanf(line + 6, "%" SCNu64 " %" SCNu64 " %" SCNd32, &ch->frame,
			       &ch->frame_code, &ch->frame_line);
		} else if (!strcmp(line, "READY")) {
			ret = 0;
			break;
		} else if (!strncmp(line, "NOREUSE", 7)) {
			printf("     %s\n", line);
			ch->noreuse = true;
		}
	}
	free(line);
	return ret;
}

static int spawn(const char *python, const char *script_path, struct child *ch)
{
	char *argv[] = { (char *)python, "-I", "-S", (char *)script_path, NULL };
	int out = -1, err;

	memset(ch, 0, sizeof(*ch));
	err = test_spawn(python, argv, NULL, &ch->pid, &ch->in, &out);
	if (err)
		return err;
	ch->out = fdopen(out, "r");
	return ch->out ? 0 : -errno;
}

static int reap(struct child *ch)
{
	int status = -1;

	if (ch->in >= 0)
		close(ch->in);
	ch->in = -1;
	if (ch->out)
		fclose(ch->out);
	ch->out = NULL;
	if (ch->pid > 0)
		waitpid(ch->pid, &status, 0);
	for (size_t i = 0; i < ch->n; i++)
		code_fini(&ch->codes[i]);
	return status;
}

static int peek(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* Python's qualname as we should name it: "" is the stand-in, and at most
 * PYCODE_NAME_CHARS code points (UTF-8 lead bytes counted). */
static void expect_name(const char *py, size_t max_chars, char *out, size_t cap)
{
	size_t chars = 0, i;

	if (!py[0]) {
		snprintf(out, cap, "%s", PYCODE_UNNAMED);
		return;
	}
	for (i = 0; py[i] && i + 1 < cap; i++) {
		if (((uint8_t)py[i] & 0xc0) != 0x80 && chars++ == max_chars)
			break;
		out[i] = py[i];
	}
	out[i] = 0;
}

/* Checks pc against what Python printed for code c. */
static void check_code(const struct interp *in, const struct code *c, const struct pycode *pc)
{
	static char want[4 * PYCODE_FILE_CHARS + 8];
	int bad = 0;

	expect_name(c->qn ? c->qn : "?", PYCODE_NAME_CHARS, want, sizeof(want));
	CHECK(!strcmp(pc->qualname, want), "%s %s: qualname '%.60s%s' (%zu B)", in->name, c->tag,
	      pc->qualname, strlen(pc->qualname) > 60 ? "..." : "", strlen(pc->qualname));
	expect_name(c->file ? c->file : "?", PYCODE_FILE_CHARS, want, sizeof(want));
	CHECK(!strcmp(pc->filename, want), "%s %s: filename '%s'", in->name, c->tag, pc->filename);
	CHECK(pc->firstlineno == c->first && pc->stamp == c->stamp && pc->code == c->addr,
	      "%s %s: first line %d, stamp %#x", in->name, c->tag, pc->firstlineno, pc->stamp);
	CHECK(pc->lines != NULL, "%s %s: line table read (%u ranges)", in->name, c->tag,
	      pc->lines ? pc->lines->n : 0);
	if (!pc->lines || !c->nr)
		return;
	/* Every co_lines() range, at its first, second and last byte. */
	for (size_t i = 0; i < c->nr; i++) {
		uint32_t probe[] = { c->r[i].s, c->r[i].s + 1, c->r[i].e - 1 };

		if (c->r[i].e <= c->r[i].s)
			continue;
		for (int k = 0; k < 3; k++) {
			int32_t line = 0;
			int err = pycode__line(pc, probe[k], &line);

			if (c->r[i].line == PYLINE_NONE ? err != -ENODATA || line != pc->firstlineno
							: err || line != c->r[i].line) {
				if (!bad++)
					printf("     %s %s: offset %u: line %d (%s), Python says %d\n",
					       in->name, c->tag, probe[k], line, strerror(-err),
					       c->r[i].line);
			}
		}
	}
	CHECK(!bad, "%s %s: the line at every co_lines() range (%zu ranges, %d wrong)", in->name,
	      c->tag, c->nr, bad);
	int32_t line = 0;
	int err = pycode__line(pc, c->r[c->nr - 1].e, &line);
	CHECK(err == -ERANGE && line == c->first, "%s %s: past the last range: -ERANGE, line %d",
	      in->name, c->tag, line);
	err = pycode__line(pc, PY_INSTR_NONE, &line);
	CHECK(err == -ENOENT && line == c->first, "%s %s: PY_INSTR_NONE: -ENOENT, first line",
	      in->name, c->tag);
}

/* Waits until the child sleeps in read(2) of its stdin: its frame's
 * instruction is then the call it waits in. */
static bool blocked_in_read(pid_t pid)
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		bool yes = false;

		if (f) {
			yes = fgets(buf, sizeof(buf), f) && atol(buf) == SYS_read &&
			      buf[0] != '-' && strchr(buf, ' ');
			fclose(f);
		}
		if (yes)
			return true;
		usleep(10000);
	}
	return false;
}

/* The waiting frame's instruction offset, read as the BPF walk reads it:
 * 3.10 f_lasti * 2; 3.11+ (instruction pointer - first code unit). */
static int frame_instr(const struct child *ch, const struct pylayout *l, uint32_t *instr,
		       uint64_t *code)
{
	uint64_t iframe, ptr;
	int32_t lasti;

	if (l->minor == 10) {
		if (peek(ch->pid, ch->frame + l->fr_instr, &lasti, 4) ||
		    peek(ch->pid, ch->frame + l->fr_code, code, 8))
			return -1;
		*instr = (uint32_t)lasti * 2;
		return 0;
	}
	/* PyFrameObject.f_frame (3.11-3.13): after PyObject_HEAD and f_back. */
	if (peek(ch->pid, ch->frame + 24, &iframe, 8) ||
	    peek(ch->pid, iframe + l->fr_code, code, 8) ||
	    peek(ch->pid, iframe + l->fr_instr, &ptr, 8))
		return -1;
	*instr = (uint32_t)(ptr - (*code + l->co_code_adaptive));
	return 0;
}

static void live(const struct interp *in, const char *dir)
{
	const struct pylayout *l = pylayout__get(in->minor);
	struct pycodes *c = NULL, *small = NULL;
	struct pycodes_stats s;
	const struct pycode *pc;
	struct child ch = { .pid = -1, .in = -1 };
	char path[256];
	FILE *f;
	int err, fails;
	size_t n;

	if (access(in->path, X_OK)) {
		/* deps.sh and the machine provide every version: a missing one
		 * is a failure, never a silent pass. */
		CHECK(0, "%s: %s: %s", in->name, in->path, strerror(errno));
		return;
	}
	/* A file name that is not ASCII either. */
	snprintf(path, sizeof(path), "%s/pr\xc3\xbc" "f_%s.py", dir, in->name);
	f = fopen(path, "w");
	if (!f || fputs(script, f) < 0 || fclose(f)) {
		CHECK(0, "%s: write %s: %s", in->name, path, strerror(errno));
		return;
	}
	err = spawn(in->path, path, &ch);
	CHECK(!err, "%s: started %s (pid %d)", in->name, in->path, ch.pid);
	if (err)
		return;
	err = parse(&ch);
	CHECK(!err && ch.n == 11 && ch.frame, "%s: the script printed %zu code objects and its frame",
	      in->name, ch.n);
	c = pycodes__new(0);
	if (err || ch.n != 11 || !c)
		goto out;

	/* Every object, read. */
	for (size_t i = 0; i < ch.n; i++) {
		struct code *k = &ch.codes[i];

		err = pycodes__get(c, ch.pid, l, k->addr, k->stamp, &pc);
		CHECK(!err && pc, "%s %s: read code object %#" PRIx64 " (%s)", in->name, k->tag,
		      k->addr, strerror(-err));
		if (!err)
			check_code(in, k, pc);
	}
	pycodes__stats(c, &s);
	CHECK(s.misses == ch.n && s.hits == 0 && s.cache.entries == ch.n && s.cut == 1 &&
		      !s.err_read && !s.err_string && !s.table_bad && !s.table_big,
	      "%s: %" PRIu64 " misses, %zu entries, %zu B, 1 name cut, no errors", in->name,
	      s.misses, s.cache.entries, s.cache.bytes);
	pc = NULL;
	pycodes__get(c, ch.pid, l, code_by_tag(&ch, "long")->addr, code_by_tag(&ch, "long")->stamp,
		     &pc);
	CHECK(pc && (pc->flags & PYCODE_NAME_CUT) && strlen(pc->qualname) == PYCODE_NAME_CHARS,
	      "%s: the 2000-character name is cut to %d", in->name, PYCODE_NAME_CHARS);
	pycodes__get(c, ch.pid, l, code_by_tag(&ch, "empty")->addr,
		     code_by_tag(&ch, "empty")->stamp, &pc);
	CHECK(pc && (pc->flags & PYCODE_NAME_EMPTY) && !strcmp(pc->qualname, PYCODE_UNNAMED),
	      "%s: the empty name reads '%s'", in->name, pc ? pc->qualname : "?");
	pycodes__get(c, ch.pid, l, code_by_tag(&ch, "anon")->addr, code_by_tag(&ch, "anon")->stamp,
		     &pc);
	CHECK(pc && (pc->flags & PYCODE_FILE_EMPTY) && !strcmp(pc->filename, PYCODE_UNNAMED),
	      "%s: the empty file name reads '%s'", in->name, pc ? pc->filename : "?");

	/* Again: all from the cache, entry bit or not. */
	fails = 0;
	for (size_t i = 0; i < ch.n; i++) {
		struct code *k = &ch.codes[i];

		err = pycodes__get(c, ch.pid, l, k->addr | (i & 1 ? PY_FRAME_ENTRY : 0), k->stamp, &pc);
		fails += err || pc->code != k->addr;
	}
	pycodes__stats(c, &s);
	CHECK(!fails && s.hits == ch.n + 3 && s.misses == ch.n,
	      "%s: a second round hits the cache (%" PRIu64 " hits, %" PRIu64 " misses)", in->name,
	      s.hits, s.misses);

	/* A stamp that is not the object's: stale, not the name. */
	struct code *plain = code_by_tag(&ch, "plain");
	err = pycodes__get(c, ch.pid, l, plain->addr, plain->stamp ^ 1, &pc);
	pycodes__stats(c, &s);
	CHECK(err == -ESTALE && !pc && s.stale == 1, "%s: a wrong stamp: -ESTALE (%s)", in->name,
	      strerror(-err));
	err = pycodes__get(c, ch.pid, l, plain->addr, plain->stamp, &pc);
	CHECK(!err && pc && !strcmp(pc->qualname, "plain"),
	      "%s: ... and the right one still names it", in->name);
	err = pycodes__get(c, ch.pid, l, 0x1000, 0, &pc);
	pycodes__stats(c, &s);
	CHECK(err == -EFAULT && s.err_read == 1, "%s: an unmapped address: -EFAULT (%s)", in->name,
	      strerror(-err));
	CHECK(pycodes__get(c, ch.pid, NULL, plain->addr, 0, &pc) == -EINVAL &&
		      pycodes__get(c, 0, l, plain->addr, 0, &pc) == -EINVAL &&
		      pycodes__get(c, ch.pid, l, 1, 0, &pc) == -EINVAL,
	      "%s: no layout, pid 0, address 0 (bit 0 only): -EINVAL", in->name);

	/* The waiting frame's line, from its live instruction offset. */
	{
		uint32_t instr = 0;
		uint64_t code = 0;
		int32_t line = 0;
		struct code *w = code_by_tag(&ch, "waiter");
		bool blocked = blocked_in_read(ch.pid);

		CHECK(blocked, "%s: the script waits in read(2)", in->name);
		err = frame_instr(&ch, l, &instr, &code);
		CHECK(!err && code == w->addr && code == ch.frame_code,
		      "%s: its frame runs waiter's code %#" PRIx64 ", instruction at byte %u",
		      in->name, code, instr);
		err = pycodes__get(c, ch.pid, l, code, w->stamp, &pc);
		if (!err)
			err = pycode__line(pc, instr, &line);
		CHECK(!err && line == ch.frame_line,
		      "%s: byte %u of waiter is line %d (the readline call: %d) %s", in->name, instr,
		      line, ch.frame_line, strerror(-err));
	}

	/* A budget of 2 KiB: the oldest go, names stay right. */
	small = pycodes__new(2048);
	fails = 0;
	for (int round = 0; round < 2 && small; round++)
		for (size_t i = 0; i < ch.n; i++) {
			struct code *k = &ch.codes[i];

			err = pycodes__get(small, ch.pid, l, k->addr, k->stamp, &pc);
			pycodes__stats(small, &s);
			fails += err || pc->code != k->addr || pc->firstlineno != k->first ||
				 (s.cache.bytes > 2048 && s.cache.entries > 1);
		}
	if (small)
		pycodes__stats(small, &s);
	CHECK(small && !fails && s.cache.evicted > 0 && s.cache.bytes <= 2048 + 3000,
	      "%s: 2 KiB budget: %" PRIu64 " evicted, %zu entries, %zu B now", in->name, s.cache.evicted,
	      s.cache.entries, s.cache.bytes);

	/* A code object freed and its address taken by another. */
	{
		struct code *v = code_by_tag(&ch, "victim"), *r;
		uint64_t va = v->addr;
		uint32_t vstamp = v->stamp;

		err = pycodes__get(c, ch.pid, l, va, vstamp, &pc);
		CHECK(!err && !strcmp(pc->qualname, "victim"), "%s: victim named before", in->name);
		n = ch.n;
		CHECK(write(ch.in, "reuse\n", 6) == 6 && !parse(&ch), "%s: asked to reuse", in->name);
		r = code_by_tag(&ch, "reused");
		if (ch.noreuse || !r) {
			printf("SKIP %s: reuse: no new code object took the freed address\n",
			       in->name);
		} else {
			CHECK(r->addr == va && ch.n == n + 1, "%s: a new code object at %#" PRIx64,
			      in->name, va);
			err = pycodes__get(c, ch.pid, l, va, vstamp, &pc);
			CHECK(!err && !strcmp(pc->qualname, "victim"),
			      "%s: a sample stamped before the reuse: the cached old name", in->name);
			pycodes__forget(c, ch.pid);
			pycodes__stats(c, &s);
			CHECK(s.cache.entries == 0 && s.cache.bytes == 0, "%s: forget(pid) drops all (%zu B left)",
			      in->name, s.cache.bytes);
			err = pycodes__get(c, ch.pid, l, va, vstamp, &pc);
			CHECK(err == -ESTALE && !pc,
			      "%s: ... not cached: -ESTALE, neither name (%s)", in->name,
			      strerror(-err));
			err = pycodes__get(c, ch.pid, l, va, r->stamp, &pc);
			CHECK(!err && !strcmp(pc->qualname, "victim2") && pc->firstlineno == r->first,
			      "%s: the new stamp: '%s' line %d", in->name, pc ? pc->qualname : "?",
			      pc ? pc->firstlineno : 0);
		}
	}

	/* The process ends: an error, no crash. */
	{
		pid_t pid = ch.pid;

		close(ch.in);
		ch.in = -1;
		err = reap(&ch);
		ch.pid = -1;
		CHECK(WIFEXITED(err) && WEXITSTATUS(err) == 0, "%s: the script exited (%#x)",
		      in->name, err);
		pycodes__forget(c, pid);
		err = pycodes__get(c, pid, l, plain->addr, plain->stamp, &pc);
		CHECK(err == -ESRCH && !pc, "%s: a pid that exited: %s", in->name, strerror(-err));
	}
out:
	pycodes__free(small);
	pycodes__free(c);
	if (ch.pid > 0) {
		kill(ch.pid, SIGKILL);
		reap(&ch);
	}
}

static const struct interp interps[] = {
	{ "debian311", "/usr/bin/python3.11", 11 },
	{ "py310", "/root/.pyenv/versions/3.10.13/bin/python3.10", 10 },
	{ "py311", "/root/.pyenv/versions/3.11.7/bin/python3.11", 11 },
	{ "py312", "/root/.pyenv/versions/3.12.1/bin/python3.12", 12 },
	{ "py313", "/root/.pyenv/versions/3.13.0/bin/python3.13", 13 },
};

static void t_debian311(const char *dir) { live(&interps[0], dir); }
static void t_py310(const char *dir) { live(&interps[1], dir); }
static void t_py311(const char *dir) { live(&interps[2], dir); }
static void t_py312(const char *dir) { live(&interps[3], dir); }
static void t_py313(const char *dir) { live(&interps[4], dir); }

int main(int argc, char **argv)
{
	static const struct test_scenario t[] = {
		{ "pystr", t_pystr },	      { "forged", t_forged },	      { "debian311", t_debian311 }, { "py310", t_py310 },
		{ "py311", t_py311 },	      { "py312", t_py312 },	    { "py313", t_py313 },
	};

	/* A script that never prints READY must not hang the suite. */
	alarm(120);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return test_scenarios_main(t, sizeof(t) / sizeof(t[0]), argc, argv);
}
