/*
 * profile.c - the in-memory aggregated profile.
 *
 * Design: every table (strings, mappings, functions, locations, samples)
 * is a growable array plus an open-addressing hash index of array slots,
 * so interning and aggregation are O(1) and ids stay dense (id = slot+1).
 * The indexes live in struct prof_index, private to this file; the arrays
 * are public so that renderers and the encoder walk them directly.
 *
 * Memory: strings, location lines and sample arrays (locs, labels,
 * values) are carved from an arena of large chunks owned by the profile
 * (a merge of an hour adds tens of thousands of each: a malloc and a free
 * each dominated it); they stay valid until profile__free, which releases
 * everything.
 *
 * Lazy indexes: a caller that knows its adds are distinct (a merge of a
 * store, whose symbols are interned by content) says so with
 * profile__distinct, and adds append without hashing; the indexes take
 * the rows in at the next lookup. A busy hour's merge spent a fifth of
 * its time, and many freshly faulted pages, building indexes no one read.
 */
#include "store/profile/profile.h"
#include "store/util/demangle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/hmap.h"
#include "store/util/util.h"

/* Bump allocator for sample arrays: chunks never move or shrink. */
struct arena_chunk {
	struct arena_chunk *next;
	size_t cap, used;
	max_align_t data[];
};

struct prof_index {
	struct hidx strs, maps, funcs, locs, samples;
	struct hidx stacks; /* hash of a locs array -> a sample holding it */
	uint32_t nindexed;  /* samples [0, nindexed) are in samples and stacks */
	uint32_t nstrs_ix, nmaps_ix, nfuncs_ix, nlocs_ix; /* likewise per table */
	bool distinct;      /* profile__distinct: adds skip the lookup */
	struct arena_chunk *arena;
	size_t arena_total; /* bytes of all chunks: the next chunk's size */
};

#define ARENA_MIN (16u << 10)
#define ARENA_MAX (4u << 20)

/* size bytes, 8-byte aligned, valid until arena_free; NULL on ENOMEM. */
static void *arena_alloc(struct prof_index *x, size_t size)
{
	struct arena_chunk *c = x->arena;
	void *r;

	size = (size + 7) & ~(size_t)7;
	if (!c || c->cap - c->used < size) {
		size_t cap = x->arena_total < ARENA_MIN ? ARENA_MIN : x->arena_total;

		if (cap > ARENA_MAX)
			cap = ARENA_MAX;
		if (cap < size)
			cap = size;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = x->arena;
		x->arena = c;
		x->arena_total += cap;
	}
	r = (char *)c->data + c->used;
	c->used += size;
	return r;
}

static void arena_free(struct prof_index *x)
{
	struct arena_chunk *c = x->arena, *n;

	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	x->arena = NULL;
	x->arena_total = 0;
}

struct profile *profile__new(void)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->idx = calloc(1, sizeof(*p->idx));
	if (!p->idx)
		goto err;
	if (profile__intern(p, "", 0) != 0)
		goto err;
	return p;
err:
	profile__free(p);
	errno = ENOMEM;
	return NULL;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	free(p->strs); /* the strings are in the arena */
	free(p->str_lens);
	free(p->mappings);
	free(p->functions);
	free(p->locations); /* their lines are in the arena */
	free(p->samples); /* their arrays are in the arena */
	if (p->idx) {
		arena_free(p->idx);
		hidx__free(&p->idx->strs);
		hidx__free(&p->idx->maps);
		hidx__free(&p->idx->funcs);
		hidx__free(&p->idx->locs);
		hidx__free(&p->idx->samples);
		hidx__free(&p->idx->stacks);
		free(p->idx);
	}
	free(p);
}

/* Rows [*done, n) of a table appended without a lookup join its index
 * (hash(p, i): row i's hash). Returns 0 or -ENOMEM. */
static int index_rows(struct profile *p, struct hidx *h, uint32_t *done, uint32_t n,
		      uint64_t (*hash)(const struct profile *p, uint32_t i))
{
	for (; *done < n; (*done)++)
		if (hidx__insert(h, hash(p, *done), *done))
			return -ENOMEM;
	return 0;
}

/* ---- strings ---- */

struct strkey {
	const char *s;
	size_t len;
};

static uint64_t str_hash_at(const struct profile *p, uint32_t i)
{
	return hash64(p->strs[i], p->str_lens[i], 1);
}

