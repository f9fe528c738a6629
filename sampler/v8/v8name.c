/*
 * v8name.c - naming JS frames from another process's V8 heap (v8name.h).
 *
 * Three kinds of cache entries, each keyed by (pid, tagged address):
 * - fn: a SharedFunctionInfo: its name (V8's DebugName: the function
 *   variable's name in its ScopeInfo, else the inferred name, as
 *   Error().stack prints it), its script, its first position, and what
 *   turns a frame's offset into a position: the BytecodeArray's position
 *   table, and for Sparkplug code its pc -> bytecode table and bytecodes.
 *   It holds the three stamps a frame of it may carry (bpf/v8.h).
 * - code: optimized code: its position table, the SharedFunctionInfos
 *   of the functions inlined into it (DeoptimizationData) and where each
 *   was inlined, and its stamp.
 * - script: its name, line offset and line ends (V8's Script.line_ends,
 *   else computed from the source as V8 would), shared by its fns.
 * A frame whose stamp differs from its cached entry's is read again from
 * memory; if the object now at that address has another stamp (or is no
 * longer a SharedFunctionInfo / Code), the frame is stale: the GC moved
 * or collected the object it named.
 *
 * Entries are the runtimes' shared cache's (sampler/runtime/rtcache.h),
 * the kind in the key's top byte. They reference each other (fn ->
 * script, code -> fns) with holds, so an evicted entry lives on while
 * referenced. Everything read is
 * bounded: names, tables, line ends, the number of inlined functions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/runtime.h"
#include "sampler/runtime/rtcache.h"
#include "sampler/v8/v8heap.h"
#include "sampler/v8/v8name.h"
#include "sampler/v8/v8pos.h"

#define MAX_TABLE (1u << 20)	     /* position tables, bytecodes */
#define MAX_LINES (4u << 20)	     /* line ends */
#define MAX_INLINED 256
#define MAX_LITERALS 4096	     /* deoptimization literals looked at */
#define MAX_LOCALS 4096
/* A call instruction and what x86-64 code puts before its return address
 * (movabs + call through a register is 12 bytes). */
#define V8NAME_CALL_BYTES 16

enum { K_FN = 1, K_CODE, K_SCRIPT };

/* An entry's key: its tagged address, its kind in the top byte. */
#define KEY(a, kind) ((a) | (uint64_t)(kind) << 56)
#define KEY_ADDR(k) ((k) & ((1ull << 56) - 1))
#define KEY_KIND(k) ((int)((k) >> 56))

struct script {
	struct rtcache_ent e;
	uint64_t name_ptr, src_ptr;
	char *path;
	int32_t line_offset;
	uint32_t *ends; /* NULL: no line ends */
	size_t nends;
};

struct fn {
	struct rtcache_ent e;
	uint32_t st_interp, st_base, st_func;
	bool builtin; /* a JS builtin (its data is a builtin id): no bytecode */
	char *name;
	struct script *script; /* NULL: none */
	int32_t start_pos;     /* -1: unknown */
	uint8_t *pos;	       /* the BytecodeArray's position table */
	size_t npos;
	uint8_t *btab, *bc;    /* Sparkplug: pc -> bytecode table, bytecodes */
	size_t nbtab, nbc;
};

struct code {
	struct rtcache_ent e;
	uint32_t stamp;
	struct fn *outer;
	uint8_t *pos;
	size_t npos;
	struct fn **fns;   /* inlined functions (NULL where unreadable) */
	size_t nfns;
	uint8_t *inl;	   /* InliningPositions: 16 bytes each */
	size_t ninl;
	bool maglev;	   /* Maglev's (V8 13's second tier), not TurboFan's */
};

struct v8names {
	struct rtview v; /* first: the cache it reads from */
	struct v8names_stats st;
};

/* A ByteArray's bytes (malloc'd copy) of at most max. */
static int byte_array(const struct v8ctx *x, uint64_t a, size_t max, uint8_t **out, size_t *n)
{
	uint64_t len;

	*out = NULL;
	*n = 0;
	if (!v8layout__byte_array(x->l, type_of(x, a)) || rd64(x, a, x->l->array_length, &len) || !smi(len) ||
	    smi_val(len) < 0)
		return -EBADMSG;
	if ((size_t)smi_val(len) > max)
		return -EFBIG;
	*n = (size_t)smi_val(len);
	*out = malloc(*n ? *n : 1);
	if (!*out)
		return -ENOMEM;
	if (rd(x, a - 1 + x->l->array_data, *out, *n)) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -EFAULT;
	}
	return 0;
}

