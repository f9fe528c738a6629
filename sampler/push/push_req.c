/*
 * push_req.c - one minute of one series as Pyroscope's push API wants it:
 * labels cleaned to what the server validates (names [A-Za-z0-9_], values
 * UTF-8, at most 30 labels, name 1024 and value 2048 bytes), the profile
 * cut into pieces of at most 16,000 samples and 4 MiB (Pyroscope's
 * per-profile limits; the pieces sum to the whole, so totals stay exact),
 * each piece gzip'd (zlib) with a deterministic ID, and the protobuf-c
 * encoding of the request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gen/push.pb-c.h"
#include "sampler/push/push.h"
#include "store/profile/pprof.h"
#include "store/util/util.h"

#define MAX_LABELS 30
#define MAX_NAME_LEN 1024
#define MAX_VALUE_LEN 2048
#define MAX_SAMPLES 16000
#define MAX_PROFILE_BYTES (4u << 20)

const char *push__profile_name(const char *type)
{
	static const struct {
		const char *ours, *theirs;
	} names[] = {
		{ "cpu", "process_cpu" }, { "heap", "memory" },	 { "alloc", "memory" },
		{ "allocs", "memory" },	  { "offcpu", "off_cpu" }, { "goroutine", "goroutine" },
		{ "mutex", "mutex" },	  { "block", "block" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(type, names[i].ours))
			return names[i].theirs;
	return type;
}

void push_item__fini(struct push_item *it)
{
	for (size_t i = 0; i < it->nlabels; i++) {
		free(it->names[i]);
		free(it->values[i]);
	}
	free(it->names);
	free(it->values);
	for (size_t i = 0; i < it->nprof; i++) {
		free(it->gz[i]);
		free(it->ids[i]);
	}
	free(it->gz);
	free(it->gzlen);
	free(it->ids);
	memset(it, 0, sizeof(*it));
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are invalid. */
	if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return len;
}

/* A label value as valid UTF-8 of at most MAX_VALUE_LEN bytes: invalid
 * bytes become '?' (a comm is whatever bytes a process chose). */
static char *clean_value(const char *v)
{
	size_t n = strlen(v), o = 0;
	char *r = malloc(n + 1);

	if (!r)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = utf8_len((const unsigned char *)v + i, n - i);

		if (!l) {
			l = 1;
			if (o + 1 > MAX_VALUE_LEN)
				break;
			r[o++] = '?';
		} else {
			if (o + l > MAX_VALUE_LEN)
				break;
			memcpy(r + o, v + i, l);
			o += l;
		}
		i += l;
	}
	r[o] = 0;
	return r;
}

/* A label name as Prometheus-style [A-Za-z_][A-Za-z0-9_]*. */
static char *clean_name(const char *n)
{
	size_t len = strnlen(n, MAX_NAME_LEN - 1);
	char *r = malloc(len + 2), *p = r;

	if (!r)
		return NULL;
	if (n[0] >= '0' && n[0] <= '9')
		*p++ = '_';
	for (size_t i = 0; i < len; i++) {
		char c = n[i];

		*p++ = (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c >= '0' && c <= '9')) ? c : '_';
	}
	*p = 0;
	return r;
}

static const char *label_of(const struct store_series *ser, const char *name)
{
	for (size_t i = 0; i < ser->nlabels; i++)
		if (!strcmp(ser->labels[i].name, name) && *ser->labels[i].value)
			return ser->labels[i].value;
	return NULL;
}

static int add_label(struct push_item *it, const char *name, const char *value, bool clean)
{
	char *n = clean ? clean_name(name) : strdup(name), *v = clean_value(value);

	if (!n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < it->nlabels; i++)
		if (!strcmp(it->names[i], n)) { /* first one wins */
			free(n);
			free(v);
			return 0;
		}
	if (it->nlabels == MAX_LABELS) {
		it->labels_cut++;
		free(n);
		free(v);
		return 0;
	}
	it->names[it->nlabels] = n;
	it->values[it->nlabels] = v;
	it->nlabels++;
	return 0;
}

static int gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap;
	uint8_t *b;
	int rc;

	/* 16 + 15: a gzip header, as pprof files carry. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, len) + 32;
	b = malloc(cap);
	if (!b) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (uint8_t *)in;
	z.avail_in = len;
	z.next_out = b;
	z.avail_out = cap;
	rc = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(b);
		return -EIO;
	}
	*out = b;
	*outlen = z.total_out;
	return 0;
}

/* A deterministic ID per profile piece: the same minute, series and piece
 * always get the same ID, so a server that dedups by ID drops a resend. */
static char *piece_id(const char *type, const struct store_series *ser, int64_t minute,
		      size_t piece)
{
	struct buf b = { 0 };
	uint64_t h1, h2;
	char *id;

	buf__printf(&b, "%s\n%" PRId64 "\n%zu\n", type, minute, piece);
	for (size_t i = 0; i < ser->nlabels; i++)
		buf__printf(&b, "%s=%s\n", ser->labels[i].name, ser->labels[i].value);
	if (b.err) {
		buf__free(&b);
		return NULL;
	}
	h1 = hash64(b.data, b.len, 0x707573683101ULL);
	h2 = hash64(b.data, b.len, 0x707573683102ULL);
	buf__free(&b);
	if (asprintf(&id, "%08x-%04x-%04x-%04x-%012" PRIx64, (unsigned)(h1 >> 32),
		     (unsigned)(h1 >> 16) & 0xffff, (unsigned)h1 & 0xffff,
		     (unsigned)(h2 >> 48), (uint64_t)(h2 & 0xffffffffffffULL)) < 0)
		return NULL;
	return id;
}

