/*
 * retry_after.h - reading a server's Retry-After header line.
 */
#ifndef PROFFS_SAMPLER_PUSH_RETRY_AFTER_H
#define PROFFS_SAMPLER_PUSH_RETRY_AFTER_H

#include <stddef.h>
#include <stdint.h>

/* Longest wait a server may ask for, seconds. */
#define RETRY_AFTER_MAX 3600

/*
 * If the header line b[0, len) (not NUL-terminated, as libcurl hands it
 * over, CRLF included or not) is "Retry-After: N" with N seconds, returns
 * N capped at RETRY_AFTER_MAX; otherwise (another header, an HTTP date,
 * garbage) -1. Reads nothing outside b[0, len).
 */
int64_t retry_after__parse(const char *b, size_t len);

#endif
