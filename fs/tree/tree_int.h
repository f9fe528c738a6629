/*
 * tree_int.h - what tree.c (paths resolved and listed) shares with
 * tree_render.c (files rendered), metrics.c and readme.c (private to the
 * tree; the rest of proffs uses tree.h).
 */
#ifndef PROFFS_TREE_INT_H
#define PROFFS_TREE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/render/render.h"
#include "store/db/store.h"
#include "fs/path/path.h"
#include "fs/tree/tree.h"
#include "fs/tree/stores.h"

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

struct tree {
	struct store *s; /* the first store: its figures are /metrics' */
	struct tstores st;
	struct tree_opts o;
	pthread_mutex_t lock; /* guards the types cache */
	bool types_valid;
	uint64_t types_version;
	char **types;
	size_t ntypes;
	int64_t last_commit; /* of the store at types_version; 0 = unknown */
	int64_t born;        /* tree__new() time: mtime when nothing better */
	struct tree_counters c;
	struct closed *closed; /* open windows' complete minutes (closed.c) */
};

#define CNT_ADD(field, v) __atomic_add_fetch(&(field), (v), __ATOMIC_RELAXED)

/* A store selection built from parsed matchers; regexes compiled. */
struct sel_hold {
	struct store_matcher *m;
	size_t nm;
	struct store_sel sel;
};

/* Builds h from n matchers; the matcher strings stay owned by pm (the
 * query). Returns 0, -ENOENT (a regex the store refuses) or -ENOMEM. */
int sel_build(const char *type, const struct path_matcher *pm, size_t n, struct sel_hold *h);
void sel_release(struct sel_hold *h);

/* The earliest writer's complete mark over every store of t (Unix
 * seconds), at most now (tree.c says more). */
int64_t complete_in_all(struct tree *t, int64_t now);

/* The README served at /README: static text, NUL-terminated. */
extern const char tree_readme_text[];

/* Appends the Prometheus text of /metrics: the tree's counters c, the
 * figures of store s, then whatever o->metrics_cb adds. Returns 0 or
 * -errno (out->err). */
int tree_metrics__render(struct store *s, const struct tree_counters *c,
			 const struct tree_opts *o, struct buf *out);

#endif
