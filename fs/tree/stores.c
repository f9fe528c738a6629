/*
 * stores.c - several stores queried as one (see stores.h).
 *
 * The `node` label is the only thing added across stores. A store is
 * asked once per type and data version whether its series carry `node`
 * themselves (a daemon run with --label node=...); if not, the tree's
 * node matchers are decided here against the store's name and left out
 * of the store's own query, and its listings gain node=<name>. Stores
 * mixing series with and without `node` in one type are read as if all
 * carried their own (DESIGN-NOTES.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/tree/stores.h"
#include "store/util/util.h"

int stores__init(struct tstores *ts, struct store *const *s, const char *const *nodes,
		 size_t n)
{
	memset(ts, 0, sizeof(*ts));
	if (!n)
		return -EINVAL;
	ts->v = calloc(n, sizeof(*ts->v));
	if (!ts->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		ts->v[i].s = s[i];
		pthread_mutex_init(&ts->v[i].lock, NULL);
		ts->n = i + 1;
		if (nodes && nodes[i] && !(ts->v[i].node = strdup(nodes[i]))) {
			stores__fini(ts);
			return -ENOMEM;
		}
	}
	return 0;
}

static void nl_clear(struct tstore *x)
{
	store__free_strv(x->nl_types, x->nl_n);
	free(x->nl_has);
	x->nl_types = NULL;
	x->nl_has = NULL;
	x->nl_n = 0;
}

void stores__fini(struct tstores *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		nl_clear(&ts->v[i]);
		free(ts->v[i].node);
		pthread_mutex_destroy(&ts->v[i].lock);
	}
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

static int strv_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts v and drops duplicates (freeing them); returns the new count. */
static size_t strv_uniq(char **v, size_t n)
{
	size_t o = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), strv_cmp);
	for (size_t i = 1; i < n; i++) {
		if (!strcmp(v[i], v[o]))
			free(v[i]);
		else
			v[++o] = v[i];
	}
	return o + 1;
}

