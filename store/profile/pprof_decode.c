/*
 * pprof_decode.c - perftools.profiles.Profile decoded (raw or gzip,
 * validated) into a struct profile, with protobuf-c over
 * store/profile/profile.proto. pprof_encode.c is the other way.
 *
 * Decoding checks everything a later consumer would trip on, up front, so
 * that no code past this file ever sees a dangling string index or id: a
 * profile either comes out whole and consistent or not at all, with one
 * line saying why.
 */
#include "store/profile/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store/profile/pprof_pb.h"
#include "store/util/util.h"

/* Bounds on what a sane profile holds; beyond these we refuse rather than
 * let a crafted file make us allocate without limit. */
#define PPROF_MAX_DECOMPRESSED (1ULL << 30) /* 1 GiB, as pprof.h promises */
#define PPROF_MAX_STRING (1U << 20)         /* one symbol name: 1 MiB */
#define PPROF_MAX_STACK (1U << 16)          /* frames in one sample */
#define PPROF_MAX_LINES (1U << 12)          /* inlined lines per location */
#define PPROF_MAX_LABELS (1U << 10)         /* labels per sample */

static void seterr(char *err, size_t errsz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errsz)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
}

/*
 * Inflates one or more concatenated gzip members (what `gzip` and Go's
 * writer produce) into a malloc'd buffer the caller frees. Refuses output
 * beyond max bytes and bytes after the last member.
 */
static int gunzip(const uint8_t *in, size_t len, uint64_t max, uint8_t **out, size_t *outlen,
		  char *err, size_t errsz)
{
	z_stream zs = { 0 };
	size_t cap = len < (1 << 16) ? (1 << 18) : len * 4, n = 0;
	uint8_t *buf = NULL, *nb;
	int ret, rc = -EINVAL;

	if (cap > max)
		cap = max;
	buf = malloc(cap);
	if (!buf) {
		seterr(err, errsz, "out of memory");
		return -ENOMEM;
	}
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		seterr(err, errsz, "gzip: cannot initialise zlib");
		rc = -ENOMEM;
		goto out;
	}
	zs.next_in = (Bytef *)in;
	/* zlib counts in uInt; our inputs are far below 4 GiB in practice,
	 * but feed in slices so a huge one still works. */
	for (;;) {
		if (zs.avail_in == 0) {
			size_t left = len - (size_t)(zs.next_in - in);

			zs.avail_in = left > (1U << 30) ? (1U << 30) : (uInt)left;
		}
		if (n == cap) {
			if (cap >= max) {
				seterr(err, errsz, "gzip: decompressed size exceeds %llu bytes",
				       (unsigned long long)max);
				goto out_end;
			}
			cap *= 2;
			if (cap > max)
				cap = max;
			nb = realloc(buf, cap);
			if (!nb) {
				seterr(err, errsz, "out of memory");
				rc = -ENOMEM;
				goto out_end;
			}
			buf = nb;
		}
		zs.next_out = buf + n;
		zs.avail_out = (uInt)((cap - n) > (1U << 30) ? (1U << 30) : (cap - n));
		{
			uInt before = zs.avail_out;

			ret = inflate(&zs, Z_NO_FLUSH);
			n += before - zs.avail_out;
		}
		if (ret == Z_STREAM_END) {
			size_t used = (size_t)(zs.next_in - in);

			if (used == len)
				break;
			/* Another member must follow, or it is garbage. */
			if (len - used < 2 || in[used] != 0x1f || in[used + 1] != 0x8b) {
				seterr(err, errsz, "gzip: %zu bytes of trailing garbage",
				       len - used);
				goto out_end;
			}
			inflateReset(&zs);
			continue;
		}
		if (ret == Z_BUF_ERROR && zs.avail_in == 0 &&
		    (size_t)(zs.next_in - in) == len) {
			seterr(err, errsz, "gzip: truncated stream");
			goto out_end;
		}
		if (ret != Z_OK && ret != Z_BUF_ERROR) {
			seterr(err, errsz, "gzip: %s",
			       zs.msg ? zs.msg : (ret == Z_MEM_ERROR ? "out of memory" : "corrupt stream"));
			if (ret == Z_MEM_ERROR)
				rc = -ENOMEM;
			goto out_end;
		}
	}
	*out = buf;
	*outlen = n;
	buf = NULL;
	rc = 0;
out_end:
	inflateEnd(&zs);
