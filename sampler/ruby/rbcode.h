/*
 * rbcode.h - names of another process's Ruby frames: an iseq's label,
 * path and line table, or a C method's name through its method entry's
 * original_id and the VM's symbol table; read with process_vm_readv once
 * and kept in a bounded cache keyed by (pid, address), checked by the
 * stamp BPF sent (bpf/ruby.h).
 *
 * Not thread-safe: one cache per thread (the sampler's reader).
 */
#ifndef PROFFS_RBCODE_H
#define PROFFS_RBCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/ruby.h"
#include "sampler/ruby/rblayout.h"
#include "sampler/ruby/rbline.h"
#include "sampler/runtime/rtcache.h"

/* Bytes kept of a label and of a path (UTF-8, cut at a whole character). */
#define RBCODE_LABEL_MAX 512
#define RBCODE_PATH_MAX 4096

/* struct rbcode.flags */
#define RBCODE_CFUNC 1u /* a C method: label is its name, no path or lines */
#define RBCODE_CUT 2u	/* a label or path was cut to its RBCODE_*_MAX */

struct rbcode {
	const char *label; /* never empty ("<unknown>" stands for "") */
	const char *path;  /* as caller_locations#path says; "" for a C method */
	const char *realpath; /* the absolute path when Ruby knows it, else path */
	int32_t first_lineno;
	uint32_t stamp;
	uint64_t iseq_encoded;	   /* where the code starts (pcs are relative to it) */
	const struct rbline *lines; /* NULL if the table could not be had */
	uint64_t addr;		   /* the iseq's or method entry's address in pid */
	pid_t pid;
	unsigned flags;
};

struct rbcodes_stats {
	uint64_t hits, misses;
	uint64_t stale;	     /* the object read is not the one sampled (-ESTALE) */
	uint64_t err_read;   /* the process or an object could not be read */
	uint64_t err_object; /* an object that is not what it should be (-EBADMSG) */
	uint64_t no_lines;   /* an iseq kept without its line table */
	struct rtcache_stats cache; /* its share of the cache */
};

struct rbcodes;

/* A view of a cache of objects read, its entries RT_RUBY's (rtcache.h's
 * RTVIEW_DECLARE); of its own, by default this big. */
#define RBCODES_DEFAULT_BYTES (2u << 20)
RTVIEW_DECLARE(rbcodes);

/*
 * The object a Ruby frame record names: addr as BPF sent it (flags in
 * its low bits say iseq or C method), in process pid of layout l, whose
 * ruby_global_symbols is at `symbols` (runtime address; 0: C methods
 * cannot be named), stamped `stamp`. On 0, *out points into c and stays
 * valid until the next rbcodes__get, rbcodes__forget or rbcodes__free on
 * c, or the next use of its shared cache by another runtime. On error *out is NULL: -ESTALE (the object now there has another
 * stamp: freed, its address reused); -ESRCH, -EPERM, -EFAULT (could not
 * be read); -EBADMSG (not an iseq / method entry / string this reader
 * takes); -EINVAL; -ENOMEM.
 */
int rbcodes__get(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t symbols,
		 uint64_t addr, uint32_t stamp, const struct rbcode **out);

/*
 * The line of an iseq frame whose pc's low 32 bits BPF sent, by Ruby's
 * calc_pos. *line is always set: the line and 0, or rc->first_lineno
 * and -ENOENT (no table), -ERANGE (pc outside the code), or
 * rbline__at's error.
 */
int rbcode__line(const struct rbcode *rc, uint32_t pc, int32_t *line);

/* ---- pure readers of the objects (fuzzed) ---- */

/* What rbstr__header says of a String's first bytes. */
struct rbstr {
	uint64_t len;
	uint64_t ptr; /* heap: where the bytes are; embedded: 0 */
	size_t at;    /* embedded: the bytes' offset in the object */
};

/* A String's header obj[0..n) (layout l): 0 and *s; -EBADMSG: not a
 * String, or an embedded length past n or the row's mask; -EINVAL: n
 * too short for the header. */
int rbstr__header(const struct rblayout *l, const uint8_t *obj, size_t n, struct rbstr *s);

/* An Array's header likewise: its length, and its elements' address
 * (heap) or offset in obj (embedded, within n). */
struct rbary {
	uint64_t len, ptr;
	size_t at;
};
int rbary__header(const struct rblayout *l, const uint8_t *obj, size_t n, struct rbary *a);

/*
 * in[0..n) as valid UTF-8 without NULs into out[0..cap) (NUL-terminated):
 * invalid sequences and NUL become U+FFFD; only whole characters that
 * fit. Returns the bytes written (NUL not counted); *cut when not all of
 * in fit. cap must be at least 1.
 */
size_t rbstr__utf8(const uint8_t *in, size_t n, char *out, size_t cap, bool *cut);

/* ---- a sample's Ruby frames ---- */

enum rbname_kind {
	RBN_ISEQ = 1,	 /* a method, block, class body, <main>... */
	RBN_CFUNC,	 /* a C method */
	RBN_GC,		 /* [ruby: gc] */
	RBN_STALE,	 /* [ruby: freed]: the object at its address is another now */
	RBN_UNREADABLE,	 /* [ruby: unreadable] */
};

struct rbname {
	int kind;
	const char *label;    /* the method's name, or the marker's text */
	const char *path;     /* caller_locations#path; a C method: its caller's */
	const char *realpath; /* the full path ("" when none) */
	int32_t line;	      /* caller_locations#lineno; 0 when none */
	uint64_t addr;	      /* the object's address (no flags) */
};

#define RBNAME_GC "[ruby: gc]"
#define RBNAME_STALE "[ruby: freed]"
#define RBNAME_UNREADABLE "[ruby: unreadable]"

/*
 * Names the m records rec[0..m) BPF wrote for one sample (newest first)
 * into out[0..m), as caller_locations would: an iseq frame's line by its
 * pc; a C method gets the path and line of the Ruby frame that called it
 * (the nearest older iseq frame). Strings point into c: valid until the
 * next call on c (the entries one naming uses are not evicted during it,
 * even past the budget). Markers are counted in c's stats (stale, err_*).
 */
void rbcodes__name(struct rbcodes *c, pid_t pid, const struct rblayout *l, uint64_t symbols,
		   const struct rb_frame *rec, int m, struct rbname *out);

/*
 * "label (file)" into out[0..cap): file is the path below a gems folder
 * (".../gems/rack-2.2.3/lib/rack.rb" -> "rack-2.2.3/lib/rack.rb") or
 * below Ruby's library folders (".../lib/ruby/3.1.0/set.rb" -> "set.rb",
 * vendor_ruby/ and site_ruby/ likewise), a built-in's "<internal:...>"
 * as it is, else the base name; "label" alone when path is empty.
 */
void rbcode__display(const char *label, const char *path, char *out, size_t cap);

#endif