static bool str_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct profile *p = ctx;
	const struct strkey *k = key;

	return p->str_lens[i] == k->len && !memcmp(p->strs[i], k->s, k->len);
}

int profile__reserve(struct profile *p, size_t strs, size_t maps, size_t funcs, size_t locs,
		     size_t samples)
{
	uint32_t cap = p->cap_strs;

	/* str_lens grows in step with strs (profile__intern) */
	if (GROW(p->str_lens, &cap, p->nstrs + strs) || GROW(p->strs, &p->cap_strs, p->nstrs + strs) ||
	    GROW(p->mappings, &p->cap_mappings, p->nmappings + maps) ||
	    GROW(p->functions, &p->cap_functions, p->nfunctions + funcs) ||
	    GROW(p->locations, &p->cap_locations, p->nlocations + locs) ||
	    GROW(p->samples, &p->cap_samples, p->nsamples + samples))
		return -ENOMEM;
	return 0;
}

void profile__distinct(struct profile *p, bool on)
{
	p->idx->distinct = on;
}

uint32_t profile__intern(struct profile *p, const char *s, size_t len)
{
	struct strkey k = { s, len };
	bool look = !p->idx->distinct;
	uint64_t h = 0;
	uint32_t i, cap;
	char *c;

	if (!len && p->nstrs)
		return 0;
	if (look) {
		if (index_rows(p, &p->idx->strs, &p->idx->nstrs_ix, p->nstrs, str_hash_at)) {
			errno = ENOMEM;
			return UINT32_MAX;
		}
		h = hash64(s, len, 1);
		i = hidx__find(&p->idx->strs, h, str_eq, p, &k);
		if (i != UINT32_MAX)
			return i;
	}
	if (len > UINT32_MAX - 1) {
		errno = EOVERFLOW;
		return UINT32_MAX;
	}
	/* str_lens grows in step with strs: from the same capacity, to the
	 * same capacity. */
	cap = p->cap_strs;
	if (GROW(p->str_lens, &cap, p->nstrs + 1) || GROW(p->strs, &p->cap_strs, p->nstrs + 1))
		return UINT32_MAX;
	c = arena_alloc(p->idx, len + 1);
	if (!c) {
		errno = ENOMEM;
		return UINT32_MAX;
	}
	if (len)
		memcpy(c, s, len);
	c[len] = 0;
	i = p->nstrs;
	if (look) {
		if (hidx__insert(&p->idx->strs, h, i)) {
			errno = ENOMEM;
			return UINT32_MAX; /* (c stays in the arena) */
		}
		p->idx->nstrs_ix = i + 1;
	}
	p->strs[i] = c;
	p->str_lens[i] = (uint32_t)len;
	p->nstrs++;
	return i;
}

uint32_t profile__intern_str(struct profile *p, const char *s)
{
	return profile__intern(p, s ? s : "", s ? strlen(s) : 0);
}

/* ---- value types ---- */

int profile__set_value_types(struct profile *p, uint32_t n,
			     const char *const *types, const char *const *units)
{
	if (n == 0 || n > PROF_MAX_VALUES || p->nsamples)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = profile__intern_str(p, types[i]);
		uint32_t u = profile__intern_str(p, units[i]);

		if (t == UINT32_MAX || u == UINT32_MAX)
			return -ENOMEM;
		p->sample_types[i].type = t;
		p->sample_types[i].unit = u;
	}
	p->nvalues = n;
	return 0;
}

int profile__value_index(const struct profile *p, const char *type, const char *unit)
{
	for (uint32_t i = 0; i < p->nvalues; i++)
		if (!strcmp(p->strs[p->sample_types[i].type], type) &&
		    !strcmp(p->strs[p->sample_types[i].unit], unit))
			return (int)i;
	return -1;
}

/* ---- mappings, functions, locations ---- */

static uint64_t mapping_hash(const struct prof_mapping *m)
{
	uint64_t w[5] = { m->start, m->limit, m->offset,
			  (uint64_t)m->file << 32 | m->build_id, m->has_functions };

	return hash64(w, sizeof(w), 2);
}

static uint64_t mapping_hash_at(const struct profile *p, uint32_t i)
{
	return mapping_hash(&p->mappings[i]);
}

