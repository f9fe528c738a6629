/*
 * hsname.c - naming HotSpot's frames (hsname.h).
 *
 * Why user space, and when: as for Python (sampler/python/pycode.c), BPF
 * sends an address and a stamp per frame and we read the object the
 * first time a (pid, address, stamp) shows up, a batch after the sample.
 * By then an nmethod may have been freed and its memory given to another
 * one: the compile id, read by BPF and again here, tells them apart (ids
 * are never reused). A Method is checked by its ConstMethod pointer (a
 * class redefined or unloaded frees both). A stub by its name pointer.
 *
 * What is read, per kind:
 *  - a Method: its ConstMethod (sizes, flags, name and signature
 *    indexes, the bytecodes, then the compressed line table), the
 *    ConstantPool (holder class, source file index, tags), the Symbols
 *    of the class name, method name and source file;
 *  - an nmethod: its header (method, compile id, where its PcDescs,
 *    scopes and metadata are), then those three arrays whole: a later
 *    sample at another pc of the same nmethod needs no read;
 *  - a stub: its name.
 * Methods an nmethod inlined are named like interpreted ones, their
 * stamp read from the Method when the nmethod first needs it: the
 * nmethod being alive keeps them alive (HotSpot flushes an nmethod
 * before it frees the metadata it uses).
 *
 * The cache is the runtimes' one (sampler/runtime/rtcache.h). Frames
 * handed out point into entries, so a call marks and trims only at its
 * start, never while it builds its answer (an inlined chain may load
 * several methods).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/hotspot.h"
#include "bpf/runtime.h"
#include "sampler/java/hsname.h"
#include "sampler/runtime/rtcache.h"

/* Bounds on what one nmethod makes us copy. */
#define NM_MAX_ARRAY (1u << 20)
/* Bytes of a blob or a Method's satellite read at once, at most. */
#define HDR_MAX 512
/* A line table is read in pieces growing from this. */
#define LINES_FIRST 256

enum etype { E_METHOD = 1, E_NMETHOD, E_STUB };

struct pcpair {
	int32_t pc;
	uint32_t scope;
};

struct entry {
	struct rtcache_ent ce; /* key: the object's address */
	uint32_t stamp;
	uint8_t type;
	char *strs; /* method: sysname, file, display; stub: name */
	const char *sysname, *file, *disp;
	/* method */
	uint32_t code_size;
	struct hsline *lines;
	/* stub: where its blob's code begins (the call stub is told by
	 * its return address, one pc of a blob other stubs share) */
	uint64_t code_begin;
	/* nmethod */
	uint64_t method;
	struct pcpair *pcs;
	uint32_t npcs;
	uint8_t *scopes;
	uint32_t nscopes;
	uint64_t *meta;
	uint64_t *meta_stamp; /* bit 32: read; low 32 bits: the stamp */
	uint32_t nmeta;
	uint64_t own_stamp; /* method's, as meta_stamp (a frame without a
			     * scope: a JNI wrapper's, each sample of it) */
};

struct hsnames {
	struct rtview v; /* first: the cache it reads from */
	struct hsnames_stats st;
	/* scratch of a load */
	uint8_t sym[3 * HSNAME_MAX + 16];
	char cls[4 * HSNAME_MAX + 1], meth[4 * HSNAME_MAX + 1], src[4 * HSNAME_MAX + 1];
};

/* ---- the cache (sampler/runtime/rtcache.h) ---- */

static void entry_release(struct entry *e)
{
	free(e->strs);
	free(e->lines);
	free(e->pcs);
	free(e->scopes);
	free(e->meta);
	free(e->meta_stamp);
	free(e);
}

static void entry_release_ce(struct rtcache_ent *ce)
{
	entry_release((struct entry *)ce);
}

/* e (new, not in c) under (pid, its address), replacing what was there. */
static int insert(struct hsnames *c, pid_t pid, struct entry *e)
{
	e->ce.pid = pid;
	e->ce.release = entry_release_ce;
	e->ce.owner = RT_HOTSPOT;
	return rtcache__put(c->v.rc, &e->ce);
}

