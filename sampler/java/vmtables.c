/*
 * vmtables.c - copying HotSpot's introspection tables (vmtables.h).
 *
 * Each table is an array of fixed-size entries ending in one whose name
 * pointer is NULL; where each member lies in an entry, and the entry's
 * size, are themselves exported variables (jvmfile.h), read first. The
 * names are pointers to string literals in libjvm's read-only data, a
 * few thousand of them clustered on a few hundred pages: they are read
 * through a small cache of whole pages, so copying the tables costs
 * about a hundred reads instead of one per string.
 *
 * While a table is built its strings are kept as offsets into one
 * growing buffer; they become pointers when the buffer stops moving.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/java/vmtables.h"
#include "store/util/util.h"

#define PAGE 4096u
#define NPAGES 32
/* Entries read at once. */
#define BATCH 64

struct pcache {
	const struct hsmem *m;
	uint64_t page[NPAGES];
	bool ok[NPAGES];
	unsigned next;
	uint8_t buf[NPAGES][PAGE];
};

/* The cached copy of the page at pa (page-aligned), or NULL when it is
 * not all mapped. */
static const uint8_t *pc_page(struct pcache *pc, uint64_t pa)
{
	unsigned i;

	for (i = 0; i < NPAGES; i++)
		if (pc->ok[i] && pc->page[i] == pa)
			return pc->buf[i];
	i = pc->next++ % NPAGES;
	pc->ok[i] = false;
	if (hsmem__read(pc->m, pa, pc->buf[i], PAGE))
		return NULL;
	pc->page[i] = pa;
	pc->ok[i] = true;
	return pc->buf[i];
}

/* The string at addr into out (cap bytes, its NUL included): 0, -EPROTO
 * (no NUL within cap), or a read's -errno. */
static int pc_str(struct pcache *pc, uint64_t addr, char *out, size_t cap)
{
	size_t got = 0;
	int err;

	while (got < cap) {
		uint64_t at = addr + got, pa = at & ~(uint64_t)(PAGE - 1);
		size_t in = (size_t)(at - pa), n = PAGE - in;
		const uint8_t *p;

		if (at < addr)
			return -EFAULT;
		p = pc_page(pc, pa);
		if (!p) {
			/* A page not mapped whole (a forged pointer near a
			 * mapping's edge): the string alone, as far as it goes. */
			err = hsmem__str(pc->m, at, out + got, cap - got);
			return err == -ENAMETOOLONG ? -EPROTO : err;
		}
		if (n > cap - got)
			n = cap - got;
		memcpy(out + got, p + in, n);
		if (memchr(out + got, 0, n))
			return 0;
		got += n;
	}
	return -EPROTO;
}

struct builder {
	struct pcache *pc;
	char *strs;
	size_t len, cap;
	char tmp[VMT_MAX_STR];
};

/* The string at addr appended to the builder's buffer, its offset into
 * *off. A NULL addr is "" when may_be_null, else -EPROTO. */
static int add_str(struct builder *b, uint64_t addr, bool may_be_null, uintptr_t *off)
{
	size_t n;
	int err;

	if (!addr) {
		if (!may_be_null)
			return -EPROTO;
		b->tmp[0] = 0;
	} else {
		err = pc_str(b->pc, addr, b->tmp, sizeof(b->tmp));
		if (err)
			return err;
	}
	n = strlen(b->tmp) + 1;
	if (b->len + n > VMT_MAX_STRS)
		return -EPROTO;
	if (GROW(b->strs, &b->cap, b->len + n))
		return -ENOMEM;
	memcpy(b->strs + b->len, b->tmp, n);
	*off = b->len;
	b->len += n;
	return 0;
}

static int rd64(const struct hsmem *m, uint64_t addr, uint64_t *v)
{
	return hsmem__read(m, addr, v, sizeof(*v));
}

/* One table's geometry: where it is, its entry size, and where each
 * member we read lies in an entry (with the member's size). */
struct geo {
	uint64_t base, stride;
	uint64_t off[6];
	unsigned size[6];
	unsigned n;
};

/* Reads the table variables syms[0] (the table pointer), syms[1] (the
 * stride) and syms[2..] (member offsets, of the sizes given) at bias. */
static int read_geo(const struct hsmem *m, const struct jvmfile *jf, uint64_t bias,
		    const int *syms, const unsigned *sizes, unsigned n, struct geo *g)
{
	int err;

	memset(g, 0, sizeof(*g));
	g->n = n;
	err = rd64(m, jf->sym[syms[0]] + bias, &g->base);
	if (!err)
		err = rd64(m, jf->sym[syms[1]] + bias, &g->stride);
	for (unsigned i = 0; !err && i < n; i++) {
		err = rd64(m, jf->sym[syms[2 + i]] + bias, &g->off[i]);
		g->size[i] = sizes[i];
	}
	if (err)
		return err;
	if (!g->base || !g->stride)
		return -EAGAIN; /* set while the JVM starts: not yet */
	if (g->stride < 8 || g->stride > VMT_MAX_STRIDE || g->stride % 4)
		return -EPROTO;
	for (unsigned i = 0; i < n; i++)
		if (g->off[i] > g->stride - g->size[i])
			return -EPROTO;
	return 0;
}

