/*
 * fuzz_scrape.c - libFuzzer target for what --scrape takes from outside:
 * the [job=NAME@]URL spec of the command line, and two successive HTTP
 * answers of one target through the pprof decoder into the delta logic.
 * Input: the spec up to the first '\n', then the two answers split at
 * their midpoint. Whatever the bytes: a refused spec says why on one
 * line, an accepted one has a job, an instance with a port and an
 * http(s) base; a delta never holds a negative value and keeps the
 * answer's value types.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/scrape/scrape.h"
#include "store/profile/pprof.h"

static void spec(const uint8_t *d, size_t n)
{
	char *s = strndup((const char *)d, n), err[256] = "";
	struct scrape_target t;

	if (!s)
		return;
	if (scrape_target__parse(s, &t, err, sizeof(err))) {
		if (!err[0] || strchr(err, '\n'))
			abort();
	} else {
		if (!t.job || !*t.job || !t.instance || !strchr(t.instance, ':') ||
		    (strncmp(t.base, "http://", 7) && strncmp(t.base, "https://", 8)))
			abort();
		scrape_target__fini(&t);
	}
	free(s);
}

static void check(const struct profile *o, uint32_t nvalues)
{
	if (!o)
		return;
	if (o->nvalues != nvalues)
		abort();
	for (uint32_t i = 0; i < o->nsamples; i++)
		for (uint32_t j = 0; j < o->nvalues; j++)
			if (o->samples[i].values[j] < 0)
				abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t sl = nl ? (size_t)(nl - data) : size, rest, half;
	const uint8_t *body = nl ? nl + 1 : data + size;
	struct scrape_delta d = { 0 };
	struct profile *p[2] = { 0 }, *o = NULL;
	int64_t s, du;
	char err[256];

	spec(data, sl);
	rest = size - (size_t)(body - data);
	half = rest / 2;
	if (pprof__decode(body, half, &p[0], err, sizeof(err)) ||
	    pprof__decode(body + half, rest - half, &p[1], err, sizeof(err))) {
		profile__free(p[0]);
		return 0;
	}
	/* Both answers twice: baseline, a delta, a delta of p[0] against
	 * p[1] (often a "restart"), and an identical answer again. */
	for (int i = 0; i < 4; i++) {
		struct profile *c = profile__new();
		uint32_t nv = p[i & 1]->nvalues;

		if (!c || profile__merge(c, p[i & 1], 1, NULL, 0)) {
			profile__free(c);
			continue;
		}
		c->default_sample_type = 0;
		if (scrape_delta__next(&d, c, 1000 * (i + 1), &o, &s, &du) == 0 && o) {
			check(o, nv);
			if (s != 1000 * i || du != 1000)
				abort();
		}
		profile__free(o);
		o = NULL;
	}
	scrape_delta__fini(&d);
	profile__free(p[0]);
	profile__free(p[1]);
	return 0;
}