out:
	free(buf);
	return rc;
}

/* id -> position in the message's array; sorted for bsearch. */
struct idpos {
	uint64_t id;
	uint64_t pos;
};

static int idpos_cmp(const void *a, const void *b)
{
	const struct idpos *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static uint64_t idpos_find(const struct idpos *v, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	/* Ids are almost always 1..n (Go and pprof__encode write them so):
	 * then the sorted table is indexed by id - 1 directly. */
	if (n && v[n - 1].id == n)
		return id && id <= n ? v[id - 1].pos : UINT64_MAX;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].id == id)
			return v[mid].pos;
		if (v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return UINT64_MAX;
}

/* Builds the sorted id index of one table, refusing 0 and duplicates. */
static int idpos_build(const char *what, size_t n, const uint64_t *ids,
		       struct idpos **out, char *err, size_t errsz)
{
	struct idpos *v = calloc(n ? n : 1, sizeof(*v));

	if (!v) {
		seterr(err, errsz, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (ids[i] == 0) {
			seterr(err, errsz, "%s #%zu has id 0", what, i);
			free(v);
			return -EINVAL;
		}
		v[i].id = ids[i];
		v[i].pos = i;
	}
	qsort(v, n, sizeof(*v), idpos_cmp);
	for (size_t i = 1; i < n; i++) {
		if (v[i].id == v[i - 1].id) {
			seterr(err, errsz, "duplicate %s id %" PRIu64, what, v[i].id);
			free(v);
			return -EINVAL;
		}
	}
	*out = v;
	return 0;
}

static bool str_ok(const PbProfile *m, int64_t idx)
{
	return idx >= 0 && (uint64_t)idx < m->n_string_table;
}

#define CHECK_STR(idx, ...)                                          \
	do {                                                         \
		if (!str_ok(m, (idx))) {                             \
			seterr(err, errsz, __VA_ARGS__);             \
			goto invalid;                                \
		}                                                    \
	} while (0)

/* Every structural check that needs only the message itself. */
static int validate(const PbProfile *m, struct idpos **maps, struct idpos **funcs,
		    struct idpos **locs, char *err, size_t errsz)
{
	uint64_t *ids = NULL;
	size_t nmax;
	int rc;

	*maps = *funcs = *locs = NULL;
	if (m->n_string_table == 0 || m->string_table[0][0] != '\0') {
		seterr(err, errsz, m->n_string_table ? "string_table[0] is not empty"
						     : "string table is empty");
		return -EINVAL;
	}
	if (m->n_string_table > UINT32_MAX / 2) {
		seterr(err, errsz, "string table too large (%zu entries)", m->n_string_table);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->n_string_table; i++) {
		if (strlen(m->string_table[i]) > PPROF_MAX_STRING) {
			seterr(err, errsz, "string_table[%zu] is longer than %u bytes", i,
			       PPROF_MAX_STRING);
			return -EINVAL;
		}
	}
	if (m->n_sample_type == 0 && m->n_sample) {
		seterr(err, errsz, "samples but no sample types");
		return -EINVAL;
	}
	if (m->n_sample_type > PROF_MAX_VALUES) {
		seterr(err, errsz, "%zu sample types (at most %d supported)",
		       m->n_sample_type, PROF_MAX_VALUES);
		return -EINVAL;
	}
	for (size_t i = 0; i < m->n_sample_type; i++) {
		CHECK_STR(m->sample_type[i]->type, "sample_type[%zu].type: string index %" PRId64 " out of range", i, m->sample_type[i]->type);
		CHECK_STR(m->sample_type[i]->unit, "sample_type[%zu].unit: string index %" PRId64 " out of range", i, m->sample_type[i]->unit);
	}
	if (m->period_type) {
		CHECK_STR(m->period_type->type, "period_type.type: string index %" PRId64 " out of range", m->period_type->type);
		CHECK_STR(m->period_type->unit, "period_type.unit: string index %" PRId64 " out of range", m->period_type->unit);
	}
	CHECK_STR(m->default_sample_type, "default_sample_type: string index %" PRId64 " out of range", m->default_sample_type);
	CHECK_STR(m->drop_frames, "drop_frames: string index %" PRId64 " out of range", m->drop_frames);
	CHECK_STR(m->keep_frames, "keep_frames: string index %" PRId64 " out of range", m->keep_frames);
	for (size_t i = 0; i < m->n_comment; i++)
		CHECK_STR(m->comment[i], "comment[%zu]: string index %" PRId64 " out of range", i, m->comment[i]);

