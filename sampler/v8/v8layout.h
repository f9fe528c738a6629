/*
 * v8layout.h - where a V8 build keeps what a JS frame walker and namer
 * read: the file's own v8dbg_* values (v8file.h), plus the holes its
 * metadata leaves (fields renamed or dropped from it by accident, and
 * what it never described: ScopeInfo's flag bits, the BytecodeArray's
 * position table), filled from a small table per V8 minor version.
 * A minor without a row is refused, never guessed; a row is checked
 * against every value the file does have.
 *
 * 64-bit builds without pointer compression (node's): tagged values are
 * 8 bytes, a SMI's 32-bit value is in the upper half.
 */
#ifndef PROFFS_V8LAYOUT_H
#define PROFFS_V8LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/v8.h"
#include "sampler/v8/v8file.h"

struct v8layout {
	int major, minor;
	/* Frame slots, bytes from fp */
	int fp_context, fp_function, fp_bytecode_array, fp_bytecode_offset;
	/* HeapObject, Map */
	int map, map_instance_type;
	/* JSFunction; jsf_dispatch (13+): jsf_code holds no Code but a u32
	 * handle of the process's dispatch table, whose entry does */
	int jsf_shared, jsf_code, jsf_dispatch;
	/* SharedFunctionInfo; sfi_builtin_id >= 0 (13+): a builtin's id is
	 * the SMI there (>= 0), else a SMI as function data says builtin */
	int sfi_function_data, sfi_name_or_scope_info, sfi_script, sfi_builtin_id;
	/* Script */
	int script_source, script_name, script_line_offset, script_line_ends;
	/* Strings */
	int first_nonstring_type, string_rep_mask, string_enc_mask;
	int seq_tag, cons_tag, sliced_tag, thin_tag, one_byte_tag;
	int string_length, seq_one_chars, seq_two_chars, cons_first, cons_second;
	int sliced_parent, sliced_offset, thin_actual;
	/* FixedArray, ByteArray, WeakFixedArray: length (SMI) and data */
	int array_length, array_data;
	/* BytecodeArray: the bytecodes start at bytecode_data; the frame's
	 * offset slot holds offset + bytecode_data - 1 */
	int bytecode_data, bytecode_positions;
	/* InterpreterData */
	int interp_data_bytecode;
	/* Code: instructions at a pointer (code_start_ptr >= 0) or inline at
	 * code_start_inline; baseline code keeps its BytecodeArray where
	 * optimized code keeps deoptimization data, and its pc -> bytecode
	 * table where optimized code keeps source positions */
	int code_start_ptr, code_start_inline, code_size, code_flags;
	int code_deopt_data, code_positions;
	unsigned kind_mask, kind_shift, kind_baseline;
	/* DeoptimizationData (a FixedArray) indexes; dd_sfi_wrapper >= 0
	 * (13+): dd_sfi holds a wrapper with the SharedFunctionInfo there */
	int dd_inlined_count, dd_literals, dd_sfi, dd_inlining_positions, dd_sfi_wrapper;
	/* ScopeInfo: slots (8 bytes) after the map; flags bits */
	int si_first_vars, si_ncontextlocals;
	unsigned si_scope_type_mask, si_module_scope, si_saved_class_bit;
	unsigned si_function_var_shift, si_inferred_name_bit;
	int si_max_inlined_names; /* more locals: their names in a hash table (one slot) */
	/* 13+: the flags a raw uint32 (not a SMI); the start and end
	 * positions in fixed slots from si_position_slot (-1: after the
	 * inferred name) */
	int si_flags_raw, si_position_slot;
	/* Instance types */
	int t_sfi, t_script, t_scope_info, t_bytecode_array, t_byte_array, t_fixed_array;
	int t_code, t_interpreter_data, t_oddball, t_debug_info;
	/* 12+: the same layouts in trusted space (-1: the build has none) */
	int t_trusted_fixed_array, t_protected_fixed_array, t_trusted_byte_array;
};

/* Whether instance type t is an array of tagged values (FixedArray and
 * its trusted-space kin) or of bytes (ByteArray, TrustedByteArray). */
static inline int v8layout__fixed_array(const struct v8layout *l, int t)
{
	return t >= 0 && (t == l->t_fixed_array || t == l->t_trusted_fixed_array ||
			  t == l->t_protected_fixed_array);
}

static inline int v8layout__byte_array(const struct v8layout *l, int t)
{
	return t >= 0 && (t == l->t_byte_array || t == l->t_trusted_byte_array);
}

/*
 * Fills *l for the V8 file f. Returns 0; -EOPNOTSUPP: no row for f's
 * version, or not 64-bit SMIs without pointer compression; -EPROTO: the
 * row disagrees with a value the file has, or the file lacks one the row
 * does not fill (why, if not NULL, says which, in at most whylen bytes).
 * PROFFS_V8_WITHHOLD=MAJOR.MINOR[,MAJOR.MINOR...] in the environment
 * makes those versions unknown (tests of an unknown version).
 */
int v8layout__init(const struct v8file *f, struct v8layout *l, char *why, size_t whylen);

/*
 * The BPF walk's per-process set-up for layout l, with the builtins at
 * file offsets [blob_off, blob_off + blob_len) (v8file's code_off and
 * size) of the file (kdev: the kernel's encoding, ino). By the file, not
 * by address: V8 12+ runs its builtins from a copy of them it maps next
 * to its JIT code, one per isolate (each worker's too). Returns 0, or
 * -ERANGE when an offset does not fit the reads BPF makes.
 */
int v8layout__proc(const struct v8layout *l, uint64_t blob_off, uint64_t blob_len, uint32_t kdev,
		   uint64_t ino, struct v8_proc *p);

#endif
