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
/* hash64(p, n, seed0) and hash64(p, n, seed1) in one pass over p, into
 * out[0] and out[1] (two independent hashes of one record: the memo keys). */
void hash64_pair(const void *p, size_t n, uint64_t seed0, uint64_t seed1, uint64_t out[2]);
/* Spreads an integer key over all 64 bits (hash64's final mix), for
 * in-memory tables indexed by the low bits. Not stable API for on-disk
 * data: use hash64 there. */
uint64_t hash_mix64(uint64_t key);
/* One identity of the pair (a, b), for versions made of two versions.
 * Not hash64(&b, 8, a): with an 8-byte input that depends on a ^ b only,
 * so (version 24, second 55) named the same bytes as (25, 54). */
uint64_t hash_pair64(uint64_t a, uint64_t b);

/* In an array of n elements of `size` bytes each, sorted by the uint64_t
 * key at byte offset `off` of each, how many elements have a key <= x: the
 * last of them (the entry covering x in a table of start addresses) is at
 * the result minus one; 0 means none. */
size_t bsearch_u64_upper(const void *base, size_t n, size_t size, size_t off, uint64_t x);

/* LEB128 varints. put returns bytes written (<= 10); get returns bytes
 * read, or 0 if the input is truncated or overlong. */
size_t varint_put(uint8_t *out, uint64_t v);
/* Code point cp (at most U+10FFFF) as UTF-8 into out[0..4); how many
 * bytes. The runtimes' string readers (Python, HotSpot, V8) decode into
 * it: every name that reaches pprof, JSON or the tree is valid UTF-8. */
size_t utf8_put(uint32_t cp, char *out);
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

/* Reads the whole file at path into *data (malloc'd, the caller frees it;
 * set even for an empty file) and its size into *len. max > 0 bounds the
 * size: a file that fills a buffer of max bytes or more is refused with
 * -EFBIG. Returns 0, -errno of fopen, -ENOMEM or -EIO (a read error, e.g.
 * a directory); nothing is returned on failure. */
int read_file_all(const char *path, size_t max, uint8_t **data, size_t *len);

/* Growable arrays. Makes room for need elements of elem bytes in *p,
 * whose capacity is *cap elements, doubling it (from 16); *p is realloc'd
 * (the caller owns and frees it). Returns 0, or -ENOMEM (errno ENOMEM
 * too, for callers that return an id) with *p and *cap unchanged, also
 * when the size would overflow. grow_u32 is for a
 * uint32_t capacity; GROW(arr, &cap, need) picks the one that fits cap
 * and the element size of arr (it evaluates need and cap twice). */
int grow(void **p, size_t *cap, size_t need, size_t elem);
int grow_u32(void **p, uint32_t *cap, size_t need, size_t elem);

/* Sorts v[n] ascending and drops repeats in place; returns the count left. */
size_t u32_sort_unique(uint32_t *v, size_t n);
#define GROW(arr, capp, need)                                                  \
	((size_t)(need) <= *(capp) ? 0 /* the usual case, inline */               \
	 : _Generic((capp), size_t *: grow, uint32_t *: grow_u32)(                \
		   (void **)&(arr), (capp), (need), sizeof(*(arr))))

/* Gives the heap's free pages back to the kernel (glibc's malloc_trim).
 * A no-op under AddressSanitizer: its allocator is not glibc's, and
 * glibc's trim of arenas it never set up faulted (found in make test). */
void heap_trim(void);
/* glibc's thresholds: blocks over HEAP_MMAP_BYTES are mmapped and given
 * back at free, and a heap top over HEAP_TRIM_BYTES free is trimmed,
 * except while heap_keep(true) holds (renders going on), when blocks up
 * to HEAP_KEEP_MMAP_BYTES come from the heap and stay there for the next
 * render to reuse, and up to HEAP_KEEP_TRIM_BYTES of free top stays.
 * Blocks over 1 MiB are mapped even then: kept in the heap they took
 * turns with every other size there, and the heap grew past what renders
 * ever held at once (a busy window read 8 times: 16.6-17 MB peak against
 * 13.6 with them mapped; issue 26), for ~500 more page faults a render. */
#define HEAP_MMAP_BYTES (256 << 10)
#define HEAP_TRIM_BYTES (128 << 10)
#define HEAP_KEEP_MMAP_BYTES (1 << 20)
#define HEAP_KEEP_TRIM_BYTES (32 << 20)
/* Switches between the two (thread-safe; cheap when nothing changes).
 * Switching keeping off does not trim: call heap_trim() after. */
void heap_keep(bool keep);

/* n zeroed bytes whose pages cost memory only once written: mapped
 * anonymous memory past HEAP_MMAP_BYTES, whatever heap_keep says (calloc
 * of a block reused from a kept heap must write every byte of it: a
 * dense map over a store's ids then cost its whole size, not the ids a
 * merge touched). NULL with errno set on failure; free with zfree(p, n)
 * and the same n. */
void *zalloc(size_t n);
void zfree(void *p, size_t n);

/* The mapping of this process, from /proc/self/maps, of the file (dev,
 * ino) from its offset 0 that holds addr (0: the first such mapping) and
 * is shared or private as asked: its range in [*lo, *hi). 0, -ENOENT or
 * -errno. For maps libraries make and do not say where (LMDB's, libelf's):
 * their pages can then be given back (MADV_DONTNEED) once read. */
int self_file_map(unsigned long dev, unsigned long ino, uintptr_t addr, bool shared, uintptr_t *lo,
		  uintptr_t *hi);

/* Current time, Unix seconds and nanoseconds (CLOCK_REALTIME). */
int64_t now_s(void);
int64_t now_ns(void);
/* CLOCK_MONOTONIC in nanoseconds: for intervals and ages (immune to clock
 * steps), never for timestamps that are stored or shown. */
int64_t now_mono_ns(void);

/* Formats t (Unix seconds) as YYYY-MM-DDTHH:MM (UTC) into buf[17]. */
void fmt_minute(int64_t t, char buf[17]);

#endif
