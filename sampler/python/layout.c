/*
 * layout.c - the rows of layout.h and their check.
 *
 * Where the numbers come from: offsetof() of each field, compiled against
 * the headers pyenv installed with 3.10.13, 3.11.7, 3.12.1 and 3.13.0
 * (include/python3.X, internal headers with Py_BUILD_CORE) on x86-64,
 * GCC 12. The 3.11 row also equals what /work/shared/PYTHON.md lists for
 * Debian 12's python3.11 (3.11.2, from that version's DWARF). Within a
 * minor version CPython keeps these structs; the check below is what
 * makes a row safe for a given file (test_pyinterp runs it on each
 * installed version). Sources of each struct (CPython 3.X):
 *   PyCodeObject:  Include/cpython/code.h
 *   PyFrameObject (3.10): Include/cpython/frameobject.h
 *   _PyInterpreterFrame (3.11+): Include/internal/pycore_frame.h
 *   PyThreadState, _PyCFrame: Include/cpython/pystate.h
 *   PyASCIIObject, PyCompactUnicodeObject: Include/cpython/unicodeobject.h
 *   _Py_DebugOffsets (3.13): Include/internal/pycore_runtime.h
 *   _PyRuntimeState (autoTSSkey; gilstate.autoTSSkey before 3.12): same
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sampler/python/layout.h"

static const struct pylayout rows[] = {
	{
		.minor = 10, .rt_tss_key = 584,
		.co_argcount = 16, .co_flags = 36, .co_firstlineno = 40,
		.co_filename = 104, .co_name = 112, .co_qualname = PYL_NONE,
		.co_linetable = 120, .co_code = 48, .co_code_adaptive = PYL_NONE,
		.ts_frame = 24, .ts_cframe = PYL_NONE, .cframe_current_frame = PYL_NONE,
		.fr_code = 32, .fr_previous = 24, .fr_instr = 96,
		.fr_is_entry = PYL_NONE, .fr_owner = PYL_NONE,
		.bytes_sval = 32, .ascii_data = 48, .compact_data = 72,
	},
	{
		.minor = 11, .rt_tss_key = 592,
		.co_argcount = 56, .co_flags = 48, .co_firstlineno = 72,
		.co_filename = 112, .co_name = 120, .co_qualname = 128,
		.co_linetable = 136, .co_code = PYL_NONE, .co_code_adaptive = 184,
		.ts_frame = PYL_NONE, .ts_cframe = 56, .cframe_current_frame = 8,
		.fr_code = 32, .fr_previous = 48, .fr_instr = 56,
		.fr_is_entry = 68, .fr_owner = 69,
		.bytes_sval = 32, .ascii_data = 48, .compact_data = 72,
	},
	{
		.minor = 12, .rt_tss_key = 1544,
		.co_argcount = 52, .co_flags = 48, .co_firstlineno = 68,
		.co_filename = 112, .co_name = 120, .co_qualname = 128,
		.co_linetable = 136, .co_code = PYL_NONE, .co_code_adaptive = 192,
		.ts_frame = PYL_NONE, .ts_cframe = 56, .cframe_current_frame = 0,
		.fr_code = 0, .fr_previous = 8, .fr_instr = 56,
		.fr_is_entry = PYL_NONE, .fr_owner = 70,
		.bytes_sval = 32, .ascii_data = 40, .compact_data = 56,
	},
	{
		.minor = 13, .rt_tss_key = 2160,
		.co_argcount = 52, .co_flags = 48, .co_firstlineno = 68,
		.co_filename = 112, .co_name = 120, .co_qualname = 128,
		.co_linetable = 136, .co_code = PYL_NONE, .co_code_adaptive = 200,
		.ts_frame = 72, .ts_cframe = PYL_NONE, .cframe_current_frame = PYL_NONE,
		.fr_code = 0, .fr_previous = 8, .fr_instr = 56,
		.fr_is_entry = PYL_NONE, .fr_owner = 70,
		.bytes_sval = 32, .ascii_data = 40, .compact_data = 56,
	},
};

const struct pylayout *pylayout__get(int minor)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].minor == minor)
			return &rows[i];
	errno = EOPNOTSUPP;
	return NULL;
}

#define WHY(...) (why ? snprintf(why, whylen, __VA_ARGS__) : 0, -EPROTO)

/* The PyCodeObject fields PyCode_Type lists as members, by name. */
static int check_members(const struct pylayout *l, const struct pymember *m, size_t n,
			 char *why, size_t whylen)
{
	const struct {
		const char *name;
		int16_t off;
	} f[] = {
		{ "co_argcount", l->co_argcount },     { "co_flags", l->co_flags },
		{ "co_firstlineno", l->co_firstlineno }, { "co_filename", l->co_filename },
		{ "co_name", l->co_name },		 { "co_qualname", l->co_qualname },
		{ "co_linetable", l->co_linetable },   { "co_code", l->co_code },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		size_t k;

		if (f[i].off == PYL_NONE)
			continue;
		for (k = 0; k < n && strcmp(m[k].name, f[i].name); k++)
			;
		if (k == n)
			return WHY("3.%d: PyCode_Type lists no member %s", l->minor, f[i].name);
		if (m[k].offset != f[i].off)
			return WHY("3.%d: %s is at %" PRId64 " in the file, %d in our row", l->minor,
				   f[i].name, m[k].offset, f[i].off);
	}
	return 0;
}