/* A String (or not) as a malloc'd UTF-8 string of at most max units;
 * "" for a non-string. NULL: out of memory; *err the read's error. */
static char *str_dup(const struct v8ctx *x, uint64_t s, size_t max, int *err)
{
	uint16_t *u = malloc(max * sizeof(*u));
	char *out = malloc(max * 3 + 1);
	struct v8str st;
	long n;

	*err = 0;
	if (!u || !out) {
		free(u);
		free(out);
		return NULL;
	}
	n = heap_object(s) ? v8name__string(x->l, x->rd, x->rctx, s, u, max, &st) : 0;
	if (n < 0) {
		*err = (int)n;
		n = 0;
	}
	v8name__utf8(u, (size_t)n, out, max * 3 + 1);
	free(u);
	return out;
}

/* --- the cache (sampler/runtime/rtcache.h) --- */

static void ent_free(struct rtcache_ent *e)
{
	int kind = KEY_KIND(e->key);

	if (kind == K_SCRIPT) {
		struct script *s = (struct script *)e;

		free(s->path);
		free(s->ends);
	} else if (kind == K_FN) {
		struct fn *f = (struct fn *)e;

		free(f->name);
		free(f->pos);
		free(f->btab);
		free(f->bc);
		if (f->script)
			rtcache__unhold(&f->script->e);
	} else {
		struct code *k = (struct code *)e;

		free(k->pos);
		free(k->inl);
		for (size_t i = 0; i < k->nfns; i++)
			if (k->fns[i])
				rtcache__unhold(&k->fns[i]->e);
		free(k->fns);
		if (k->outer)
			rtcache__unhold(&k->outer->e);
	}
	free(e);
}

/* A new entry's header: held once, by its maker. */
static struct rtcache_ent ent_init(pid_t pid, uint64_t a, int kind, size_t bytes)
{
	return (struct rtcache_ent){ .release = ent_free, .key = KEY(a, kind), .pid = pid, .refs = 1,
				     .bytes = bytes, .owner = RT_V8 };
}

static struct rtcache_ent *find(struct v8names *c, pid_t pid, uint64_t addr, int kind)
{
	struct rtcache_ent *e = rtcache__find(c->v.rc, pid, KEY(addr, kind));

	return e && e->owner == RT_V8 ? e : NULL;
}

/* Caches e; 0 or -ENOMEM (e not cached, still its holders'). */
static int insert(struct v8names *c, struct rtcache_ent *e)
{
	int err = rtcache__put(c->v.rc, e);

	if (!err)
		rtcache__trim(c->v.rc);
	return err;
}

RTVIEW_DEFINE(v8names, V8NAMES_DEFAULT_BYTES, RT_V8)

/* --- scripts --- */

