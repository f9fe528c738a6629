/*
 * dbgsched.c - see dbgsched.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "sampler/symbols/dbgsched.h"

const char *dbg_outcome__name(enum dbg_outcome o)
{
	static const char *const names[DBG__N] = {
		[DBG_LOCAL] = "local", [DBG_HIT] = "hit", [DBG_MISS] = "miss",
		[DBG_ERROR] = "error", [DBG_TIMEOUT] = "timeout",
	};

	return (unsigned)o < DBG__N ? names[o] : "error";
}

enum dbg_outcome dbg_outcome__of(int err, int aborted, int past_deadline)
{
	if (aborted)
		return past_deadline ? DBG_TIMEOUT : DBG_ERROR;
	switch (err) {
	case -ENOENT:
		return DBG_MISS;
	case -ETIME:
	case -ETIMEDOUT:
		return DBG_TIMEOUT;
	default:
		return DBG_ERROR;
	}
}

int64_t dbgsched__delay_s(enum dbg_outcome o, unsigned tries, int64_t base_s, int64_t max_s)
{
	int64_t d, cap;

	if (base_s <= 0)
		base_s = 60;
	if (o == DBG_MISS) {
		d = 60 * base_s;
		cap = 86400;
	} else {
		d = base_s;
		cap = 3600;
	}
	if (o != DBG_MISS && max_s > 0 && max_s < cap)
		cap = max_s;
	for (unsigned i = 1; i < tries && d < cap; i++)
		d *= 2;
	return d < cap ? d : cap;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct dbgcache_ent *x = a, *y = b;

	if (x->keep != y->keep)
		return x->keep ? 1 : -1;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

size_t dbgcache__plan(struct dbgcache_ent *e, size_t n, uint64_t bound, uint64_t *left)
{
	uint64_t total = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		total += e[i].bytes;
	if (n)
		qsort(e, n, sizeof(*e), ent_cmp);
	while (k < n && total > bound && !e[k].keep)
		total -= e[k++].bytes;
	*left = total;
	return k;
}
