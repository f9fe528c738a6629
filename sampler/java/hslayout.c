/*
 * hslayout.c - the fields we read, by name from a JVM's tables
 * (hslayout.h).
 *
 * A name may list alternatives, "a|b": the first the table has wins
 * (types likewise: "nmethod|CompiledMethod", the class that held the
 * field in that release). What a field holds is read from its type
 * string: a pointer ("address", "Method*"), an integer of a known
 * width ("int", "u2", "int16_t"), or a type the table sizes (an enum
 * such as CodeBlobKind). Embedded structs (CodeHeap::_memory is a
 * VirtualSpace) only give their offset.
 *
 * What the tables cannot say are the x86-64 interpreter frame slots
 * (frame_x86.hpp, JDK 9+: method at rbp-24, bcp at rbp-64). The tables do
 * export the two slots next to them (sender sp -1, last sp -2 words):
 * when those are as frame_x86.hpp has them, so are the rest; else the
 * JVM is refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sampler/java/hslayout.h"

enum want { W_PTR = 1, W_INT = 2, W_ANY = 3, W_EMBED = 4 };

struct ctx {
	const struct vmtables *t;
	char *why;
	size_t whylen;
	int err;
};

static void fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->err)
		return; /* the first reason is the one reported */
	c->err = -EPROTO;
	if (c->why && c->whylen) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->whylen, fmt, ap);
		va_end(ap);
	}
}

/* The k-th alternative of "a|b|c" into buf; false past the last. */
static bool alt(const char *names, int k, char *buf, size_t cap)
{
	const char *p = names, *e;

	for (; k > 0; k--) {
		p = strchr(p, '|');
		if (!p)
			return false;
		p++;
	}
	e = strchr(p, '|');
	if (!e)
		e = p + strlen(p);
	if ((size_t)(e - p) >= cap)
		return false;
	memcpy(buf, p, (size_t)(e - p));
	buf[e - p] = 0;
	return true;
}

static const struct {
	const char *name;
	uint8_t size;
	bool sign;
} ints[] = {
	{ "int", 4, true },	       { "jint", 4, true },	       { "int32_t", 4, true },
	{ "int16_t", 2, true },	       { "short", 2, true },	       { "jshort", 2, true },
	{ "u2", 2, false },	       { "uint16_t", 2, false },       { "jushort", 2, false },
	{ "unsigned short", 2, false }, { "u4", 4, false },	       { "uint32_t", 4, false },
	{ "juint", 4, false },	       { "unsigned int", 4, false },   { "uint", 4, false },
	{ "u1", 1, false },	       { "uint8_t", 1, false },	       { "jubyte", 1, false },
	{ "unsigned char", 1, false }, { "bool", 1, false },	       { "u8", 8, false },
	{ "uint64_t", 8, false },      { "julong", 8, false },	       { "size_t", 8, false },
	{ "uintptr_t", 8, false },     { "intptr_t", 8, true },	       { "int64_t", 8, true },
	{ "jlong", 8, true },	       { "long", 8, true },
};

/* What a field of type string ts holds. */
static bool kind_of(const struct ctx *c, const char *ts, struct hsf *f)
{
	const struct vmt_type *ty;
	size_t n = strlen(ts);

	if (!strcmp(ts, "address") || (n && ts[n - 1] == '*')) {
		f->size = 8;
		f->ptr = true;
		return true;
	}
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (!strcmp(ts, ints[i].name)) {
			f->size = ints[i].size;
			f->sign = ints[i].sign;
			return true;
		}
	/* An enum or typedef the table sizes (CodeBlobKind: 1). */
	ty = vmtables__type(c->t, ts);
	if (ty && (ty->size == 1 || ty->size == 2 || ty->size == 4 || ty->size == 8)) {
		f->size = (uint8_t)ty->size;
		return true;
	}
	return false;
}

static uint64_t type_size(struct ctx *c, const char *name)
{
	const struct vmt_type *ty = vmtables__type(c->t, name);

	if (!ty) {
		fail(c, "no type %s", name);
		return 0;
	}
	if (!ty->size || ty->size > HSL_MAX_CLASS) {
		fail(c, "type %s of size %llu", name, (unsigned long long)ty->size);
		return 0;
	}
	return ty->size;
}

/* The instance field types.names (alternatives each), or an absent one
 * when !needed. */