static int line_ends(const struct v8ctx *x, struct script *s, uint64_t ends_obj)
{
	uint64_t len;

	if (type_of(x, ends_obj) == x->l->t_fixed_array) {
		uint64_t *raw;
		int32_t n;

		if (rd64(x, ends_obj, x->l->array_length, &len) || !smi(len))
			return -EFAULT;
		n = smi_val(len);
		if (n <= 0 || (uint32_t)n > MAX_LINES)
			return -EBADMSG;
		raw = malloc((size_t)n * 8);
		s->ends = malloc((size_t)n * 4);
		if (!raw || !s->ends || rd(x, ends_obj - 1 + x->l->array_data, raw, (size_t)n * 8)) {
			free(raw);
			free(s->ends);
			s->ends = NULL;
			return raw ? -EFAULT : -ENOMEM;
		}
		for (int32_t i = 0; i < n; i++) {
			if (!smi(raw[i]) || smi_val(raw[i]) < 0 || (i && smi_val(raw[i]) < (int32_t)s->ends[i - 1])) {
				free(raw);
				free(s->ends);
				s->ends = NULL;
				return -EBADMSG;
			}
			s->ends[i] = (uint32_t)smi_val(raw[i]);
		}
		free(raw);
		s->nends = (size_t)n;
		s->e.bytes += (size_t)n * 4;
		return 0;
	} else {
		/* Not computed yet: from the source, as V8 would. */
		uint16_t *u = malloc(V8NAME_SOURCE_MAX * sizeof(*u));
		struct v8str st;
		long n = u ? v8name__string(x->l, x->rd, x->rctx, s->src_ptr, u, V8NAME_SOURCE_MAX, &st) : -ENOMEM;
		size_t k;

		if (n < 0 || st.cut) {
			free(u);
			return n < 0 ? (int)n : -EFBIG;
		}
		k = v8pos__line_ends2((const uint8_t *)u, (size_t)n, NULL, 0);
		s->ends = malloc(k * 4);
		if (!s->ends) {
			free(u);
			return -ENOMEM;
		}
		s->nends = v8pos__line_ends2((const uint8_t *)u, (size_t)n, s->ends, k);
		free(u);
		s->e.bytes += k * 4;
		return 0;
	}
}

/* The script at tagged address a, from the cache when its name and
 * source are still the ones there. A reference the caller owns. */
static struct script *get_script(const struct v8ctx *x, uint64_t a)
{
	uint64_t hdr[8];
	struct script *s;
	int err;

	if (type_of(x, a) != x->l->t_script || x->l->script_line_ends > 56 || rd(x, a - 1, hdr, sizeof(hdr)))
		return NULL;
	s = (struct script *)find(x->c, x->pid, a, K_SCRIPT);
	if (s && s->name_ptr == hdr[x->l->script_name / 8] && s->src_ptr == hdr[x->l->script_source / 8]) {
		rtcache__hold(&s->e);
		return s;
	}
	if (s)
		rtcache__drop(x->c->v.rc, &s->e);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->e = ent_init(x->pid, a, K_SCRIPT, sizeof(*s));
	s->name_ptr = hdr[x->l->script_name / 8];
	s->src_ptr = hdr[x->l->script_source / 8];
	s->line_offset = smi(hdr[x->l->script_line_offset / 8]) ? smi_val(hdr[x->l->script_line_offset / 8]) : 0;
	s->path = str_dup(x, s->name_ptr, V8NAME_PATH_BYTES / 3, &err);
	if (!s->path) {
		free(s);
		return NULL;
	}
	s->e.bytes += strlen(s->path) + 1;
	line_ends(x, s, hdr[x->l->script_line_ends / 8]);
	insert(x->c, &s->e); /* uncached, it is still the caller's */
	return s;
}

/* 1-based line of script offset pos in s, 0 if unknown. */
static int32_t line_of(const struct script *s, int32_t pos)
{
	uint32_t line;

	if (!s || !s->ends || pos < 0 || v8pos__line(s->ends, s->nends, (uint32_t)pos, &line))
		return 0;
	return (int32_t)line + s->line_offset + 1;
}

/* --- functions --- */

/* Name and first position from a ScopeInfo (v8layout.c says how). */
static void scope_info(const struct v8ctx *x, uint64_t si, uint64_t *name, uint64_t *inferred, int32_t *start)
{
	const struct v8layout *l = x->l;
	uint64_t head[3], *s;
	uint32_t flags, k;
	int32_t n;
	size_t idx, want;

	*name = *inferred = 0;
	*start = -1;
	if (l->si_ncontextlocals != 2 || rd(x, si - 1 + 8, head, sizeof(head)) ||
	    (!l->si_flags_raw && !smi(head[0])) || !smi(head[2]))
		return;
	flags = l->si_flags_raw ? (uint32_t)head[0] : (uint32_t)smi_val(head[0]);
	n = smi_val(head[2]);
	if (n < 0 || n > MAX_LOCALS || (flags & l->si_scope_type_mask) == l->si_module_scope)
		return;
	idx = (size_t)l->si_first_vars + (n < l->si_max_inlined_names ? (size_t)n : 1) + (size_t)n;
	if (flags >> l->si_saved_class_bit & 1)
		idx++;
	want = idx + 6;
	s = malloc(want * 8);
	if (!s || rd(x, si - 1 + 8, s, want * 8)) {
		free(s);
		return;
	}
	k = (flags >> l->si_function_var_shift) & 3;
	if (k) {
		if (!smi(s[idx + 1])) {
			free(s);
			return; /* not the layout we think: no name rather than a wrong one */
		}
		*name = s[idx];
		idx += 2;
	}
	if (flags >> l->si_inferred_name_bit & 1)
		*inferred = s[idx++];
	if (l->si_position_slot >= 0 && (size_t)l->si_position_slot + 1 < want)
		idx = (size_t)l->si_position_slot;
	if (smi(s[idx]) && smi(s[idx + 1]) && smi_val(s[idx]) >= 0 && smi_val(s[idx]) <= smi_val(s[idx + 1]))
		*start = smi_val(s[idx]);
	free(s);
}

