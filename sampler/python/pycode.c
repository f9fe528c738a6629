/*
 * pycode.c - naming another process's code objects (see pycode.h).
 *
 * Why user space reads the names, and when. BPF cannot afford to copy
 * strings per frame, and most samples land in code already seen, so BPF
 * sends only (address, stamp) and we read an object the first time a
 * (pid, address, stamp) shows up, then answer from the cache. The read
 * happens a batch later than the sample: by then the object may be gone
 * and its memory reused by another code object (a reloaded module, an
 * exec'd string, a lambda made per call). The stamp, computed by BPF from
 * what it read and again here from what we read, tells the two apart; on
 * a mismatch we say -ESTALE rather than put either name on the sample.
 * A cached entry is never dropped because a later sample's stamp differs:
 * samples queued before the reuse still carry its stamp and its name is
 * theirs. Two limits remain: a 32-bit stamp collides once in 2^32 reuses,
 * and an object freed but not yet overwritten (and strings freed with it)
 * reads as it was; its name is then the sampled one, or a string we
 * refuse, not someone else's.
 *
 * The reads. One process_vm_readv of the PyCodeObject's first bytes
 * (every field we need lies in its first 144), then one call with three
 * remote ranges: the first bytes of the file name, of the name and of the
 * line table's bytes object, each long enough that a common name or a
 * small table needs no more. Only what does not fit is read again, at its
 * exact size, capped before the read (a forged length costs at most the
 * cap). process_vm_readv may stop short where a range crosses into an
 * unmapped page; a batch that stops short is read again range by range,
 * so one bad pointer does not take the others with it.
 *
 * The strings. pystr__decode is the one place that interprets a str's
 * header, pure over bytes so that a fuzzer drives it. PyASCIIObject
 * keeps length at +16 and a state word at +32 in 3.10-3.13; its bits are
 * the same in all four (Include/cpython/unicodeobject.h: interned:2,
 * kind:3, compact:1, ascii:1, then 3.10/3.11 ready:1 and 3.12+
 * statically_allocated:1). Only compact strings are read (one block:
 * header then data, what CPython makes for every identifier and path);
 * legacy strings of 3.10/3.11 (not compact, wchar_t kind, not ready)
 * would need a second pointer chased and are refused. Output is always
 * valid UTF-8, because every consumer (pprof, the FUSE tree, JSON)
 * assumes it and a forged byte must not reach them.
 *
 * The cache is the runtimes' one (sampler/runtime/rtcache.h): an entry
 * is one block (struct and strings) and its line table, both counted
 * against the budget. The entry just made is never evicted, so a single
 * entry larger than the budget is still returned (and goes at the next
 * miss).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf/python.h"
#include "bpf/runtime.h"
#include "sampler/python/pycode.h"
#include "sampler/runtime/rtcache.h"
#include "store/util/util.h"

/* PyASCIIObject, 3.10-3.13 (LP64). */
#define STR_LENGTH 16
#define STR_TYPE 8
#define STR_STATE 32
#define ST_KIND(s) (((s) >> 2) & 7u)
#define ST_COMPACT (1u << 5)
#define ST_ASCII (1u << 6)
#define ST_READY (1u << 7) /* 3.10, 3.11 only */

/* PyBytesObject: ob_size. */
#define BYTES_SIZE 16

/* The code object's bytes read at first: all a layout row names. */
#define CODE_HDR_MAX 256
/* Bytes read ahead of a str's or table's header in the batched read: a
 * path of ~140 ASCII characters or a table of ~250 bytes needs no more. */
#define STR_PREFIX 192
#define TABLE_PREFIX 288
/* A str's object at most: the longest header, 4 bytes per code point. */
#define STR_MAX_BYTES (128 + 4 * (size_t)PYCODE_FILE_CHARS)

struct entry {
	struct rtcache_ent ce; /* key: the object's address */
	struct pycode pc;      /* what pycodes__get hands out */
	int minor;
	char strs[]; /* qualname, NUL, filename, NUL */
};

static void entry_release(struct rtcache_ent *ce);

struct pycodes {
	struct rtview v; /* first: the cache it reads from */
	struct pycodes_stats st;
	/* Reused by every miss: a str read again at its full size, and
	 * the decoded name and file name before they are copied into the
	 * entry (too big for the stack of the sampler's thread). */
	uint8_t obj[STR_MAX_BYTES];
	char name[4 * PYCODE_NAME_CHARS + 1];
	char file[4 * PYCODE_FILE_CHARS + 1];
};

/* ---- strings ---- */

static size_t utf8_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

