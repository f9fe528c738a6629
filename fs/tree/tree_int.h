/*
 * tree_int.h - what tree.c shares with metrics.c and readme.c (private to
 * the tree; the rest of proffs uses tree.h).
 */
#ifndef PROFFS_TREE_INT_H
#define PROFFS_TREE_INT_H

#include <stdint.h>

#include "fs/render/render.h"
#include "store/db/store.h"
#include "fs/tree/tree.h"

/* What a render produced; the label of the render metrics. */
enum render_kind { RK_README, RK_METRICS, RK_PB, RK_FOLDED, RK_SVG, RK_TOP, RK_N };

#define RENDER_NBUCKETS 6 /* 1 ms, 10 ms, 100 ms, 1 s, 10 s, +Inf */

/* Counters of the tree, updated with relaxed atomics from any thread. */
struct tree_counters {
	uint64_t renders[RK_N], errors[RK_N], bytes[RK_N], ns[RK_N];
	uint64_t buckets[RK_N][RENDER_NBUCKETS]; /* not cumulative */
	uint64_t merges, merge_ns;
	uint64_t open_renders; /* windows rendered as complete minutes + open part */
	uint64_t closed_hits;  /* ...of which the complete minutes came ready */
	uint64_t resolves, enoent, lists;
};

/* The README served at /README: static text, NUL-terminated. */
extern const char tree_readme_text[];

/* Appends the Prometheus text of /metrics: the tree's counters c, the
 * figures of store s, then whatever o->metrics_cb adds. Returns 0 or
 * -errno (out->err). */
int tree_metrics__render(struct store *s, const struct tree_counters *c,
			 const struct tree_opts *o, struct buf *out);

#endif