/* The BytecodeArray behind a function's data (BytecodeArray,
 * InterpreterData, or Sparkplug code holding either), or 0. */
static uint64_t bytecode_of(const struct v8ctx *x, uint64_t d, uint64_t *baseline)
{
	for (int i = 0; i < 3; i++) {
		int t = type_of(x, d);

		if (t < 0)
			return 0;
		if (t == x->l->t_bytecode_array)
			return d;
		if (t == x->l->t_interpreter_data) {
			if (rd64(x, d, x->l->interp_data_bytecode, &d))
				return 0;
		} else if (t == x->l->t_code && baseline && !*baseline) {
			*baseline = d;
			if (rd64(x, d, x->l->code_deopt_data, &d))
				return 0;
		} else {
			return 0;
		}
	}
	return 0;
}

/* Reads the SharedFunctionInfo at a into a new fn (one reference). */
static int read_fn(const struct v8ctx *x, uint64_t a, struct fn **out)
{
	const struct v8layout *l = x->l;
	uint64_t hdr[6], nos, data, ba, base = 0, name = 0, inferred = 0, scr;
	struct fn *f;
	int t = type_of(x, a), err;

	*out = NULL;
	if (t < 0)
		return -EFAULT;
	if (t != l->t_sfi)
		return -ESTALE;
	if (l->sfi_script > 40 || l->sfi_name_or_scope_info > 40 || l->sfi_function_data > 40 ||
	    l->sfi_builtin_id > 40 || rd(x, a - 1, hdr, sizeof(hdr)))
		return -EFAULT;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->e = ent_init(x->pid, a, K_FN, sizeof(*f));
	nos = hdr[l->sfi_name_or_scope_info / 8];
	data = hdr[l->sfi_function_data / 8];
	scr = hdr[l->sfi_script / 8];
	f->start_pos = -1;
	f->st_func = v8_stamp(scr, nos);
	/* 13+: a SMI as function data is also a function not compiled yet;
	 * a builtin has its id */
	if (l->sfi_builtin_id >= 0)
		f->builtin = smi(hdr[l->sfi_builtin_id / 8]) && smi_val(hdr[l->sfi_builtin_id / 8]) >= 0;
	else
		f->builtin = smi(data);
	if (type_of(x, nos) == l->t_scope_info)
		scope_info(x, nos, &name, &inferred, &f->start_pos);
	else if (heap_object(nos))
		name = nos;
	f->name = str_dup(x, name, V8NAME_NAME_CHARS, &err);
	if (f->name && !f->name[0]) {
		free(f->name);
		f->name = str_dup(x, inferred, V8NAME_NAME_CHARS, &err);
	}
	if (!f->name) {
		ent_free(&f->e);
		return -ENOMEM;
	}
	f->e.bytes += strlen(f->name) + 1;
	ba = bytecode_of(x, data, &base);
	if (ba) {
		uint64_t pt;

		f->st_interp = v8_stamp(ba, 0);
		if (!rd64(x, ba, l->bytecode_positions, &pt) &&
		    !byte_array(x, pt, MAX_TABLE, &f->pos, &f->npos))
			f->e.bytes += f->npos;
	}
	if (base) {
		uint64_t tab, blen;
		uint32_t size = 0, flags = 0;

		if (!rd(x, base - 1 + l->code_size, &size, 4) && !rd(x, base - 1 + l->code_flags, &flags, 4))
			f->st_base = v8_stamp(base, (uint64_t)size << 8 | ((flags >> l->kind_shift) & l->kind_mask));
		if (ba && !rd64(x, base, l->code_positions, &tab) &&
		    !byte_array(x, tab, MAX_TABLE, &f->btab, &f->nbtab) && !rd64(x, ba, l->array_length, &blen) &&
		    smi(blen) && smi_val(blen) > 0 && (uint32_t)smi_val(blen) <= MAX_TABLE) {
			f->nbc = (size_t)smi_val(blen);
			f->bc = malloc(f->nbc);
			if (!f->bc || rd(x, ba - 1 + l->bytecode_data, f->bc, f->nbc)) {
				free(f->bc);
				f->bc = NULL;
				f->nbc = 0;
			}
			f->e.bytes += f->nbtab + f->nbc;
		}
	}
	f->script = get_script(x, scr);
	*out = f;
	return 0;
}

