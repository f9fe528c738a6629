/*
 * v8dispatch.c - a V8 13+ process's dispatch table (v8dispatch.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "bpf/v8.h"
#include "sampler/v8/v8dispatch.h"
#include "sampler/v8/v8name.h"

#define RESERVATION (256ull << 20)
#define GROUP_SCAN 0x8000 /* bytes of the IsolateGroup looked at */
#define PROBE 8192	  /* entries looked at for one in use */

static int rd(pid_t pid, uint64_t a, void *buf, size_t n)
{
	return v8name__read_pid((void *)(intptr_t)pid, a, buf, n);
}

/* pid's mappings [a, b), in address order */
struct maps {
	uint64_t (*m)[2];
	size_t n;
};

static int read_maps(pid_t pid, struct maps *ms)
{
	char fn[64], line[512];
	uint64_t a, b, (*m)[2];
	size_t cap = 0;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &a, &b) != 2)
			continue;
		if (ms->n == cap) {
			cap = cap ? 2 * cap : 256;
			m = realloc(ms->m, cap * sizeof(*m));
			if (!m)
				break;
			ms->m = m;
		}
		ms->m[ms->n][0] = a;
		ms->m[ms->n][1] = b;
		ms->n++;
	}
	fclose(f);
	return 0;
}

/* Whether a mapping starts at w and adjacent ones run to a boundary at
 * w + 256 MiB. */
static bool reservation_at(const struct maps *ms, uint64_t w)
{
	size_t lo = 0, hi = ms->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->m[mid][0] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == ms->n || ms->m[lo][0] != w)
		return false;
	for (; lo < ms->n && ms->m[lo][1] <= w + RESERVATION; lo++) {
		if (ms->m[lo][1] == w + RESERVATION)
			return true;
		if (lo + 1 < ms->n && ms->m[lo + 1][0] != ms->m[lo][1])
			return false;
	}
	return false;
}

/* Whether the first entry in use of a table at base holds a Code. */
static bool decodes(pid_t pid, const struct v8layout *l, uint64_t base)
{
	uint64_t e[2 * 256], map;
	uint16_t t;

	for (uint64_t i = 0; i < PROBE; i += 256) {
		if (rd(pid, base + i * 16, e, sizeof(e)))
			continue; /* (a page not committed) */
		for (int k = 0; k < 256; k++) {
			uint64_t code = V8_DISPATCH_CODE(e[2 * k + 1]);

			if (!e[2 * k] || e[2 * k] >> 48 == 0xffff)
				continue; /* free */
			return !rd(pid, code - 1 + (uint64_t)l->map, &map, 8) && (map & 3) == 1 &&
			       !rd(pid, map - 1 + (uint64_t)l->map_instance_type, &t, 2) && t == l->t_code;
		}
	}
	return false;
}

int v8dispatch__find(pid_t pid, const struct v8layout *l, uint64_t group_ptr, uint64_t *base)
{
	uint64_t group, buf[512];
	struct maps ms = { 0 };
	int err = -EAGAIN;

	if (rd(pid, group_ptr, &group, 8))
		return -EFAULT;
	if (!group)
		return -EAGAIN;
	if (read_maps(pid, &ms))
		return -EFAULT;
	for (uint64_t off = 0; off < GROUP_SCAN && err; off += sizeof(buf)) {
		if (rd(pid, group + off, buf, sizeof(buf)))
			break;
		for (size_t i = 0; i < sizeof(buf) / 8 && err; i++) {
			uint64_t w = buf[i];

			if (w && !(w & 4095) && reservation_at(&ms, w) && decodes(pid, l, w)) {
				*base = w;
				err = 0;
			}
		}
	}
	free(ms.m);
	return err;
}