static bool layout_ok(const struct pylayout *l)
{
	return l && l->minor >= 10 && l->minor <= 13 && l->ascii_data >= STR_STATE + 4 &&
	       l->compact_data >= l->ascii_data && l->bytes_sval >= BYTES_SIZE + 8;
}

int pystr__decode(const struct pylayout *l, const uint8_t *obj, size_t len, size_t max_chars,
		  char *out, size_t cap, struct pystr *s)
{
	int64_t length;
	uint32_t state, kind;
	size_t data, n, i;
	bool ascii;

	memset(s, 0, sizeof(*s));
	if (!layout_ok(l))
		return -EOPNOTSUPP;
	if (!cap)
		return -EINVAL;
	out[0] = 0;
	if (len < STR_STATE + 4) {
		/* Which header it has is not known yet: ask for the longer. */
		s->need = (size_t)l->compact_data;
		return -EAGAIN;
	}
	memcpy(&length, obj + STR_LENGTH, sizeof(length));
	memcpy(&state, obj + STR_STATE, sizeof(state));
	kind = ST_KIND(state);
	ascii = state & ST_ASCII;
	if (length < 0 || !(state & ST_COMPACT) || (kind != 1 && kind != 2 && kind != 4) ||
	    (ascii && kind != 1) || (l->minor <= 11 && !(state & ST_READY)))
		return -EINVAL;
	data = (size_t)(ascii ? l->ascii_data : l->compact_data);
	n = (uint64_t)length < max_chars ? (size_t)length : max_chars;
	if (n > (SIZE_MAX - data) / 4)
		n = (SIZE_MAX - data) / 4; /* need cannot wrap, whatever max_chars is */
	s->length = (uint64_t)length;
	s->need = data + n * kind;
	if (len < s->need)
		return -EAGAIN;
	for (i = 0; i < n; i++) {
		const uint8_t *p = obj + data + i * kind;
		uint32_t cp;

		if (kind == 1) {
			cp = p[0];
		} else if (kind == 2) {
			uint16_t u;

			memcpy(&u, p, sizeof(u));
			cp = u;
		} else {
			memcpy(&cp, p, sizeof(cp));
		}
		/* What would make out invalid UTF-8 or end it early. */
		if (!cp || (ascii && cp > 0x7f) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			cp = 0xfffd;
		if (s->bytes + utf8_len(cp) >= cap)
			break;
		s->bytes += utf8_put(cp, out + s->bytes);
	}
	out[s->bytes] = 0;
	s->chars = i;
	s->cut = i < (uint64_t)length;
	return 0;
}

/* ---- reading the process ---- */

/* Up to n bytes at addr of pid: how many were read (short where an
 * unmapped page begins), or -errno when none could be. */
static ssize_t peek(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return r < 0 ? -errno : r;
}

struct rd {
	uint64_t addr;
	uint8_t *buf;
	size_t want, got;
};

/* Reads each range of r[0..n) as far as it is mapped, in one call when
 * all are. Returns 0 (see each got), or -ESRCH / -EPERM when the process
 * itself cannot be read. */
static int peek_many(pid_t pid, struct rd *r, size_t n)
{
	struct iovec local[4], remote[4];
	size_t total = 0;
	ssize_t got;

	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){ r[i].buf, r[i].want };
		remote[i] = (struct iovec){ (void *)(uintptr_t)r[i].addr, r[i].want };
		total += r[i].want;
		r[i].got = 0;
	}
	got = process_vm_readv(pid, local, n, remote, n, 0);
	if (got == (ssize_t)total) {
		for (size_t i = 0; i < n; i++)
			r[i].got = r[i].want;
		return 0;
	}
	if (got < 0 && (errno == ESRCH || errno == EPERM))
		return -errno;
	for (size_t i = 0; i < n; i++) {
		got = peek(pid, r[i].addr, r[i].buf, r[i].want);
		if (got == -ESRCH || got == -EPERM)
			return (int)got;
		r[i].got = got > 0 ? (size_t)got : 0;
	}
	return 0;
}

/* The str at r->addr, whose first r->got bytes are in r->buf, decoded
 * into out; *type is its ob_type. -EBADMSG: not a str we take. */
