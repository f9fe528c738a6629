/*
 * metrics.c - the Prometheus text of /prof/metrics: the tree's render
 * counters, the store's figures, then whatever the embedder appends
 * (the mount's render cache, the daemon's sampler).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fs/tree/tree_int.h"
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

static void header(struct buf *out, const char *name, const char *type,
		   const char *help)
{
	buf__printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(struct buf *out, const char *name, const char *help,
		    uint64_t v)
{
	header(out, name, "counter", help);
	buf__printf(out, "%s %" PRIu64 "\n", name, v);
}

static void gauge(struct buf *out, const char *name, const char *help,
		  uint64_t v)
{
	header(out, name, "gauge", help);
	buf__printf(out, "%s %" PRIu64 "\n", name, v);
}

/* Each counter below is per render kind. */
static void per_kind(struct buf *out, const char *name, const char *help,
		     const uint64_t *v)
{
	header(out, name, "counter", help);
	for (int k = 0; k < RK_N; k++)
		buf__printf(out, "%s{kind=\"%s\"} %" PRIu64 "\n", name,
			    kind_names[k], ld(&v[k]));
}

int tree_metrics__render(struct store *s, const struct tree_counters *c,
			 const struct tree_opts *o, struct buf *out)
{
	struct store_stats st = { 0 };
	int err;

	per_kind(out, "proffs_renders_total", "Files rendered, by kind.", c->renders);
	per_kind(out, "proffs_render_errors_total", "Renders that failed, by kind.", c->errors);
	per_kind(out, "proffs_render_bytes_total", "Bytes rendered, by kind.", c->bytes);

	header(out, "proffs_render_duration_seconds", "histogram",
	       "Time to render a file, by kind.");
	for (int k = 0; k < RK_N; k++) {
		uint64_t cum = 0;

		for (int b = 0; b < RENDER_NBUCKETS; b++) {
			cum += ld(&c->buckets[k][b]);
			buf__printf(out,
				    "proffs_render_duration_seconds_bucket{kind=\"%s\",le=\"%s\"} %" PRIu64 "\n",
				    kind_names[k], bucket_le[b], cum);
		}
		buf__printf(out, "proffs_render_duration_seconds_sum{kind=\"%s\"} %.6f\n",
			    kind_names[k], (double)ld(&c->ns[k]) / 1e9);
		buf__printf(out, "proffs_render_duration_seconds_count{kind=\"%s\"} %" PRIu64 "\n",
			    kind_names[k], cum);
	}
	counter(out, "proffs_merges_total", "Store merges run for renders.", ld(&c->merges));
	header(out, "proffs_merge_seconds_total", "counter", "Time spent in store merges.");
	buf__printf(out, "proffs_merge_seconds_total %.6f\n", (double)ld(&c->merge_ns) / 1e9);
	counter(out, "proffs_lookups_total", "Paths resolved.", ld(&c->resolves));
	counter(out, "proffs_lookups_enoent_total", "Paths that did not resolve.", ld(&c->enoent));
	counter(out, "proffs_listings_total", "Directories listed.", ld(&c->lists));

	err = store__stats(s, &st);
	if (!err) {
		gauge(out, "proffs_store_map_size_bytes", "LMDB map size (the --max-size bound).", st.map_size);
		gauge(out, "proffs_store_used_bytes", "Bytes of the map in use.", st.used_bytes);
		gauge(out, "proffs_store_file_bytes", "Size of the store file on disk.", st.file_bytes);
		gauge(out, "proffs_store_series", "Series stored.", st.nseries);
		gauge(out, "proffs_store_stacks", "Distinct stacks stored.", st.nstacks);
		gauge(out, "proffs_store_locations", "Distinct locations stored.", st.nlocations);
		gauge(out, "proffs_store_strings", "Distinct strings stored.", st.nstrings);
		gauge(out, "proffs_store_blocks", "Sample blocks stored.", st.nblocks);
		gauge(out, "proffs_store_last_commit_timestamp_seconds",
		      "Unix time of the last append (0: none).", (uint64_t)st.last_commit);
		counter(out, "proffs_store_dropped_blocks_total",
			"Blocks deleted by retention or the size bound.", st.dropped_blocks);
	} else {
		pr_debug("metrics: store stats: %s", strerror(-err));
	}
	gauge(out, "proffs_store_version", "Data version of the store.", store__version(s));

	if (o && o->metrics_cb)
		o->metrics_cb(out, o->metrics_ctx);
	/* A store that cannot say its figures still gets the rest. */
	return out->err;
}
