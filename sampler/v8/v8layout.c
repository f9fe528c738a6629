/*
 * v8layout.c - a V8 file's layout: its v8dbg_* values, and per V8 minor
 * the holes (v8layout.h).
 *
 * Where the holes come from. 10.2 (Debian's node 18) and 11.3
 * (NodeSource's node 20) were read live from stopped processes and
 * checked against what V8 itself reports (test_v8walk: every frame's
 * function and line against new Error().stack). Per field:
 * - JSFunction.code: between raw_feedback_cell and prototype_or_initial_map
 *   (v8dbg has both); 10.2 still exports it (code__CodeT), 11.3 lost it.
 * - Code, 10.2: instructions inline at v8dbg's instruction_start (128),
 *   size and flags from v8dbg; deoptimization data at 16, source
 *   positions at 24 (v8dbg lost both). 11.3: the Code object is V8's
 *   former CodeDataContainer: v8dbg keeps deoptimization data (16) and
 *   positions (24) and lost the rest: the instruction start is a cached
 *   pointer at 40, flags at 48, the size at 56 (after the builtin id and
 *   kind-specific flags, two 16-bit fields V8 merged in 11.4).
 * - BytecodeArray.source_position_table at 32 (after length, constant pool
 *   and handler table; v8dbg lost it in 9.4).
 * - ScopeInfo (a HeapObject since 9.1): flags, parameter count, context
 *   local count, the locals' names (a hash table of them past
 *   kScopeInfoMaxInlinedLocalNamesSize, 75) and infos, then optional
 *   parts in order: saved class variable (flag bit 10), function
 *   variable name and slot (bits 12-13 not NONE), inferred name (bit 14),
 *   position info. Scope type in bits 0-3, MODULE_SCOPE 3 (modules keep a
 *   count before the names: not parsed, a module function has no name).
 * - Script.line_offset at 24; DeoptimizationData indexes 1, 2, 6, 7
 *   (11.3's v8dbg has them: the same in 10.2); InterpreterData's bytecode
 *   array at 8.
 * 12.4 (node 22) and 13.6 (node 24), read from the official builds and
 * live processes (DESIGN-NOTES, "Node 22 and 24"): 12.4 moved
 * JSFunction.code before shared; v8dbg lost the SFI's function data (8)
 * and the Code's deoptimization data (8) and positions (16), and
 * exports the Code's instruction start again, as a pointer (its type,
 * Address, says so); BytecodeArray's positions at 24. 13.6 replaced
 * JSFunction.code by a dispatch handle (v8dispatch.h), keeps a builtin's
 * id at SFI+16, wraps the SFI in deoptimization data (index 7, the SFI
 * at wrapper+8, both in v8dbg), and gave ScopeInfo raw flags, positions
 * in fixed slots 3-4 and MODULE_SCOPE 5.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/v8/v8layout.h"

struct row {
	int major, minor;
	int jsf_code;
	int code_start_ptr; /* -1: inline, at v8dbg's instruction_start */
	int code_size, code_flags; /* -1: v8dbg's */
	int code_deopt_data, code_positions;
	int bytecode_positions, script_line_offset, interp_data_bytecode;
	int sfi_function_data; /* -1: v8dbg's */
	int dd[4]; /* inlined count, literals, sfi, inlining positions */
	unsigned si_saved_class_bit, si_function_var_shift, si_inferred_name_bit;
	unsigned si_scope_type_mask, si_module_scope;
	int si_max_inlined_names;
	/* JSFunction.code just before shared (12.4), else between the
	 * feedback cell and the prototype */
	int jsf_code_before_shared;
	/* what BytecodeArray's positions follow: length + this */
	int bytecode_positions_after_length;
	int jsf_dispatch, sfi_builtin_id, dd_sfi_wrapper; /* (v8layout.h) */
	int si_flags_raw, si_position_slot;
};

#define SCOPE_INFO_11 .si_saved_class_bit = 10, .si_function_var_shift = 12, .si_inferred_name_bit = 14, \
		      .si_scope_type_mask = 15, .si_module_scope = 3, .si_max_inlined_names = 75