static int strv_append(char ***v, size_t *n, char **add, size_t nadd)
{
	char **nv;

	if (!nadd)
		return 0;
	nv = realloc(*v, (*n + nadd) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	memcpy(nv + *n, add, nadd * sizeof(*add));
	*v = nv;
	*n += nadd;
	return 0;
}

/* Do x's series of type carry node labels of their own? */
static int has_node(struct tstore *x, const char *type, bool *out)
{
	struct store_matcher m = { .name = "node", .value = ".*", .op = STORE_RE };
	struct store_sel sel = { type, &m, 1 };
	uint64_t v = store__version(x->s);
	char **pairs = NULL, **nt;
	int64_t *minutes = NULL;
	size_t np = 0, nm = 0;
	bool *nh;
	int err;

	pthread_mutex_lock(&x->lock);
	if (x->nl_version != v)
		nl_clear(x);
	x->nl_version = v;
	for (size_t i = 0; i < x->nl_n; i++)
		if (!strcmp(x->nl_types[i], type)) {
			*out = x->nl_has[i];
			pthread_mutex_unlock(&x->lock);
			return 0;
		}
	pthread_mutex_unlock(&x->lock);

	err = store_matcher__init(&m);
	if (err)
		return err;
	err = store__list(x->s, &sel, &pairs, &np, &minutes, &nm);
	store_matcher__fini(&m);
	if (err)
		return err;
	*out = np > 0;
	store__free_strv(pairs, np);
	free(minutes);

	pthread_mutex_lock(&x->lock);
	nt = realloc(x->nl_types, (x->nl_n + 1) * sizeof(*nt));
	if (nt)
		x->nl_types = nt;
	nh = nt ? realloc(x->nl_has, (x->nl_n + 1) * sizeof(*nh)) : NULL;
	if (nh) {
		x->nl_has = nh;
		/* A miss of the cache costs a query, not an answer. */
		if ((nt[x->nl_n] = strdup(type))) {
			nh[x->nl_n] = *out;
			x->nl_n++;
		}
	}
	pthread_mutex_unlock(&x->lock);
	return 0;
}

static bool node_ok(const struct store_matcher *m, const char *node)
{
	switch (m->op) {
	case STORE_EQ:
		return !strcmp(m->value, node);
	case STORE_NEQ:
		return strcmp(m->value, node) != 0;
	case STORE_RE:
		return !regexec(&m->re, node, 0, NULL, 0);
	}
	return false;
}

/*
 * The selection to send to store x: sel itself, or sel without its node
 * matchers when x's series have no node label of their own (*skip when
 * those matchers refuse x's name). *labelled: listings of x gain
 * node=<name>. out->m is buf (sel->nm entries, caller's).
 */
static int sel_for(struct tstore *x, const struct store_sel *sel, struct store_matcher *buf,
		   struct store_sel *out, bool *skip, bool *labelled)
{
	bool own;
	int err;

	*out = *sel;
	*skip = *labelled = false;
	if (!x->node)
		return 0;
	err = has_node(x, sel->type, &own);
	if (err)
		return err;
	if (own)
		return 0;
	*labelled = true;
	out->m = buf;
	out->nm = 0;
	for (size_t i = 0; i < sel->nm; i++) {
		if (strcmp(sel->m[i].name, "node")) {
			buf[out->nm++] = sel->m[i]; /* shares the compiled regex */
			continue;
		}
		if (!node_ok(&sel->m[i], x->node)) {
			*skip = true;
			return 0;
		}
	}
	return 0;
}

int stores__types(struct tstores *ts, char ***names, size_t *n)
{
	char **all = NULL, **v;
	size_t na = 0, nv;
	int err;

	if (ts->n == 1)
		return store__types(ts->v[0].s, names, n);
	for (size_t i = 0; i < ts->n; i++) {
		err = store__types(ts->v[i].s, &v, &nv);
		if (err)
			goto fail;
		err = strv_append(&all, &na, v, nv);
		if (err) {
			store__free_strv(v, nv);
			goto fail;
		}
		free(v);
	}
	*n = strv_uniq(all, na);
	*names = all;
	return 0;
fail:
	store__free_strv(all, na);
	return err;
}

static int mins_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int stores__list(struct tstores *ts, const struct store_sel *sel, char ***pairs,
		 size_t *npairs, int64_t **minutes, size_t *nminutes)
{
	struct store_matcher *buf = NULL;
	char **pv = NULL, **p, *extra;
	int64_t *mv = NULL, *m, *nmv;
	size_t np = 0, nm = 0, pn, mn, found = 0;
	int err = 0;

	if (ts->n == 1)
		return store__list(ts->v[0].s, sel, pairs, npairs, minutes, nminutes);
	buf = calloc(sel->nm + 1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < ts->n; i++) {
		struct store_sel xs;
		bool skip, labelled;

		err = sel_for(&ts->v[i], sel, buf, &xs, &skip, &labelled);
		if (err == -ENOENT)
			continue;
		if (err)
			goto fail;
		found++;
		if (skip)
			continue;
		err = store__list(ts->v[i].s, &xs, &p, &pn, &m, &mn);
		if (err)
			goto fail;
		if (labelled && (pn || mn)) {
			if (asprintf(&extra, "node=%s", ts->v[i].node) < 0)
				err = -ENOMEM;
			else
				err = strv_append(&pv, &np, &extra, 1);
			if (err) {
				free(extra);
				store__free_strv(p, pn);
				free(m);
				goto fail;
			}
		}
		err = strv_append(&pv, &np, p, pn);
		if (err) {
			store__free_strv(p, pn);
			free(m);
			goto fail;
		}
		free(p);
		if (mn) {
			nmv = realloc(mv, (nm + mn) * sizeof(*mv));
			if (!nmv) {
				free(m);
				err = -ENOMEM;
				goto fail;
			}
			mv = nmv;
			memcpy(mv + nm, m, mn * sizeof(*m));
			nm += mn;
		}
		free(m);
	}
	if (!found) {
		err = -ENOENT;
		goto fail;
	}
	np = strv_uniq(pv, np);
	if (nm) {
		size_t o = 0;

		qsort(mv, nm, sizeof(*mv), mins_cmp);
		for (size_t i = 1; i < nm; i++)
			if (mv[i] != mv[o])
				mv[++o] = mv[i];
		nm = o + 1;
	}
	free(buf);
	*pairs = pv;
	*npairs = np;
	*minutes = mv;
	*nminutes = nm;
	return 0;
fail:
	free(buf);
	store__free_strv(pv, np);
	free(mv);
	return err;
}

int stores__latest_minute(struct tstores *ts, const struct store_sel *sel, int64_t *minute)
{
	struct store_matcher *buf;
	int64_t best = 0, m;
	bool any = false;
	int err = 0;

	if (ts->n == 1)
		return store__latest_minute(ts->v[0].s, sel, minute);
	buf = calloc(sel->nm + 1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < ts->n; i++) {
		struct store_sel xs;
		bool skip, labelled;

		err = sel_for(&ts->v[i], sel, buf, &xs, &skip, &labelled);
		if (err == -ENOENT)
			continue;
		if (err)
			break;
		if (skip)
			continue;
		err = store__latest_minute(ts->v[i].s, &xs, &m);
		if (err == -ENOENT)
			continue;
		if (err)
			break;
		if (!any || m > best)
			best = m;
		any = true;
	}
	free(buf);
	if (err && err != -ENOENT)
		return err;
	if (!any)
		return -ENOENT;
	*minute = best;
	return 0;
}

int stores__merge(struct tstores *ts, const struct store_sel *sel, int64_t from, int64_t to,
		  struct profile **out)
{
	struct store_matcher *buf;
	struct profile *acc = NULL, *p = NULL;
	int err = 0;

	if (ts->n == 1)
		return store__merge(ts->v[0].s, sel, from, to, out);
	buf = calloc(sel->nm + 1, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < ts->n; i++) {
		struct store_sel xs;
		bool skip, labelled;

		err = sel_for(&ts->v[i], sel, buf, &xs, &skip, &labelled);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err)
			break;
		/* A store the node matchers refuse still gives the type's
		 * value types: an empty merge of it starts acc. */
		if (skip) {
			if (acc)
				continue;
			xs.nm = 0;
			err = store__merge(ts->v[i].s, &xs, from, from, &acc);
			if (err)
				break;
			acc->time_nanos = from * 1000000000LL;
			acc->duration_nanos = (to - from) * 1000000000LL;
			continue;
		}
		err = store__merge(ts->v[i].s, &xs, from, to, acc ? &p : &acc);
		if (err)
			break;
		if (p) {
			err = profile__merge(acc, p, 1, NULL, 0);
			profile__free(p);
			p = NULL;
			if (err)
				break;
		}
	}
	free(buf);
	if (!err && !acc)
		err = -ENOENT;
	if (err) {
		profile__free(acc);
		return err;
	}
	*out = acc;
	return 0;
}

uint64_t stores__version(struct tstores *ts)
{
	uint64_t v = 0;

	if (ts->n == 1)
		return store__version(ts->v[0].s);
	for (size_t i = 0; i < ts->n; i++) {
		uint64_t x = store__version(ts->v[i].s);

		v = hash_pair64(v, x);
	}
	return v;
}

int64_t stores__last_commit(struct tstores *ts)
{
	int64_t best = 0;

	for (size_t i = 0; i < ts->n; i++) {
		struct store_stats st;

		if (!store__stats(ts->v[i].s, &st) && st.last_commit > best)
			best = st.last_commit;
	}
	return best;
}
