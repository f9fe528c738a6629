/*
 * rbcode.c - naming another process's Ruby frames (see rbcode.h).
 *
 * Why user space reads the names, and when: as for Python (pycode.c),
 * BPF sends only (address, stamp) per frame, and an object is read the
 * first time a (pid, address, stamp) shows up, a batch after the sample.
 * By then the iseq or method entry may have been freed (an eval'd
 * string, a redefined method, a reloaded file) and the slot reused: the
 * stamp, a hash of the iseq's body pointer or the entry's definition
 * pointer as BPF read it, tells the two apart; a mismatch is -ESTALE,
 * never the new object's name. A cached entry is never dropped because
 * a later stamp differs: samples queued before the reuse still carry
 * its stamp. Every object read is first checked for its type (an imemo
 * of the right kind, a String, an Array), so garbage at a stale address
 * is refused rather than read as a name.
 *
 * The reads, per new iseq: its first 24 bytes, 152 of its body, the
 * label and path Strings (40 bytes each, plus their heap bytes), the
 * path Array when the iseq has a real path too, the insns_info entries
 * and the succ index. Per new C method: the method entry, its
 * definition's original_id, the symbol table's header, two Arrays and
 * the String. Lengths are capped before a read (a forged length costs
 * at most the cap).
 *
 * Strings are shown as UTF-8: Ruby source paths and method names are in
 * the source encoding, almost always UTF-8 or ASCII; bytes that are not
 * valid UTF-8 become U+FFFD, so a forged byte never reaches pprof, JSON
 * or the FUSE tree.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf/runtime.h"
#include "sampler/ruby/rbcode.h"
#include "sampler/runtime/rtcache.h"

/* A Ruby object slot (RVALUE, 40 bytes on 64-bit builds): a String's or
 * Array's header and embedded contents are in it. */
#define SLOT 40
#define BODY_MAX 256
#define UNNAMED "<unknown>"

struct entry {
	struct rtcache_ent ce; /* key: the object's address */
	struct rbcode rc;
	char strs[]; /* label, path, realpath */
};

struct rbcodes {
	struct rtview v; /* first: the cache it reads from */
	struct rbcodes_stats st;
	/* Entries used since the current naming began are kept (one mark
	 * for the naming): the names of one sample point into several. */
	bool naming;
	uint8_t raw[RBCODE_PATH_MAX];
	char label[RBCODE_LABEL_MAX + 4], path[RBCODE_PATH_MAX + 4], real[RBCODE_PATH_MAX + 4];
};

/* ---- pure readers ---- */

static uint64_t u64at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t u32at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int rbstr__header(const struct rblayout *l, const uint8_t *obj, size_t n, struct rbstr *s)
{
	uint64_t flags;

	memset(s, 0, sizeof(*s));
	if (n < (size_t)l->str_ptr + 8 || n < (size_t)l->str_len + 8)
		return -EINVAL;
	flags = u64at(obj);
	if ((flags & 0x1f) != l->t_string)
		return -EBADMSG;
	if (flags & l->str_noembed) {
		int64_t len = (int64_t)u64at(obj + l->str_len);

		if (len < 0)
			return -EBADMSG;
		s->len = (uint64_t)len;
		s->ptr = u64at(obj + l->str_ptr);
		return s->len && !s->ptr ? -EBADMSG : 0;
	}
	s->len = flags >> l->str_embed_shift & l->str_embed_mask;
	s->at = (size_t)l->str_embed;
	return s->at > n || s->len > n - s->at ? -EBADMSG : 0;
}

