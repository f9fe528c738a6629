/*
 * kallsyms.c - the kernel's function symbols, held compressed.
 *
 * /proc/kallsyms lists ~120k text symbols on a Debian kernel: 2 MB of
 * addresses and 3 MB of names held as read, a sixth of the daemon's
 * budget for something a host's samples touch a few thousand entries of.
 * So the addresses are kept as 32-bit offsets from the lowest one (the
 * kernel's text, its modules and BPF's images lie within 2 GiB of each
 * other on x86-64), and the names in zstd blocks of KS_BLOCK, in address
 * order: 3 MB become ~0.7 MB. A name is decompressed the first time its
 * symbol is looked up and copied into an arena that lives as long as the
 * table, so the pointer handed out stays valid (symbolize.h's contract)
 * and a symbol seen again costs one hash lookup. The arena grows with the
 * distinct kernel functions the host's stacks run through, never beyond
 * what the plain table held.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "sampler/symbols/kallsyms.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

#define KS_BLOCK 128u           /* names per compressed block */
#define KS_ARENA (16u << 10)    /* bytes per arena chunk */
#define KS_LEVEL 3

struct arena_chunk {
	struct arena_chunk *next;
	size_t used;
	char b[KS_ARENA];
};

#define KSYM_RECENT 1024 /* a power of two */

struct kallsyms {
	uint64_t base;       /* the lowest address */
	uint32_t *off;       /* sorted: address - base */
	size_t n;
	uint8_t *z;          /* the compressed blocks, back to back */
	uint32_t *zoff;      /* block i is z[zoff[i], zoff[i + 1]) */
	size_t nblocks;
	struct hmap names;   /* index + 1 -> name in the arena */
	struct arena_chunk *arena;
	char *blk;           /* the last block decompressed, and its index */
	size_t blk_len, blk_cap, blk_at;
	size_t zbytes;
	/* Addresses looked up lately, direct-mapped: an off-CPU stack is a
	 * dozen kernel frames from a few hundred call sites, and a binary
	 * search of ~120k offsets is cache misses all the way down. */
	struct { uint64_t addr; const char *name; } recent[KSYM_RECENT];
};

struct raw {
	uint64_t addr;
	uint32_t name, seq;
};

static int raw_cmp(const void *a, const void *b)
{
	const struct raw *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Reads the text symbols of f into r[] and strs (both malloc'd). */
static int read_raw(FILE *f, struct raw **r, size_t *nr, char **strs)
{
	size_t cap = 0, scap = 0, slen = 0, n = 0;
	char line[512];

	*r = NULL;
	*strs = NULL;
	while (fgets(line, sizeof(line), f)) {
		char *sp1, *name;
		uint64_t addr = strtoull(line, &sp1, 16);
		size_t len;

		if (*sp1 != ' ' || !addr)
			continue;
		if (!strchr("tTwW", sp1[1]) || !sp1[1] || sp1[2] != ' ')
			continue;
		name = sp1 + 3;
		len = strcspn(name, " \t\n");
		if (!len || n >= UINT32_MAX || slen + len + 1 > UINT32_MAX)
			continue;
		if (GROW(*r, &cap, n + 1) || GROW(*strs, &scap, slen + len + 1))
			return -ENOMEM;
		memcpy(*strs + slen, name, len);
		(*strs)[slen + len] = 0;
		(*r)[n] = (struct raw){ addr, (uint32_t)slen, (uint32_t)n };
		n++;
		slen += len + 1;
	}
	*nr = n;
	return 0;
}

/* Packs the sorted r[n] into k's offsets and compressed name blocks. */
static int pack(struct kallsyms *k, const struct raw *r, size_t n, const char *strs)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t zcap = 0, rawcap = 0;
	char *raw = NULL;
	int err = -ENOMEM;

	if (!cc)
		return -ENOMEM;
	/* The widest run of symbols within 4 GiB of its first: a stray
	 * address far off the rest costs its own name, not everyone's. */
	size_t best = 0, bestn = 0;

	for (size_t lo = 0, hi = 0; lo < n; lo++) {
		if (hi < lo)
			hi = lo;
		while (hi < n && r[hi].addr - r[lo].addr <= UINT32_MAX)
			hi++;
		if (hi - lo > bestn) {
			best = lo;
			bestn = hi - lo;
		}
	}
	r += best;
	n = bestn;
	k->base = n ? r[0].addr : 0;
	k->nblocks = (n + KS_BLOCK - 1) / KS_BLOCK;
	k->off = malloc((n ? n : 1) * sizeof(*k->off));
	k->zoff = malloc((k->nblocks + 1) * sizeof(*k->zoff));
	if (!k->off || !k->zoff)
		goto out;
	k->zoff[0] = 0;
	for (size_t b = 0; b < k->nblocks; b++) {
		size_t len = 0, lim = b * KS_BLOCK + KS_BLOCK < n ? b * KS_BLOCK + KS_BLOCK : n;

		for (size_t i = b * KS_BLOCK; i < lim; i++) {
			size_t l = strlen(strs + r[i].name) + 1;

			if (GROW(raw, &rawcap, len + l))
				goto out;
			memcpy(raw + len, strs + r[i].name, l);
			len += l;
			k->off[i] = (uint32_t)(r[i].addr - k->base);
		}
		size_t bound = ZSTD_compressBound(len), got;

		if (GROW(k->z, &zcap, k->zbytes + bound))
			goto out;
		got = ZSTD_compressCCtx(cc, k->z + k->zbytes, bound, raw, len, KS_LEVEL);
		if (ZSTD_isError(got) || k->zbytes + got > UINT32_MAX) {
			err = -EIO;
			goto out;
		}
		k->zbytes += got;
		k->zoff[b + 1] = (uint32_t)k->zbytes;
	}
	k->n = n;
	/* The blocks were grown by doubling: give the slack back. */
	if (k->zbytes) {
		uint8_t *z = realloc(k->z, k->zbytes);

		k->z = z ? z : k->z;
	}
	err = 0;
out:
	free(raw);
	ZSTD_freeCCtx(cc);
	return err;
}

struct kallsyms *kallsyms__read(FILE *f)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	struct raw *r = NULL;
	char *strs = NULL;
	size_t n = 0;
	int err;

	if (!k)
		return NULL;
	k->blk_at = SIZE_MAX;
	err = read_raw(f, &r, &n, &strs);
	if (!err) {
		qsort(r, n, sizeof(*r), raw_cmp);
		err = pack(k, r, n, strs);
	}
	free(r);
	free(strs);
	if (err) {
		kallsyms__free(k);
		errno = -err;
		return NULL;
	}
	return k;
}

