/*
 * pycode.h - names of another process's CPython code objects: qualified
 * name, file name, first line and line table, read from its memory once
 * and kept in a bounded cache keyed by (pid, code object address).
 *
 * The BPF walk (bpf/python.h) sends, per Python frame, the code object's
 * address, the instruction's byte offset and a stamp of the object's
 * co_filename and co_name pointers and co_firstlineno. An address names
 * an object only while that object lives: the stamp is how a later read
 * knows it still reads the object that was sampled.
 *
 * Not thread-safe: one cache per thread (the sampler's reader).
 */
#ifndef PROFFS_PYCODE_H
#define PROFFS_PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/python/layout.h"
#include "sampler/python/linetable.h"
#include "sampler/runtime/rtcache.h"

/* Code points kept of a name (co_qualname, or 3.10's co_name) and of a
 * file name; the rest is cut (PYCODE_NAME_CUT, PYCODE_FILE_CUT). */
#define PYCODE_NAME_CHARS 1024
#define PYCODE_FILE_CHARS 4096

/* Stand-in for an empty name or file name (CPython allows both: code
 * objects made with replace(), compile(src, "", ...)). */
#define PYCODE_UNNAMED "<unknown>"

/* struct pycode.flags */
#define PYCODE_NAME_CUT 1u   /* the name is its first PYCODE_NAME_CHARS */
#define PYCODE_FILE_CUT 2u   /* the file name is its first PYCODE_FILE_CHARS */
#define PYCODE_NAME_EMPTY 4u /* the object's name is "": qualname is PYCODE_UNNAMED */
#define PYCODE_FILE_EMPTY 8u /* the object's file name is "": filename is PYCODE_UNNAMED */

struct pycode {
	const char *qualname;	  /* co_qualname (3.10: co_name); valid UTF-8, never empty */
	const char *filename;	  /* valid UTF-8, never empty */
	int32_t firstlineno;
	uint32_t stamp;		  /* py_stamp() of the object when read */
	const struct pyline *lines; /* NULL if the table could not be read */
	uint64_t code;		  /* the object's address in pid */
	pid_t pid;
	unsigned flags;		  /* PYCODE_* */
};

struct pycodes_stats {
	uint64_t hits, misses;
	uint64_t stale;	      /* the object read is not the one sampled (-ESTALE) */
	uint64_t err_read;    /* the process or its code object could not be read */
	uint64_t err_string;  /* a name or file name not a compact, ready str */
	uint64_t table_big;   /* line table over PYLINE_MAX_TABLE: kept without lines */
	uint64_t table_bad;   /* line table unreadable or not a table: kept without lines */
	uint64_t cut;	      /* names or file names cut to their PYCODE_*_CHARS */
	/* Its share of the cache (entries, their strings and line tables). */
	struct rtcache_stats cache;
};

struct pycodes;

/* A view of a cache of objects read, its entries RT_PYTHON's (rtcache.h's
 * RTVIEW_DECLARE); of its own, by default this big. */
#define PYCODES_DEFAULT_BYTES (2u << 20)
RTVIEW_DECLARE(pycodes);

/*
 * The code object at address `code` (bit 0, PY_FRAME_ENTRY, is ignored)
 * of process pid, a CPython of layout l, as it was when BPF stamped it
 * `stamp`. A cached entry of that stamp is returned as is; otherwise the
 * object is read with process_vm_readv. On 0, *out points into c: it
 * stays valid until the next pycodes__get, pycodes__forget or
 * pycodes__free on c, or the next use of its shared cache by another
 * runtime (a later call may evict it), and the caller must not
 * free it. On error *out is NULL: -ESTALE, the object now at `code` has
 * another stamp (freed and the address reused: neither its name nor a
 * cached older one is the sampled frame's); -ESRCH, -EPERM, -EFAULT: the
 * process or the object could not be read;
 * -EBADMSG: a name or file name that is not a str this reader takes;
 * -EINVAL: arguments out of range; -ENOMEM.
 * A line table that cannot be had is no error (lines is NULL).
 */
int pycodes__get(struct pycodes *c, pid_t pid, const struct pylayout *l, uint64_t code,
		 uint32_t stamp, const struct pycode **out);

/*
 * The line of the instruction at byte offset instr of pc's code (as BPF
 * sends it: relative to the first code unit; PY_INSTR_NONE if unknown).
 * *line is always set: the instruction's line and 0, or pc->firstlineno
 * and why not the instruction's: -ENOENT (instr is PY_INSTR_NONE, or pc
 * has no line table), -ENODATA (CPython has no line for that
 * instruction), -ERANGE (past the table's end).
 */
int pycode__line(const struct pycode *pc, uint32_t instr, int32_t *line);

/* What pystr__decode says of a str object. */
struct pystr {
	size_t need;	 /* bytes of the object the call needs (-EAGAIN: read these) */
	uint64_t length; /* the str's length in code points */
	size_t chars;	 /* code points decoded into out */
	size_t bytes;	 /* bytes written to out, its NUL not counted */
	bool cut;	 /* fewer than length decoded (max_chars or cap) */
};

/*
 * A CPython str object (layout l) from the bytes obj[0..len) read at its
 * address, as UTF-8 into out[0..cap), NUL-terminated: at most max_chars
 * code points, and only whole characters that fit. Lone surrogates, code
 * points past U+10FFFF, non-ASCII bytes in an ASCII str and NUL become
 * U+FFFD, so out is always valid UTF-8 without inner NULs. Pure: reads
 * only obj[0..len), writes only out and *s (the caller's).
 * Returns 0; -EAGAIN: obj is shorter than s->need bytes (call again with
 * that many); -EINVAL: not a str this reader takes (not compact, not
 * ready, a wchar_t str of 3.10/3.11, a kind or length no str has) or
 * cap == 0; -EOPNOTSUPP: a layout of no known version.
 */
int pystr__decode(const struct pylayout *l, const uint8_t *obj, size_t len, size_t max_chars,
		  char *out, size_t cap, struct pystr *s);

#endif
