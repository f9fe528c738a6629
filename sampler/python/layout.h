/*
 * layout.h - where CPython 3.10-3.13 (x86-64 and other LP64 builds of the
 * default, GIL configuration) keep the fields a frame walker reads: one
 * row per minor version, and a check of a row against an interpreter
 * file's own introspection data before it is trusted.
 */
#ifndef PROFFS_LAYOUT_H
#define PROFFS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/python/interp.h"

/* A field this version does not have. */
#define PYL_NONE (-1)

struct pylayout {
	int minor;
	/* PyCodeObject */
	int16_t co_argcount, co_flags, co_firstlineno;
	int16_t co_filename, co_name, co_qualname; /* co_qualname: 3.11+ */
	int16_t co_linetable;			   /* the line table's bytes object */
	int16_t co_code;			   /* 3.10: bytes object of the code */
	int16_t co_code_adaptive;		   /* 3.11+: the first code unit, inline */
	/* Thread state to its newest Python frame: 3.10 tstate->frame;
	 * 3.11/3.12 tstate->cframe->current_frame; 3.13 tstate->current_frame. */
	int16_t ts_frame, ts_cframe, cframe_current_frame;
	/* The frame: 3.10 PyFrameObject, 3.11+ _PyInterpreterFrame. */
	int16_t fr_code;     /* f_code; 3.13 f_executable */
	int16_t fr_previous; /* 3.10 f_back */
	int16_t fr_instr;    /* 3.10 f_lasti (int, code units); 3.11/3.12
			      * prev_instr (pointer, the last one started);
			      * 3.13 instr_ptr (pointer, the one running) */
	int16_t fr_is_entry; /* 3.11 only (char) */
	int16_t fr_owner;    /* 3.11+ (char); 3 = a C-stack shim (3.12+) */
	/* _PyRuntime's autoTSSkey (a Py_tss_t: int _is_initialized, then the
	 * pthread key): each thread's own thread state is that key's value. */
	int16_t rt_tss_key;
	/* Objects */
	int16_t bytes_sval;	/* PyBytesObject ob_sval */
	int16_t ascii_data;	/* compact ASCII str: data after PyASCIIObject */
	int16_t compact_data;	/* other compact str: after PyCompactUnicodeObject */
};

/* The row for CPython 3.minor, or NULL with errno EOPNOTSUPP. The row is
 * static: it lives as long as the program. */
const struct pylayout *pylayout__get(int minor);

/*
 * Checks the row l against the interpreter file open at fd (pi from
 * pyinterp__read of it): every PyCodeObject field the row names must be
 * in PyCode_Type's member table at the same offset, and for 3.11+ the
 * code units start at tp_basicsize; for 3.13 the code, frame and thread
 * state offsets must equal the file's _Py_DebugOffsets. Returns 0 when
 * all agree; -EPROTO when one differs (why, if not NULL, says which, in
 * at most whylen bytes); the read's -errno when the file cannot tell.
 */
int pylayout__check(const struct pylayout *l, int fd, const struct pyinterp *pi, char *why,
		    size_t whylen);

#endif