static struct hsf fld(struct ctx *c, const char *types, const char *names, enum want w,
		      bool needed)
{
	struct hsf f = { .off = -1 };
	char tn[64], fn[64];

	for (int i = 0; alt(names, i, fn, sizeof(fn)); i++)
		for (int k = 0; alt(types, k, tn, sizeof(tn)); k++) {
			const struct vmt_field *e = vmtables__field(c->t, tn, fn);
			uint64_t cls;

			if (!e)
				continue;
			if (e->is_static) {
				fail(c, "%s::%s is static", tn, fn);
				return f;
			}
			if (w == W_EMBED) {
				f.size = 0;
			} else if (!kind_of(c, e->type_string, &f) || (f.ptr && !(w & W_PTR)) ||
				   (!f.ptr && !(w & W_INT))) {
				fail(c, "%s::%s has type '%s'", tn, fn, e->type_string);
				return (struct hsf){ .off = -1 };
			}
			cls = type_size(c, tn);
			if (!cls)
				return (struct hsf){ .off = -1 };
			if (e->offset > cls || f.size > cls - e->offset) {
				fail(c, "%s::%s at %llu outside its %llu bytes", tn, fn,
				     (unsigned long long)e->offset, (unsigned long long)cls);
				return (struct hsf){ .off = -1 };
			}
			f.off = (int32_t)e->offset;
			return f;
		}
	if (needed)
		fail(c, "no field %s::%s", types, names);
	return f;
}

/* The address of a static field (alternatives as fld). */
static uint64_t sfld(struct ctx *c, const char *type, const char *names)
{
	char fn[64];

	for (int i = 0; alt(names, i, fn, sizeof(fn)); i++) {
		const struct vmt_field *e = vmtables__field(c->t, type, fn);

		if (!e)
			continue;
		if (!e->is_static || !e->address) {
			fail(c, "%s::%s is not a static with an address", type, fn);
			return 0;
		}
		return e->address;
	}
	fail(c, "no static %s::%s", type, names);
	return 0;
}

/* The address of a static field that a JVM may lack: 0 then. */
static uint64_t sfld_if(struct ctx *c, const char *type, const char *name)
{
	const struct vmt_field *e = vmtables__field(c->t, type, name);

	return e && e->is_static ? e->address : 0;
}

static int64_t cst(struct ctx *c, const char *names, bool needed)
{
	char n[96];
	int64_t v;

	for (int i = 0; alt(names, i, n, sizeof(n)); i++)
		if (!vmtables__const(c->t, n, &v))
			return v;
	if (needed)
		fail(c, "no constant %s", names);
	return -1;
}

static void check_int(struct ctx *c, const struct hsf *f, const char *what, unsigned minsize)
{
	if (f->off >= 0 && (f->ptr || f->size < minsize))
		fail(c, "%s is not an integer of %u+ bytes", what, minsize);
}

