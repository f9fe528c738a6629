/*
 * minutes.c - per-window open batches.
 */
#include <errno.h>
#include <stdlib.h>

#include "sampler/batch/minutes.h"

#define NS 1000000000LL

struct slot {
	int64_t start_ns; /* window start; meaningful while the batch has samples */
	struct batch *b;
};

struct minutes {
	int64_t period_ns, window_ns, open_ns;
	const char *const *types, *const *units; /* NULL: cpu batches */
	uint64_t misfiled;
	struct slot s[MINUTES_SLOTS];
};

int64_t minutes__window_ns(int64_t interval_ns)
{
	/* Whole seconds dividing a minute: windows then tile minutes. */
	static const int div[] = { 60, 30, 20, 15, 12, 10, 6, 5, 4, 3, 2, 1 };

	for (size_t i = 0; i < sizeof(div) / sizeof(div[0]); i++)
		if (div[i] * NS <= interval_ns)
			return div[i] * NS;
	return NS;
}

static int64_t floor_to(int64_t t, int64_t w)
{
	int64_t q = t / w;

	if (t < 0 && q * w != t)
		q--;
	return q * w;
}

struct minutes *minutes__new_typed(int64_t period_ns, const char *const types[2],
				   const char *const units[2], int64_t interval_ns, int64_t open_ns)
{
	struct minutes *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->period_ns = period_ns;
	m->types = types;
	m->units = units;
	m->window_ns = minutes__window_ns(interval_ns);
	m->open_ns = open_ns;
	return m;
}

struct minutes *minutes__new(int64_t period_ns, int64_t interval_ns, int64_t open_ns)
{
	return minutes__new_typed(period_ns, NULL, NULL, interval_ns, open_ns);
}

void minutes__free(struct minutes *m)
{
	if (!m)
		return;
	for (int i = 0; i < MINUTES_SLOTS; i++)
		batch__free(m->s[i].b);
	free(m);
}

static bool slot_used(const struct slot *s)
{
	return s->b && batch__count(s->b);
}

struct batch *minutes__batch(struct minutes *m, int64_t wall_ns)
{
	int64_t start = floor_to(wall_ns, m->window_ns);
	struct slot *free_slot = NULL, *near = NULL;

	for (int i = 0; i < MINUTES_SLOTS; i++) {
		struct slot *s = &m->s[i];

		if (slot_used(s) && s->start_ns == start)
			return s->b;
		if (!free_slot && !slot_used(s))
			free_slot = s;
	}
	if (free_slot) {
		/* Batches are kept: batch__take resets, it does not free. */
		if (!free_slot->b)
			free_slot->b = m->types ? batch__new_typed(m->period_ns, m->types, m->units)
						: batch__new(m->period_ns);
		if (!free_slot->b)
			return NULL;
		free_slot->start_ns = start;
		return free_slot->b;
	}
	for (int i = 0; i < MINUTES_SLOTS; i++)
		if (!near || llabs(m->s[i].start_ns - start) < llabs(near->start_ns - start))
			near = &m->s[i];
	m->misfiled++;
	return near->b;
}

static int by_start(const void *a, const void *b)
{
	const struct minute_batch *x = a, *y = b;

	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

int minutes__take(struct minutes *m, int64_t cut_ns, bool all,
		  struct minute_batch out[MINUTES_SLOTS], size_t *n)
{
	int err = 0;

	*n = 0;
	for (int i = 0; i < MINUTES_SLOTS; i++) {
		struct slot *s = &m->s[i];
		int64_t lo = s->start_ns, hi = s->start_ns + m->window_ns;

		if (!slot_used(s) || (!all && hi > cut_ns))
			continue;
		/* The first window starts when sampling did; the last one
		 * (all) ends at the cut. A window of a late or stepped sample
		 * outside them keeps its whole span. */
		if (m->open_ns > lo && m->open_ns < hi)
			lo = m->open_ns;
		if (all && cut_ns > lo && cut_ns < hi)
			hi = cut_ns;
		err = batch__take(s->b, lo, hi - lo, &out[*n].p);
		if (err)
			break;
		out[*n].start_ns = lo;
		out[*n].duration_ns = hi - lo;
		(*n)++;
	}
	qsort(out, *n, sizeof(*out), by_start);
	return err;
}

void minutes__counts(const struct minutes *m, uint64_t *open, uint64_t *misfiled)
{
	*open = 0;
	for (int i = 0; i < MINUTES_SLOTS; i++)
		if (m->s[i].b)
			*open += batch__count(m->s[i].b);
	*misfiled = m->misfiled;
}