static struct entry *lookup(struct hsnames *c, pid_t pid, uint64_t addr, uint8_t type,
			    uint32_t stamp)
{
	struct entry *e = (struct entry *)rtcache__find(c->v.rc, pid, addr);

	if (!e || e->ce.owner != RT_HOTSPOT || e->type != type || e->stamp != stamp)
		return NULL;
	c->v.hits++;
	return e;
}

RTVIEW_DEFINE(hsnames, HSNAMES_DEFAULT_BYTES, RT_HOTSPOT)

/* ---- reading ---- */

/* A read's error as this module reports it: the process gone or
 * forbidden as is, anything else unreadable (-EFAULT). */
static int rd(const struct hsmem *m, uint64_t addr, void *buf, size_t n)
{
	int err = hsmem__read(m, addr, buf, n);

	return err == -ESRCH || err == -EPERM || !err ? err : -EFAULT;
}

static int rd_f(const struct hsmem *m, uint64_t obj, const struct hsf *f, uint64_t *v)
{
	uint8_t b[8];
	int err;

	if (f->off < 0 || !f->size || f->size > 8)
		return -EBADMSG;
	err = rd(m, obj + (uint64_t)f->off, b, f->size);
	if (err)
		return err;
	return hsf__get(&(struct hsf){ .off = 0, .size = f->size, .sign = f->sign }, b, f->size, v);
}

static uint64_t get(const struct hsf *f, const uint8_t *obj, size_t len)
{
	uint64_t v = 0;

	hsf__get(f, obj, len, &v);
	return v;
}

/* The Symbol at sym as UTF-8 into out (cap bytes). */
static int read_symbol(struct hsnames *c, const struct hsmem *m, const struct hslayout *l,
		       uint64_t sym, char *out, size_t cap)
{
	uint8_t hdr[16];
	uint64_t len;
	size_t n;
	int err;

	if (!sym || l->sym_body.off < 0 || l->sym_body.off > 8)
		return -EBADMSG;
	err = rd(m, sym, hdr, (size_t)l->sym_body.off);
	if (err)
		return err;
	len = get(&l->sym_length, hdr, (size_t)l->sym_body.off);
	n = len < sizeof(c->sym) ? (size_t)len : sizeof(c->sym);
	err = rd(m, sym + (uint64_t)l->sym_body.off, c->sym, n);
	if (err)
		return err;
	hsstr__utf8(c->sym, n, out, cap);
	return 0;
}

/* A CP entry that must be a Utf8 Symbol: index checked against the
 * pool's length and tag. */
static int cp_symbol(struct hsnames *c, const struct hsmem *m, const struct hslayout *l,
		     uint64_t cp, uint64_t tags, uint64_t cplen, uint64_t idx, char *out, size_t cap)
{
	uint8_t tag;
	int32_t tlen;
	uint64_t sym;
	int err;

	if (!idx || idx >= cplen)
		return -EBADMSG;
	err = rd(m, tags, &tlen, 4);
	if (!err && (tlen < 0 || (uint64_t)tlen <= idx))
		err = -EBADMSG;
	if (!err)
		err = rd(m, tags + (uint64_t)l->u1_data.off + idx, &tag, 1);
	if (!err && tag != (uint8_t)l->utf8_tag)
		err = -EBADMSG;
	if (!err)
		err = rd(m, cp + l->cp_sizeof + 8 * idx, &sym, 8);
	if (!err)
		err = read_symbol(c, m, l, sym, out, cap);
	return err;
}

/* "java/lang/String" -> "java.lang.String"; a hidden class's
 * "Foo$$Lambda+0x..." -> "Foo$$Lambda/0x..." (as Class.getName says). */
static void dotted(char *s)
{
	char *plus = strrchr(s, '+');

	for (char *p = s; *p; p++)
		if (*p == '/')
			*p = '.';
	if (plus && plus[1] == '0' && plus[2] == 'x')
		*plus = '/';
}

/* The compressed line table at addr, read in growing pieces. NULL when
 * it cannot be had (the method is named without lines). */
static struct hsline *read_lines(const struct hsmem *m, uint64_t addr, unsigned x)
{
	size_t n = LINES_FIRST;
	uint8_t *buf = NULL;
	struct hsline *t = NULL;

