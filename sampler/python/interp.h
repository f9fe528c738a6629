/*
 * interp.h - is this ELF file a CPython interpreter, which version, and
 * where are the objects a walker starts from: a static `python3.X`
 * executable or a `libpython3.X.so`.
 *
 * A file is CPython when its symbols (.dynsym, else .symtab) define the
 * objects `_PyRuntime` and `PyCode_Type`. The version is `Py_Version`'s
 * value (3.11+); a file without it (3.10) is known by its name
 * (`python3.10`, `libpython3.10.so.1.0`). For 3.13 the start of
 * `_PyRuntime` must be `_Py_DebugOffsets` (cookie "xdebugpy", then the
 * same version). Addresses are link-time (as in the file's symbols; add
 * the load bias of a mapping); "_off" fields are file offsets.
 *
 * Files are untrusted: reads are bounded by the file and its PT_LOAD
 * segments, sizes capped, anything inconsistent refused with -EINVAL.
 */
#ifndef PROFFS_INTERP_H
#define PROFFS_INTERP_H

#include <stddef.h>
#include <stdint.h>

struct pyinterp {
	int major, minor;	  /* 3, 10..13 (also set with -EOPNOTSUPP when known) */
	uint64_t hexversion;	  /* PY_VERSION_HEX (Py_Version); 0 when the name told (3.10) */
	uint64_t runtime;	  /* _PyRuntime */
	uint64_t runtime_size;
	uint64_t runtime_off;	  /* its initialised bytes in the file; 0: none (.bss) */
	uint64_t code_type;	  /* PyCode_Type */
	uint64_t code_type_off;
	uint64_t eval_frame;	  /* _PyEval_EvalFrameDefault; 0 when not a symbol */
	uint64_t eval_frame_size;
	uint64_t debug_offsets;	  /* 3.13+: _Py_DebugOffsets (== runtime); 0 before */
	char build_id[41];	  /* lowercase hex, "" when none */
};

/*
 * Reads the ELF file open at fd (only read, the caller keeps it); name is
 * its path or base name, used only for a version when the file has no
 * Py_Version (may be NULL). Fills *pi. Returns 0; -ENOEXEC: not ELF;
 * -ENOENT: not CPython (no _PyRuntime or PyCode_Type); -EOPNOTSUPP:
 * CPython of an unknown version or one outside 3.10..3.13; -EINVAL:
 * symbols or bytes that contradict each other (a 3.13 without its debug
 * offsets, a version that is not 3.x); -ENOMEM.
 */
int pyinterp__read(int fd, const char *name, struct pyinterp *pi);

/* One entry of a type's member table (PyMemberDef). */
struct pymember {
	char name[32]; /* longer names are refused */
	int32_t type;
	int64_t offset;
};

#define PYINTERP_MAX_MEMBERS 64

/*
 * PyCode_Type's tp_basicsize and member table (tp_members, read from the
 * file: pointers as stored, or their RELATIVE relocation when the stored
 * value is 0), for a file pyinterp__read accepted as pi. m[0..cap) is the
 * caller's; *n is set to the entries read. Returns 0; -EINVAL: a pointer
 * or name outside the file's loaded bytes, or more than cap entries;
 * -ENOEXEC, -ENOMEM.
 */
int pyinterp__code_members(int fd, const struct pyinterp *pi, struct pymember *m, size_t cap,
			   size_t *n, uint64_t *basicsize);

/*
 * The first nwords 64-bit words of _Py_DebugOffsets (3.13+) as the file
 * holds them, into w[0..nwords) (the caller's). Returns 0; -ENOENT: the
 * version has none; -EINVAL: not within the file's bytes; -ENOEXEC.
 */
int pyinterp__debug_offsets(int fd, const struct pyinterp *pi, uint64_t *w, size_t nwords);

#endif