struct kallsyms *kallsyms__load(const char *path)
{
	FILE *f = fopen(path, "re");
	struct kallsyms *k;
	int err;

	if (!f)
		return NULL;
	k = kallsyms__read(f);
	err = errno;
	fclose(f);
	errno = err;
	return k;
}

/* Name i of the block in k->blk (decompressing block i / KS_BLOCK first). */
static const char *block_name(struct kallsyms *k, size_t i)
{
	size_t b = i / KS_BLOCK, want, got;
	const char *p, *end;

	if (k->blk_at != b) {
		want = ZSTD_getFrameContentSize(k->z + k->zoff[b], k->zoff[b + 1] - k->zoff[b]);
		if (want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN ||
		    GROW(k->blk, &k->blk_cap, want + 1))
			return NULL;
		got = ZSTD_decompress(k->blk, want, k->z + k->zoff[b], k->zoff[b + 1] - k->zoff[b]);
		if (ZSTD_isError(got) || got != want)
			return NULL;
		k->blk[got] = 0;
		k->blk_len = got;
		k->blk_at = b;
	}
	p = k->blk;
	end = k->blk + k->blk_len;
	for (size_t j = b * KS_BLOCK; j < i && p < end; j++)
		p += strlen(p) + 1;
	return p < end ? p : NULL;
}

/* A copy of s in the arena, valid until kallsyms__free. */
static const char *arena_copy(struct kallsyms *k, const char *s)
{
	size_t l = strlen(s) + 1;
	struct arena_chunk *c = k->arena;

	if (l > KS_ARENA)
		return NULL;
	if (!c || c->used + l > KS_ARENA) {
		c = malloc(sizeof(*c));
		if (!c)
			return NULL;
		c->next = k->arena;
		c->used = 0;
		k->arena = c;
	}
	memcpy(c->b + c->used, s, l);
	c->used += l;
	return c->b + c->used - l;
}

/* How many of the sorted v[n] are <= x. */
static size_t upper_u32(const uint32_t *v, size_t n, uint32_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *kallsyms__lookup(struct kallsyms *k, uint64_t addr)
{
	const char *name;
	size_t lo;

	if (!k || !k->n || addr < k->base || addr - k->base > UINT32_MAX)
		return NULL;
	size_t slot = (size_t)hash_mix64(addr) & (KSYM_RECENT - 1);

	if (k->recent[slot].addr == addr && k->recent[slot].name)
		return k->recent[slot].name;
	lo = upper_u32(k->off, k->n, (uint32_t)(addr - k->base));
	if (!lo)
		return NULL;
	if (!(name = hmap__get(&k->names, lo))) {
		name = block_name(k, lo - 1);
		name = name ? arena_copy(k, name) : NULL;
		if (name && hmap__put(&k->names, lo, (void *)name))
			return NULL;
	}
	if (name) {
		k->recent[slot].addr = addr;
		k->recent[slot].name = name;
	}
	return name;
}

size_t kallsyms__count(const struct kallsyms *k)
{
	return k ? k->n : 0;
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	while (k->arena) {
		struct arena_chunk *c = k->arena;

		k->arena = c->next;
		free(c);
	}
	hmap__fini(&k->names);
	free(k->off);
	free(k->zoff);
	free(k->z);
	free(k->blk);
	free(k);
}