static uint64_t get(const uint8_t *e, const struct geo *g, unsigned i)
{
	uint64_t v = 0;

	memcpy(&v, e + g->off[i], g->size[i]); /* little-endian */
	return v;
}

typedef int (*entry_fn)(struct builder *b, const uint8_t *e, const struct geo *g, void *arr,
			size_t i);

/* Walks a table's entries up to the one whose member 0 (its name) is
 * NULL, calling fn for each into arr (elem bytes each, grown as needed).
 * Returns the count, or -errno. */
static long walk(const struct hsmem *m, struct builder *b, const struct geo *g, void **arr,
		 size_t elem, entry_fn fn)
{
	uint8_t *batch = malloc(BATCH * VMT_MAX_STRIDE);
	size_t cap = 0, n = 0;
	long ret;

	if (!batch)
		return -ENOMEM;
	for (;;) {
		size_t k = BATCH;

		if (n >= VMT_MAX_ENTRIES) {
			ret = -EPROTO; /* no end in sight */
			goto out;
		}
		if (k > VMT_MAX_ENTRIES - n)
			k = VMT_MAX_ENTRIES - n;
		/* A batch may run past the table's mapping: one entry at a
		 * time then (the last few only). */
		if (hsmem__read(m, g->base + n * g->stride, batch, k * g->stride)) {
			k = 1;
			ret = hsmem__read(m, g->base + n * g->stride, batch, g->stride);
			if (ret)
				goto out;
		}
		for (size_t i = 0; i < k; i++) {
			const uint8_t *e = batch + i * g->stride;

			if (!get(e, g, 0)) {
				ret = (long)n;
				goto out;
			}
			if (grow(arr, &cap, n + 1, elem)) {
				ret = -ENOMEM;
				goto out;
			}
			ret = fn(b, e, g, *arr, n);
			if (ret)
				goto out;
			n++;
		}
	}
out:
	free(batch);
	return ret;
}

/* Members of a VMStructEntry we read, in read_geo's order. */
enum { SF_TYPE, SF_FIELD, SF_TYPESTR, SF_STATIC, SF_OFFSET, SF_ADDRESS };

static int field_fn(struct builder *b, const uint8_t *e, const struct geo *g, void *arr, size_t i)
{
	struct vmt_field *f = (struct vmt_field *)arr + i;
	uintptr_t t, n, s;
	int err;

	memset(f, 0, sizeof(*f));
	err = add_str(b, get(e, g, SF_TYPE), false, &t);
	if (!err)
		err = add_str(b, get(e, g, SF_FIELD), false, &n);
	if (!err)
		err = add_str(b, get(e, g, SF_TYPESTR), true, &s);
	if (err)
		return err;
	f->type = (const char *)t;
	f->name = (const char *)n;
	f->type_string = (const char *)s;
	f->is_static = (int32_t)get(e, g, SF_STATIC) != 0;
	f->offset = get(e, g, SF_OFFSET);
	f->address = get(e, g, SF_ADDRESS);
	return 0;
}

enum { TF_NAME, TF_SUPER, TF_SIZE };

static int type_fn(struct builder *b, const uint8_t *e, const struct geo *g, void *arr, size_t i)
{
	struct vmt_type *t = (struct vmt_type *)arr + i;
	uintptr_t n, s;
	int err;

	memset(t, 0, sizeof(*t));
	err = add_str(b, get(e, g, TF_NAME), false, &n);
	if (!err)
		err = add_str(b, get(e, g, TF_SUPER), true, &s);
	if (err)
		return err;
	t->name = (const char *)n;
	t->super = (const char *)s;
	t->size = get(e, g, TF_SIZE);
	return 0;
}

enum { CF_NAME, CF_VALUE };

static int int_fn(struct builder *b, const uint8_t *e, const struct geo *g, void *arr, size_t i)
{
	struct vmt_const *c = (struct vmt_const *)arr + i;
	uintptr_t n;
	int err = add_str(b, get(e, g, CF_NAME), false, &n);

	if (err)
		return err;
	c->name = (const char *)n;
	/* int32 for int constants, uint64 for long ones (the geometry's size) */
	c->value = g->size[CF_VALUE] == 4 ? (int64_t)(int32_t)get(e, g, CF_VALUE)
					   : (int64_t)get(e, g, CF_VALUE);
	return 0;
}

void vmtables__free(struct vmtables *t)
{
	free(t->fields);
	free(t->types);
	free(t->ints);
	free(t->longs);
	free(t->strs);
	memset(t, 0, sizeof(*t));
}

