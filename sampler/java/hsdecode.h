/*
 * hsdecode.h - pure decoders of what HotSpot keeps about its methods and
 * compiled code, over bytes read from a JVM (untrusted: every decoder
 * stays within the length it is given and refuses what HotSpot would
 * never write):
 *
 *  - UNSIGNED5, the variable-length integers of HotSpot's compressed
 *    streams (CompressedReadStream; since JDK 20 the 0 byte is excluded,
 *    x = 1);
 *  - a method's compressed line number table and HotSpot's rule for a
 *    bci's line (Method::line_number_from_bci);
 *  - the PcDesc table of an nmethod and HotSpot's rules for which PcDesc
 *    describes a pc: exact for a return address (pc_desc_at), and for an
 *    interrupted pc AsyncGetCallTrace's (forte.cpp): the exact one if it
 *    has a scope, else the first after it (pc_desc_near(pc + 1));
 *  - a scope (ScopeDesc's header): its sender's offset, its method's
 *    metadata index and its bci.
 *
 * Modified UTF-8 (a Symbol's bytes) to UTF-8 is here too.
 */
#ifndef PROFFS_JAVA_HSDECODE_H
#define PROFFS_JAVA_HSDECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One UNSIGNED5 number at p[*pos] (len bytes in all): 0 and *pos past it;
 * -ENODATA: the stream ends inside it; -EINVAL: an excluded byte. */
int hsu5__read(const uint8_t *p, size_t len, size_t *pos, unsigned x, uint32_t *v);

/* One (bci, line) pair of a line number table, in stream order. */
struct hsline_pair {
	int32_t bci, line;
};

/* A method's line number table, decoded whole: pairs in stream order
 * (HotSpot does not sort them). */
struct hsline {
	uint32_t n;
	struct hsline_pair p[];
};

/* Tables longer than this are refused (65,535 bytecodes at most make
 * 65,535 pairs of at most 11 bytes). */
#define HSLINE_MAX_BYTES (1u << 20)
#define HSLINE_MAX_PAIRS 65536u

/*
 * Decodes the compressed line number table at tab[0..len) up to its 0
 * terminator. Returns a table the caller owns (free()), with *used (if
 * not NULL) the bytes it took, terminator included; or NULL with errno
 * ENODATA (no terminator within len: read more and call again), EINVAL
 * (an excluded byte), E2BIG (more than HSLINE_MAX_PAIRS pairs), ENOMEM.
 */
struct hsline *hsline__decode(const uint8_t *tab, size_t len, unsigned x, size_t *used);

/* HotSpot's line of bci in a method of code_size bytecodes with table t
 * (NULL: the method has none): the pair of that bci, else the last pair
 * of the largest bci below it; -1 when none (or bci outside the code). */
int32_t hsline__line_at(const struct hsline *t, uint32_t code_size, int32_t bci);

/* Where PcDesc's fields lie (from the JVM's tables). */
struct hspc_geo {
	uint32_t size;	      /* sizeof(PcDesc) */
	uint32_t pc_off;      /* _pc_offset (int) */
	uint32_t scope_off;   /* _scope_decode_offset (int) */
};

/*
 * The scope of the pc at offset pc from the code's begin, in the PcDesc
 * array pcs[0..n * g->size): exact (a return address): the PcDesc of
 * that offset; else (the interrupted pc) AsyncGetCallTrace's rule (see
 * above). *scope gets its scope's decode offset (0: a PcDesc without
 * scope), *at its pc offset. Returns 0, -ENOENT (no such PcDesc),
 * -EINVAL (a geometry that does not fit).
 */
int hspc__find(const uint8_t *pcs, size_t n, const struct hspc_geo *g, int32_t pc, bool exact,
	       uint32_t *scope, int32_t *at);

/* A scope's header: sender's decode offset (0: none, the outermost),
 * the metadata index of its method (0: none), its bci (-1: the
 * method's entry). */
struct hsscope {
	uint32_t sender, method;
	int32_t bci;
};

/* The scope at byte offset off of the scopes data d[0..len): 0, -ENOENT
 * (off 0: the serialized null), -ERANGE (off outside), -ENODATA,
 * -EINVAL (see hsu5__read). */
int hsscope__read(const uint8_t *d, size_t len, uint32_t off, unsigned x, struct hsscope *s);

/* Modified UTF-8 (a Symbol's bytes, in[0..n)) into UTF-8 in out[0..cap),
 * NUL-terminated, whole characters only: surrogate pairs joined, the
 * encoded NUL and anything malformed as U+FFFD. Returns the bytes
 * written (NUL not counted); cap must be > 0. */
size_t hsstr__utf8(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