	nmax = m->n_mapping;
	if (m->n_function > nmax)
		nmax = m->n_function;
	if (m->n_location > nmax)
		nmax = m->n_location;
	ids = malloc((nmax ? nmax : 1) * sizeof(*ids));
	if (!ids) {
		seterr(err, errsz, "out of memory");
		return -ENOMEM;
	}

	for (size_t i = 0; i < m->n_mapping; i++) {
		const PbMapping *mp = m->mapping[i];

		CHECK_STR(mp->filename, "mapping %" PRIu64 ": filename: string index %" PRId64 " out of range", mp->id, mp->filename);
		CHECK_STR(mp->build_id, "mapping %" PRIu64 ": build_id: string index %" PRId64 " out of range", mp->id, mp->build_id);
		ids[i] = mp->id;
	}
	rc = idpos_build("mapping", m->n_mapping, ids, maps, err, errsz);
	if (rc)
		goto out;

	for (size_t i = 0; i < m->n_function; i++) {
		const PbFunction *f = m->function[i];

		CHECK_STR(f->name, "function %" PRIu64 ": name: string index %" PRId64 " out of range", f->id, f->name);
		CHECK_STR(f->system_name, "function %" PRIu64 ": system_name: string index %" PRId64 " out of range", f->id, f->system_name);
		CHECK_STR(f->filename, "function %" PRIu64 ": filename: string index %" PRId64 " out of range", f->id, f->filename);
		ids[i] = f->id;
	}
	rc = idpos_build("function", m->n_function, ids, funcs, err, errsz);
	if (rc)
		goto out;

	for (size_t i = 0; i < m->n_location; i++) {
		const PbLocation *l = m->location[i];

		if (l->mapping_id && idpos_find(*maps, m->n_mapping, l->mapping_id) == UINT64_MAX) {
			seterr(err, errsz, "location %" PRIu64 ": mapping id %" PRIu64 " not found", l->id, l->mapping_id);
			goto invalid;
		}
		if (l->n_line > PPROF_MAX_LINES) {
			seterr(err, errsz, "location %" PRIu64 ": %zu lines (at most %u)", l->id, l->n_line, PPROF_MAX_LINES);
			goto invalid;
		}
		for (size_t j = 0; j < l->n_line; j++) {
			uint64_t fid = l->line[j]->function_id;

			if (fid == 0 || idpos_find(*funcs, m->n_function, fid) == UINT64_MAX) {
				seterr(err, errsz, "location %" PRIu64 ": line %zu: function id %" PRIu64 " not found", l->id, j, fid);
				goto invalid;
			}
		}
		ids[i] = l->id;
	}
	rc = idpos_build("location", m->n_location, ids, locs, err, errsz);
	if (rc)
		goto out;

	for (size_t i = 0; i < m->n_sample; i++) {
		const PbSample *s = m->sample[i];

		if (s->n_value != m->n_sample_type) {
			seterr(err, errsz, "sample %zu: %zu values for %zu sample types", i, s->n_value, m->n_sample_type);
			goto invalid;
		}
		if (s->n_location_id > PPROF_MAX_STACK) {
			seterr(err, errsz, "sample %zu: %zu locations (at most %u)", i, s->n_location_id, PPROF_MAX_STACK);
			goto invalid;
		}
		if (s->n_label > PPROF_MAX_LABELS) {
			seterr(err, errsz, "sample %zu: %zu labels (at most %u)", i, s->n_label, PPROF_MAX_LABELS);
			goto invalid;
		}
		for (size_t j = 0; j < s->n_location_id; j++) {
			uint64_t lid = s->location_id[j];

			if (lid == 0 || idpos_find(*locs, m->n_location, lid) == UINT64_MAX) {
				seterr(err, errsz, "sample %zu: location id %" PRIu64 " not found", i, lid);
				goto invalid;
			}
		}
		for (size_t j = 0; j < s->n_label; j++) {
			const PbLabel *lb = s->label[j];

			CHECK_STR(lb->key, "sample %zu: label key: string index %" PRId64 " out of range", i, lb->key);
			if (lb->key == 0) {
				seterr(err, errsz, "sample %zu: label with empty key", i);
				goto invalid;
			}
			CHECK_STR(lb->str, "sample %zu: label value: string index %" PRId64 " out of range", i, lb->str);
			CHECK_STR(lb->num_unit, "sample %zu: label unit: string index %" PRId64 " out of range", i, lb->num_unit);
		}
	}
	rc = 0;
	goto out;
invalid:
	rc = -EINVAL;
out:
	free(ids);
	if (rc) {
		free(*maps);
		free(*funcs);
		free(*locs);
		*maps = *funcs = *locs = NULL;
	}
	return rc;
}

/* Copies a validated message into a new profile. */
static int convert(const PbProfile *m, const struct idpos *maps,
		   const struct idpos *funcs, const struct idpos *locs,
		   struct profile **out, char *err, size_t errsz)
{
	struct profile *p = NULL;
	uint32_t *xs = NULL;
	uint64_t *xmap = NULL, *xfunc = NULL, *xloc = NULL, *stack = NULL;
	struct prof_line *lines = NULL;
	struct prof_label *labels = NULL;
	const char *types[PROF_MAX_VALUES], *units[PROF_MAX_VALUES];
	int rc = -ENOMEM;