static bool mapping_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct profile *p = ctx;
	const struct prof_mapping *a = &p->mappings[i], *b = key;

	return a->start == b->start && a->limit == b->limit &&
	       a->offset == b->offset && a->file == b->file &&
	       a->build_id == b->build_id && a->has_functions == b->has_functions;
}

uint64_t profile__add_mapping(struct profile *p, const struct prof_mapping *m)
{
	bool look = !p->idx->distinct;
	uint64_t h = 0;
	uint32_t i;

	if (look) {
		if (index_rows(p, &p->idx->maps, &p->idx->nmaps_ix, p->nmappings, mapping_hash_at))
			return 0;
		h = mapping_hash(m);
		i = hidx__find(&p->idx->maps, h, mapping_eq, p, m);
		if (i != UINT32_MAX)
			return (uint64_t)i + 1;
	}
	if (GROW(p->mappings, &p->cap_mappings, p->nmappings + 1))
		return 0;
	i = p->nmappings;
	if (look) {
		if (hidx__insert(&p->idx->maps, h, i))
			return 0;
		p->idx->nmaps_ix = i + 1;
	}
	p->mappings[i] = *m;
	p->nmappings++;
	return (uint64_t)i + 1;
}

static uint64_t function_hash(const struct prof_function *f)
{
	uint64_t w[3] = { (uint64_t)f->name << 32 | f->system_name, f->filename,
			  (uint64_t)f->start_line };

	return hash64(w, sizeof(w), 3);
}

static uint64_t function_hash_at(const struct profile *p, uint32_t i)
{
	return function_hash(&p->functions[i]);
}

static bool function_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct profile *p = ctx;
	const struct prof_function *a = &p->functions[i], *b = key;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

uint64_t profile__add_function(struct profile *p, const struct prof_function *f)
{
	bool look = !p->idx->distinct;
	uint64_t h = 0;
	uint32_t i;

	if (look) {
		if (index_rows(p, &p->idx->funcs, &p->idx->nfuncs_ix, p->nfunctions,
			       function_hash_at))
			return 0;
		h = function_hash(f);
		i = hidx__find(&p->idx->funcs, h, function_eq, p, f);
		if (i != UINT32_MAX)
			return (uint64_t)i + 1;
	}
	if (GROW(p->functions, &p->cap_functions, p->nfunctions + 1))
		return 0;
	i = p->nfunctions;
	if (look) {
		if (hidx__insert(&p->idx->funcs, h, i))
			return 0;
		p->idx->nfuncs_ix = i + 1;
	}
	p->functions[i] = *f;
	p->nfunctions++;
	return (uint64_t)i + 1;
}

/* Lines are hashed and compared as raw bytes (struct prof_line has no
 * padding); a location without lines hashes the same whatever its
 * lines pointer. */
static uint64_t location_hash(const struct prof_location *l)
{
	uint64_t w[2] = { l->mapping_id, l->address };
	uint64_t h = hash64(w, sizeof(w), 4);

	return l->nlines ? hash64(l->lines, (size_t)l->nlines * sizeof(*l->lines), h) : h;
}

static uint64_t location_hash_at(const struct profile *p, uint32_t i)
{
	return location_hash(&p->locations[i]);
}

static bool location_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct profile *p = ctx;
	const struct prof_location *a = &p->locations[i], *b = key;

	return a->mapping_id == b->mapping_id && a->address == b->address &&
	       a->nlines == b->nlines &&
	       (!a->nlines || /* lines may be NULL then: memcmp(NULL) is UB */
		!memcmp(a->lines, b->lines, (size_t)a->nlines * sizeof(*a->lines)));
}

uint64_t profile__add_location(struct profile *p, const struct prof_location *l)
{
	struct prof_location copy = *l;
	struct prof_line tmp[1];
	bool look = !p->idx->distinct;
	uint64_t h = 0;
	uint32_t i;

	if (!l->nlines)
		copy.lines = tmp;
	if (look) {
		if (index_rows(p, &p->idx->locs, &p->idx->nlocs_ix, p->nlocations,
			       location_hash_at))
			return 0;
		h = location_hash(&copy);
		i = hidx__find(&p->idx->locs, h, location_eq, p, &copy);
		if (i != UINT32_MAX)
			return (uint64_t)i + 1;
	}
	if (GROW(p->locations, &p->cap_locations, p->nlocations + 1))
		return 0;
	copy.lines = NULL;
	if (l->nlines) {
		copy.lines = arena_alloc(p->idx, (size_t)l->nlines * sizeof(*l->lines));
		if (!copy.lines)
			return 0;
		memcpy(copy.lines, l->lines, (size_t)l->nlines * sizeof(*l->lines));
	}
	i = p->nlocations;
	if (look) {
		if (hidx__insert(&p->idx->locs, h, i))
			return 0;
		p->idx->nlocs_ix = i + 1;
	}
	p->locations[i] = copy;
	p->nlocations++;
	return (uint64_t)i + 1;
}

