/*
 * pprof_encode.c - a struct profile encoded as perftools.profiles.Profile
 * (protobuf-c over store/profile/profile.proto), whole or as a part that
 * follows another (pprof__encode_after). pprof_decode.c is the other way.
 */
#include "store/profile/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/profile/pprof_pb.h"
#include "store/util/util.h"

/*
 * Encoding, in parts. Protobuf merges messages written one after another:
 * a parser of the concatenation sees one Profile whose repeated fields
 * hold every part's entries (and a scalar set in one part only keeps its
 * value). So the profile is packed as a sequence of Profile messages: the
 * header (value types, strings, times), then mappings, functions,
 * locations and samples, ENC_PART entries a message. Each part's protobuf-c
 * structs point into p (strings, location ids and values are not copied)
 * and live in one small set of arrays reused for every part. Packing the
 * whole tree at once needed ~10 MB of structs for a busy hour (40k
 * samples, 80k labels), every page of it freshly faulted in: on this kind
 * of virtual machine a page fault costs ~20 us, and they were a fifth of
 * the time of a cold `proffs cat`. Each part is packed straight into one
 * growing buffer: only the header is sized first; the others get room for
 * a bound counted from their entries (enc_bound), since sizing a part walks
 * it as packing does and cost a fifth of a render of an imported hour.
 */
#define ENC_PART 1024u

enum enc_kind { ENC_HEADER, ENC_MAPPINGS, ENC_FUNCTIONS, ENC_LOCATIONS, ENC_SAMPLES };

struct enc {
	const struct profile *p;
	const uint8_t *symbolized; /* per mapping: some location has lines */
	/* A part after another's (pprof__encode_after): its strings and ids
	 * numbered past the first's by these offsets (all 0 otherwise). */
	bool after;
	uint32_t off_str, off_map, off_fn, off_loc;
	uint64_t *locids; /* (after) one part's samples' location ids */
	size_t caplocids;
	PbMapping mp[ENC_PART], *mpp[ENC_PART];
	PbFunction fn[ENC_PART], *fnp[ENC_PART];
	PbLocation lo[ENC_PART], *lop[ENC_PART];
	PbSample sa[ENC_PART], *sap[ENC_PART];
	PbLine *li, **lip;   /* the lines of one part's locations */
	PbLabel *la, **lap;  /* the labels of one part's samples */
	size_t capli, capla;
};

/* String index i of e->p as numbered in the output (p's "" is not
 * repeated: index 0 stays the first part's ""). */
static inline int64_t enc_str(const struct enc *e, int64_t i)
{
	return i ? i + e->off_str : 0;
}

/* Id i (1-based, 0 = none) numbered past off of the first part's. */
static inline uint64_t enc_id(uint64_t i, uint32_t off)
{
	return i ? i + off : 0;
}

/* Lines (or labels) of entries [from, to): room for them in e. */
static int enc_room(void **a, void **pa, size_t *cap, size_t n, size_t elem)
{
	size_t c = *cap;

	if (n <= *cap)
		return 0;
	if (grow(a, &c, n, elem) || grow(pa, cap, n, sizeof(void *)))
		return -ENOMEM;
	return 0;
}