static const struct row rows[] = {
	{ .major = 10, .minor = 2, .jsf_code = 48, .code_start_ptr = -1, .code_size = -1, .code_flags = -1,
	  .code_deopt_data = 16, .code_positions = 24, .bytecode_positions = 32, .script_line_offset = 24,
	  .interp_data_bytecode = 8, .sfi_function_data = -1, .dd = { 1, 2, 6, 7 }, SCOPE_INFO_11,
	  .bytecode_positions_after_length = 24, .sfi_builtin_id = -1, .dd_sfi_wrapper = -1, .si_position_slot = -1 },
	{ .major = 11, .minor = 3, .jsf_code = 48, .code_start_ptr = 40, .code_size = 56, .code_flags = 48,
	  .code_deopt_data = 16, .code_positions = 24, .bytecode_positions = 32, .script_line_offset = 24,
	  .interp_data_bytecode = 8, .sfi_function_data = -1, .dd = { 1, 2, 6, 7 }, SCOPE_INFO_11,
	  .bytecode_positions_after_length = 24, .sfi_builtin_id = -1, .dd_sfi_wrapper = -1, .si_position_slot = -1 },
	/* Node 22: v8dbg lost the SFI's function data and the Code's
	 * deoptimization data and positions; the Code's instruction start
	 * is back in it, as a pointer; BytecodeArray's handler table went
	 * to trusted space with it (positions right after the length and
	 * the constant pool) */
	{ .major = 12, .minor = 4, .jsf_code = 24, .code_start_ptr = 40, .code_size = 52, .code_flags = 48,
	  .code_deopt_data = 8, .code_positions = 16, .bytecode_positions = 24, .script_line_offset = 24,
	  .interp_data_bytecode = 8, .sfi_function_data = 8, .dd = { 1, 2, 6, 7 }, SCOPE_INFO_11,
	  .jsf_code_before_shared = 1, .bytecode_positions_after_length = 16, .sfi_builtin_id = -1,
	  .dd_sfi_wrapper = -1, .si_position_slot = -1 },
	/* Node 24: JSFunction holds a dispatch handle where 12.4 had its
	 * Code; the SFI's name and script moved (v8dbg has them), a
	 * builtin's id at 16; deoptimization data wraps the SFI; ScopeInfo's
	 * flags are raw, its positions in fixed slots, and its scope types
	 * renumbered (MODULE 5) */
	{ .major = 13, .minor = 6, .jsf_code = 24, .code_start_ptr = 40, .code_size = 56, .code_flags = 52,
	  .code_deopt_data = 8, .code_positions = 16, .bytecode_positions = 24, .script_line_offset = 24,
	  .interp_data_bytecode = 8, .sfi_function_data = 8, .dd = { 1, 3, 7, 8 }, .si_saved_class_bit = 10,
	  .si_function_var_shift = 12, .si_inferred_name_bit = 14, .si_scope_type_mask = 15, .si_module_scope = 5,
	  .si_max_inlined_names = 75, .jsf_code_before_shared = 1, .bytecode_positions_after_length = 16,
	  .jsf_dispatch = 1, .sfi_builtin_id = 16, .dd_sfi_wrapper = 8, .si_flags_raw = 1, .si_position_slot = 3 },
};

static int fail(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* The file's value d, or the row's v (-1: none) when the file has none;
 * a file value that differs from the row's is an error. */
static int pick(const struct v8file *f, enum v8d d, int v, int *out, char *why, size_t len)
{
	if (v8file__has(f, d)) {
		if (v >= 0 && f->dbg[d] != v)
			return fail(why, len, -EPROTO, "v8dbg_%s is %d, the row says %d", v8file__name(d),
				    f->dbg[d], v);
		*out = f->dbg[d];
		return 0;
	}
	if (v < 0)
		return fail(why, len, -EPROTO, "v8dbg_%s missing", v8file__name(d));
	*out = v;
	return 0;
}

static const struct row *row_for(int major, int minor)
{
	const char *w = getenv("PROFFS_V8_WITHHOLD");
	char me[16];
	size_t n;

	n = (size_t)snprintf(me, sizeof(me), "%d.%d", major, minor);
	/* a list: "11.3,12.4" */
	for (const char *t = w; t && *t; t += strcspn(t, ","), t += *t == ',')
		if (strcspn(t, ",") == n && !strncmp(t, me, n))
			return NULL;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].major == major && rows[i].minor == minor)
			return &rows[i];
	return NULL;
}

