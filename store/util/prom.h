/*
 * prom.h - writing the Prometheus text exposition format (version 0.0.4)
 * into a struct buf: the one writer behind /prof/metrics, whoever adds
 * families to it (the tree, the mount, the daemon).
 *
 * A family is a HELP/TYPE header once, then its samples. Label values are
 * escaped (backslash, double quote, newline) and HELP text too (backslash,
 * newline), as the format requires; names are the caller's constants and
 * must already be valid metric/label names.
 */
#ifndef PROFFS_PROM_H
#define PROFFS_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "store/util/buf.h"

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_label {
	const char *name;
	const char *value;
};

/* "# HELP name help" and "# TYPE name type": once per family. */
void prom__family(struct buf *out, const char *name, enum prom_type type,
		  const char *help);
/* One sample "name{l1="v1",...} v"; labels may be NULL when n is 0. */
void prom__u64(struct buf *out, const char *name,
	       const struct prom_label *labels, size_t n, uint64_t v);
void prom__i64(struct buf *out, const char *name,
	       const struct prom_label *labels, size_t n, int64_t v);
/* Fractional values (seconds) with six decimals. */
void prom__f64(struct buf *out, const char *name,
	       const struct prom_label *labels, size_t n, double v);
/* One sample with a single label: "name{label="value"} v". */
void prom__u64_by(struct buf *out, const char *name, const char *label,
		  const char *value, uint64_t v);

/* A family of one unlabelled sample: header and value. */
void prom__counter(struct buf *out, const char *name, const char *help,
		   uint64_t v);
void prom__gauge(struct buf *out, const char *name, const char *help,
		 uint64_t v);

#endif