/* Fills m with part [from, to) of kind k. Returns 0 or -ENOMEM. */
static int enc_part(struct enc *e, enum enc_kind k, uint32_t from, uint32_t to, PbProfile *m,
		    PbValueType *st, PbValueType **stp, PbValueType *pt)
{
	const struct profile *p = e->p;
	size_t n;

	perftools__profiles__profile__init(m);
	switch (k) {
	case ENC_HEADER:
		if (e->after) {
			/* Strings, and the duration of the whole. Not the time:
			 * the first part's is the whole's start, and pprof takes
			 * a second time_nanos for two profiles in one file. */
			m->n_string_table = p->nstrs ? p->nstrs - 1 : 0;
			m->string_table = p->nstrs ? p->strs + 1 : NULL;
			m->duration_nanos = p->duration_nanos;
			return 0;
		}
		for (uint32_t i = 0; i < p->nvalues; i++) {
			perftools__profiles__value_type__init(&st[i]);
			st[i].type = p->sample_types[i].type;
			st[i].unit = p->sample_types[i].unit;
			stp[i] = &st[i];
		}
		m->n_sample_type = p->nvalues;
		m->sample_type = stp;
		m->n_string_table = p->nstrs;
		m->string_table = p->strs;
		m->time_nanos = p->time_nanos;
		m->duration_nanos = p->duration_nanos;
		if (p->period_type.type || p->period_type.unit) {
			perftools__profiles__value_type__init(pt);
			pt->type = p->period_type.type;
			pt->unit = p->period_type.unit;
			m->period_type = pt;
		}
		m->period = p->period;
		m->default_sample_type = p->default_sample_type;
		return 0;
	case ENC_MAPPINGS:
		for (uint32_t i = from; i < to; i++) {
			const struct prof_mapping *pm = &p->mappings[i];
			PbMapping *x = &e->mp[i - from];

			/* A mapping some location resolved to a function is
			 * symbolized whatever its flag says; telling pprof so
			 * keeps it from trying to symbolize it again. */
			perftools__profiles__mapping__init(x);
			x->id = enc_id(i + 1, e->off_map);
			x->memory_start = pm->start;
			x->memory_limit = pm->limit;
			x->file_offset = pm->offset;
			x->filename = enc_str(e, pm->file);
			x->build_id = enc_str(e, pm->build_id);
			x->has_functions = pm->has_functions || e->symbolized[i];
			e->mpp[i - from] = x;
		}
		m->n_mapping = to - from;
		m->mapping = e->mpp;
		return 0;
	case ENC_FUNCTIONS:
		for (uint32_t i = from; i < to; i++) {
			const struct prof_function *pf = &p->functions[i];
			PbFunction *x = &e->fn[i - from];

			perftools__profiles__function__init(x);
			x->id = enc_id(i + 1, e->off_fn);
			x->name = enc_str(e, pf->name);
			x->system_name = enc_str(e, pf->system_name);
			x->filename = enc_str(e, pf->filename);
			x->start_line = pf->start_line;
			e->fnp[i - from] = x;
		}
		m->n_function = to - from;
		m->function = e->fnp;
		return 0;
	case ENC_LOCATIONS:
		n = 0;
		for (uint32_t i = from; i < to; i++)
			n += p->locations[i].nlines;
		if (enc_room((void **)&e->li, (void **)&e->lip, &e->capli, n, sizeof(*e->li)))
			return -ENOMEM;
		n = 0;
		for (uint32_t i = from; i < to; i++) {
			const struct prof_location *pl = &p->locations[i];
			PbLocation *x = &e->lo[i - from];

			perftools__profiles__location__init(x);
			x->id = enc_id(i + 1, e->off_loc);
			x->mapping_id = enc_id(pl->mapping_id, e->off_map);
			x->address = pl->address;
			x->n_line = pl->nlines;
			x->line = e->lip ? &e->lip[n] : NULL; /* (no lines in the part: no array) */
			for (uint32_t j = 0; j < pl->nlines; j++, n++) {
				perftools__profiles__line__init(&e->li[n]);
				e->li[n].function_id = enc_id(pl->lines[j].function_id, e->off_fn);
				e->li[n].line = pl->lines[j].line;
				e->lip[n] = &e->li[n];
			}
			e->lop[i - from] = x;
		}
		m->n_location = to - from;
		m->location = e->lop;
		return 0;
	case ENC_SAMPLES:
		n = 0;
		size_t nl = 0;

		for (uint32_t i = from; i < to; i++) {
			n += p->samples[i].nlabels;
			nl += p->samples[i].nlocs;
		}
		if (enc_room((void **)&e->la, (void **)&e->lap, &e->capla, n, sizeof(*e->la)))
			return -ENOMEM;
		if (e->after && nl > e->caplocids &&
		    grow((void **)&e->locids, &e->caplocids, nl, sizeof(*e->locids)))
			return -ENOMEM;
		n = 0;
		nl = 0;
		for (uint32_t i = from; i < to; i++) {
			const struct prof_sample *ps = &p->samples[i];
			PbSample *x = &e->sa[i - from];

			perftools__profiles__sample__init(x);
			x->n_location_id = ps->nlocs;
			x->location_id = ps->locs;
			if (e->after) {
				for (uint32_t j = 0; j < ps->nlocs; j++)
					e->locids[nl + j] = enc_id(ps->locs[j], e->off_loc);
				x->location_id = e->locids + nl;
				nl += ps->nlocs;
			}
			x->n_value = p->nvalues;
			x->value = ps->values;
			x->n_label = ps->nlabels;
			x->label = e->lap ? &e->lap[n] : NULL;
			for (uint32_t j = 0; j < ps->nlabels; j++, n++) {
				const struct prof_label *pl = &ps->labels[j];
				PbLabel *y = &e->la[n];

				perftools__profiles__label__init(y);
				y->key = enc_str(e, pl->key);
				y->str = enc_str(e, pl->str);
				if (!pl->str) {
					y->num = pl->num;
					y->num_unit = enc_str(e, pl->num_unit);
				}
				e->lap[n] = y;
			}
			e->sap[i - from] = x;
		}
		m->n_sample = to - from;
		m->sample = e->sap;
		return 0;
	}
	return 0;
}

