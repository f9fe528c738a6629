/* fake_libpython.c - seeds of fuzz_pyinterp: the objects interp.c looks
 * for, laid out as a real libpython lays them out and agreeing with
 * layout.c's row, in a file of a few KiB (a real libpython is 20 MiB; a
 * truncated one has no sections left). Not built by make; the seeds were
 * made with
 *   for m in 10 12 13; do cc -DMINOR=$m -shared -fPIC -nostdlib -O0 \
 *     -Wl,--build-id -o tests/fuzz/corpus/fuzz_pyinterp/fake3$m.so \
 *     tests/fuzz/fake_libpython.c; strip tests/fuzz/corpus/fuzz_pyinterp/fake3$m.so; done
 * (3.10's has no Py_Version: the fuzzer also names it libpython3.10). */
#include <stdint.h>

struct member { /* PyMemberDef, LP64: 40 bytes */
	const char *name;
	int type;
	int64_t offset;
	int flags;
	const char *doc;
};

struct type { /* PyTypeObject up to tp_members */
	char head[32];
	int64_t tp_basicsize;
	char mid[240 - 40];
	const struct member *tp_members;
	char tail[160];
};

#if MINOR == 10
static const struct member members[] = {
	{ "co_argcount", 1, 16, 1, 0 },	   { "co_flags", 1, 36, 1, 0 },
	{ "co_firstlineno", 1, 40, 1, 0 }, { "co_code", 6, 48, 1, 0 },
	{ "co_filename", 6, 104, 1, 0 },   { "co_name", 6, 112, 1, 0 },
	{ "co_linetable", 6, 120, 1, 0 },  { 0 },
};
struct type PyCode_Type = { .tp_basicsize = 176, .tp_members = members };
char _PyRuntime[1024] = { 1 };
#else
#define HEX (0x03000000 | MINOR << 16 | 0xf0)
static const struct member members[] = {
	{ "co_argcount", 1, 52, 1, 0 },	   { "co_flags", 1, 48, 1, 0 },
	{ "co_firstlineno", 1, 68, 1, 0 }, { "co_filename", 6, 112, 1, 0 },
	{ "co_name", 6, 120, 1, 0 },	   { "co_qualname", 6, 128, 1, 0 },
	{ "co_linetable", 6, 136, 1, 0 },  { 0 },
};
struct type PyCode_Type = { .tp_basicsize = MINOR == 12 ? 192 : 200, .tp_members = members };
const uint64_t Py_Version = HEX;
#if MINOR >= 13
/* _Py_DebugOffsets: the words check_debug() reads (byte offset / 8). */
uint64_t _PyRuntime[64] = {
	[0] = 0x7970677562656478ull, /* "xdebugpy" */
	[1] = HEX,  [23] = 72,	[29] = 8,   [30] = 0,	[31] = 56,  [33] = 70,
	[35] = 112, [36] = 120, [37] = 128, [38] = 136, [39] = 68,  [40] = 52, [43] = 200,
};
#else
char _PyRuntime[1024] = { 1 };
#endif
#endif

void _PyEval_EvalFrameDefault(void)
{
}
