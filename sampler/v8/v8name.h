/*
 * v8name.h - names and lines of the JS frames BPF recorded (bpf/v8.h):
 * function name, script, lines, read from the process's V8 heap when the
 * sample is stored and kept in a bounded cache keyed by (pid, object
 * address), each entry checked by the frame's stamp.
 *
 * V8's GC moves objects: an address names an object only until the next
 * GC that moves it. A frame whose stamp no longer matches the object at
 * its address is stale (-ESTALE, the caller writes `[js: moved]`), never
 * another function's name.
 *
 * Not thread-safe: one cache per thread (the sampler's reader).
 */
#ifndef PROFFS_V8NAME_H
#define PROFFS_V8NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/v8.h"
#include "sampler/v8/v8layout.h"
#include "sampler/v8/v8walk.h"
#include "sampler/runtime/rtcache.h"

/* Code points kept of a function name, bytes of a script name. */
#define V8NAME_NAME_CHARS 512
#define V8NAME_PATH_BYTES 4096
/* Source text scanned for line ends when V8 has not computed them. */
#define V8NAME_SOURCE_MAX (8u << 20)

#define V8NAME_ANONYMOUS "(anonymous)"

/* One frame as named: for optimized code with inlined functions, one per
 * function, innermost first. Strings live in the cache (see below). */
struct v8name_frame {
	const char *name;   /* the function's name, V8NAME_ANONYMOUS if none */
	const char *path;   /* the script's name as V8 has it; "" when none */
	int32_t start_line; /* 1-based first line of the function; 0: unknown */
	int32_t line;	    /* 1-based line of the frame; 0: unknown */
	uint64_t fn;	    /* the SharedFunctionInfo (a location's identity) */
};

struct v8names_stats {
	uint64_t hits, misses;
	uint64_t stale;	   /* the object read is not the one sampled */
	uint64_t err_read; /* the process or an object could not be read */
	uint64_t err_type; /* an object was not what the frame says */
	uint64_t no_line;  /* named, but no line (no table, external source) */
	struct rtcache_stats cache; /* its share of the cache */
};

struct v8names;

/* A view of a cache of objects read, its entries RT_V8's (rtcache.h's
 * RTVIEW_DECLARE); of its own, by default this big. */
#define V8NAMES_DEFAULT_BYTES (4u << 20)
RTVIEW_DECLARE(v8names);

/*
 * Names the JS frame fr of process pid (layout l, file f: its bytecode
 * sizes), reading its memory with rd(rctx, ...). ret: fr's pc is a return
 * address (any frame but the leaf). Writes at most max frames to out.
 * Returns how many (>= 1), or -ESTALE (moved or collected), -EFAULT
 * (unreadable), -EBADMSG (not the objects the frame says), -EINVAL,
 * -ENOMEM. Strings in out stay valid until the next call on c or
 * on its shared cache.
 */
int v8names__frame(struct v8names *c, pid_t pid, const struct v8layout *l, const struct v8file *f,
		   v8_read_fn rd, void *rctx, const struct v8_frame *fr, bool ret,
		   struct v8name_frame *out, int max);

/* process_vm_readv for v8_read_fn; ctx is the pid as (void *)(intptr_t). */
int v8name__read_pid(void *ctx, uint64_t addr, void *buf, size_t len);

/* "name (file)": file is the path below node_modules/, else its base
 * name; "node:..." names kept whole; "" is "<anonymous>". At most cap
 * bytes, NUL included. */
void v8name__display(const char *name, const char *path, char *out, size_t cap);

/* What v8name__string says of a String object. */
struct v8str {
	bool cut;	/* longer than max (what fits is there) */
	bool two_byte;	/* the text had a two-byte part */
};

/*
 * The String at tagged address s into units[0..cap) as UTF-16 code units
 * (one-byte text widened), following cons, thin and sliced strings (at
 * most 32 parts). Returns the units written, or -EBADMSG (not a string
 * this reader takes: external, over depth), -EFAULT. Pure but for rd.
 */
long v8name__string(const struct v8layout *l, v8_read_fn rd, void *ctx, uint64_t s, uint16_t *units,
		    size_t cap, struct v8str *st);

/* UTF-16 units u[0..n) as UTF-8 into out[0..cap), NUL-terminated; lone
 * surrogates and NUL become U+FFFD. Returns the bytes written. */
size_t v8name__utf8(const uint16_t *u, size_t n, char *out, size_t cap);

#endif
