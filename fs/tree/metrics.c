/*
 * metrics.c - the Prometheus text of /prof/metrics: the tree's render
 * counters, the store's figures, then whatever the embedder appends
 * (the mount's render cache, the daemon's sampler).
 */
#include <errno.h>
#include <string.h>

#include "fs/tree/tree_int.h"
#include "store/util/prom.h"
#include "store/util/util.h"

static const char *const kind_names[RK_N] = {
	[RK_README] = "README",     [RK_METRICS] = "metrics",
	[RK_PB] = "profile.pb",     [RK_FOLDED] = "folded.txt",
	[RK_SVG] = "flamegraph.svg", [RK_TOP] = "top.txt",
};

static const char *const bucket_le[RENDER_NBUCKETS] = {
	"0.001", "0.01", "0.1", "1", "10", "+Inf",
};

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Each counter below is per render kind. */
static void per_kind(struct buf *out, const char *name, const char *help,
		     const uint64_t *v)
{
	prom__family(out, name, PROM_COUNTER, help);
	for (int k = 0; k < RK_N; k++)
		prom__u64_by(out, name, "kind", kind_names[k], ld(&v[k]));
}

int tree_metrics__render(struct store *s, const struct tree_counters *c,
			 const struct tree_opts *o, struct buf *out)
{
	struct store_stats st = { 0 };
	int err;

	per_kind(out, "proffs_renders_total", "Files rendered, by kind.", c->renders);
	per_kind(out, "proffs_render_errors_total", "Renders that failed, by kind.", c->errors);
	per_kind(out, "proffs_render_bytes_total", "Bytes rendered, by kind.", c->bytes);

	prom__family(out, "proffs_render_duration_seconds", PROM_HISTOGRAM,
		     "Time to render a file, by kind.");
	for (int k = 0; k < RK_N; k++) {
		struct prom_label l[2] = { { "kind", kind_names[k] }, { "le", NULL } };
		uint64_t cum = 0;

		for (int b = 0; b < RENDER_NBUCKETS; b++) {
			cum += ld(&c->buckets[k][b]);
			l[1].value = bucket_le[b];
			prom__u64(out, "proffs_render_duration_seconds_bucket", l, 2, cum);
		}
		prom__f64(out, "proffs_render_duration_seconds_sum", l, 1,
			  (double)ld(&c->ns[k]) / 1e9);
		prom__u64(out, "proffs_render_duration_seconds_count", l, 1, cum);
	}
	prom__counter(out, "proffs_merges_total", "Store merges run for renders.", ld(&c->merges));
	prom__counter(out, "proffs_open_window_renders_total",
		      "Renders of a window holding the open minute as its complete minutes and the rest.",
		      ld(&c->open_renders));
	prom__counter(out, "proffs_open_window_kept_total",
		      "Of those, renders whose complete minutes were kept from an earlier read.",
		      ld(&c->closed_hits));
	prom__family(out, "proffs_merge_seconds_total", PROM_COUNTER, "Time spent in store merges.");
	prom__f64(out, "proffs_merge_seconds_total", NULL, 0, (double)ld(&c->merge_ns) / 1e9);
	prom__counter(out, "proffs_lookups_total", "Paths resolved.", ld(&c->resolves));
	prom__counter(out, "proffs_lookups_enoent_total", "Paths that did not resolve.", ld(&c->enoent));
	prom__counter(out, "proffs_listings_total", "Directories listed.", ld(&c->lists));

	err = store__stats(s, &st);
	if (!err) {
		prom__gauge(out, "proffs_store_map_size_bytes", "LMDB map size (the --max-size bound).", st.map_size);
		prom__gauge(out, "proffs_store_used_bytes", "Bytes of the map in use.", st.used_bytes);
		prom__gauge(out, "proffs_store_file_bytes", "Size of the store file on disk.", st.file_bytes);
		prom__gauge(out, "proffs_store_series", "Series stored.", st.nseries);
		prom__gauge(out, "proffs_store_stacks", "Stacks stored.", st.nstacks);
		prom__gauge(out, "proffs_store_locations", "Locations stored.", st.nlocations);
		prom__gauge(out, "proffs_store_strings", "Strings stored.", st.nstrings);
		prom__gauge(out, "proffs_store_blocks", "Sample blocks stored.", st.nblocks);
		prom__gauge(out, "proffs_store_index_bytes",
			    "Memory of the writer's content -> id maps.", st.index_bytes);
		prom__gauge(out, "proffs_store_last_commit_timestamp_seconds",
		      "Unix time of the last append (0: none).", (uint64_t)st.last_commit);
		prom__counter(out, "proffs_store_dropped_blocks_total",
			"Blocks deleted by retention or the size bound.", st.dropped_blocks);
	} else {
		pr_debug("metrics: store stats: %s", strerror(-err));
	}
	prom__gauge(out, "proffs_store_version", "Data version of the store.", store__version(s));

	if (o && o->metrics_cb)
		o->metrics_cb(out, o->metrics_ctx);
	/* A store that cannot say its figures still gets the rest. */
	return out->err;
}
