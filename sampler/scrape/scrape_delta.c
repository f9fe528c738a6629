/*
 * scrape_delta.c - Go's cumulative profiles (allocs, mutex, block) to
 * per-interval deltas; see scrape.h for the rules. The subtraction is a
 * profile merge with scale -1: samples are matched by their locations'
 * content (address, mapping, lines) and labels, which is what stays
 * stable between two answers of one Go process, whatever ids its encoder
 * gave them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/scrape/scrape.h"

static bool same_types(const struct profile *a, const struct profile *b)
{
	if (a->nvalues != b->nvalues)
		return false;
	for (uint32_t i = 0; i < a->nvalues; i++)
		if (strcmp(a->strs[a->sample_types[i].type], b->strs[b->sample_types[i].type]) ||
		    strcmp(a->strs[a->sample_types[i].unit], b->strs[b->sample_types[i].unit]))
			return false;
	return true;
}

static bool is_snapshot_col(const struct profile *p, uint32_t vi)
{
	return !strncmp(p->strs[p->sample_types[vi].type], "inuse_", 6);
}

void scrape_delta__fini(struct scrape_delta *d)
{
	profile__free(d->prev);
	d->prev = NULL;
}

int scrape_delta__next(struct scrape_delta *d, struct profile *cur, int64_t t_ns,
		       struct profile **out, int64_t *start_ns, int64_t *dur_ns)
{
	struct profile *o = NULL;
	bool restart = false;
	int rc;

	*out = NULL;
	*start_ns = *dur_ns = 0;
	if (!d->prev || t_ns <= d->prev_ns) {
		rc = 0;
		goto baseline;
	}
	if (!same_types(d->prev, cur)) {
		rc = -EINVAL;
		goto baseline;
	}
	for (uint32_t vi = 0; vi < cur->nvalues; vi++)
		if (!is_snapshot_col(cur, vi) && profile__total(cur, vi) < profile__total(d->prev, vi))
			restart = true;
	o = profile__new();
	if (!o) {
		profile__free(cur);
		return -ENOMEM;
	}
	if ((rc = profile__merge(o, cur, 1, NULL, 0)) ||
	    (!restart && (rc = profile__merge(o, d->prev, -1, NULL, 0)))) {
		profile__free(o);
		profile__free(cur);
		return rc;
	}
	for (uint32_t i = 0; i < o->nsamples; i++)
		for (uint32_t vi = 0; vi < o->nvalues; vi++)
			if (o->samples[i].values[vi] < 0 || is_snapshot_col(o, vi))
				o->samples[i].values[vi] = 0;
	if (restart)
		d->restarts++;
	*start_ns = d->prev_ns;
	*dur_ns = t_ns - d->prev_ns;
	o->time_nanos = *start_ns;
	o->duration_nanos = *dur_ns;
	*out = o;
	rc = 0;
baseline:
	profile__free(d->prev);
	d->prev = cur;
	d->prev_ns = t_ns;
	return rc;
}