int vmtables__read(const struct hsmem *m, const struct jvmfile *jf, uint64_t bias,
		   struct vmtables *t)
{
	static const int fsyms[] = { JS_STRUCTS, JS_STRUCT_STRIDE, JS_STRUCT_TYPE, JS_STRUCT_FIELD,
				     JS_STRUCT_TYPESTR, JS_STRUCT_STATIC, JS_STRUCT_OFFSET,
				     JS_STRUCT_ADDRESS };
	static const unsigned fsizes[] = { 8, 8, 8, 4, 8, 8 };
	static const int tsyms[] = { JS_TYPES, JS_TYPE_STRIDE, JS_TYPE_NAME, JS_TYPE_SUPER,
				     JS_TYPE_SIZE };
	static const unsigned tsizes[] = { 8, 8, 8 };
	static const int isyms[] = { JS_INTS, JS_INT_STRIDE, JS_INT_NAME, JS_INT_VALUE };
	static const unsigned isizes[] = { 8, 4 };
	static const int lsyms[] = { JS_LONGS, JS_LONG_STRIDE, JS_LONG_NAME, JS_LONG_VALUE };
	static const unsigned lsizes[] = { 8, 8 };
	struct builder b = { 0 };
	struct geo gf, gt, gi, gl;
	long nf = 0, nt = 0, ni = 0, nl = 0;
	void *f = NULL, *ty = NULL, *in = NULL, *lo = NULL;
	int err;

	memset(t, 0, sizeof(*t));
	err = read_geo(m, jf, bias, fsyms, fsizes, 6, &gf);
	if (!err)
		err = read_geo(m, jf, bias, tsyms, tsizes, 3, &gt);
	if (!err)
		err = read_geo(m, jf, bias, isyms, isizes, 2, &gi);
	if (!err)
		err = read_geo(m, jf, bias, lsyms, lsizes, 2, &gl);
	if (err)
		return err;
	b.pc = calloc(1, sizeof(*b.pc));
	if (!b.pc)
		return -ENOMEM;
	b.pc->m = m;
	nf = walk(m, &b, &gf, &f, sizeof(struct vmt_field), field_fn);
	if (nf >= 0)
		nt = walk(m, &b, &gt, &ty, sizeof(struct vmt_type), type_fn);
	if (nf >= 0 && nt >= 0)
		ni = walk(m, &b, &gi, &in, sizeof(struct vmt_const), int_fn);
	if (nf >= 0 && nt >= 0 && ni >= 0)
		nl = walk(m, &b, &gl, &lo, sizeof(struct vmt_const), int_fn);
	err = nf < 0 ? (int)nf : nt < 0 ? (int)nt : ni < 0 ? (int)ni : nl < 0 ? (int)nl : 0;
	if (err)
		goto fail;
	/* The buffer moves no more: offsets become pointers. */
	t->fields = f;
	t->nfields = (size_t)nf;
	t->types = ty;
	t->ntypes = (size_t)nt;
	t->ints = in;
	t->nints = (size_t)ni;
	t->longs = lo;
	t->nlongs = (size_t)nl;
	t->strs = b.strs;
	t->strs_len = b.len;
#define FIX(p) ((p) = t->strs + (uintptr_t)(p))
	for (size_t i = 0; i < t->nfields; i++) {
		FIX(t->fields[i].type);
		FIX(t->fields[i].name);
		FIX(t->fields[i].type_string);
	}
	for (size_t i = 0; i < t->ntypes; i++) {
		FIX(t->types[i].name);
		FIX(t->types[i].super);
	}
	for (size_t i = 0; i < t->nints; i++)
		FIX(t->ints[i].name);
	for (size_t i = 0; i < t->nlongs; i++)
		FIX(t->longs[i].name);
#undef FIX
	free(b.pc);
	return 0;
fail:
	free(f);
	free(ty);
	free(in);
	free(lo);
	free(b.strs);
	free(b.pc);
	return err;
}

const struct vmt_field *vmtables__field(const struct vmtables *t, const char *type,
					const char *name)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (!strcmp(t->fields[i].name, name) && !strcmp(t->fields[i].type, type))
			return &t->fields[i];
	return NULL;
}

const struct vmt_type *vmtables__type(const struct vmtables *t, const char *name)
{
	for (size_t i = 0; i < t->ntypes; i++)
		if (!strcmp(t->types[i].name, name))
			return &t->types[i];
	return NULL;
}

int vmtables__const(const struct vmtables *t, const char *name, int64_t *v)
{
	for (size_t i = 0; i < t->nints; i++)
		if (!strcmp(t->ints[i].name, name)) {
			*v = t->ints[i].value;
			return 0;
		}
	for (size_t i = 0; i < t->nlongs; i++)
		if (!strcmp(t->longs[i].name, name)) {
			*v = t->longs[i].value;
			return 0;
		}
	return -ENOENT;
}