/* _Py_DebugOffsets of 3.13.0 (Include/internal/pycore_runtime.h): byte
 * offsets of the words that name our fields. */
static int check_debug(const struct pylayout *l, const uint64_t *w, char *why, size_t whylen)
{
	const struct {
		const char *name;
		unsigned at;
		int16_t off;
	} f[] = {
		{ "thread_state.current_frame", 184, l->ts_frame },
		{ "interpreter_frame.previous", 232, l->fr_previous },
		{ "interpreter_frame.executable", 240, l->fr_code },
		{ "interpreter_frame.instr_ptr", 248, l->fr_instr },
		{ "interpreter_frame.owner", 264, l->fr_owner },
		{ "code_object.filename", 280, l->co_filename },
		{ "code_object.name", 288, l->co_name },
		{ "code_object.qualname", 296, l->co_qualname },
		{ "code_object.linetable", 304, l->co_linetable },
		{ "code_object.firstlineno", 312, l->co_firstlineno },
		{ "code_object.argcount", 320, l->co_argcount },
		{ "code_object.co_code_adaptive", 344, l->co_code_adaptive },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].off == PYL_NONE || w[f[i].at / 8] != (uint64_t)f[i].off)
			return WHY("3.%d: _Py_DebugOffsets.%s is %" PRIu64 ", %d in our row", l->minor,
				   f[i].name, w[f[i].at / 8], f[i].off);
	return 0;
}

int pylayout__check(const struct pylayout *l, int fd, const struct pyinterp *pi, char *why,
		    size_t whylen)
{
	struct pymember m[PYINTERP_MAX_MEMBERS];
	uint64_t basic = 0, w[44];
	size_t n = 0;
	int err;

	if (why && whylen)
		why[0] = 0;
	if (pi->major != 3 || pi->minor != l->minor)
		return WHY("a 3.%d row for a %d.%d file", l->minor, pi->major, pi->minor);
	err = pyinterp__code_members(fd, pi, m, PYINTERP_MAX_MEMBERS, &n, &basic);
	if (err)
		return err;
	err = check_members(l, m, n, why, whylen);
	if (err)
		return err;
	if (l->co_code_adaptive != PYL_NONE && basic != (uint64_t)l->co_code_adaptive)
		return WHY("3.%d: PyCode_Type.tp_basicsize is %" PRIu64 ", the code units start at "
			   "%d in our row",
			   l->minor, basic, l->co_code_adaptive);
	if (l->minor >= 13) {
		err = pyinterp__debug_offsets(fd, pi, w, sizeof(w) / sizeof(w[0]));
		if (err)
			return err;
		err = check_debug(l, w, why, whylen);
	}
	return err;
}