/* More than the encoding takes, as a first capacity: pages of it never
 * written are never faulted in, and the spare is handed back at the end,
 * while growing by copies cost a tenth of an encode. */
static size_t enc_guess(const struct profile *p)
{
	size_t n = 64 << 10;

	for (uint32_t i = 0; i < p->nstrs; i++)
		n += p->str_lens[i] + 6;
	n += (size_t)p->nmappings * 80 + (size_t)p->nfunctions * 48;
	for (uint32_t i = 0; i < p->nlocations; i++)
		n += 40 + (size_t)p->locations[i].nlines * 26;
	for (uint32_t i = 0; i < p->nsamples; i++)
		n += 16 + (size_t)p->samples[i].nlocs * 10 + (size_t)p->nvalues * 11 +
		     (size_t)p->samples[i].nlabels * 40;
	return n;
}

/*
 * The most bytes part m, [from, to) of kind k, can pack to. The header,
 * which holds the strings, is sized exactly; the others are counted
 * without walking their messages as protobuf-c's sizing does. Every
 * field of a mapping, function, location, line, sample or label is a
 * varint (at most 10 bytes) behind its tag (2 bytes up to field 2047); a
 * repeated one is taken as a tag per element, packed or not; a message
 * inside another adds its tag and a length of at most 5 bytes. Counting
 * from the descriptors' field counts keeps the bound true if profile.proto
 * gains a field of these kinds.
 */
#define ENC_VARINT 12u /* tag + varint */
#define ENC_FRAME 7u   /* tag + length of a message in a message */

static size_t enc_bound(const struct enc *e, enum enc_kind k, uint32_t from, uint32_t to,
			const PbProfile *m)
{
	const struct profile *p = e->p;
	size_t n = 0;

	switch (k) {
	case ENC_HEADER:
		n = perftools__profiles__profile__get_packed_size(m);
		break;
	case ENC_MAPPINGS:
		n = (size_t)(to - from) *
		    (ENC_FRAME + perftools__profiles__mapping__descriptor.n_fields * ENC_VARINT);
		break;
	case ENC_FUNCTIONS:
		n = (size_t)(to - from) *
		    (ENC_FRAME + perftools__profiles__function__descriptor.n_fields * ENC_VARINT);
		break;
	case ENC_LOCATIONS:
		for (uint32_t i = from; i < to; i++)
			n += ENC_FRAME +
			     perftools__profiles__location__descriptor.n_fields * ENC_VARINT +
			     (size_t)p->locations[i].nlines *
				     (ENC_FRAME + perftools__profiles__line__descriptor.n_fields *
							  ENC_VARINT);
		break;
	case ENC_SAMPLES:
		for (uint32_t i = from; i < to; i++)
			n += 3 * ENC_FRAME +
			     ((size_t)p->samples[i].nlocs + p->nvalues) * ENC_VARINT +
			     (size_t)p->samples[i].nlabels *
				     (ENC_FRAME + perftools__profiles__label__descriptor.n_fields *
							  ENC_VARINT);
		break;
	}
	return n;
}

