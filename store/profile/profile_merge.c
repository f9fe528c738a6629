/*
 * profile_merge.c - profiles combined: one added into another (scaled,
 * value types matched by name), and the difference of two as pprof shows
 * one (-diff_base).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/profile/profile.h"

int profile__merge(struct profile *dst, const struct profile *src, int64_t scale,
		   const struct prof_label *extra, uint32_t nextra)
{
	uint32_t *smap = NULL;
	uint64_t *mmap_ = NULL, *fmap = NULL, *lmap = NULL, *locs = NULL;
	struct prof_label *labels = NULL;
	struct prof_line *lines = NULL;
	int vmap[PROF_MAX_VALUES];
	int64_t vals[PROF_MAX_VALUES];
	uint32_t maxlocs = 1, maxlabels = 1, maxlines = 1;
	int err = -ENOMEM;

	smap = malloc((size_t)(src->nstrs ? src->nstrs : 1) * sizeof(*smap));
	if (!smap)
		goto out;
	for (uint32_t i = 0; i < src->nstrs; i++) {
		smap[i] = profile__intern(dst, src->strs[i], src->str_lens[i]);
		if (smap[i] == UINT32_MAX)
			goto out;
	}
	if (!dst->nvalues && !dst->nsamples) {
		dst->nvalues = src->nvalues;
		for (uint32_t i = 0; i < src->nvalues; i++) {
			dst->sample_types[i].type = smap[src->sample_types[i].type];
			dst->sample_types[i].unit = smap[src->sample_types[i].unit];
		}
		dst->default_sample_type = smap[src->default_sample_type];
	}
	for (uint32_t i = 0; i < src->nvalues; i++) {
		int j = profile__value_index(dst, src->strs[src->sample_types[i].type],
					     src->strs[src->sample_types[i].unit]);

		if (j < 0) {
			err = -EINVAL;
			goto out;
		}
		vmap[i] = j;
	}
	if (!dst->period_type.type && src->period_type.type) {
		dst->period_type.type = smap[src->period_type.type];
		dst->period_type.unit = smap[src->period_type.unit];
	}
	if (!dst->period)
		dst->period = src->period;
	if (src->time_nanos || src->duration_nanos) {
		int64_t s0 = src->time_nanos, s1 = src->time_nanos + src->duration_nanos;
		int64_t d0 = dst->time_nanos, d1 = dst->time_nanos + dst->duration_nanos;

		if (!d0 && !dst->duration_nanos) {
			d0 = s0;
			d1 = s1;
		}
		if (s0 < d0)
			d0 = s0;
		if (s1 > d1)
			d1 = s1;
		dst->time_nanos = d0;
		dst->duration_nanos = d1 - d0;
	}

	mmap_ = calloc(src->nmappings + 1, sizeof(*mmap_));
	fmap = calloc(src->nfunctions + 1, sizeof(*fmap));
	lmap = calloc(src->nlocations + 1, sizeof(*lmap));
	if (!mmap_ || !fmap || !lmap)
		goto out;
	for (uint32_t i = 0; i < src->nmappings; i++) {
		struct prof_mapping m = src->mappings[i];

		m.file = smap[m.file];
		m.build_id = smap[m.build_id];
		if (!(mmap_[i + 1] = profile__add_mapping(dst, &m)))
			goto out;
	}
	for (uint32_t i = 0; i < src->nfunctions; i++) {
		struct prof_function f = src->functions[i];

		f.name = smap[f.name];
		f.system_name = smap[f.system_name];
		f.filename = smap[f.filename];
		if (!(fmap[i + 1] = profile__add_function(dst, &f)))
			goto out;
	}
	for (uint32_t i = 0; i < src->nlocations; i++)
		if (src->locations[i].nlines > maxlines)
			maxlines = src->locations[i].nlines;
	lines = calloc(maxlines, sizeof(*lines));
	if (!lines)
		goto out;
	for (uint32_t i = 0; i < src->nlocations; i++) {
		struct prof_location l = src->locations[i];

		for (uint32_t j = 0; j < l.nlines; j++) {
			lines[j].function_id = l.lines[j].function_id <= src->nfunctions
						       ? fmap[l.lines[j].function_id] : 0;
			lines[j].line = l.lines[j].line;
		}
		l.lines = lines;
		l.mapping_id = l.mapping_id <= src->nmappings ? mmap_[l.mapping_id] : 0;
		if (!(lmap[i + 1] = profile__add_location(dst, &l)))
			goto out;
	}
	for (uint32_t i = 0; i < src->nsamples; i++) {
		if (src->samples[i].nlocs > maxlocs)
			maxlocs = src->samples[i].nlocs;
		if (src->samples[i].nlabels + nextra > maxlabels)
			maxlabels = src->samples[i].nlabels + nextra;
	}
	locs = malloc((size_t)maxlocs * sizeof(*locs));
	labels = malloc((size_t)maxlabels * sizeof(*labels));
	if (!locs || !labels)
		goto out;
	for (uint32_t i = 0; i < src->nsamples; i++) {
		const struct prof_sample *s = &src->samples[i];
		uint32_t nl = 0;

		for (uint32_t j = 0; j < s->nlocs; j++)
			locs[j] = s->locs[j] <= src->nlocations ? lmap[s->locs[j]] : 0;
		for (uint32_t j = 0; j < s->nlabels + nextra; j++) {
			const struct prof_label *l = j < s->nlabels ? &s->labels[j]
								    : &extra[j - s->nlabels];

			labels[nl].key = smap[l->key];
			labels[nl].str = smap[l->str];
			labels[nl].num = l->num;
			labels[nl].num_unit = smap[l->num_unit];
			nl++;
		}
		memset(vals, 0, sizeof(vals));
		for (uint32_t v = 0; v < src->nvalues; v++)
			vals[vmap[v]] = s->values[v] * scale;
		err = profile__add_sample(dst, locs, s->nlocs, labels, nl, vals);
		if (err)
			goto out;
	}
	err = 0;
out:
	free(smap);
	free(mmap_);
	free(fmap);
	free(lmap);
	free(locs);
	free(labels);
	free(lines);
	return err;
}

struct profile *profile__diff(const struct profile *a, const struct profile *b)
{
	struct profile *d = profile__new(), *tmp = NULL;
	struct prof_label base;
	int err;

	if (!d)
		return NULL;
	err = profile__merge(d, b, 1, NULL, 0);
	if (err)
		goto err;
	/* The extra label's strings must belong to a: a is const, so copy it
	 * into a scratch profile that owns them. */
	tmp = profile__new();
	if (!tmp) {
		err = -ENOMEM;
		goto err;
	}
	err = profile__merge(tmp, a, 1, NULL, 0);
	if (err)
		goto err;
	memset(&base, 0, sizeof(base));
	base.key = profile__intern_str(tmp, "pprof::base");
	base.str = profile__intern_str(tmp, "true");
	if (base.key == UINT32_MAX || base.str == UINT32_MAX) {
		err = -ENOMEM;
		goto err;
	}
	err = profile__merge(d, tmp, -1, &base, 1);
	if (err)
		goto err;
	profile__free(tmp);
	return d;
err:
	profile__free(tmp);
	profile__free(d);
	errno = -err;
	return NULL;
}