/* ---- samples ---- */

struct samplekey {
	const uint64_t *locs;
	uint32_t nlocs;
	const struct prof_label *labels;
	uint32_t nlabels;
};

static int label_cmp(const void *a, const void *b)
{
	const struct prof_label *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->str != y->str)
		return x->str < y->str ? -1 : 1;
	if (x->num != y->num)
		return x->num < y->num ? -1 : 1;
	if (x->num_unit != y->num_unit)
		return x->num_unit < y->num_unit ? -1 : 1;
	return 0;
}

/* The stack's hash (stack_hash) seeds the labels': one pass over locs
 * serves both indexes. */
static uint64_t stack_hash(const uint64_t *locs, uint32_t nlocs)
{
	return hash64(locs, (size_t)nlocs * sizeof(*locs), 5);
}

static uint64_t sample_hash(const struct samplekey *k, uint64_t hs)
{
	return hash64(k->labels, (size_t)k->nlabels * sizeof(*k->labels), hs);
}

struct stackkey {
	const uint64_t *locs;
	uint32_t nlocs;
};

static bool stack_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct profile *p = ctx;
	const struct prof_sample *s = &p->samples[i];
	const struct stackkey *k = key;

	return s->nlocs == k->nlocs && !memcmp(s->locs, k->locs, (size_t)k->nlocs * sizeof(*k->locs));
}

static bool sample_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct profile *p = ctx;
	const struct prof_sample *s = &p->samples[i];
	const struct samplekey *k = key;

	return s->nlocs == k->nlocs && s->nlabels == k->nlabels &&
	       (!k->nlocs ||
		!memcmp(s->locs, k->locs, (size_t)k->nlocs * sizeof(*k->locs))) &&
	       (!k->nlabels ||
		!memcmp(s->labels, k->labels, (size_t)k->nlabels * sizeof(*k->labels)));
}

/* Clean copies of labels (compared as bytes: no padding), sorted, into
 * *out: buf when n <= 8, else malloc'd (the caller frees unless == buf). */
static int sorted_labels(const struct prof_label *labels, uint32_t n, struct prof_label *buf,
			 struct prof_label **out)
{
	struct prof_label *sorted = buf;

	if (n > 8 && !(sorted = malloc((size_t)n * sizeof(*sorted))))
		return -ENOMEM;
	for (uint32_t j = 0; j < n; j++) {
		memset(&sorted[j], 0, sizeof(sorted[j]));
		sorted[j].key = labels[j].key;
		sorted[j].str = labels[j].str;
		sorted[j].num = labels[j].num;
		sorted[j].num_unit = labels[j].num_unit;
	}
	if (n > 1)
		qsort(sorted, n, sizeof(*sorted), label_cmp);
	*out = sorted;
	return 0;
}

/* Samples appended without a lookup (profile__append_sample) join the
 * indexes before the next lookup needs them. */
static int index_samples(struct profile *p)
{
	struct prof_index *x = p->idx;

	for (; x->nindexed < p->nsamples; x->nindexed++) {
		const struct prof_sample *s = &p->samples[x->nindexed];
		struct samplekey k = { s->locs, s->nlocs, s->labels, s->nlabels };
		struct stackkey sk = { s->locs, s->nlocs };
		uint64_t hs = stack_hash(s->locs, s->nlocs);

		if (hidx__insert(&x->samples, sample_hash(&k, hs), x->nindexed))
			return -ENOMEM;
		if (s->nlocs && hidx__find(&x->stacks, hs, stack_eq, p, &sk) == UINT32_MAX &&
		    hidx__insert(&x->stacks, hs, x->nindexed))
			return -ENOMEM;
	}
	return 0;
}