	while (!t && n <= HSLINE_MAX_BYTES) {
		uint8_t *nb = realloc(buf, n);

		if (!nb)
			break;
		buf = nb;
		/* A piece may run past the mapping: a shorter one then. */
		if (rd(m, addr, buf, n)) {
			size_t k = n / 2;

			while (k >= 16 && rd(m, addr, buf, k))
				k /= 2;
			if (k < 16)
				break;
			t = hsline__decode(buf, k, x, NULL);
			break;
		}
		t = hsline__decode(buf, n, x, NULL);
		if (!t && errno != ENODATA)
			break;
		n *= 4;
	}
	free(buf);
	return t;
}

/* Loads the Method at addr whose stamp (its ConstMethod under the unload
 * epoch, hs_stamp) is `stamp`. */
static int load_method(struct hsnames *c, const struct hsmem *m, const struct hsvm *vm,
		       uint64_t addr, uint32_t stamp, struct entry **out)
{
	const struct hslayout *l = &vm->l;
	uint8_t cmh[HDR_MAX], cph[HDR_MAX];
	uint64_t cm, cp, holder, kname, tags, cplen, srcidx, flags, code_size, name_idx;
	size_t ncls, nmeth, nsrc, dirlen;
	struct entry *e;
	uint32_t epoch;
	char *s, *slash;
	int err;

	*out = NULL;
	if (l->cm_sizeof > HDR_MAX || l->cp_sizeof > HDR_MAX)
		return -EBADMSG;
	err = rd_f(m, addr, &l->m_const_method, &cm);
	if (!err)
		err = hsvm__epoch(m, vm, &epoch);
	if (err)
		return err;
	if (hs_stamp((uint32_t)(cm >> 3), epoch) != stamp)
		return -ESTALE;
	err = rd(m, cm, cmh, l->cm_sizeof);
	if (err)
		return err;
	cp = get(&l->cm_constants, cmh, l->cm_sizeof);
	flags = get(&l->cm_flags, cmh, l->cm_sizeof);
	code_size = get(&l->cm_code_size, cmh, l->cm_sizeof);
	name_idx = get(&l->cm_name_index, cmh, l->cm_sizeof);
	if (!cp)
		return -EBADMSG;
	err = rd(m, cp, cph, l->cp_sizeof);
	if (err)
		return err;
	holder = get(&l->cp_holder, cph, l->cp_sizeof);
	tags = get(&l->cp_tags, cph, l->cp_sizeof);
	cplen = get(&l->cp_length, cph, l->cp_sizeof);
	srcidx = get(&l->cp_source_file, cph, l->cp_sizeof);
	if (!holder || !tags || !cplen || cplen > 65536)
		return -EBADMSG;
	err = rd_f(m, holder, &l->klass_name, &kname);
	if (!err)
		err = read_symbol(c, m, l, kname, c->cls, sizeof(c->cls));
	if (!err)
		err = cp_symbol(c, m, l, cp, tags, cplen, name_idx, c->meth, sizeof(c->meth));
	if (err)
		return err;
	c->src[0] = 0;
	/* No source file (hidden classes, stripped classes) is no error. */
	if (srcidx && cp_symbol(c, m, l, cp, tags, cplen, srcidx, c->src, sizeof(c->src)))
		c->src[0] = 0;
	ncls = strlen(c->cls);
	nmeth = strlen(c->meth);
	nsrc = strlen(c->src);
	slash = strrchr(c->cls, '/');
	dirlen = slash ? (size_t)(slash - c->cls) + 1 : 0;
	e = calloc(1, sizeof(*e));
	/* sysname "cls.meth", file "dir/src", display "cls.meth (src)" */
	s = malloc(2 * (ncls + nmeth + 2) + dirlen + 2 * nsrc + 8);
	if (!e || !s) {
		free(e);
		free(s);
		return -ENOMEM;
	}
	e->strs = s;
	memcpy(s, c->cls, ncls);
	s[ncls] = 0;
	dotted(s);
	s[ncls] = '.';
	memcpy(s + ncls + 1, c->meth, nmeth + 1);
	e->sysname = s;
	s += ncls + nmeth + 2;
	if (nsrc) {
		memcpy(s, c->cls, dirlen);
		memcpy(s + dirlen, c->src, nsrc + 1);
	} else {
		s[0] = 0;
	}
	e->file = s;
	s += strlen(s) + 1;
	memcpy(s, e->sysname, ncls + nmeth + 2); /* with its NUL: a hidden class has no " (src)" */
	if (nsrc) {
		char *t = s + ncls + nmeth + 1;

		memcpy(t, " (", 2);
		memcpy(t + 2, c->src, nsrc);
		memcpy(t + 2 + nsrc, ")", 2);
	}
	e->disp = s;
	e->type = E_METHOD;
	e->ce.key = addr;
	e->stamp = stamp;
	e->code_size = (uint32_t)code_size;
	if (flags & (uint64_t)l->cm_has_linenumbers)
		e->lines = read_lines(m, cm + l->cm_sizeof + code_size, vm->u5x);
	e->ce.bytes = sizeof(*e) + 2 * (ncls + nmeth + 2) + dirlen + 2 * nsrc + 8 +
		   (e->lines ? sizeof(*e->lines) + e->lines->n * sizeof(e->lines->p[0]) : 0);
	*out = e;
	return 0;
}