static uint32_t st_interp(const struct fn *f)
{
	return f->st_interp;
}

static uint32_t st_base(const struct fn *f)
{
	return f->st_base;
}

static uint32_t st_func(const struct fn *f)
{
	return f->st_func;
}

/* The fn of a, cached or read; a reference the caller owns. stamp_of
 * picks which stamp must match (NULL: any, an object reached through
 * another verified one). */
static int get_fn(const struct v8ctx *x, uint64_t a, uint32_t (*stamp_of)(const struct fn *), uint32_t stamp,
		  struct fn **out)
{
	struct fn *f = (struct fn *)find(x->c, x->pid, a, K_FN);
	int err;

	/* A JS builtin (Array.prototype.sort) runs in the builtins like an
	 * interpreted frame, but its bytecode slots hold no bytecode: its
	 * stamp is noise. Builtins' functions are made once, at start-up. */
	if (f && (!stamp_of || stamp_of(f) == stamp || (stamp_of == st_interp && f->builtin))) {
		x->c->v.hits++;
		rtcache__hold(&f->e);
		*out = f;
		return 0;
	}
	x->c->v.misses++;
	err = read_fn(x, a, &f);
	if (err)
		return err;
	if (stamp_of && stamp_of(f) != stamp && !(stamp_of == st_interp && f->builtin)) {
		ent_free(&f->e);
		return -ESTALE;
	}
	insert(x->c, &f->e); /* in place of any older one; uncached, still the caller's */
	*out = f;
	return 0;
}

/* --- optimized code --- */