	p = profile__new();
	xs = calloc(m->n_string_table, sizeof(*xs));
	xmap = calloc(m->n_mapping + 1, sizeof(*xmap));
	xfunc = calloc(m->n_function + 1, sizeof(*xfunc));
	xloc = calloc(m->n_location + 1, sizeof(*xloc));
	stack = calloc(PPROF_MAX_STACK, sizeof(*stack));
	lines = calloc(PPROF_MAX_LINES, sizeof(*lines));
	labels = calloc(PPROF_MAX_LABELS, sizeof(*labels));
	if (!p || !xs || !xmap || !xfunc || !xloc || !stack || !lines || !labels)
		goto nomem;

	for (size_t i = 0; i < m->n_string_table; i++) {
		xs[i] = profile__intern_str(p, m->string_table[i]);
		if (xs[i] == UINT32_MAX)
			goto nomem;
	}
	if (m->n_sample_type) {
		for (size_t i = 0; i < m->n_sample_type; i++) {
			types[i] = m->string_table[m->sample_type[i]->type];
			units[i] = m->string_table[m->sample_type[i]->unit];
		}
		rc = profile__set_value_types(p, (uint32_t)m->n_sample_type, types, units);
		if (rc) {
			seterr(err, errsz, "cannot set sample types");
			goto out;
		}
	}
	p->default_sample_type = xs[m->default_sample_type];
	if (m->period_type) {
		p->period_type.type = xs[m->period_type->type];
		p->period_type.unit = xs[m->period_type->unit];
	}
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;