static int get_method(struct hsnames *c, pid_t pid, const struct hsmem *m, const struct hsvm *vm,
		      uint64_t addr, uint32_t stamp, struct entry **out)
{
	struct entry *e = lookup(c, pid, addr, E_METHOD, stamp);
	int err;

	if (e) {
		*out = e;
		return 0;
	}
	c->v.misses++;
	err = load_method(c, m, vm, addr, stamp, &e);
	if (!err) {
		err = insert(c, pid, e);
		if (err)
			entry_release(e);
	}
	*out = err ? NULL : e;
	return err;
}

/* The blob header at addr (bytes read into hdr, n of them). */
static int read_blob(const struct hsmem *m, const struct hsvm *vm, uint64_t addr, uint8_t *hdr,
		     size_t *n)
{
	size_t len = vm->l.nm_sizeof > vm->l.cb_sizeof ? vm->l.nm_sizeof : vm->l.cb_sizeof;

	if (len > HDR_MAX)
		return -EBADMSG;
	*n = len;
	return rd(m, addr, hdr, len);
}

/* Is the blob (header hdr) an nmethod? JDK 23+: its kind; before: its
 * name, "nmethod" or "native nmethod". */
static int is_nmethod(const struct hsmem *m, const struct hsvm *vm, const uint8_t *hdr, size_t n)
{
	char name[16];
	uint64_t np;
	int err;

	if (vm->l.cb_kind.off >= 0)
		return get(&vm->l.cb_kind, hdr, n) == (uint64_t)vm->l.kind_nmethod;
	np = get(&vm->l.cb_name, hdr, n);
	if (!np)
		return 0;
	err = hsmem__str(m, np, name, sizeof(name));
	if (err == -ENAMETOOLONG)
		return 0;
	if (err)
		return -EFAULT;
	return !strcmp(name, "nmethod") || !strcmp(name, "native nmethod");
}

/* [lo, hi) read whole into *buf (the caller frees), bounded. */
static int read_range(const struct hsmem *m, uint64_t lo, uint64_t hi, uint8_t **buf, uint32_t *n)
{
	*buf = NULL;
	*n = 0;
	if (hi < lo || hi - lo > NM_MAX_ARRAY)
		return -EBADMSG;
	if (hi == lo)
		return 0;
	*buf = malloc(hi - lo);
	if (!*buf)
		return -ENOMEM;
	*n = (uint32_t)(hi - lo);
	return rd(m, lo, *buf, hi - lo);
}

