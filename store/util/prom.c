/*
 * prom.c - the Prometheus text format writer of prom.h.
 */
#include "store/util/prom.h"

#include <inttypes.h>
#include <string.h>

static const char *const type_names[] = {
	[PROM_COUNTER] = "counter",
	[PROM_GAUGE] = "gauge",
	[PROM_HISTOGRAM] = "histogram",
};

/* Appends s with '\\' and '\n' escaped, and '"' too when quoted (label
 * values; HELP text leaves quotes alone). */
static void put_escaped(struct buf *out, const char *s, int quoted)
{
	const char *run = s;

	for (; *s; s++) {
		const char *esc = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" :
				  quoted && *s == '"' ? "\\\"" : NULL;

		if (!esc)
			continue;
		buf__put(out, run, (size_t)(s - run));
		buf__puts(out, esc);
		run = s + 1;
	}
	buf__put(out, run, (size_t)(s - run));
}

void prom__family(struct buf *out, const char *name, enum prom_type type,
		  const char *help)
{
	buf__printf(out, "# HELP %s ", name);
	put_escaped(out, help, 0);
	buf__printf(out, "\n# TYPE %s %s\n", name, type_names[type]);
}

/* "name{...} " : the part every sample shares. */
static void sample_head(struct buf *out, const char *name,
			const struct prom_label *labels, size_t n)
{
	buf__puts(out, name);
	for (size_t i = 0; i < n; i++) {
		buf__printf(out, "%c%s=\"", i ? ',' : '{', labels[i].name);
		put_escaped(out, labels[i].value, 1);
		buf__puts(out, "\"");
	}
	buf__puts(out, n ? "} " : " ");
}

void prom__u64(struct buf *out, const char *name,
	       const struct prom_label *labels, size_t n, uint64_t v)
{
	sample_head(out, name, labels, n);
	buf__printf(out, "%" PRIu64 "\n", v);
}

void prom__i64(struct buf *out, const char *name,
	       const struct prom_label *labels, size_t n, int64_t v)
{
	sample_head(out, name, labels, n);
	buf__printf(out, "%" PRId64 "\n", v);
}

void prom__f64(struct buf *out, const char *name,
	       const struct prom_label *labels, size_t n, double v)
{
	sample_head(out, name, labels, n);
	buf__printf(out, "%.6f\n", v);
}

void prom__u64_by(struct buf *out, const char *name, const char *label,
		  const char *value, uint64_t v)
{
	struct prom_label l = { label, value };

	prom__u64(out, name, &l, 1, v);
}

void prom__counter(struct buf *out, const char *name, const char *help,
		   uint64_t v)
{
	prom__family(out, name, PROM_COUNTER, help);
	prom__u64(out, name, NULL, 0, v);
}

void prom__gauge(struct buf *out, const char *name, const char *help,
		 uint64_t v)
{
	prom__family(out, name, PROM_GAUGE, help);
	prom__u64(out, name, NULL, 0, v);
}