int v8layout__init(const struct v8file *f, struct v8layout *l, char *why, size_t len)
{
	const struct row *r = row_for(f->major, f->minor);
	/* Values taken from the file as they are (the row has no opinion). */
	static const struct {
		enum v8d d;
		size_t off;
	} plain[] = {
#define P(d, field) { d, offsetof(struct v8layout, field) }
		P(V8D_FP_CONTEXT, fp_context),
		P(V8D_FP_FUNCTION, fp_function),
		P(V8D_FP_BYTECODE_ARRAY, fp_bytecode_array),
		P(V8D_FP_BYTECODE_OFFSET, fp_bytecode_offset),
		P(V8D_MAP_INSTANCE_TYPE, map_instance_type),
		P(V8D_JSF_SHARED, jsf_shared),
		P(V8D_SFI_NAME_OR_SCOPE_INFO, sfi_name_or_scope_info),
		P(V8D_SFI_SCRIPT, sfi_script),
		P(V8D_SCRIPT_SOURCE, script_source),
		P(V8D_SCRIPT_NAME, script_name),
		P(V8D_SCRIPT_LINE_ENDS, script_line_ends),
		P(V8D_FIRST_NONSTRING_TYPE, first_nonstring_type),
		P(V8D_STRING_REP_MASK, string_rep_mask),
		P(V8D_STRING_ENCODING_MASK, string_enc_mask),
		P(V8D_CONS_STRING_TAG, cons_tag),
		P(V8D_SLICED_STRING_TAG, sliced_tag),
		P(V8D_THIN_STRING_TAG, thin_tag),
		P(V8D_ONE_BYTE_STRING_TAG, one_byte_tag),
		P(V8D_STRING_LENGTH, string_length),
		P(V8D_SEQ_ONE_CHARS, seq_one_chars),
		P(V8D_SEQ_TWO_CHARS, seq_two_chars),
		P(V8D_CONS_FIRST, cons_first),
		P(V8D_CONS_SECOND, cons_second),
		P(V8D_SLICED_PARENT, sliced_parent),
		P(V8D_SLICED_OFFSET, sliced_offset),
		P(V8D_THIN_ACTUAL, thin_actual),
		P(V8D_FIXED_ARRAY_LENGTH, array_length),
		P(V8D_FIXED_ARRAY_DATA, array_data),
		P(V8D_BYTECODE_DATA, bytecode_data),
		P(V8D_SI_FIRST_VARS, si_first_vars),
		P(V8D_SI_NCONTEXTLOCALS, si_ncontextlocals),
		P(V8D_T_SFI, t_sfi),
		P(V8D_T_SCRIPT, t_script),
		P(V8D_T_SCOPE_INFO, t_scope_info),
		P(V8D_T_BYTECODE_ARRAY, t_bytecode_array),
		P(V8D_T_BYTE_ARRAY, t_byte_array),
		P(V8D_T_FIXED_ARRAY, t_fixed_array),
		P(V8D_T_CODE, t_code),
		P(V8D_T_INTERPRETER_DATA, t_interpreter_data),
		P(V8D_T_ODDBALL, t_oddball),
		P(V8D_T_DEBUG_INFO, t_debug_info),
#undef P
	};
	int err = 0, v = 0;

	memset(l, 0, sizeof(*l));
	l->t_trusted_fixed_array = v8file__has(f, V8D_T_TRUSTED_FIXED_ARRAY) ? f->dbg[V8D_T_TRUSTED_FIXED_ARRAY] : -1;
	l->t_protected_fixed_array =
		v8file__has(f, V8D_T_PROTECTED_FIXED_ARRAY) ? f->dbg[V8D_T_PROTECTED_FIXED_ARRAY] : -1;
	l->t_trusted_byte_array = v8file__has(f, V8D_T_TRUSTED_BYTE_ARRAY) ? f->dbg[V8D_T_TRUSTED_BYTE_ARRAY] : -1;
	if (!r)
		return fail(why, len, -EOPNOTSUPP, "no layout for V8 %d.%d", f->major, f->minor);
	l->major = f->major;
	l->minor = f->minor;
	/* 64-bit SMIs (value in the upper half), tagged pointers, no pointer
	 * compression: the only scheme the reads below know. */
	if (f->dbg[V8D_SMI_TAG] != 0 || f->dbg[V8D_SMI_TAG_MASK] != 1 || f->dbg[V8D_SMI_SHIFT_SIZE] != 31 ||
	    f->dbg[V8D_HEAP_OBJECT_TAG] != 1 || f->dbg[V8D_HEAP_OBJECT_TAG_MASK] != 3)
		return fail(why, len, -EOPNOTSUPP, "not 64-bit SMIs without pointer compression");
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]) && !err; i++)
		err = pick(f, plain[i].d, -1, (int *)((char *)l + plain[i].off), why, len);
	if (!err)
		err = pick(f, V8D_HEAP_OBJECT_MAP, 0, &l->map, why, len);
	if (!err)
		err = pick(f, V8D_SEQ_STRING_TAG, 0, &l->seq_tag, why, len);
	if (!err)
		err = pick(f, V8D_SFI_FUNCTION_DATA, r->sfi_function_data, &l->sfi_function_data, why, len);
	if (!err)
		err = pick(f, V8D_JSF_CODE, r->jsf_code, &l->jsf_code, why, len);
	if (!err)
		err = pick(f, V8D_CODE_DEOPT_DATA, r->code_deopt_data, &l->code_deopt_data, why, len);
	if (!err)
		err = pick(f, V8D_CODE_POSITIONS, r->code_positions, &l->code_positions, why, len);
	if (!err)
		err = pick(f, V8D_CODE_INSTR_SIZE, r->code_size, &l->code_size, why, len);
	if (!err)
		err = pick(f, V8D_CODE_FLAGS, r->code_flags, &l->code_flags, why, len);
	if (!err && r->code_start_ptr < 0)
		err = pick(f, V8D_CODE_INSTR_START, -1, &l->code_start_inline, why, len);
	if (!err && r->code_start_ptr >= 0 && v8file__has(f, V8D_CODE_INSTR_START) &&
	    (!f->code_start_is_ptr || f->dbg[V8D_CODE_INSTR_START] != r->code_start_ptr))
		err = fail(why, len, -EPROTO, "the row says instructions at a pointer at %d, v8dbg %s at %d",
			   r->code_start_ptr, f->code_start_is_ptr ? "a pointer" : "inline",
			   f->dbg[V8D_CODE_INSTR_START]);
	if (!err)
		err = pick(f, V8D_DD_INLINED_COUNT, r->dd[0], &l->dd_inlined_count, why, len);
	if (!err)
		err = pick(f, V8D_DD_LITERALS, r->dd[1], &l->dd_literals, why, len);
	if (!err)
		err = pick(f, r->dd_sfi_wrapper >= 0 ? V8D_DD_WRAPPED_SFI : V8D_DD_SFI, r->dd[2], &l->dd_sfi, why, len);
	l->dd_sfi_wrapper = -1;
	if (!err && r->dd_sfi_wrapper >= 0)
		err = pick(f, V8D_SFI_WRAPPER_SHARED, r->dd_sfi_wrapper, &l->dd_sfi_wrapper, why, len);
	if (!err)
		err = pick(f, V8D_DD_INLINING_POSITIONS, r->dd[3], &l->dd_inlining_positions, why, len);
	if (!err)
		err = pick(f, V8D_KIND_MASK, -1, &v, why, len);
	l->kind_mask = (unsigned)v;
	if (!err)
		err = pick(f, V8D_KIND_SHIFT, 0, &v, why, len);
	l->kind_shift = (unsigned)v;
	if (!err)
		err = pick(f, V8D_KIND_BASELINE, -1, &v, why, len);
	l->kind_baseline = (unsigned)v;
	if (err)
		return err;
	/* JSFunction.code lies just before shared (12.4), or between the
	 * feedback cell and the prototype. */
	if (r->jsf_code_before_shared && l->jsf_code + 8 != l->jsf_shared)
		return fail(why, len, -EPROTO, "JSFunction.code %d not before shared %d", l->jsf_code,
			    l->jsf_shared);
	if (!r->jsf_code_before_shared && v8file__has(f, V8D_JSF_FEEDBACK_CELL) &&
	    v8file__has(f, V8D_JSF_PROTOTYPE) &&
	    (l->jsf_code != f->dbg[V8D_JSF_FEEDBACK_CELL] + 8 || l->jsf_code != f->dbg[V8D_JSF_PROTOTYPE] - 8))
		return fail(why, len, -EPROTO, "JSFunction.code %d not between feedback cell %d and prototype %d",
			    l->jsf_code, f->dbg[V8D_JSF_FEEDBACK_CELL], f->dbg[V8D_JSF_PROTOTYPE]);
	/* Optimized code's positions follow its deoptimization data. */
	if (l->code_positions != l->code_deopt_data + 8)
		return fail(why, len, -EPROTO, "Code positions %d not after deoptimization data %d",
			    l->code_positions, l->code_deopt_data);
	l->code_start_ptr = r->code_start_ptr;
	if (r->code_start_ptr >= 0)
		l->code_start_inline = -1;
	l->bytecode_positions = r->bytecode_positions;
	l->script_line_offset = r->script_line_offset;
	l->interp_data_bytecode = r->interp_data_bytecode;
	l->si_saved_class_bit = r->si_saved_class_bit;
	l->si_function_var_shift = r->si_function_var_shift;
	l->si_inferred_name_bit = r->si_inferred_name_bit;
	l->si_scope_type_mask = r->si_scope_type_mask;
	l->si_module_scope = r->si_module_scope;
	l->si_max_inlined_names = r->si_max_inlined_names;
	l->si_flags_raw = r->si_flags_raw;
	l->si_position_slot = r->si_position_slot;
	l->jsf_dispatch = r->jsf_dispatch;
	l->sfi_builtin_id = r->sfi_builtin_id;
	/* The fields every version has kept where the row puts them. */
	if (l->bytecode_positions != l->array_length + r->bytecode_positions_after_length ||
	    l->script_line_offset != l->script_name + 8)
		return fail(why, len, -EPROTO, "BytecodeArray or Script not as the row says");
	return 0;
}

