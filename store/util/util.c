#include "store/util/util.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <time.h>

int log_level = LOG_INFO;

void log_msg(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if (level > log_level)
		return;
	fprintf(stderr, "proffs: %s: ", names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A 64-bit multiply-xorshift hash over 8-byte words; quality is plenty for
 * hash tables and inode numbers, and it is fixed forever because on-disk
 * keys depend on it. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 32;
	return x;
}

/* hash64's parts: its start, the step per whole word, the last word
 * (the tail's bytes, low first) and its end. */
static inline uint64_t hash_start(uint64_t seed, size_t n)
{
	return seed ^ (0x9e3779b97f4a7c15ULL * (n + 1));
}

static inline uint64_t hash_step(uint64_t h, const uint8_t *b)
{
	uint64_t w;

	memcpy(&w, b, 8);
	return mix64(h ^ w) + 0x632be59bd9b4e019ULL;
}

static inline uint64_t hash_tail(const uint8_t *b, size_t n)
{
	uint64_t w = 0;

	for (size_t i = 0; i < n; i++)
		w |= (uint64_t)b[i] << (8 * i);
	return w ^ ((uint64_t)n << 56);
}

uint64_t hash64(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = hash_start(seed, n);

	for (; n >= 8; b += 8, n -= 8)
		h = hash_step(h, b);
	return mix64(h ^ hash_tail(b, n));
}

void hash64_pair(const void *p, size_t n, uint64_t seed0, uint64_t seed1, uint64_t out[2])
{
	const uint8_t *b = p;
	uint64_t h0 = hash_start(seed0, n), h1 = hash_start(seed1, n), t;

	/* both chains in one loop: each is a chain of dependent
	 * multiplies, so the two run side by side */
	for (; n >= 8; b += 8, n -= 8) {
		h0 = hash_step(h0, b);
		h1 = hash_step(h1, b);
	}
	t = hash_tail(b, n);
	out[0] = mix64(h0 ^ t);
	out[1] = mix64(h1 ^ t);
}

uint64_t hash_mix64(uint64_t key)
{
	return mix64(key);
}

uint64_t hash_pair64(uint64_t a, uint64_t b)
{
	/* a mixed first: b then lands on a random-looking word, so two
	 * pairs meet only by a 64-bit chance. */
	return mix64(mix64(a + 0x9e3779b97f4a7c15ULL) ^ b);
}

size_t bsearch_u64_upper(const void *base, size_t n, size_t size, size_t off, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t key;

		memcpy(&key, (const char *)base + mid * size + off, sizeof(key));
		if (key <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int read_file_all(const char *path, size_t max, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *d = NULL, *nd;
	size_t n = 0, cap = 0, r;
	int rc = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (n == cap) {
			if (max && cap >= max) {
				rc = -EFBIG;
				goto out;
			}
			cap = cap ? cap * 2 : 65536;
			nd = realloc(d, cap);
			if (!nd) {
				rc = -ENOMEM;
				goto out;
			}
			d = nd;
		}
		r = fread(d + n, 1, cap - n, f);
		n += r;
		if (r == 0) {
			if (ferror(f)) {
				rc = -EIO;
				goto out;
			}
			break;
		}
	}
	*data = d;
	*len = n;
	d = NULL;
out:
	free(d);
	fclose(f);
	return rc;
}

size_t utf8_put(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

size_t varint_put(uint8_t *out, uint64_t v)
{
	size_t i = 0;

	while (v >= 0x80) {
		out[i++] = (uint8_t)v | 0x80;
		v >>= 7;
	}
	out[i++] = (uint8_t)v;
	return i;
}

size_t varint_get(const uint8_t *in, size_t n, uint64_t *v)
{
	uint64_t r = 0;

	for (size_t i = 0; i < n && i < 10; i++) {
		r |= (uint64_t)(in[i] & 0x7f) << (7 * i);
		if (!(in[i] & 0x80)) {
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	case 't': case 'T': mul = 1ULL << 40; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int parse_duration(const char *s, int64_t *secs)
{
	char *end;
	long long v;
	int64_t mul;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 's': mul = 1; break;
	case 'm': mul = 60; break;
	case 'h': mul = 3600; break;
	case 'd': mul = 86400; break;
	case 'w': mul = 7 * 86400; break;
	default: return -EINVAL;
	}
	if (end[1] || v > INT64_MAX / mul)
		return -EINVAL;
	*secs = v * mul;
	return 0;
}

int parse_label(const char *s, char **dup, const char **k, const char **v)
{
	char *d, *eq;

	if (!s || !(eq = strchr(s, '=')) || eq == s)
		return -EINVAL;
	d = strdup(s);
	if (!d)
		return -ENOMEM;
	eq = d + (eq - s);
	*eq = 0;
	*dup = d;
	*k = d;
	*v = eq + 1;
	return 0;
}

int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static atomic_bool heap_kept;
static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;

void heap_keep(bool keep)
{
	if (atomic_load(&heap_kept) == keep)
		return;
	/* The flag and the thresholds change together: a render starting
	 * as the idle switch-off runs must not be left without them. */
	pthread_mutex_lock(&heap_mu);
	if (atomic_load(&heap_kept) != keep) {
		mallopt(M_MMAP_THRESHOLD, keep ? HEAP_KEEP_MMAP_BYTES : HEAP_MMAP_BYTES);
		mallopt(M_TRIM_THRESHOLD, keep ? HEAP_KEEP_TRIM_BYTES : HEAP_TRIM_BYTES);
		atomic_store(&heap_kept, keep);
	}
	pthread_mutex_unlock(&heap_mu);
}

void *zalloc(size_t n)
{
	void *p;

	if (n < HEAP_MMAP_BYTES)
		return calloc(1, n ? n : 1);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void zfree(void *p, size_t n)
{
	if (!p)
		return;
	if (n < HEAP_MMAP_BYTES)
		free(p);
	else
		munmap(p, n);
}

void heap_trim(void)
{
#if !defined(__SANITIZE_ADDRESS__)
	malloc_trim(0);
#endif
}

int64_t now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void fmt_minute(int64_t t, char buf[17])
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	/* strftime: years past 9999 are not a concern, and unlike snprintf it
	 * cannot trip -Wformat-truncation. */
	if (!strftime(buf, 17, "%Y-%m-%dT%H:%M", &tm))
		buf[0] = 0;
}

int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need && ncap <= SIZE_MAX / 2)
		ncap *= 2;
	if (ncap < need || (elem && ncap > SIZE_MAX / elem)) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	np = realloc(*p, ncap * elem);
	if (!np) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	*p = np;
	*cap = ncap;
	return 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

size_t u32_sort_unique(uint32_t *v, size_t n)
{
	size_t o = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), u32_cmp);
	for (size_t i = 1; i < n; i++)
		if (v[i] != v[o])
			v[++o] = v[i];
	return o + 1;
}

int grow_u32(void **p, uint32_t *cap, size_t need, size_t elem)
{
	size_t c = *cap;
	int rc;

	if (need > UINT32_MAX) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	if ((rc = grow(p, &c, need, elem)))
		return rc;
	*cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
	return 0;
}

int self_file_map(unsigned long dev, unsigned long ino, uintptr_t addr, bool shared, uintptr_t *lo,
		  uintptr_t *hi)
{
	char line[4608];
	int err = -ENOENT;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, off, i;
		unsigned int maj, min;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &a, &b, perms, &off, &maj, &min, &i) != 7 ||
		    i != ino || makedev(maj, min) != dev || off != 0 || (perms[3] == 's') != shared ||
		    (addr && (addr < a || addr >= b)))
			continue;
		*lo = a;
		*hi = b;
		err = 0;
		break;
	}
	fclose(f);
	return err;
}
