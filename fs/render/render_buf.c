/*
 * render_buf.c - the frame-name table the renderers share (render_int.h).
 */
#include "fs/render/render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"
#include "store/util/util.h"

/* ---- frame-name table ---- */

struct name_key {
	const char *s;
	size_t len;
};

static bool name_eq(const void *ctx, uint32_t id, const void *key)
{
	const struct frametab *ft = ctx;
	const struct name_key *k = key;

	return ft->len[id] == k->len && !memcmp(ft->pool + ft->off[id], k->s, k->len);
}

uint32_t frametab__intern(struct frametab *ft, const char *s, size_t len)
{
	char tmp[512];
	uint64_t h;
	uint32_t cap, id;

	/* Sanitise into tmp first so equal display names share one id. */
	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)s[k];

		tmp[k] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	tmp[len] = '\0';
	h = hash64(tmp, len, 0);
	id = hidx__find(&ft->idx, h, name_eq, ft, &(struct name_key){ tmp, len });
	if (id != UINT32_MAX)
		return id;
	cap = ft->cap_names; /* off and len grow in step */
	if (GROW(ft->off, &cap, ft->nnames + 1) || GROW(ft->len, &ft->cap_names, ft->nnames + 1) ||
	    GROW(ft->pool, &ft->pool_cap, ft->pool_len + len + 1))
		return UINT32_MAX;
	if (ft->pool_len > UINT32_MAX - len - 1 || hidx__insert(&ft->idx, h, ft->nnames))
		return UINT32_MAX;
	id = ft->nnames++;
	ft->off[id] = (uint32_t)ft->pool_len;
	ft->len[id] = (uint32_t)len;
	memcpy(ft->pool + ft->pool_len, tmp, len + 1);
	ft->pool_len += len + 1;
	return id;
}

int frametab__build(struct frametab *ft, const struct profile *p)
{
	char name[512];
	uint32_t total = 0, k = 0;

	memset(ft, 0, sizeof(*ft));
	for (uint32_t i = 0; i < p->nlocations; i++)
		total += p->locations[i].nlines ? p->locations[i].nlines : 1;
	ft->loc_off = calloc((size_t)p->nlocations + 1, sizeof(*ft->loc_off));
	ft->loc_frames = calloc(total ? total : 1, sizeof(*ft->loc_frames));
	if (!ft->loc_off || !ft->loc_frames)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nlocations; i++) {
		const struct prof_location *l = &p->locations[i];
		uint32_t n = l->nlines ? l->nlines : 1;

		ft->loc_off[i] = k;
		/* lines[n - 1] is the outermost: emit it first. */
		for (uint32_t j = n; j-- > 0;) {
			size_t len = profile__frame_name(p, i + 1, j, true, name, sizeof(name));
			uint32_t id = frametab__intern(ft, name, len);

			if (id == UINT32_MAX)
				return -ENOMEM;
			ft->loc_frames[k++] = id;
		}
	}
	ft->loc_off[p->nlocations] = k;
	return 0;
}

void frametab__free(struct frametab *ft)
{
	free(ft->pool);
	free(ft->off);
	free(ft->len);
	hidx__free(&ft->idx);
	free(ft->loc_off);
	free(ft->loc_frames);
	memset(ft, 0, sizeof(*ft));
}

int frametab__stack(struct frametab *ft, const struct profile *p,
		    const struct prof_sample *s, bool withcomm, uint32_t **ids,
		    uint32_t *cap)
{
	const char *comm = withcomm ? profile__sample_label(p, s, "comm") : NULL;
	uint32_t need = comm ? 1 : 0, n = 0;

	for (uint32_t i = 0; i < s->nlocs; i++) {
		uint64_t loc = s->locs[i];

		if (loc && loc <= p->nlocations)
			need += ft->loc_off[loc] - ft->loc_off[loc - 1];
	}
	need += 1; /* room for "(no stack)" */
	if (GROW(*ids, cap, need))
		return -ENOMEM;
	if (comm && *comm) {
		uint32_t id = frametab__intern(ft, comm, strlen(comm));

		if (id == UINT32_MAX)
			return -ENOMEM;
		(*ids)[n++] = id;
	}
	/* locs are leaf first: walk them backwards for root first. */
	for (uint32_t i = s->nlocs; i-- > 0;) {
		uint64_t loc = s->locs[i];

		if (!loc || loc > p->nlocations)
			continue;
		for (uint32_t k = ft->loc_off[loc - 1]; k < ft->loc_off[loc]; k++)
			(*ids)[n++] = ft->loc_frames[k];
	}
	if (n == 0 || (n == 1 && comm && *comm && s->nlocs == 0)) {
		uint32_t id = frametab__intern(ft, "(no stack)", 10);

		if (id == UINT32_MAX)
			return -ENOMEM;
		(*ids)[n++] = id;
	}
	return (int)n;
}

bool render__is_base(const struct profile *p, const struct prof_sample *s)
{
	const char *v = profile__sample_label(p, s, "pprof::base");

	return v && !strcmp(v, "true");
}

void render__count_unit(const struct profile *p, struct count_unit *u)
{
	int i;

	u->vi = profile__display_value(p);
	u->div = 1;
	u->name = p->nvalues ? p->strs[p->sample_types[u->vi].unit] : "count";
	if ((i = profile__value_index(p, "offcpu", "nanoseconds")) >= 0) {
		u->vi = (uint32_t)i;
		u->div = 1000;
		u->name = "microseconds";
	} else if ((i = profile__value_index(p, "samples", "count")) >= 0) {
		u->vi = (uint32_t)i;
		u->name = "samples";
	}
}

int64_t render__count(const struct count_unit *u, int64_t v)
{
	if (u->div <= 1)
		return v;
	return v >= 0 ? (v + u->div / 2) / u->div : -((-v + u->div / 2) / u->div);
}