static int read_code(const struct v8ctx *x, uint64_t a, struct code **out)
{
	const struct v8layout *l = x->l;
	uint64_t dd, pt, hdr[10], len, sfi, lits, inl;
	uint32_t size = 0, flags = 0;
	struct code *k;
	int t = type_of(x, a), n, err;

	*out = NULL;
	if (t < 0)
		return -EFAULT;
	if (t != l->t_code)
		return -ESTALE;
	if (rd64(x, a, l->code_deopt_data, &dd) || rd64(x, a, l->code_positions, &pt) ||
	    rd(x, a - 1 + l->code_size, &size, 4) || rd(x, a - 1 + l->code_flags, &flags, 4))
		return -EFAULT;
	if (!v8layout__fixed_array(l, type_of(x, dd)) || rd64(x, dd, l->array_length, &len) || !smi(len) ||
	    smi_val(len) <= l->dd_inlining_positions || l->dd_inlining_positions >= 10 || l->dd_sfi >= 10 ||
	    l->dd_literals >= 10 || l->dd_inlined_count >= 10 ||
	    rd(x, dd - 1 + l->array_data, hdr, sizeof(hdr)))
		return -EBADMSG;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->e = ent_init(x->pid, a, K_CODE, sizeof(*k));
	/* CodeKind: ... BASELINE, MAGLEV, TURBOFAN_JS, in that order in
	 * every version with Maglev (v8dbg has only the first) */
	k->maglev = ((flags >> l->kind_shift) & l->kind_mask) == l->kind_baseline + 1;
	sfi = hdr[l->dd_sfi];
	if (l->dd_sfi_wrapper >= 0 && rd64(x, sfi, l->dd_sfi_wrapper, &sfi))
		sfi = 0; /* (get_fn refuses it) */
	k->stamp = v8_stamp(sfi, (uint64_t)size << 8 | ((flags >> l->kind_shift) & l->kind_mask));
	err = get_fn(x, sfi, NULL, 0, &k->outer);
	if (!err)
		err = byte_array(x, pt, MAX_TABLE, &k->pos, &k->npos);
	n = smi(hdr[l->dd_inlined_count]) ? smi_val(hdr[l->dd_inlined_count]) : -1;
	if (!err && (n < 0 || n > MAX_INLINED))
		err = -EBADMSG;
	/* Each inlined function is the literal its InliningPosition names:
	 * TurboFan puts them first, in inlining order; Maglev (13.6) names
	 * whichever literal holds the function, the outer one's own included,
	 * so any index of the array may be one. The positions are read
	 * whatever the inlined-function count says, as V8 names an inlined
	 * frame from them alone: 13.6's count was 0 for code whose positions
	 * named an inlined parseSite (CI, stop 51: the frame then read as its
	 * caller, at parseSite's line). */
	if (!err) {
		lits = hdr[l->dd_literals];
		inl = hdr[l->dd_inlining_positions];
		/* Code that inlined nothing may hold no array there. */
		int e = byte_array(x, inl, MAX_INLINED * 16 * 16, &k->inl, &k->ninl);

		k->ninl /= 16;
		if (e && n > 0)
			err = e;
	}
	if (!err && k->ninl > 0) {
		uint64_t *v = NULL;
		size_t nl = 0;

		if (rd64(x, lits, l->array_length, &len) || !smi(len) || smi_val(len) < n)
			err = -EFAULT;
		if (!err) {
			nl = smi_val(len) < MAX_LITERALS ? (size_t)smi_val(len) : MAX_LITERALS;
			v = malloc(nl * 8);
			k->fns = calloc(nl, sizeof(*k->fns));
			if (!v || !k->fns)
				err = -ENOMEM;
			else if (rd(x, lits - 1 + l->array_data, v, nl * 8))
				err = -EFAULT;
		}
		if (!err) {
			k->nfns = nl;
			for (size_t i = 0; i < k->ninl; i++) {
				int32_t fid;

				memcpy(&fid, k->inl + i * 16 + 8, 4);
				/* strong or weak (tag 3) references */
				if (fid >= 0 && (size_t)fid < nl && !k->fns[fid] && (v[fid] & 3) != 0)
					get_fn(x, (v[fid] & ~3ull) | 1, NULL, 0, &k->fns[fid]);
			}
		}
		free(v);
	}
	if (err) {
		ent_free(&k->e);
		return err;
	}
	k->e.bytes += k->npos + k->ninl * 16 + k->nfns * sizeof(*k->fns);
	*out = k;
	return 0;
}

static int get_code(const struct v8ctx *x, uint64_t a, uint32_t stamp, struct code **out)
{
	struct code *k = (struct code *)find(x->c, x->pid, a, K_CODE);
	int err;

	if (k && k->stamp == stamp) {
		x->c->v.hits++;
		*out = k;
		return 0;
	}
	x->c->v.misses++;
	if (k)
		rtcache__drop(x->c->v.rc, &k->e);
	err = read_code(x, a, &k);
	if (err)
		return err;
	if (k->stamp != stamp) {
		ent_free(&k->e);
		return -ESTALE;
	}
	err = insert(x->c, &k->e);
	if (err) {
		ent_free(&k->e);
		return err;
	}
	rtcache__unhold(&k->e); /* the cache's hold keeps it until the next call */
	*out = k;
	return 0;
}

/* --- frames --- */

static void emit(struct v8name_frame *o, const struct fn *f, int32_t pos)
{
	o->name = f->name[0] ? f->name : V8NAME_ANONYMOUS;
	o->path = f->script && f->script->path ? f->script->path : "";
	o->start_line = line_of(f->script, f->start_pos);
	o->line = pos >= 0 ? line_of(f->script, pos) : 0;
	o->fn = KEY_ADDR(f->e.key);
}