int hslayout__build(const struct vmtables *t, struct hslayout *l, char *why, size_t whylen)
{
	struct ctx c = { t, why, whylen, 0 };
	int64_t sender, last;

	memset(l, 0, sizeof(*l));
	if (why && whylen)
		why[0] = 0;
	/* CodeBlob */
	l->cb_sizeof = type_size(&c, "CodeBlob");
	l->cb_name = fld(&c, "CodeBlob", "_name", W_PTR, true);
	l->cb_size = fld(&c, "CodeBlob", "_size", W_INT, true);
	l->cb_kind = fld(&c, "CodeBlob", "_kind", W_INT, false);
	l->cb_frame_size = fld(&c, "CodeBlob", "_frame_size", W_INT, true);
	l->cb_frame_complete = fld(&c, "CodeBlob", "_frame_complete_offset", W_INT, true);
	l->cb_code_begin = fld(&c, "CodeBlob", "_code_begin|_code_offset", W_ANY, true);
	l->cb_code_end = fld(&c, "CodeBlob", "_code_end|_data_offset", W_ANY, true);
	l->cb_mutable_data = fld(&c, "CodeBlob", "_mutable_data", W_PTR, false);
	l->cb_relocation_size = fld(&c, "CodeBlob", "_relocation_size", W_INT, false);
	l->cb_mutable_data_size = fld(&c, "CodeBlob", "_mutable_data_size", W_INT, false);
	l->kind_nmethod = l->kind_vtable = -1;
	if (l->cb_kind.off >= 0) {
		l->kind_nmethod = cst(&c, "CodeBlobKind::Nmethod", true);
		l->kind_vtable = cst(&c, "CodeBlobKind::Vtable", true);
		if (l->cb_kind.size != 1 || l->kind_nmethod < 0 || l->kind_nmethod > 255 ||
		    l->kind_vtable < 0 || l->kind_vtable > 255)
			fail(&c, "CodeBlob::_kind is not a byte of known values");
	}
	check_int(&c, &l->cb_frame_size, "CodeBlob::_frame_size", 4);
	check_int(&c, &l->cb_frame_complete, "CodeBlob::_frame_complete_offset", 2);
	if (l->cb_code_begin.ptr != l->cb_code_end.ptr)
		fail(&c, "CodeBlob's code begin and end are not both pointers or both offsets");
	/* nmethod */
	l->nm_sizeof = type_size(&c, "nmethod");
	l->nm_method = fld(&c, "nmethod|CompiledMethod", "_method", W_PTR, true);
	l->nm_compile_id = fld(&c, "nmethod", "_compile_id", W_INT, true);
	l->nm_orig_pc = fld(&c, "nmethod", "_orig_pc_offset", W_INT, true);
	l->nm_verified = fld(&c, "nmethod", "_verified_entry_point|_verified_entry_offset", W_ANY,
			     true);
	l->nm_deopt = fld(&c, "nmethod|CompiledMethod",
			  "_deopt_handler_begin|_deopt_handler_offset|_deopt_handler_entry_offset",
			  W_ANY, true);
	l->nm_scopes_data = fld(&c, "nmethod|CompiledMethod", "_scopes_data_begin|_scopes_data_offset",
				W_ANY, true);
	l->nm_scopes_pcs = fld(&c, "nmethod", "_scopes_pcs_offset", W_INT, true);
	l->nm_dependencies = fld(&c, "nmethod", "_dependencies_offset", W_INT, false);
	l->nm_metadata = fld(&c, "nmethod", "_metadata_offset", W_INT, false);
	l->nm_immutable = fld(&c, "nmethod", "_immutable_data", W_PTR, false);
	l->nm_immutable_size = fld(&c, "nmethod", "_immutable_data_size", W_INT, false);
	check_int(&c, &l->nm_compile_id, "nmethod::_compile_id", 4);
	check_int(&c, &l->nm_orig_pc, "nmethod::_orig_pc_offset", 4);
	if (!c.err && (l->nm_deopt.ptr != l->cb_code_begin.ptr ||
		       l->nm_verified.ptr != l->cb_code_begin.ptr))
		fail(&c, "the deopt handler, verified entry and code begin are not all pointers or "
			 "all offsets");
	/* Where PcDescs, scopes and metadata are: two shapes we know. */
	if (!c.err) {
		bool old = l->nm_scopes_data.ptr && l->nm_dependencies.off >= 0 &&
			   l->nm_metadata.off >= 0 && l->nm_immutable.off < 0;
		bool new = !l->nm_scopes_data.ptr && l->nm_immutable.off >= 0 &&
			   l->nm_immutable_size.off >= 0 && l->cb_mutable_data.off >= 0 &&
			   l->cb_relocation_size.off >= 0 && l->cb_mutable_data_size.off >= 0 &&
			   l->nm_metadata.off < 0;

		if (!old && !new)
			fail(&c, "an nmethod layout of neither known shape (scopes, metadata)");
	}
	/* Method and friends */
	l->m_const_method = fld(&c, "Method", "_constMethod", W_PTR, true);
	l->cm_sizeof = type_size(&c, "ConstMethod");
	l->cm_constants = fld(&c, "ConstMethod", "_constants", W_PTR, true);
	l->cm_flags = fld(&c, "ConstMethod", "_flags|_flags._flags", W_INT, true);
	l->cm_code_size = fld(&c, "ConstMethod", "_code_size", W_INT, true);
	l->cm_name_index = fld(&c, "ConstMethod", "_name_index", W_INT, true);
	l->cm_signature_index = fld(&c, "ConstMethod", "_signature_index", W_INT, true);
	l->cm_has_linenumbers = cst(&c,
				    "ConstMethod::_has_linenumber_table|"
				    "ConstMethodFlags::_misc_has_linenumber_table",
				    true);
	check_int(&c, &l->cm_code_size, "ConstMethod::_code_size", 2);
	check_int(&c, &l->cm_name_index, "ConstMethod::_name_index", 2);
	check_int(&c, &l->cm_signature_index, "ConstMethod::_signature_index", 2);
	l->cp_sizeof = type_size(&c, "ConstantPool");
	l->cp_holder = fld(&c, "ConstantPool", "_pool_holder", W_PTR, true);
	l->cp_source_file = fld(&c, "ConstantPool", "_source_file_name_index", W_INT, true);
	l->cp_tags = fld(&c, "ConstantPool", "_tags", W_PTR, true);
	l->cp_length = fld(&c, "ConstantPool", "_length", W_INT, true);
	l->utf8_tag = cst(&c, "JVM_CONSTANT_Utf8", true);
	l->klass_name = fld(&c, "Klass", "_name", W_PTR, true);
	l->sym_length = fld(&c, "Symbol", "_length", W_INT, true);
	l->sym_body = fld(&c, "Symbol", "_body", W_EMBED, true);
	l->u1_data = fld(&c, "Array<u1>", "_data", W_EMBED, true);
	if (!c.err && l->sym_length.size != 2)
		fail(&c, "Symbol::_length is not a u2");
	/* PcDesc */
	l->pc_sizeof = type_size(&c, "PcDesc");
	l->pc_pc_offset = fld(&c, "PcDesc", "_pc_offset", W_INT, true);
	l->pc_scope_offset = fld(&c, "PcDesc", "_scope_decode_offset", W_INT, true);
	/* The code cache */
	l->cc_heaps = sfld(&c, "CodeCache", "_heaps");
	l->cc_low = sfld(&c, "CodeCache", "_low_bound");
	l->cc_high = sfld(&c, "CodeCache", "_high_bound");
	l->heap_memory = fld(&c, "CodeHeap", "_memory", W_EMBED, true);
	l->heap_segmap = fld(&c, "CodeHeap", "_segmap", W_EMBED, true);
	l->heap_log2 = fld(&c, "CodeHeap", "_log2_segment_size", W_INT, true);
	l->vs_low_boundary = fld(&c, "VirtualSpace", "_low_boundary", W_PTR, true);
	l->vs_high_boundary = fld(&c, "VirtualSpace", "_high_boundary", W_PTR, true);
	l->heapblock_sizeof = type_size(&c, "HeapBlock");
	l->ga_len = fld(&c, "GrowableArrayBase|GenericGrowableArray", "_len", W_INT, true);
	l->ga_data = fld(&c, "GrowableArray<int>", "_data", W_PTR, true);
	/* The interpreter, the call stub */
	l->interp_code = sfld(&c, "AbstractInterpreter", "_code");
	l->sq_stub_buffer = fld(&c, "StubQueue", "_stub_buffer", W_PTR, true);
	l->sq_buffer_limit = fld(&c, "StubQueue", "_buffer_limit", W_INT, true);
	l->call_stub_ra = sfld(&c, "StubRoutines", "_call_stub_return_address");
	/* Interpreter frame slots (see the top of this file) */
	sender = cst(&c, "frame::interpreter_frame_sender_sp_offset", true);
	last = cst(&c, "frame::interpreter_frame_last_sp_offset", true);
	if (!c.err && (sender != -1 || last != -2))
		fail(&c, "interpreter frame slots sender sp %lld, last sp %lld (not -1, -2)",
		     (long long)sender, (long long)last);
	l->if_sender_sp = -1;
	l->if_method = -3;
	l->if_bcp = -8;
	/* The version */
	l->v_major = sfld(&c, "Abstract_VM_Version", "_vm_major_version");
	l->v_minor = sfld(&c, "Abstract_VM_Version", "_vm_minor_version");
	l->v_security = sfld(&c, "Abstract_VM_Version", "_vm_security_version");
	l->v_build = sfld(&c, "Abstract_VM_Version", "_vm_build_number");
	l->v_release = sfld(&c, "Abstract_VM_Version", "_s_vm_release");
	/* The unload epoch */
	l->perf_start = sfld_if(&c, "PerfMemory", "_start");
	l->heap = sfld(&c, "Universe", "_collectedHeap");
	l->heap_collections = fld(&c, "CollectedHeap", "_total_collections", W_INT, true);
	if (!c.err && l->heap_collections.size != 4)
		fail(&c, "CollectedHeap::_total_collections is not 4 bytes");
	return c.err;
}

int hsf__get(const struct hsf *f, const uint8_t *obj, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	*v = 0;
	if (f->off < 0 || !f->size || f->size > 8 || (size_t)f->off > len ||
	    f->size > len - (size_t)f->off)
		return -ERANGE;
	memcpy(&x, obj + f->off, f->size);
	if (f->sign && f->size < 8 && (x >> (8 * f->size - 1) & 1))
		x |= ~0ull << (8 * f->size);
	*v = x;
	return 0;
}