	for (size_t i = 0; i < m->n_mapping; i++) {
		const PbMapping *mp = m->mapping[i];
		struct prof_mapping pm = {
			.start = mp->memory_start,
			.limit = mp->memory_limit,
			.offset = mp->file_offset,
			.file = xs[mp->filename],
			.build_id = xs[mp->build_id],
			.has_functions = mp->has_functions,
		};

		xmap[i] = profile__add_mapping(p, &pm);
		if (!xmap[i])
			goto nomem;
	}
	for (size_t i = 0; i < m->n_function; i++) {
		const PbFunction *f = m->function[i];
		struct prof_function pf = {
			.name = xs[f->name],
			.system_name = xs[f->system_name],
			.filename = xs[f->filename],
			.start_line = f->start_line,
		};

		xfunc[i] = profile__add_function(p, &pf);
		if (!xfunc[i])
			goto nomem;
	}
	for (size_t i = 0; i < m->n_location; i++) {
		const PbLocation *l = m->location[i];
		struct prof_location pl = {
			.mapping_id = l->mapping_id ? xmap[idpos_find(maps, m->n_mapping, l->mapping_id)] : 0,
			.address = l->address,
			.nlines = (uint32_t)l->n_line,
			.lines = lines,
		};

		for (size_t j = 0; j < l->n_line; j++) {
			lines[j].function_id = xfunc[idpos_find(funcs, m->n_function, l->line[j]->function_id)];
			lines[j].line = l->line[j]->line;
		}
		xloc[i] = profile__add_location(p, &pl);
		if (!xloc[i])
			goto nomem;
	}
	for (size_t i = 0; i < m->n_sample; i++) {
		const PbSample *s = m->sample[i];
		uint32_t nl = 0;

		for (size_t j = 0; j < s->n_location_id; j++)
			stack[j] = xloc[idpos_find(locs, m->n_location, s->location_id[j])];
		for (size_t j = 0; j < s->n_label; j++) {
			const PbLabel *lb = s->label[j];

			labels[nl].key = xs[lb->key];
			if (lb->str) {
				labels[nl].str = xs[lb->str];
				labels[nl].num = 0;
				labels[nl].num_unit = 0;
			} else {
				labels[nl].str = 0;
				labels[nl].num = lb->num;
				labels[nl].num_unit = xs[lb->num_unit];
			}
			nl++;
		}
		rc = profile__add_sample(p, stack, (uint32_t)s->n_location_id, labels, nl,
					 s->value);
		if (rc)
			goto nomem;
	}
	*out = p;
	p = NULL;
	rc = 0;
	goto out;
nomem:
	seterr(err, errsz, "out of memory");
	rc = -ENOMEM;
out:
	profile__free(p);
	free(xs);
	free(xmap);
	free(xfunc);
	free(xloc);
	free(stack);
	free(lines);
	free(labels);
	return rc;
}

/*
 * protobuf-c allocates one struct per sub-message, so a crafted message of
 * many tiny samples could blow up far beyond its size. Budget the unpack:
 * generous for real profiles (they need about 10x), fatal for bombs.
 */
struct pb_budget {
	size_t left;
	bool hit;
};

/* 64 bytes of structs per input byte covers even messages of empty
 * entries (2 bytes each, ~80 bytes unpacked); 4 GiB caps the worst. */
static size_t unpack_budget(size_t len)
{
	uint64_t b = (uint64_t)len * 64 + (64ULL << 20);

	return b > (4ULL << 30) ? (size_t)(4ULL << 30) : (size_t)b;
}

static void *pb_alloc(void *data, size_t size)
{
	struct pb_budget *b = data;

	if (size > b->left) {
		b->hit = true;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void pb_free(void *data, void *ptr)
{
	(void)data;
	free(ptr);
}

int pprof__decode(const void *buf, size_t len, struct profile **out, char *err,
		  size_t errsz)
{
	return pprof__decode_max(buf, len, PPROF_MAX_DECOMPRESSED, out, err, errsz);
}

int pprof__decode_max(const void *buf, size_t len, uint64_t max, struct profile **out,
		      char *err, size_t errsz)
{
	struct pb_budget budget = { 0 };
	ProtobufCAllocator alloc = { .alloc = pb_alloc, .free = pb_free, .allocator_data = &budget };
	const uint8_t *in = buf;
	uint8_t *raw = NULL;
	size_t rawlen = len;
	PbProfile *m = NULL;
	struct idpos *maps = NULL, *funcs = NULL, *locs = NULL;
	int rc;

	if (err && errsz)
		err[0] = '\0';
	*out = NULL;
	if (len == 0) {
		seterr(err, errsz, "empty file");
		return -EINVAL;
	}
	if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
		if (max > PPROF_MAX_DECOMPRESSED)
			max = PPROF_MAX_DECOMPRESSED;
		rc = gunzip(in, len, max, &raw, &rawlen, err, errsz);
		if (rc)
			return rc;
		in = raw;
	} else if (len > PPROF_MAX_DECOMPRESSED || len > max) {
		seterr(err, errsz, "larger than %llu bytes",
		       (unsigned long long)(max < PPROF_MAX_DECOMPRESSED ? max : PPROF_MAX_DECOMPRESSED));
		return -EINVAL;
	}
	budget.left = unpack_budget(rawlen);
	m = perftools__profiles__profile__unpack(&alloc, rawlen, in);
	if (!m) {
		if (budget.hit)
			seterr(err, errsz, "implausibly many entries for its size (more than %zu MiB to unpack)",
			       unpack_budget(rawlen) >> 20);
		else
			seterr(err, errsz, "not a valid protobuf Profile message (truncated or corrupt)");
		rc = -EINVAL;
		goto out;
	}
	rc = validate(m, &maps, &funcs, &locs, err, errsz);
	if (rc)
		goto out;
	rc = convert(m, maps, funcs, locs, out, err, errsz);
out:
	if (m)
		perftools__profiles__profile__free_unpacked(m, &alloc);
	free(maps);
	free(funcs);
	free(locs);
	free(raw);
	return rc;
}