int v8layout__proc(const struct v8layout *l, uint64_t blob_off, uint64_t blob_len, uint32_t kdev,
		   uint64_t ino, struct v8_proc *p)
{
	int jlo = l->jsf_shared < l->jsf_code ? l->jsf_shared : l->jsf_code;
	int clo = l->code_size < l->code_flags ? l->code_size : l->code_flags;
	int slo = l->sfi_script < l->sfi_name_or_scope_info ? l->sfi_script : l->sfi_name_or_scope_info;

	memset(p, 0, sizeof(*p));
	if (l->code_start_ptr >= 0 && l->code_start_ptr < clo)
		clo = l->code_start_ptr;
	if (l->fp_context < -V8_FRAME_BELOW || l->fp_context > -8 || l->fp_function < -V8_FRAME_BELOW ||
	    l->fp_function > -8 || l->fp_bytecode_array < -V8_FRAME_BELOW || l->fp_bytecode_array > -8 ||
	    l->fp_bytecode_offset < -V8_FRAME_BELOW || l->fp_bytecode_offset > -8 || jlo < 0 ||
	    l->jsf_shared - jlo > V8_JSF_READ - 8 || l->jsf_code - jlo > V8_JSF_READ - 8 || clo < 0 ||
	    clo > 255 || jlo > 255 || l->code_size - clo > V8_CODE_READ - 4 ||
	    l->code_flags - clo > V8_CODE_READ - 4 ||
	    (l->code_start_ptr >= 0 && l->code_start_ptr - clo > V8_CODE_READ - 8) ||
	    l->code_start_inline > 65535 || l->kind_mask > 255 || l->kind_shift > 31 ||
	    l->kind_baseline > 255 || slo < 0 || slo > 255 || l->sfi_script - slo > V8_SFI_READ - 8 ||
	    l->sfi_name_or_scope_info - slo > V8_SFI_READ - 8 || !blob_len || !ino)
		return -ERANGE;
	p->blob_off = blob_off;
	p->blob_len = blob_len;
	p->blob_dev = kdev;
	p->blob_ino = ino;
	p->fp_context = (__s8)l->fp_context;
	p->fp_function = (__s8)l->fp_function;
	p->fp_bytecode_array = (__s8)l->fp_bytecode_array;
	p->fp_bytecode_offset = (__s8)l->fp_bytecode_offset;
	p->jsf_read_off = (__u8)jlo;
	p->jsf_shared = (__u8)(l->jsf_shared - jlo);
	p->jsf_code = (__u8)(l->jsf_code - jlo);
	p->code_read_off = (__u8)clo;
	p->code_start = l->code_start_ptr >= 0 ? (__s8)(l->code_start_ptr - clo) : -1;
	p->code_start_inline = l->code_start_ptr >= 0 ? 0 : (__u16)l->code_start_inline;
	p->code_size = (__u8)(l->code_size - clo);
	p->code_flags = (__u8)(l->code_flags - clo);
	p->kind_mask = (__u8)l->kind_mask;
	p->kind_shift = (__u8)l->kind_shift;
	p->kind_baseline = (__u8)l->kind_baseline;
	p->sfi_read_off = (__u8)slo;
	p->sfi_script = (__u8)(l->sfi_script - slo);
	p->sfi_name = (__u8)(l->sfi_name_or_scope_info - slo);
	return 0;
}