/* The script offset of bytecode offset bc of f, or its start. */
static int32_t bc_pos(const struct fn *f, int64_t bc)
{
	uint64_t raw;

	if (f->pos && !v8pos__find(f->pos, f->npos, bc, &raw, NULL) && v8pos__script_offset(raw) >= 0)
		return v8pos__script_offset(raw);
	return -1;
}

int v8names__frame(struct v8names *c, pid_t pid, const struct v8layout *l, const struct v8file *file,
		   v8_read_fn rdf, void *rctx, const struct v8_frame *fr, bool ret,
		   struct v8name_frame *out, int max)
{
	struct v8ctx x = { c, pid, l, file, rdf, rctx };
	uint64_t a = V8_OBJ_ADDR(fr->obj) | 1, raw;
	struct fn *f = NULL;
	struct code *k = NULL;
	int64_t look, at;
	int32_t bc, pos;
	int err, n = 0;

	if (max < 1)
		return -EINVAL;
	rtcache__mark(c->v.rc); /* what earlier calls handed out is read */
	switch (V8_OBJ_TYPE(fr->obj)) {
	case V8_FT_INTERP:
		err = get_fn(&x, a, st_interp, fr->stamp, &f);
		if (err)
			break;
		bc = (int32_t)fr->off - (l->bytecode_data - 1);
		pos = bc_pos(f, bc < 0 ? -1 : bc);
		emit(&out[n++], f, pos < 0 ? f->start_pos : pos);
		break;
	case V8_FT_BASELINE:
		err = get_fn(&x, a, st_base, fr->stamp, &f);
		if (err)
			break;
		pos = -1;
		if (f->btab && f->bc && !v8pos__baseline(f->btab, f->nbtab, f->bc, f->nbc, file->bc_sizes,
							file->nbytecodes, fr->off, &bc))
			pos = bc_pos(f, bc);
		emit(&out[n++], f, pos < 0 ? f->start_pos : pos);
		break;
	case V8_FT_FUNC:
		err = get_fn(&x, a, st_func, fr->stamp, &f);
		if (!err)
			emit(&out[n++], f, -1);
		break;
	case V8_FT_OPT:
		err = get_code(&x, a, fr->stamp, &k);
		if (err)
			break;
		/* TurboFan records positions only where it must unless V8 is
		 * profiled: a return address's entry is its call's only when it
		 * is right before it; else the frame is the function alone. The
		 * leaf takes the entry in force, as V8's profiler does. Maglev
		 * records one at the start of each node's code: a call's entry
		 * is in force over the whole of it (its arguments' moves). */
		look = (int64_t)fr->off - (ret && fr->off ? 1 : 0);
		if (v8pos__find(k->pos, k->npos, look, &raw, &at) ||
		    (ret && !k->maglev && look - at > V8NAME_CALL_BYTES)) {
			emit(&out[n++], k->outer, -1);
			break;
		}
		/* innermost first: each inlined function, then where it was inlined */
		for (int guard = 0; n < max - 1 && guard < MAX_INLINED; guard++) {
			int32_t id = v8pos__inlining_id(raw), fid;
			uint64_t next;

			if (id < 0 || (size_t)id >= k->ninl)
				break;
			memcpy(&next, k->inl + (size_t)id * 16, 8);
			memcpy(&fid, k->inl + (size_t)id * 16 + 8, 4);
			if (fid < 0 || (size_t)fid >= k->nfns || !k->fns[fid] || v8pos__inlining_id(next) >= id) {
				/* a chain we cannot follow: the function alone */
				n = 0;
				raw = 0;
				break;
			}
			emit(&out[n++], k->fns[fid], v8pos__script_offset(raw));
			raw = next;
		}
		emit(&out[n++], k->outer, raw ? v8pos__script_offset(raw) : -1);
		break;
	default:
		err = -EINVAL;
	}
	if (f)
		rtcache__unhold(&f->e); /* the cache still holds it: valid until the next call */
	if (err == -ESTALE)
		c->st.stale++;
	else if (err == -EFAULT || err == -ESRCH)
		c->st.err_read++;
	else if (err == -EBADMSG)
		c->st.err_type++;
	if (err)
		return err == -ESRCH ? -EFAULT : err;
	for (int i = 0; i < n; i++)
		c->st.no_line += !out[i].line;
	return n;
}