static int fetch_str(struct pycodes *c, pid_t pid, const struct pylayout *l, const struct rd *r,
		     size_t max_chars, char *out, size_t cap, struct pystr *s, uint64_t *type)
{
	const uint8_t *obj = r->buf;
	size_t len = r->got;
	int err = -EBADMSG;

	/* Usually one read more at most: the object at its full size. More
	 * when a read stops short at an unmapped page (the prefix read past
	 * the object's end, or even its header): each must bring more bytes
	 * than the last, and the decoder then knows better what it needs. */
	for (int round = 0; round < 4; round++) {
		ssize_t got;

		err = pystr__decode(l, obj, len, max_chars, out, cap, s);
		if (err != -EAGAIN)
			break;
		if (s->need > sizeof(c->obj)) {
			err = -EBADMSG; /* cannot be: need is bounded by max_chars */
			break;
		}
		got = peek(pid, r->addr, c->obj, s->need);
		if (got < 0 || (size_t)got <= len) {
			err = got < 0 ? (int)got : -EFAULT;
			break;
		}
		obj = c->obj;
		len = (size_t)got;
	}
	if (err == -EINVAL || err == -EAGAIN)
		err = -EBADMSG; /* a header that changed between our reads */
	if (!err)
		memcpy(type, obj + STR_TYPE, sizeof(*type));
	return err;
}

/* The line table from the bytes object at r->addr (its first r->got
 * bytes in r->buf), or NULL, counted by why. */
static struct pyline *fetch_table(struct pycodes *c, pid_t pid, const struct pylayout *l,
				  const struct rd *r, int32_t first)
{
	size_t sval = (size_t)l->bytes_sval;
	const uint8_t *tab, *hdr = r->buf;
	uint8_t own[64], *big = NULL;
	struct pyline *t = NULL;
	size_t got = r->got;
	int64_t size;

	/* The prefix stopped short at an unmapped page: the header alone. */
	if (got < sval && sval <= sizeof(own) && peek(pid, r->addr, own, sval) == (ssize_t)sval) {
		hdr = own;
		got = sval;
	}
	if (got < sval) {
		c->st.table_bad++;
		goto out;
	}
	memcpy(&size, hdr + BYTES_SIZE, sizeof(size));
	if (size < 0) {
		c->st.table_bad++;
		goto out;
	}
	if (size > PYLINE_MAX_TABLE) {
		c->st.table_big++;
		goto out;
	}
	tab = hdr + sval;
	if ((uint64_t)size > got - sval) {
		big = malloc((size_t)size);
		if (!big || peek(pid, r->addr + sval, big, (size_t)size) != size) {
			c->st.table_bad++;
			goto out;
		}
		tab = big;
	}
	t = pyline__decode(l->minor, tab, (size_t)size, first);
	if (!t && errno == EFBIG)
		c->st.table_big++;
	else if (!t)
		c->st.table_bad++;
out:
	free(big);
	return t;
}

static size_t table_bytes(const struct pyline *t)
{
	return t ? sizeof(*t) + (t->n ? t->n : 1) * sizeof(t->r[0]) : 0;
}

/* The PyCodeObject's bytes that hold every field the row names. */
static size_t code_hdr_len(const struct pylayout *l)
{
	int16_t f[] = { l->co_filename, l->co_name, l->co_qualname, l->co_linetable };
	int end = l->co_firstlineno + 4;

	if (l->co_firstlineno < 0 || l->co_filename < 0 || l->co_name < 0 || l->co_linetable < 0)
		return 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] + 8 > end)
			end = f[i] + 8;
	return end <= CODE_HDR_MAX ? (size_t)end : 0;
}

/* A new entry for the object at `code` of pid, read now, if its stamp is
 * `stamp`: 0 and *out (the caller's, not yet in the cache); -ESTALE;
 * -errno of a read; -EBADMSG. Counts its errors. */
