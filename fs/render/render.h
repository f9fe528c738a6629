/*
 * render.h - the text and SVG renderers for the files of a leaf directory.
 * Each takes a profile (or two for a diff) and returns a malloc'd buffer the
 * caller frees. All output is deterministic: the same input gives the same
 * bytes. They return 0 or -errno.
 */
#ifndef PROFFS_RENDER_H
#define PROFFS_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/profile/profile.h"
#include "store/util/buf.h"

/* folded.txt: "comm;root;...;leaf COUNT\n" per distinct stack, sorted by
 * stack; COUNT in the type's counting unit (samples for cpu, microseconds
 * for offcpu, else the display type's value; see render_int.h). Stacks
 * that count 0 are omitted. */
int render__folded(const struct profile *p, struct buf *out);
/* Whether folded.txt gives p's values scaled (off-CPU nanoseconds as
 * microseconds, rounded): then two parts' texts do not sum exactly. */
bool render__folded_scaled(const struct profile *p);
/* Two folded.txt texts as one: their lines merged in folded.txt's order
 * (each text must be in it), the counts of a stack both hold summed. Exact
 * only for counts that render__folded does not scale (samples). Returns 0,
 * -EINVAL for a line that is not "stack COUNT", or -ENOMEM (out->err). */
int render__folded_sum(const char *a, size_t alen, const char *b, size_t blen,
		       struct buf *out);
/* Differential folded: "stack countA countB\n", union of both sides, in
 * folded.txt's unit. */
int render__folded_diff(const struct profile *a, const struct profile *b,
			struct buf *out);
/* top.txt: flat, flat%, sum%, cum, cum%, name; sorted by flat. */
int render__top(const struct profile *p, struct buf *out);
/* flamegraph.svg: self-contained interactive SVG. For a diff profile
 * (samples labelled pprof::base=true) frames are coloured by change. */
int render__svg(const struct profile *p, const char *title, struct buf *out);

#endif