/* Appends sample s (its locs already placed) with copies of its sorted
 * labels and of values. */
static int push_sample(struct profile *p, struct prof_sample s, const struct prof_label *sorted,
		       const int64_t *values, bool copy_locs, bool copy_labels)
{
	/* One arena allocation for the arrays (all 8-byte elements or
	 * multiples of 8: struct prof_label holds 64-bit fields). */
	size_t lb = copy_locs ? (size_t)(s.nlocs ? s.nlocs : 1) * sizeof(*s.locs) : 0;
	size_t bb = copy_labels ? (size_t)(s.nlabels ? s.nlabels : 1) * sizeof(*sorted) : 0;
	size_t vb = (size_t)(p->nvalues ? p->nvalues : 1) * sizeof(*values);
	char *m;

	if (GROW(p->samples, &p->cap_samples, p->nsamples + 1) ||
	    !(m = arena_alloc(p->idx, lb + bb + vb)))
		return -ENOMEM;
	if (copy_locs) {
		if (s.nlocs)
			memcpy(m, s.locs, (size_t)s.nlocs * sizeof(*s.locs));
		s.locs = (uint64_t *)m;
	}
	s.labels = copy_labels ? (struct prof_label *)(m + lb) : (struct prof_label *)sorted;
	s.values = (int64_t *)(m + lb + bb);
	if (copy_labels && s.nlabels)
		memcpy(s.labels, sorted, (size_t)s.nlabels * sizeof(*sorted));
	if (p->nvalues)
		memcpy(s.values, values, (size_t)p->nvalues * sizeof(*values));
	p->samples[p->nsamples++] = s;
	return 0;
}

int profile__add_sample(struct profile *p, const uint64_t *locs, uint32_t nlocs,
			const struct prof_label *labels, uint32_t nlabels,
			const int64_t *values)
{
	uint32_t at;

	return profile__add_sample_at(p, locs, nlocs, labels, nlabels, values, &at);
}

int profile__add_sample_at(struct profile *p, const uint64_t *locs, uint32_t nlocs,
			   const struct prof_label *labels, uint32_t nlabels,
			   const int64_t *values, uint32_t *at)
{
	struct prof_label stackbuf[8], *sorted;
	struct samplekey k = { locs, nlocs, NULL, nlabels };
	struct prof_sample s = { .nlocs = nlocs, .nlabels = nlabels };
	uint32_t i, shared;
	uint64_t h, hs;
	int err;

	if ((err = index_samples(p)) || (err = sorted_labels(labels, nlabels, stackbuf, &sorted)))
		return err;
	k.labels = sorted;
	hs = stack_hash(locs, nlocs);
	h = sample_hash(&k, hs);
	i = hidx__find(&p->idx->samples, h, sample_eq, p, &k);
	if (i != UINT32_MAX) {
		for (uint32_t v = 0; v < p->nvalues; v++)
			p->samples[i].values[v] += values[v];
		*at = i;
		err = 0;
		goto out;
	}
	/* Samples that differ only in labels (the pids of one binary, a
	 * merge of many processes) share one locs array: samples are never
	 * changed once added. A merged busy hour has 40k samples over 5k
	 * stacks; copying each stack per sample was a third of the page
	 * faults of rendering it. */
	struct stackkey sk = { locs, nlocs };
	shared = nlocs ? hidx__find(&p->idx->stacks, hs, stack_eq, p, &sk) : UINT32_MAX;
	s.locs = shared == UINT32_MAX ? (uint64_t *)locs : p->samples[shared].locs;
	/* On failure the arrays stay in the arena until profile__free. */
	err = -ENOMEM;
	if (hidx__insert(&p->idx->samples, h, p->nsamples) ||
	    push_sample(p, s, sorted, values, shared == UINT32_MAX, true))
		goto out;
	p->idx->nindexed = p->nsamples;
	*at = p->nsamples - 1;
	/* (no room to remember it: the next sample of this stack copies it) */
	if (nlocs && shared == UINT32_MAX)
		hidx__insert(&p->idx->stacks, hs, p->nsamples - 1);
	err = 0;
out:
	if (sorted != stackbuf)
		free(sorted);
	return err;
}

