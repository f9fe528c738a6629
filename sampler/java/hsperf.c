/*
 * hsperf.c - a counter in a JVM's perf data (hsperf.h).
 *
 * The layout is HotSpot's PerfDataPrologue then PerfDataEntry records
 * (the format jstat reads; stable since JDK 1.4.2, version 2.0):
 *
 *   prologue  0 magic (0xcafec0c0, big-endian bytes), 4 byte order
 *             (1: little), 5 major, 6 minor, 7 accessible, 8 used,
 *             12 overflow, 16 modification time, 24 entry offset,
 *             28 entry count
 *   entry     0 length, 4 name offset, 8 vector length, 12 type ('J':
 *             long), 13 flags, 14 units, 15 variability, 16 data
 *             offset; offsets from the entry's start
 */
#include <errno.h>
#include <string.h>

#include "sampler/java/hsperf.h"

#define ENTRY_HDR 20

static uint32_t u32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return v;
}

int hsperf__used(const uint8_t *b, size_t n, uint32_t *used)
{
	static const uint8_t magic[4] = { 0xca, 0xfe, 0xc0, 0xc0 };
	uint32_t u;

	*used = 0;
	if (n < HSPERF_PROLOGUE || memcmp(b, magic, 4) || b[4] != 1 || b[5] != 2)
		return -EPROTO;
	if (!b[7])
		return -EAGAIN;
	u = u32(b + 8);
	if (u < HSPERF_PROLOGUE || u > HSPERF_MAX)
		return -EPROTO;
	*used = u;
	return 0;
}

int hsperf__find(const uint8_t *b, size_t n, const char *name, uint32_t *off)
{
	size_t len = strlen(name), at;
	uint32_t count;

	*off = 0;
	if (n < HSPERF_PROLOGUE || n > HSPERF_MAX)
		return -EPROTO;
	at = u32(b + 24);
	count = u32(b + 28);
	/* every entry takes at least its header */
	if (count > n / ENTRY_HDR)
		return -EPROTO;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t elen, noff, vlen, doff;

		if (at < HSPERF_PROLOGUE || at > n || n - at < ENTRY_HDR)
			return -EPROTO;
		elen = u32(b + at);
		noff = u32(b + at + 4);
		vlen = u32(b + at + 8);
		doff = u32(b + at + 16);
		if (elen < ENTRY_HDR || elen > n - at || noff < ENTRY_HDR || noff >= elen ||
		    doff >= elen)
			return -EPROTO;
		if (elen - noff > len && !memcmp(b + at + noff, name, len + 1) && vlen == 0 &&
		    b[at + 12] == 'J') {
			if (elen - doff < 8)
				return -EPROTO;
			*off = (uint32_t)(at + doff);
			return 0;
		}
		at += elen;
	}
	return -ENOENT;
}