static int load_nmethod(const struct hsmem *m, const struct hsvm *vm, uint64_t addr,
			uint32_t stamp, struct entry **out)
{
	const struct hslayout *l = &vm->l;
	uint64_t pcs_lo, pcs_hi, data_lo, data_hi, meta_lo, meta_hi;
	uint8_t hdr[HDR_MAX], *pcs = NULL;
	uint32_t npcsb = 0, epoch;
	struct entry *e;
	size_t n;
	int err;

	*out = NULL;
	err = read_blob(m, vm, addr, hdr, &n);
	if (!err)
		err = hsvm__epoch(m, vm, &epoch);
	if (err)
		return err;
	err = is_nmethod(m, vm, hdr, n);
	if (err <= 0)
		return err ? err : -ESTALE; /* another blob lives there now */
	/* (another compile id there, or classes unloaded since the sample:
	 * a freed nmethod's bytes outlive it) */
	if (hs_stamp((uint32_t)get(&l->nm_compile_id, hdr, n), epoch) != stamp)
		return -ESTALE;
	if (l->nm_immutable.off >= 0) {
		uint64_t imm = get(&l->nm_immutable, hdr, n);
		uint64_t isz = get(&l->nm_immutable_size, hdr, n);
		uint64_t mut = get(&l->cb_mutable_data, hdr, n);

		pcs_lo = imm + (uint32_t)get(&l->nm_scopes_pcs, hdr, n);
		pcs_hi = data_lo = imm + (uint32_t)get(&l->nm_scopes_data, hdr, n);
		data_hi = imm + (uint32_t)isz;
		meta_lo = mut + (uint32_t)get(&l->cb_relocation_size, hdr, n);
		meta_hi = mut + (uint32_t)get(&l->cb_mutable_data_size, hdr, n);
		if (!imm) /* native wrappers have no debug information */
			pcs_lo = pcs_hi = data_lo = data_hi = 0;
		if (!mut)
			meta_lo = meta_hi = 0;
	} else {
		pcs_lo = addr + (uint32_t)get(&l->nm_scopes_pcs, hdr, n);
		pcs_hi = addr + (uint32_t)get(&l->nm_dependencies, hdr, n);
		data_lo = get(&l->nm_scopes_data, hdr, n);
		data_hi = pcs_lo;
		meta_lo = addr + (uint32_t)get(&l->nm_metadata, hdr, n);
		meta_hi = data_lo;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->type = E_NMETHOD;
	e->ce.key = addr;
	e->stamp = stamp;
	e->method = get(&l->nm_method, hdr, n);
	err = read_range(m, pcs_lo, pcs_hi, &pcs, &npcsb);
	if (!err)
		err = read_range(m, data_lo, data_hi, &e->scopes, &e->nscopes);
	if (!err)
		err = read_range(m, meta_lo, meta_hi & ~7ull, (uint8_t **)&e->meta, &e->nmeta);
	if (!err && l->pc_sizeof && npcsb % l->pc_sizeof)
		err = -EBADMSG;
	if (!err && npcsb) {
		const struct hspc_geo g = { (uint32_t)l->pc_sizeof, (uint32_t)l->pc_pc_offset.off,
					    (uint32_t)l->pc_scope_offset.off };

		e->npcs = npcsb / g.size;
		e->pcs = malloc(e->npcs * sizeof(*e->pcs));
		if (!e->pcs)
			err = -ENOMEM;
		for (uint32_t i = 0; !err && i < e->npcs; i++) {
			memcpy(&e->pcs[i].pc, pcs + i * g.size + g.pc_off, 4);
			memcpy(&e->pcs[i].scope, pcs + i * g.size + g.scope_off, 4);
		}
	}
	e->nmeta /= 8;
	if (!err && e->nmeta) {
		e->meta_stamp = calloc(e->nmeta, sizeof(*e->meta_stamp));
		if (!e->meta_stamp)
			err = -ENOMEM;
	}
	free(pcs);
	if (err) {
		entry_release(e);
		return err;
	}
	e->ce.bytes = sizeof(*e) + e->npcs * sizeof(*e->pcs) + e->nscopes + e->nmeta * 16;
	*out = e;
	return 0;
}

static int load_stub(const struct hsmem *m, const struct hsvm *vm, uint64_t addr, uint32_t stamp,
		     struct entry **out)
{
	uint8_t hdr[HDR_MAX];
	char name[128];
	uint64_t np, cb;
	struct entry *e;
	size_t n;
	int err;

	*out = NULL;
	err = read_blob(m, vm, addr, hdr, &n);
	if (err)
		return err;
	np = get(&vm->l.cb_name, hdr, n);
	if ((uint32_t)np != stamp)
		return -ESTALE;
	cb = get(&vm->l.cb_code_begin, hdr, n);
	if (!vm->l.cb_code_begin.ptr)
		cb = addr + (uint32_t)cb;
	err = hsmem__str(m, np, name, sizeof(name));
	if (err == -ENAMETOOLONG)
		err = 0; /* cut */
	if (err)
		return err == -ESRCH || err == -EPERM ? err : -EFAULT;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->strs = strdup(name);
	if (!e->strs) {
		free(e);
		return -ENOMEM;
	}
	e->sysname = e->disp = e->strs;
	e->file = "";
	e->type = E_STUB;
	e->code_begin = cb;
	e->ce.key = addr;
	e->stamp = stamp;
	e->ce.bytes = sizeof(*e) + strlen(name) + 1;
	*out = e;
	return 0;
}

/* ---- frames ---- */

static void method_frame(const struct entry *me, int32_t bci, uint8_t kind, bool inlined,
			 struct hsjframe *f)
{
	int32_t line = hsline__line_at(me->lines, me->code_size, bci);

	f->name = me->disp;
	f->sysname = me->sysname;
	f->file = me->file;
	f->line = line > 0 ? line : 0;
	f->bci = bci;
	f->kind = kind;
	f->inlined = inlined;
}

/* A Method's stamp now (hs_stamp), as meta_stamp keeps it: bit 32 set. */
static int stamp_now(const struct hsmem *m, const struct hsvm *vm, uint64_t method,
		     uint64_t *kept)
{
	uint64_t cm;
	uint32_t epoch;
	int err;

	err = rd_f(m, method, &vm->l.m_const_method, &cm);
	if (!err)
		err = hsvm__epoch(m, vm, &epoch);
	if (!err)
		*kept = 1ull << 32 | hs_stamp((uint32_t)(cm >> 3), epoch);
	return err;
}

/* The Method of metadata index k (1-based) of nmethod e, with its stamp
 * (read from the process the first time). */
static int meta_method(const struct hsmem *m, const struct hsvm *vm, struct entry *e, uint32_t k,
		       uint64_t *method, uint32_t *stamp)
{
	int err;

	if (!k || k > e->nmeta)
		return -EBADMSG;
	*method = e->meta[k - 1];
	if (!(e->meta_stamp[k - 1] >> 32)) {
		err = stamp_now(m, vm, *method, &e->meta_stamp[k - 1]);
		if (err)
			return err;
	}
	*stamp = (uint32_t)e->meta_stamp[k - 1];
	return 0;
}

/* The frames of nmethod nm at pc offset off: leaf, the interrupted pc
 * (AsyncGetCallTrace's PcDesc rule), else a return address (its exact
 * PcDesc). */
static int compiled_frames(struct hsnames *c, pid_t pid, const struct hsmem *m,
			   const struct hsvm *vm, struct entry *nm, uint32_t off, bool leaf,
			   struct hsjframe *out, int max)
{
	const struct hspc_geo g = { sizeof(struct pcpair), 0, 4 };
	uint32_t scope = 0, prev = UINT32_MAX;
	struct entry *me;
	uint32_t stamp;
	uint64_t method;
	int32_t at;
	int n = 0, err;

	if (nm->npcs) {
		err = hspc__find((const uint8_t *)nm->pcs, nm->npcs, &g, (int32_t)off, !leaf, &scope,
				 &at);
		if (err == -ENOENT && !leaf) {
			c->st.no_pcdesc++;
			err = hspc__find((const uint8_t *)nm->pcs, nm->npcs, &g, (int32_t)off, false,
					 &scope, &at);
		}
		if (err)
			scope = 0;
	}
	while (scope && n < max && n < HSNAME_MAX_INLINE) {
		struct hsscope s;

		/* Senders precede their scopes in the stream: offsets fall,
		 * so a forged chain cannot loop. */
		if (scope >= prev)
			return n ? n : -EBADMSG;
		err = hsscope__read(nm->scopes, nm->nscopes, scope, vm->u5x, &s);
		if (!err)
			err = meta_method(m, vm, nm, s.method, &method, &stamp);
		if (!err)
			err = get_method(c, pid, m, vm, method, stamp, &me);
		if (err)
			return n ? n : err;
		method_frame(me, s.bci, HS_K_COMPILED, s.sender != 0, &out[n++]);
		prev = scope;
		scope = s.sender;
	}
	if (n)
		return n;
	/* No scope for that pc (a native wrapper, a pc outside any
	 * PcDesc's reach): the nmethod's own method, no line. */
	if (!(nm->own_stamp >> 32)) {
		err = stamp_now(m, vm, nm->method, &nm->own_stamp);
		if (err)
			return err;
	}
	err = get_method(c, pid, m, vm, nm->method, (uint32_t)nm->own_stamp, &me);
	if (err)
		return err;
	method_frame(me, -1, HS_K_COMPILED, false, &out[0]);
	return 1;
}

/* A call's start: what earlier calls handed out is no longer read. */
static void trim(struct hsnames *c)
{
	rtcache__mark(c->v.rc);
	rtcache__trim(c->v.rc);
}

int hsnames__frames(struct hsnames *c, pid_t pid, const struct hsmem *m, const struct hsvm *vm,
		    uint64_t s0, uint64_t s1, struct hsjframe *out, int max)
{
	uint64_t addr = hs_rec_addr(s0);
	uint32_t kind = hs_rec_kind(s0), stamp = hs_rec_stamp(s1), off = hs_rec_off(s1);
	bool leaf = hs_rec_flags(s0) & HS_R_EXACT;
	struct entry *e;
	int err;

	if (pid <= 0 || !addr || max < 1)
		return -EINVAL;
	trim(c); /* only here: out of earlier calls may point into entries */
	memset(out, 0, sizeof(*out));
	switch (kind) {
	case HS_K_INTERP:
		err = get_method(c, pid, m, vm, addr, stamp, &e);
		if (!err)
			method_frame(e, off == HS_BCI_NONE ? -1 : (int32_t)off, HS_K_INTERP, false, out);
		err = err ? err : 1;
		break;
	case HS_K_COMPILED:
		e = lookup(c, pid, addr, E_NMETHOD, stamp);
		err = 0;
		if (!e) {
			c->v.misses++;
			err = load_nmethod(m, vm, addr, stamp, &e);
			if (!err) {
				err = insert(c, pid, e);
				if (err)
					entry_release(e);
			}
		}
		if (!err)
			err = compiled_frames(c, pid, m, vm, e, off, leaf, out, max);
		break;
	case HS_K_STUB:
		e = lookup(c, pid, addr, E_STUB, stamp);
		err = 0;
		if (!e) {
			c->v.misses++;
			err = load_stub(m, vm, addr, stamp, &e);
			if (!err) {
				err = insert(c, pid, e);
				if (err)
					entry_release(e);
			}
		}
		if (!err) {
			/* The call stub shares its blob with other stubs: it
			 * is named by the return address HotSpot exports for
			 * it, per frame (the entry is the blob's, named by
			 * whichever of its stubs was met first). */
			out->name = out->sysname =
				e->code_begin + off == vm->bpf.call_stub_ra ? "call_stub" : e->disp;
			out->file = "";
			out->bci = -1;
			out->kind = HS_K_STUB;
			err = 1;
		}
		break;
	default:
		return -EINVAL;
	}
	if (err == -ESTALE)
		c->st.stale++;
	else if (err == -EBADMSG)
		c->st.err_bad++;
	else if (err < 0 && err != -ENOMEM)
		c->st.err_read++;
	return err;
}

int hsnames__method(struct hsnames *c, pid_t pid, const struct hsmem *m, const struct hsvm *vm,
		    uint64_t method, const char **sysname, const struct hsline **lines,
		    uint32_t *code_size)
{
	struct entry *e;
	uint64_t kept;
	int err;

	if (pid <= 0 || !method)
		return -EINVAL;
	trim(c);
	err = stamp_now(m, vm, method, &kept);
	if (!err)
		err = get_method(c, pid, m, vm, method, (uint32_t)kept, &e);
	if (err)
		return err;
	*sysname = e->sysname;
	*lines = e->lines;
	*code_size = e->code_size;
	return 0;
}