int profile__append_sample(struct profile *p, const uint64_t *locs, uint32_t nlocs,
			   const struct prof_label *labels, uint32_t nlabels,
			   const int64_t *values)
{
	struct prof_sample s = { .nlocs = nlocs, .nlabels = nlabels, .locs = (uint64_t *)locs };

	return push_sample(p, s, labels, values, false, false);
}

struct prof_label *profile__labels(struct profile *p, const struct prof_label *labels,
				   uint32_t n)
{
	struct prof_label stackbuf[8], *sorted, *r;

	if (sorted_labels(labels, n, stackbuf, &sorted)) {
		errno = ENOMEM;
		return NULL;
	}
	r = profile__alloc(p, (size_t)(n ? n : 1) * sizeof(*r));
	if (r && n)
		memcpy(r, sorted, (size_t)n * sizeof(*r));
	if (sorted != stackbuf)
		free(sorted);
	return r;
}

void *profile__alloc(struct profile *p, size_t size)
{
	void *r = arena_alloc(p->idx, size ? size : 1);

	if (!r)
		errno = ENOMEM;
	return r;
}

int64_t profile__total(const struct profile *p, uint32_t vi)
{
	int64_t t = 0;

	if (vi >= p->nvalues)
		return 0;
	for (uint32_t i = 0; i < p->nsamples; i++)
		t += p->samples[i].values[vi];
	return t;
}

const char *profile__sample_label(const struct profile *p,
				  const struct prof_sample *s, const char *key)
{
	for (uint32_t i = 0; i < s->nlabels; i++)
		if (s->labels[i].str && !strcmp(p->strs[s->labels[i].key], key))
			return p->strs[s->labels[i].str];
	return NULL;
}

uint32_t profile__display_value(const struct profile *p)
{
	if (!p->nvalues)
		return 0;
	if (p->default_sample_type)
		for (uint32_t i = 0; i < p->nvalues; i++)
			if (p->sample_types[i].type == p->default_sample_type)
				return i;
	return p->nvalues - 1;
}

static bool is_kernel_mapping(const char *file)
{
	return !strncmp(file, "[kernel", 7) || !strcmp(file, "[vmlinux]") ||
	       !strncmp(file, "[k]", 3);
}

size_t profile__frame_name(const struct profile *p, uint64_t loc, uint32_t li,
			   bool kmark, char *buf, size_t size)
{
	const struct prof_location *l;
	const struct prof_mapping *m = NULL;
	const char *file = "";
	size_t n;
	int r;

	if (!size)
		return 0;
	buf[0] = 0;
	if (!loc || loc > p->nlocations)
		return 0;
	l = &p->locations[loc - 1];
	if (l->mapping_id && l->mapping_id <= p->nmappings) {
		m = &p->mappings[l->mapping_id - 1];
		file = p->strs[m->file];
	}
	if (li < l->nlines && l->lines[li].function_id &&
	    l->lines[li].function_id <= p->nfunctions) {
		const struct prof_function *f = &p->functions[l->lines[li].function_id - 1];
		const char *name = p->strs[f->name], *sys = p->strs[f->system_name];
		size_t nl = strlen(name);

		if (!*name)
			name = sys;
		/* folded.txt and the SVG read as perf prints: C++ and Rust
		 * names whole (the stored name is pprof's short form); a
		 * perf-map JIT name (ends in "_[j]") is shown as written. */
		r = 0;
		if (kmark && demangle__looks_mangled(sys) && !(nl >= 4 && !strcmp(name + nl - 4, "_[j]")))
			r = (int)demangle__name(sys, true, buf, size);
		if (!r)
			r = snprintf(buf, size, "%s", *name ? name : "??");
	} else if (m) {
		const char *base = strrchr(file, '/');

		base = base ? base + 1 : file;
		r = snprintf(buf, size, "%s+0x%llx", *base ? base : "??",
			     (unsigned long long)(l->address - m->start + m->offset));
	} else {
		r = snprintf(buf, size, "0x%llx", (unsigned long long)l->address);
	}
	n = r < 0 ? 0 : (size_t)r >= size ? size - 1 : (size_t)r;
	if (kmark && m && is_kernel_mapping(file) && n + 4 < size) {
		memcpy(buf + n, "_[k]", 5);
		n += 4;
	}
	for (size_t i = 0; i < n; i++)
		if (buf[i] == ';')
			buf[i] = ':';
	return n;
}