/* Packs every part into *out (malloc'd, grown as parts come to hold each
 * one's bound), exactly *len bytes plus one spare. Returns 0 or -errno. */
static int enc_all(struct enc *e, uint8_t **out, size_t *len)
{
	const struct profile *p = e->p;
	const uint32_t count[] = { 1, p->nmappings, p->nfunctions, p->nlocations, p->nsamples };
	PbValueType st[PROF_MAX_VALUES], *stp[PROF_MAX_VALUES], pt;
	PbProfile m;
	uint8_t *buf = NULL, *nb;
	size_t at = 0, cap = 0;
	int rc;

	for (int k = ENC_HEADER; k <= ENC_SAMPLES; k++)
		for (uint32_t from = 0; from < count[k]; from += ENC_PART) {
			uint32_t to = count[k] - from > ENC_PART ? from + ENC_PART : count[k];
			size_t sz, bound;

			if ((rc = enc_part(e, k, from, to, &m, st, stp, &pt)))
				goto fail;
			bound = enc_bound(e, k, from, to, &m);
			if (at + bound + 1 > cap) {
				size_t ncap = cap ? cap : enc_guess(p);

				while (at + bound + 1 > ncap)
					ncap *= 2;
				if (!(nb = realloc(buf, ncap))) {
					rc = -ENOMEM;
					goto fail;
				}
				buf = nb;
				cap = ncap;
			}
			sz = perftools__profiles__profile__pack(&m, buf + at);
			if (sz > bound) {
				/* enc_bound is wrong, and bytes went past the room
				 * made: stop before anything reads them. */
				fprintf(stderr, "proffs: pprof: a part packed to %zu bytes, over its bound %zu\n",
					sz, bound);
				abort();
			}
			at += sz;
		}
	/* (the spare byte: a struct buf can take it, buf__take) */
	if (!buf && !(buf = malloc(1))) {
		rc = -ENOMEM;
		goto fail;
	}
	if (at + 1 < cap && (nb = realloc(buf, at + 1)))
		buf = nb;
	*out = buf;
	*len = at;
	return 0;
fail:
	free(buf);
	return rc;
}

static int encode(const struct profile *p, const struct pprof_ids *base, uint8_t **out,
		  size_t *outlen)
{
	struct enc *e = calloc(1, sizeof(*e));
	uint8_t *sym = NULL;
	int rc = -ENOMEM;

	if (!e || !(sym = calloc(p->nmappings ? p->nmappings : 1, 1)))
		goto out;
	for (uint32_t i = 0; i < p->nlocations; i++) {
		uint64_t m = p->locations[i].mapping_id;

		if (m && m <= p->nmappings && p->locations[i].nlines)
			sym[m - 1] = 1;
	}
	e->p = p;
	e->symbolized = sym;
	if (base) {
		e->after = true;
		e->off_str = base->nstrs - 1;
		e->off_map = base->nmappings;
		e->off_fn = base->nfunctions;
		e->off_loc = base->nlocations;
	}
	rc = enc_all(e, out, outlen);
out:
	free(sym);
	if (e) {
		free(e->locids);
		free(e->li);
		free(e->lip);
		free(e->la);
		free(e->lap);
	}
	free(e);
	return rc;
}

int pprof__encode(const struct profile *p, uint8_t **out, size_t *outlen)
{
	return encode(p, NULL, out, outlen);
}

void pprof__ids(const struct profile *p, struct pprof_ids *out)
{
	out->nstrs = p->nstrs ? p->nstrs : 1;
	out->nmappings = p->nmappings;
	out->nfunctions = p->nfunctions;
	out->nlocations = p->nlocations;
}

int pprof__encode_after(const struct profile *p, const struct pprof_ids *base, uint8_t **out,
			size_t *outlen)
{
	return encode(p, base, out, outlen);
}