int rbary__header(const struct rblayout *l, const uint8_t *obj, size_t n, struct rbary *a)
{
	uint64_t flags;

	memset(a, 0, sizeof(*a));
	if (n < (size_t)l->ary_ptr + 8 || n < (size_t)l->ary_len + 8)
		return -EINVAL;
	flags = u64at(obj);
	if ((flags & 0x1f) != l->t_array)
		return -EBADMSG;
	if (flags & l->ary_embed_flag) {
		a->len = flags >> l->ary_embed_shift & l->ary_embed_mask;
		a->at = (size_t)l->ary_embed;
		return a->at > n || a->len > (n - a->at) / 8 ? -EBADMSG : 0;
	}
	a->len = u64at(obj + l->ary_len);
	a->ptr = u64at(obj + l->ary_ptr);
	return (int64_t)a->len < 0 || (a->len && !a->ptr) ? -EBADMSG : 0;
}

/* The length of the valid UTF-8 sequence at p[0..n), 0 if none (strict:
 * shortest forms, no surrogates, nothing past U+10FFFF). */
static size_t utf8_seq(const uint8_t *p, size_t n)
{
	uint32_t cp;
	size_t k;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		k = 1, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		k = 2, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		k = 3, cp = p[0] & 0x07;
	else
		return 0;
	if (k >= n)
		return 0;
	for (size_t j = 1; j <= k; j++) {
		if ((p[j] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[j] & 0x3f);
	}
	if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return k + 1;
}

size_t rbstr__utf8(const uint8_t *in, size_t n, char *out, size_t cap, bool *cut)
{
	static const char repl[] = "\xef\xbf\xbd";
	size_t i = 0, o = 0;

	while (i < n) {
		size_t k = in[i] ? utf8_seq(in + i, n - i) : 0;
		const char *src = k ? (const char *)in + i : repl;
		size_t w = k ? k : 3;

		if (o + w >= cap)
			break;
		memcpy(out + o, src, w);
		o += w;
		i += k ? k : 1;
	}
	out[o] = 0;
	*cut = i < n;
	return o;
}

/* ---- reading the process ---- */

static int peek(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	ssize_t r;

	if (!n)
		return 0;
	r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EFAULT;
}

/* A VALUE that points at a heap object (not nil, a Fixnum, a Symbol...). */
static bool is_obj(uint64_t v)
{
	return v >= 4096 && !(v & 7);
}

/* The String at addr as UTF-8 into out[0..cap). */
static int read_str(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t addr,
		    char *out, size_t cap, bool *cut)
{
	uint8_t obj[SLOT];
	const uint8_t *bytes = obj;
	struct rbstr s;
	size_t n;
	bool more;
	int err;

	if (!is_obj(addr))
		return -EBADMSG;
	err = peek(pid, addr, obj, sizeof(obj));
	if (!err)
		err = rbstr__header(l, obj, sizeof(obj), &s);
	if (err)
		return err == -EINVAL ? -EBADMSG : err;
	n = s.len < cap ? (size_t)s.len : cap; /* more bytes than cap never fit */
	if (s.ptr) {
		if (n > sizeof(c->raw))
			n = sizeof(c->raw);
		err = peek(pid, s.ptr, c->raw, n);
		if (err)
			return err;
		bytes = c->raw;
	} else {
		bytes = obj + s.at;
	}
	rbstr__utf8(bytes, n, out, cap, &more);
	*cut = more || n < s.len;
	return 0;
}

/* Element i of the Array at addr. */
static int read_elem(pid_t pid, const struct rblayout *l, uint64_t addr, uint64_t i, uint64_t *v)
{
	uint8_t obj[SLOT];
	struct rbary a;
	int err;

	if (!is_obj(addr))
		return -EBADMSG;
	err = peek(pid, addr, obj, sizeof(obj));
	if (!err)
		err = rbary__header(l, obj, sizeof(obj), &a);
	if (err)
		return err == -EINVAL ? -EBADMSG : err;
	if (i >= a.len)
		return -EBADMSG;
	if (!a.ptr) {
		*v = u64at(obj + a.at + 8 * i);
		return 0;
	}
	return peek(pid, a.ptr + 8 * i, v, 8);
}

/* The imemo of type `type` at addr: its first n bytes into b. */
static int read_imemo(pid_t pid, const struct rblayout *l, uint64_t addr, uint32_t type,
		      uint8_t *b, size_t n)
{
	uint64_t flags;
	int err;

	if (!is_obj(addr))
		return -EBADMSG;
	err = peek(pid, addr, b, n);
	if (err)
		return err;
	flags = u64at(b);
	if ((flags & 0x1f) != l->t_imemo || (flags >> l->imemo_shift & 0xf) != type)
		return -EBADMSG;
	return 0;
}

/* The line table of the body b (the iseq's), or NULL. */
static struct rbline *read_lines(pid_t pid, const struct rblayout *l, const uint8_t *b)
{
	uint32_t size = u32at(b + l->body_iseq_size), n = u32at(b + l->body_insns_size);
	uint64_t ents = u64at(b + l->body_insns_info), succ = u64at(b + l->body_succ_index);
	size_t elen = (size_t)n * (size_t)l->insn_info_size, slen = 0;
	uint8_t *e = NULL, *s = NULL;
	struct rbline *t = NULL;

	if (n > RBLINE_MAX_ENTRIES || size > RBLINE_MAX_ISEQ)
		return NULL;
	if (n > 1)
		slen = rbline__succ_bytes(size);
	e = malloc(elen + slen + 1);
	if (!e)
		return NULL;
	s = e + elen;
	if (!peek(pid, ents, e, elen) && (!slen || !peek(pid, succ, s, slen)))
		t = rbline__new(e, n, (size_t)l->insn_info_size, (size_t)l->insn_info_line, s, slen,
				size);
	free(e);
	return t;
}

/* A new entry's block: struct, then the three strings. */
static struct entry *entry_new(const char *label, const char *path, const char *real)
{
	size_t a = strlen(label) + 1, b = strlen(path) + 1, r = strlen(real) + 1;
	struct entry *e = calloc(1, sizeof(*e) + a + b + r);

	if (!e)
		return NULL;
	memcpy(e->strs, label, a);
	memcpy(e->strs + a, path, b);
	memcpy(e->strs + a + b, real, r);
	e->rc.label = e->strs;
	e->rc.path = e->strs + a;
	e->rc.realpath = e->strs + a + b;
	e->ce.bytes = sizeof(*e) + a + b + r;
	return e;
}

static int load_iseq(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t addr,
		     uint32_t stamp, struct entry **out)
{
	uint8_t io[24], b[BODY_MAX];
	uint64_t body, pathobj, p = 0, r = 0;
	bool cut1 = false, cut2 = false, cut3 = false;
	struct rbline *lines;
	struct entry *e;
	int err;

	err = read_imemo(pid, l, addr, l->imemo_iseq, io, sizeof(io));
	if (err)
		return err;
	body = u64at(io + l->iseq_body);
	if (rb_stamp(body) != stamp)
		return -ESTALE;
	err = peek(pid, body, b, (size_t)l->body_succ_index + 8);
	if (!err)
		err = read_str(c, pid, l, u64at(b + l->body_label), c->label, sizeof(c->label), &cut1);
	pathobj = u64at(b + l->body_pathobj);
	/* A path alone, or [path, realpath] (realpath nil for eval'd code). */
	if (!err && read_elem(pid, l, pathobj, 0, &p) == 0) {
		if (read_elem(pid, l, pathobj, 1, &r) || !is_obj(r))
			r = p;
	} else if (!err) {
		p = r = pathobj;
	}
	if (!err)
		err = read_str(c, pid, l, p, c->path, sizeof(c->path), &cut2);
	if (!err && r != p)
		err = read_str(c, pid, l, r, c->real, sizeof(c->real), &cut3);
	if (err)
		return err;
	if (r == p)
		memcpy(c->real, c->path, strlen(c->path) + 1);
	lines = read_lines(pid, l, b);
	e = entry_new(c->label[0] ? c->label : UNNAMED, c->path, c->real);
	if (!e) {
		rbline__free(lines);
		return -ENOMEM;
	}
	if (!lines)
		c->st.no_lines++;
	e->rc.lines = lines;
	e->rc.iseq_encoded = u64at(b + l->body_iseq_encoded);
	e->rc.first_lineno = (int32_t)((int64_t)u64at(b + l->body_first_lineno) >> 1);
	e->rc.flags = cut1 || cut2 || cut3 ? RBCODE_CUT : 0;
	if (lines)
		e->ce.bytes += sizeof(*lines) + (size_t)lines->n * 4 + lines->succ_len;
	*out = e;
	return 0;
}

static int load_cfunc(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t symbols,
		      uint64_t addr, uint32_t stamp, struct entry **out)
{
	uint8_t me[24], sym[32];
	uint64_t def, id = 0, serial, ids, ary, str;
	uint32_t last;
	bool cut = false;
	struct entry *e;
	int err;

	if (!symbols)
		return -EINVAL;
	err = read_imemo(pid, l, addr, l->imemo_ment, me, sizeof(me));
	if (err)
		return err;
	def = u64at(me + l->me_def);
	if (rb_stamp(def) != stamp)
		return -ESTALE;
	err = peek(pid, def + l->def_original_id, &id, 8);
	if (!err)
		err = peek(pid, symbols, sym, sizeof(sym));
	if (err)
		return err;
	/* rb_id_to_serial; get_id_serial_entry's checks and lookups */
	serial = id > (uint64_t)l->id_last_op ? id >> l->id_scope_shift : id;
	last = u32at(sym + l->sym_last_id);
	ids = u64at(sym + l->sym_ids);
	if (!serial || serial > last)
		return -EBADMSG;
	err = read_elem(pid, l, ids, serial / l->id_entry_unit, &ary);
	if (!err)
		err = read_elem(pid, l, ary, serial % l->id_entry_unit * l->id_entry_size, &str);
	if (!err)
		err = read_str(c, pid, l, str, c->label, sizeof(c->label), &cut);
	if (err)
		return err;
	e = entry_new(c->label[0] ? c->label : UNNAMED, "", "");
	if (!e)
		return -ENOMEM;
	e->rc.flags = RBCODE_CFUNC | (cut ? RBCODE_CUT : 0);
	*out = e;
	return 0;
}

/* ---- the cache (sampler/runtime/rtcache.h) ---- */

static void entry_release(struct rtcache_ent *ce)
{
	struct entry *e = (struct entry *)ce;

	rbline__free((struct rbline *)e->rc.lines);
	free(e);
}

RTVIEW_DEFINE(rbcodes, RBCODES_DEFAULT_BYTES, RT_RUBY)

int rbcodes__get(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t symbols,
		 uint64_t addr, uint32_t stamp, const struct rbcode **out)
{
	bool cfunc = addr & RB_FRAME_CFUNC;
	struct entry *e = NULL;
	int err;

	*out = NULL;
	addr &= ~RB_FRAME_FLAGS;
	if (pid <= 0 || !addr || !l)
		return -EINVAL;
	if (!c->naming)
		rtcache__mark(c->v.rc);
	e = (struct entry *)rtcache__find(c->v.rc, pid, addr);
	if (e && e->ce.owner == RT_RUBY && e->rc.stamp == stamp && !(e->rc.flags & RBCODE_CFUNC) == !cfunc) {
		c->v.hits++;
		*out = &e->rc;
		return 0;
	}
	c->v.misses++;
	e = NULL;
	err = cfunc ? load_cfunc(c, pid, l, symbols, addr, stamp, &e)
		    : load_iseq(c, pid, l, addr, stamp, &e);
	if (err) {
		if (err == -ESTALE)
			c->st.stale++;
		else if (err == -EBADMSG)
			c->st.err_object++;
		else
			c->st.err_read++;
		return err;
	}
	e->rc.stamp = stamp;
	e->rc.addr = addr;
	e->rc.pid = pid;
	e->ce.release = entry_release;
	e->ce.key = addr;
	e->ce.pid = pid;
	e->ce.owner = RT_RUBY;
	err = rtcache__put(c->v.rc, &e->ce);
	if (err) {
		entry_release(&e->ce);
		return err;
	}
	rtcache__trim(c->v.rc);
	*out = &e->rc;
	return 0;
}

int rbcode__line(const struct rbcode *rc, uint32_t pc, int32_t *line)
{
	uint32_t d = pc - (uint32_t)rc->iseq_encoded;
	int err;

	*line = rc->first_lineno;
	if (!rc->lines)
		return -ENOENT;
	if (d % 8 || d / 8 > rc->lines->iseq_size)
		return -ERANGE;
	err = rbline__at(rc->lines, rbline__pos(d / 8), line);
	if (err)
		*line = rc->first_lineno;
	return err;
}

/* ---- a sample's frames ---- */

void rbcodes__name(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t symbols,
		   const struct rb_frame *rec, int m, struct rbname *out)
{
	const char *path = "", *real = "";
	int32_t line = 0;

	rtcache__mark(c->v.rc);
	c->naming = true;
	/* Oldest first: a C method takes its caller's place in the file. */
	for (int i = m - 1; i >= 0; i--) {
		const struct rbcode *rc = NULL;
		struct rbname *o = &out[i];
		int err;

		memset(o, 0, sizeof(*o));
		o->addr = rec[i].addr & ~RB_FRAME_FLAGS;
		if (rec[i].addr & RB_FRAME_GC) {
			o->kind = RBN_GC;
			o->label = RBNAME_GC;
			o->path = o->realpath = "";
			continue;
		}
		err = rbcodes__get(c, pid, l, symbols, rec[i].addr, rec[i].stamp, &rc);
		if (err) {
			o->kind = err == -ESTALE ? RBN_STALE : RBN_UNREADABLE;
			o->label = err == -ESTALE ? RBNAME_STALE : RBNAME_UNREADABLE;
			o->path = o->realpath = "";
			continue;
		}
		o->label = rc->label;
		if (rc->flags & RBCODE_CFUNC) {
			o->kind = RBN_CFUNC;
			o->path = path;
			o->realpath = real;
			o->line = line;
			continue;
		}
		o->kind = RBN_ISEQ;
		o->path = path = rc->path;
		o->realpath = real = rc->realpath;
		rbcode__line(rc, rec[i].pc, &line);
		o->line = line;
	}
	c->naming = false;
}

void rbcode__display(const char *label, const char *path, char *out, size_t cap)
{
	static const char *const roots[] = { "/vendor_ruby/", "/site_ruby/", "/lib/ruby/" };
	const char *f = NULL, *s;
	char inner[PATH_MAX];
	size_t n = strlen(path);

	if (!path[0]) {
		snprintf(out, cap, "%s", label);
		return;
	}
	/* rubygems' require wraps a file's path (<internal:/usr/lib/ruby/
	 * vendor_ruby/rubygems/core_ext/kernel_require.rb>): the file inside
	 * is shown as any other, as caller_locations' path does. Ruby's own
	 * (<internal:kernel>) has no path: shown whole. */
	if (!strncmp(path, "<internal:/", 11) && path[n - 1] == '>' && n - 11 < sizeof(inner)) {
		memcpy(inner, path + 10, n - 11);
		inner[n - 11] = 0;
		path = inner;
	}
	/* The last gems folder: bundler's and rubygems' paths nest them. */
	for (s = path; (s = strstr(s, "/gems/")); s++)
		f = s + strlen("/gems/");
	for (size_t i = 0; !f && i < sizeof(roots) / sizeof(roots[0]); i++) {
		if (!(s = strstr(path, roots[i])))
			continue;
		f = s + strlen(roots[i]);
		/* A version folder (3.1.0/) belongs to the root. */
		s = f;
		while ((*s >= '0' && *s <= '9') || *s == '.')
			s++;
		if (*s == '/' && s > f)
			f = s + 1;
	}
	if (!f && path[0] != '<') {
		s = strrchr(path, '/');
		f = s ? s + 1 : path;
	}
	snprintf(out, cap, "%s (%s)", label, f && *f ? f : path);
}