static int add_piece(struct push_item *it, const uint8_t *pb, size_t len, char *id)
{
	uint8_t **gz = realloc(it->gz, (it->nprof + 1) * sizeof(*gz));
	size_t *gzlen;
	char **ids;
	int err;

	if (!gz)
		return -ENOMEM;
	it->gz = gz;
	gzlen = realloc(it->gzlen, (it->nprof + 1) * sizeof(*gzlen));
	if (!gzlen)
		return -ENOMEM;
	it->gzlen = gzlen;
	ids = realloc(it->ids, (it->nprof + 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	it->ids = ids;
	err = gzip(pb, len, &gz[it->nprof], &gzlen[it->nprof]);
	if (err)
		return err;
	ids[it->nprof++] = id;
	return 0;
}

/*
 * Cuts p into pieces of at most MAX_SAMPLES samples whose encoding stays
 * under MAX_PROFILE_BYTES (halving a piece that does not), each encoded
 * with every symbol of p (unreferenced ones are valid pprof).
 */
static int add_pieces(struct push_item *it, struct profile *p, const char *type,
		      const struct store_series *ser, int64_t minute)
{
	struct prof_sample *all = p->samples;
	uint32_t n = p->nsamples, at = 0, step = MAX_SAMPLES, piece = 0;
	int err = 0;

	do {
		uint32_t k = n - at < step ? n - at : step;
		uint8_t *pb;
		size_t len;
		char *id;

		p->samples = all + at;
		p->nsamples = k;
		err = pprof__encode(p, &pb, &len);
		p->samples = all;
		p->nsamples = n;
		if (err)
			return err;
		if (len > MAX_PROFILE_BYTES && k > 1) {
			free(pb);
			step = k / 2;
			continue;
		}
		if (len > MAX_PROFILE_BYTES) {
			it->dropped++; /* one sample whose symbols exceed the limit */
			free(pb);
		} else {
			id = piece_id(type, ser, minute, piece);
			err = id ? add_piece(it, pb, len, id) : -ENOMEM;
			free(pb);
			if (err) {
				free(id);
				return err;
			}
			piece++;
		}
		at += k;
		step = MAX_SAMPLES;
	} while (at < n);
	it->nsamples += n;
	return 0;
}

int push_item__build(struct store *s, const char *type, const struct store_series *ser,
		     int64_t minute, struct push_item *it)
{
	struct store_sel sel = { .type = type, .ids = &ser->id, .nids = 1 };
	struct profile *p = NULL;
	const char *svc;
	int err;

	memset(it, 0, sizeof(*it));
	it->names = calloc(MAX_LABELS, sizeof(char *));
	it->values = calloc(MAX_LABELS, sizeof(char *));
	if (!it->names || !it->values) {
		err = -ENOMEM;
		goto fail;
	}
	svc = label_of(ser, "service_name");
	if (!svc)
		svc = label_of(ser, "unit");
	if (!svc)
		svc = label_of(ser, "container");
	if (!svc)
		svc = label_of(ser, "comm");
	if ((err = add_label(it, "__name__", push__profile_name(type), false)) ||
	    (err = add_label(it, "service_name", svc ? svc : "unknown_service", false)))
		goto fail;
	for (size_t i = 0; i < ser->nlabels; i++) {
		if (!*ser->labels[i].value)
			continue;
		if ((err = add_label(it, ser->labels[i].name, ser->labels[i].value, true)))
			goto fail;
	}
	err = store__merge(s, &sel, minute, minute + 60, &p);
	if (err)
		goto fail;
	err = add_pieces(it, p, type, ser, minute);
	profile__free(p);
	if (err)
		goto fail;
	return 0;
fail:
	push_item__fini(it);
	return err;
}

int push_req__encode(struct push_item *items, size_t n, uint8_t **out, size_t *len)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries *ser = calloc(n ? n : 1, sizeof(*ser));
	Push__V1__RawProfileSeries **serp = calloc(n ? n : 1, sizeof(*serp));
	size_t nl = 0, ns = 0, li = 0, si = 0;
	Push__V1__LabelPair *lab, **labp;
	Push__V1__RawSample *smp, **smpp;
	int err = 0;

	for (size_t i = 0; i < n; i++) {
		nl += items[i].nlabels;
		ns += items[i].nprof;
	}
	lab = calloc(nl + 1, sizeof(*lab));
	labp = calloc(nl + 1, sizeof(*labp));
	smp = calloc(ns + 1, sizeof(*smp));
	smpp = calloc(ns + 1, sizeof(*smpp));
	if (!ser || !serp || !lab || !labp || !smp || !smpp) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		push__v1__raw_profile_series__init(&ser[i]);
		ser[i].labels = labp + li;
		ser[i].n_labels = items[i].nlabels;
		for (size_t j = 0; j < items[i].nlabels; j++, li++) {
			push__v1__label_pair__init(&lab[li]);
			lab[li].name = items[i].names[j];
			lab[li].value = items[i].values[j];
			labp[li] = &lab[li];
		}
		ser[i].samples = smpp + si;
		ser[i].n_samples = items[i].nprof;
		for (size_t j = 0; j < items[i].nprof; j++, si++) {
			push__v1__raw_sample__init(&smp[si]);
			smp[si].raw_profile.data = items[i].gz[j];
			smp[si].raw_profile.len = items[i].gzlen[j];
			smp[si].id = items[i].ids[j];
			smpp[si] = &smp[si];
		}
		serp[i] = &ser[i];
	}
	req.series = serp;
	req.n_series = n;
	*len = push__v1__push_request__get_packed_size(&req);
	*out = malloc(*len ? *len : 1);
	if (!*out) {
		err = -ENOMEM;
		goto out;
	}
	push__v1__push_request__pack(&req, *out);
out:
	free(ser);
	free(serp);
	free(lab);
	free(labp);
	free(smp);
	free(smpp);
	return err;
}
