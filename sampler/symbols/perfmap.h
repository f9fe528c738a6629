/*
 * perfmap.h - a JIT's perf map (/tmp/perf-PID.map: "START SIZE name" per
 * line, hex numbers), parsed from bytes any local user can write. The
 * parser is bounded (SF_PERFMAP_* caps), never follows the file's lead
 * beyond a line, and makes names safe to show: control bytes become '?'.
 */
#ifndef PROFFS_PERFMAP_H
#define PROFFS_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At most this many symbols per map (memory: 24 bytes each + names). */
#define PERFMAP_MAX_SYMS 262144

struct perfmap;

/*
 * Parses len bytes at buf (taken over: freed with the map or on error) into
 * *out, the caller's (perfmap__free). Lines longer than
 * SF_PERFMAP_LINE_MAX and lines not in the format are skipped; *long_lines
 * (may be NULL) gets how many were too long. Stops at deadline_ns
 * (CLOCK_MONOTONIC, 0 = none) with -ETIMEDOUT. Returns 0, -ENOMEM,
 * -ETIMEDOUT or -EFBIG (more than PERFMAP_MAX_SYMS symbols).
 */
int perfmap__parse(char *buf, size_t len, int64_t deadline_ns, struct perfmap **out,
		   size_t *long_lines);

/* Bytes the map holds (its share of the daemon's memory). */
size_t perfmap__bytes(const struct perfmap *m);

/* Name of the symbol covering addr (later lines win), or NULL. The
 * string lives as long as m. */
const char *perfmap__lookup(const struct perfmap *m, uint64_t addr);

void perfmap__free(struct perfmap *m);

#endif
