/*
 * v8pos.c - V8's position tables and line ends (v8pos.h).
 */
#include <errno.h>

#include "sampler/v8/v8pos.h"

/* One base-128 VLQ (low groups first, bit 7: more). */
static int uvlq(const uint8_t *p, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*i >= len)
			return -EINVAL;
		b = p[(*i)++];
		if (shift == 63 && (b & 0x7e))
			return -EINVAL;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

static int svlq(const uint8_t *p, size_t len, size_t *i, int64_t *out)
{
	uint64_t z;
	int err = uvlq(p, len, i, &z);

	*out = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
	return err;
}

int v8pos__find(const uint8_t *tab, size_t len, int64_t off, uint64_t *raw, int64_t *at)
{
	int64_t code = -1, pos = 0;
	size_t i = 0;
	int found = 0;

	if (len > V8POS_MAX_TABLE)
		return -EFBIG;
	while (i < len) {
		int64_t dc, dp;

		if (svlq(tab, len, &i, &dc) || svlq(tab, len, &i, &dp))
			return -EINVAL;
		if (dc < 0)
			dc = -(dc + 1);
		/* Code offsets never go back; positions are 64-bit values. */
		if (dc > INT32_MAX || code + dc > INT32_MAX)
			return -EINVAL;
		code += dc;
		pos = (int64_t)((uint64_t)pos + (uint64_t)dp);
		if (code > off)
			break;
		if (!((uint64_t)pos & 1)) {
			*raw = (uint64_t)pos;
			if (at)
				*at = code;
			found = 1;
		}
	}
	return found ? 0 : -ENOENT;
}

/* The length of the bytecode at bc[i], prefix included; 0 if malformed. */
static unsigned bc_len(const uint8_t *bc, size_t n, size_t i, const uint8_t (*sizes)[256], unsigned nbc)
{
	uint8_t op = bc[i];
	unsigned scale = 0, pre = 0, len;

	if (op < 4) { /* Wide, ExtraWide, DebugBreakWide, DebugBreakExtraWide */
		scale = op & 1 ? 2 : 1;
		pre = 1;
		if (i + 1 >= n)
			return 0;
		op = bc[i + 1];
		if (op < 4)
			return 0;
	}
	if (op >= nbc)
		return 0;
	len = pre + sizes[scale][op];
	return sizes[scale][op] && i + len <= n ? len : 0;
}

int v8pos__baseline(const uint8_t *tab, size_t tlen, const uint8_t *bc, size_t bclen,
		    const uint8_t (*sizes)[256], unsigned nbc, uint32_t pc_off, int32_t *bc_off)
{
	uint64_t end, d;
	size_t ti = 0, at = 0;
	int64_t cur = -1;

	if (tlen > V8POS_MAX_TABLE || bclen > V8POS_MAX_TABLE || nbc > 256)
		return -EFBIG;
	if (uvlq(tab, tlen, &ti, &end))
		return ti >= tlen ? -ERANGE : -EINVAL;
	while (end < pc_off) {
		unsigned n;

		if (ti >= tlen || at >= bclen)
			return -ERANGE;
		if (uvlq(tab, tlen, &ti, &d) || d > UINT32_MAX)
			return -EINVAL;
		n = bc_len(bc, bclen, at, sizes, nbc);
		if (!n)
			return -EINVAL;
		cur = (int64_t)at;
		at += n;
		end += d;
	}
	*bc_off = (int32_t)cur;
	return 0;
}

size_t v8pos__line_ends1(const uint8_t *s, size_t n, uint32_t *ends, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= n || s[i + 1] != '\n'))) {
			if (k < cap)
				ends[k] = (uint32_t)i;
			k++;
		}
	if (k < cap)
		ends[k] = (uint32_t)n;
	return k + 1;
}

size_t v8pos__line_ends2(const uint8_t *w, size_t n, uint32_t *ends, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned c = w[2 * i] | (unsigned)w[2 * i + 1] << 8;
		unsigned next = i + 1 < n ? (unsigned)(w[2 * i + 2] | (unsigned)w[2 * i + 3] << 8) : 0;

		if (c == '\n' || (c == '\r' && next != '\n') || c == 0x2028 || c == 0x2029) {
			if (k < cap)
				ends[k] = (uint32_t)i;
			k++;
		}
	}
	if (k < cap)
		ends[k] = (uint32_t)n;
	return k + 1;
}

int v8pos__line(const uint32_t *ends, size_t n, uint32_t pos, uint32_t *line)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ends[mid] < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n)
		return -ERANGE;
	*line = (uint32_t)lo;
	return 0;
}
