/*
 * util.h - small helpers every module uses: logging, hashing, varints,
 * flag value parsing. No state beyond the log level.
 */
#ifndef PROFFS_UTIL_H
#define PROFFS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };
extern int log_level; /* default LOG_INFO; PROFFS_DEBUG=1 sets LOG_DEBUG */
void log_msg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define pr_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) \
	do { if (log_level >= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)

/* 64-bit non-cryptographic hash (stable across runs and hosts: inode
 * numbers and on-disk keys depend on it). */
uint64_t hash64(const void *p, size_t n, uint64_t seed);

/* LEB128 varints. put returns bytes written (<= 10); get returns bytes
 * read, or 0 if the input is truncated or overlong. */
size_t varint_put(uint8_t *out, uint64_t v);
size_t varint_get(const uint8_t *in, size_t n, uint64_t *v);
static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Big-endian helpers for LMDB keys (so byte order == numeric order). */
static inline void be32_put(uint8_t *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static inline uint32_t be32_get(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static inline void be64_put(uint8_t *p, uint64_t v) { be32_put(p, v >> 32); be32_put(p + 4, (uint32_t)v); }
static inline uint64_t be64_get(const uint8_t *p) { return (uint64_t)be32_get(p) << 32 | be32_get(p + 4); }

/* Flag values. Each returns 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);      /* 64M, 4G, 1024 */
int parse_duration(const char *s, int64_t *secs);  /* 90s, 15m, 6h, 7d */
/* "k=v" -> k and v pointing into a copy the caller frees via *dup. */
int parse_label(const char *s, char **dup, const char **k, const char **v);

/* Current time, Unix seconds and nanoseconds (CLOCK_REALTIME). */
int64_t now_s(void);
int64_t now_ns(void);

/* Formats t (Unix seconds) as YYYY-MM-DDTHH:MM (UTC) into buf[17]. */
void fmt_minute(int64_t t, char buf[17]);

#endif
