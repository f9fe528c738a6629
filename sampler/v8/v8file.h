/*
 * v8file.h - does this ELF file carry V8 (node, libnode.so), which
 * version, and what does its post-mortem metadata say.
 *
 * V8 builds (node's always) export `v8dbg_*` symbols: data objects, each
 * an int holding a constant of the build (a field offset, a type id, a
 * frame slot). A file is V8 when it defines `v8dbg_off_fp_function`; its
 * version is `v8::internal::Version::{major_,minor_,build_,patch_}`.
 * Symbols come from .dynsym, then .symtab (node 24 hides C++ symbols
 * from .dynsym). Values in .bss are 0.
 *
 * The embedded builtins (V8's code linked into the file, without FDEs)
 * are found as the first stretch of >= 64 KiB no FDE covers after
 * `v8::internal::Snapshot::DefaultSnapshotBlob()` (Debian's libnode is
 * stripped: no `Builtins_*` names), else by the `Builtins_*` symbols.
 *
 * Files are untrusted: reads are bounded by the file and its segments,
 * anything inconsistent refused.
 */
#ifndef PROFFS_V8FILE_H
#define PROFFS_V8FILE_H

#include <stddef.h>
#include <stdint.h>

/* The v8dbg_* constants used (v8file.c's table names the symbols). */
enum v8d {
	V8D_FP_CONTEXT,
	V8D_FP_FUNCTION,
	V8D_FP_BYTECODE_ARRAY,
	V8D_FP_BYTECODE_OFFSET,
	V8D_SMI_TAG,
	V8D_SMI_TAG_MASK,
	V8D_SMI_SHIFT_SIZE,
	V8D_HEAP_OBJECT_TAG,
	V8D_HEAP_OBJECT_TAG_MASK,
	V8D_FIRST_NONSTRING_TYPE,
	V8D_STRING_ENCODING_MASK,
	V8D_STRING_REP_MASK,
	V8D_SEQ_STRING_TAG,
	V8D_CONS_STRING_TAG,
	V8D_SLICED_STRING_TAG,
	V8D_THIN_STRING_TAG,
	V8D_ONE_BYTE_STRING_TAG,
	V8D_TWO_BYTE_STRING_TAG,
	V8D_HEAP_OBJECT_MAP,
	V8D_MAP_INSTANCE_TYPE,
	V8D_JSF_SHARED,
	V8D_JSF_CODE,
	V8D_SFI_FUNCTION_DATA,
	V8D_SFI_NAME_OR_SCOPE_INFO,
	V8D_SFI_SCRIPT,
	V8D_SCRIPT_SOURCE,
	V8D_SCRIPT_NAME,
	V8D_SCRIPT_LINE_ENDS,
	V8D_STRING_LENGTH,
	V8D_SEQ_ONE_CHARS,
	V8D_SEQ_TWO_CHARS,
	V8D_CONS_FIRST,
	V8D_CONS_SECOND,
	V8D_SLICED_PARENT,
	V8D_SLICED_OFFSET,
	V8D_THIN_ACTUAL,
	V8D_FIXED_ARRAY_LENGTH,
	V8D_FIXED_ARRAY_DATA,
	V8D_BYTECODE_DATA,
	V8D_CODE_INSTR_START,
	V8D_CODE_INSTR_SIZE,
	V8D_CODE_FLAGS,
	V8D_CODE_POSITIONS,
	V8D_CODE_DEOPT_DATA,
	V8D_KIND_MASK,
	V8D_KIND_SHIFT,
	V8D_KIND_BASELINE,
	V8D_T_SFI,
	V8D_T_SCRIPT,
	V8D_T_SCOPE_INFO,
	V8D_T_BYTECODE_ARRAY,
	V8D_T_BYTE_ARRAY,
	V8D_T_FIXED_ARRAY,
	V8D_T_CODE,
	V8D_T_INTERPRETER_DATA,
	V8D_T_ODDBALL,
	V8D_SI_FIRST_VARS,
	V8D_SI_NCONTEXTLOCALS,
	V8D_DD_INLINED_COUNT,
	V8D_DD_LITERALS,
	V8D_DD_SFI,
	V8D_DD_INLINING_POSITIONS,
	V8D_JSF_FEEDBACK_CELL,
	V8D_JSF_PROTOTYPE,
	V8D_T_DEBUG_INFO,
	/* V8 12+: arrays in trusted space (same layout as FixedArray and
	 * ByteArray; each has its own instance type) */
	V8D_T_TRUSTED_FIXED_ARRAY,
	V8D_T_PROTECTED_FIXED_ARRAY,
	V8D_T_TRUSTED_BYTE_ARRAY,
	/* V8 13: deoptimization data holds the SharedFunctionInfo through a
	 * wrapper object */
	V8D_DD_WRAPPED_SFI,
	V8D_SFI_WRAPPER_SHARED,
	V8D_MAX
};

/* A value the file does not have. */
#define V8D_NONE INT32_MIN

#define V8FILE_MAX_BYTECODES 256

struct v8file {
	int major, minor, build, patch;
	int32_t dbg[V8D_MAX];	  /* V8D_NONE where the file has no such symbol */
	unsigned ndbg;		  /* v8dbg_* symbols in the file, used or not */
	uint64_t code_lo, code_hi; /* the embedded builtins, link-time; 0, 0: not found */
	uint64_t code_off;	  /* code_lo's file offset (a mapping's pgoff finds it) */
	uint8_t bc_sizes[3][V8FILE_MAX_BYTECODES]; /* Bytecodes::kBytecodeSizes */
	unsigned nbytecodes;	  /* 0: kBytecodeSizes not found */
	/* class_Code__instruction_start__'s type: "Address" (a pointer to
	 * the instructions, 12+) or "uintptr_t" (they start there, 10.2) */
	int code_start_is_ptr;
	/* v8::internal::IsolateGroup::default_isolate_group_ (13+: where the
	 * JSFunctions' dispatch table is found), link-time; 0: none */
	uint64_t isolate_group;
	int pie;		  /* ET_DYN: link-time addresses need the load bias */
	char build_id[41];	  /* lowercase hex, "" when none */
};

/*
 * Reads the ELF file open at fd (the caller keeps it) or the image
 * img[0..size) into *f. Returns 0; -ENOEXEC: not a 64-bit little-endian
 * ELF; -ENOENT: no V8 in it (no v8dbg_off_fp_function); -EINVAL: V8's
 * symbols outside the file or a version that is no version; -ENOMEM.
 */
int v8file__read(int fd, struct v8file *f);
int v8file__read_mem(const void *img, size_t size, struct v8file *f);

/* Whether f has the value d. */
static inline int v8file__has(const struct v8file *f, enum v8d d)
{
	return f->dbg[d] != V8D_NONE;
}

/* The symbol name (after "v8dbg_") a value comes from, for messages. */
const char *v8file__name(enum v8d d);

#endif