static int load(struct pycodes *c, pid_t pid, const struct pylayout *l, uint64_t code,
		uint32_t stamp, size_t hlen, struct entry **out)
{
	uint8_t hdr[CODE_HDR_MAX], pre[3][TABLE_PREFIX];
	uint64_t fn, nm, qn, lt, fn_type = 0, qn_type = 0;
	struct rd r[3];
	struct pystr sn, sf;
	struct pyline *lines = NULL;
	struct entry *e = NULL;
	const char *name, *file;
	size_t nlen, flen;
	int32_t first;
	ssize_t got;
	int err;

	got = peek(pid, code, hdr, hlen);
	if (got >= 0 && (size_t)got < hlen)
		got = -EFAULT;
	if (got < 0) {
		err = (int)got;
		c->st.err_read++;
		goto fail;
	}
	memcpy(&fn, hdr + l->co_filename, 8);
	memcpy(&nm, hdr + l->co_name, 8);
	memcpy(&lt, hdr + l->co_linetable, 8);
	memcpy(&first, hdr + l->co_firstlineno, 4);
	qn = nm; /* 3.10 has no co_qualname */
	if (l->co_qualname != PYL_NONE)
		memcpy(&qn, hdr + l->co_qualname, 8);
	/* Before anything else is read: another object's strings are of no
	 * use, whatever they say. */
	if (py_stamp(fn, nm, first) != stamp) {
		err = -ESTALE;
		c->st.stale++;
		goto fail;
	}

	r[0] = (struct rd){ fn, pre[0], STR_PREFIX, 0 };
	r[1] = (struct rd){ qn, pre[1], STR_PREFIX, 0 };
	r[2] = (struct rd){ lt, pre[2], TABLE_PREFIX, 0 };
	err = peek_many(pid, r, 3);
	if (!err)
		err = fetch_str(c, pid, l, &r[1], PYCODE_NAME_CHARS, c->name, sizeof(c->name), &sn,
				&qn_type);
	if (!err)
		err = fetch_str(c, pid, l, &r[0], PYCODE_FILE_CHARS, c->file, sizeof(c->file), &sf,
				&fn_type);
	/* Two pointers to str share one type: garbage seldom does. */
	if (!err && fn_type != qn_type)
		err = -EBADMSG;
	if (err) {
		if (err == -EBADMSG)
			c->st.err_string++;
		else
			c->st.err_read++;
		goto fail;
	}
	lines = fetch_table(c, pid, l, &r[2], first);

	name = sn.bytes ? c->name : PYCODE_UNNAMED;
	file = sf.bytes ? c->file : PYCODE_UNNAMED;
	nlen = strlen(name);
	flen = strlen(file);
	e = malloc(sizeof(*e) + nlen + flen + 2);
	if (!e) {
		err = -ENOMEM;
		goto fail;
	}
	memset(e, 0, sizeof(*e));
	memcpy(e->strs, name, nlen + 1);
	memcpy(e->strs + nlen + 1, file, flen + 1);
	e->pc.qualname = e->strs;
	e->pc.filename = e->strs + nlen + 1;
	e->pc.firstlineno = first;
	e->pc.stamp = stamp;
	e->pc.lines = lines;
	e->pc.code = code;
	e->pc.pid = pid;
	e->pc.flags = (sn.cut ? PYCODE_NAME_CUT : 0) | (sf.cut ? PYCODE_FILE_CUT : 0) |
		      (sn.bytes ? 0 : PYCODE_NAME_EMPTY) | (sf.bytes ? 0 : PYCODE_FILE_EMPTY);
	c->st.cut += sn.cut + sf.cut;
	e->minor = l->minor;
	e->ce = (struct rtcache_ent){ .release = entry_release, .key = code, .pid = pid, .owner = RT_PYTHON };
	e->ce.bytes = sizeof(*e) + nlen + flen + 2 + table_bytes(lines);
	*out = e;
	return 0;
fail:
	pyline__free(lines);
	return err;
}

/* ---- the cache ---- */

static void entry_release(struct rtcache_ent *ce)
{
	struct entry *e = (struct entry *)ce;

	pyline__free((struct pyline *)e->pc.lines);
	free(e);
}

RTVIEW_DEFINE(pycodes, PYCODES_DEFAULT_BYTES, RT_PYTHON)

int pycodes__get(struct pycodes *c, pid_t pid, const struct pylayout *l, uint64_t code,
		 uint32_t stamp, const struct pycode **out)
{
	struct entry *e, *made = NULL;
	size_t hlen;
	int err;

	*out = NULL;
	code &= ~(uint64_t)PY_FRAME_ENTRY;
	hlen = layout_ok(l) ? code_hdr_len(l) : 0;
	if (pid <= 0 || !code || !hlen)
		return -EINVAL;
	rtcache__mark(c->v.rc);
	e = (struct entry *)rtcache__find(c->v.rc, pid, code);
	if (e && e->ce.owner == RT_PYTHON && e->pc.stamp == stamp && e->minor == l->minor) {
		c->v.hits++;
		*out = &e->pc;
		return 0;
	}
	c->v.misses++;
	err = load(c, pid, l, code, stamp, hlen, &made);
	if (!err)
		err = rtcache__put(c->v.rc, &made->ce);
	if (err) {
		if (made)
			entry_release(&made->ce);
		return err;
	}
	rtcache__trim(c->v.rc);
	*out = &made->pc;
	return 0;
}

int pycode__line(const struct pycode *pc, uint32_t instr, int32_t *line)
{
	int err;

	*line = pc->firstlineno;
	if (instr == PY_INSTR_NONE || !pc->lines)
		return -ENOENT;
	err = pyline__line_at(pc->lines, instr, line);
	if (err)
		*line = pc->firstlineno;
	return err;
}
