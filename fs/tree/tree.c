/*
 * tree.c - the /prof tree on top of the store: a path is parsed by path.c,
 * checked against the types the store holds, and then listed, read as a
 * link or rendered (tree_render.c). No FUSE here; fs/fuse/ops.c and
 * `proffs cat` share it.
 *
 * Every store access is one of the store's query calls, each its own read
 * snapshot, so the tree itself holds no transaction and no lock across
 * calls. The only shared state is a cache of the type names (refreshed
 * when the store's version moves) and the render counters of /metrics.
 */
#include "fs/tree/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/path/path.h"
#include "fs/tree/tree_int.h"
#include "store/util/util.h"
#include "fs/tree/stores.h"
#include "fs/tree/binaries.h"
#include "fs/tree/closed.h"

/* Longest name a directory entry may have (NAME_MAX): longer label pairs
 * are left out of listings rather than offered and then refused. */
#define ENTRY_NAME_MAX 255

struct tree *tree__new(struct store *s, const struct tree_opts *o)
{
	return tree__new_multi(&s, NULL, 1, o);
}

struct tree *tree__new_multi(struct store *const *s, const char *const *nodes, size_t n,
			     const struct tree_opts *o)
{
	struct tree *t;
	int err;

	for (size_t i = 0; i < n; i++)
		if (!s[i]) {
			errno = EINVAL;
			return NULL;
		}
	if (!n) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	err = stores__init(&t->st, s, nodes, n);
	if (err) {
		free(t);
		errno = -err;
		return NULL;
	}
	t->s = s[0];
	t->born = now_s();
	t->closed = closed__new(store__dir(s[0]));
	if (!t->closed) {
		stores__fini(&t->st);
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	if (o)
		t->o = *o;
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void tree__free(struct tree *t)
{
	if (!t)
		return;
	store__free_strv(t->types, t->ntypes);
	closed__free(t->closed);
	stores__fini(&t->st);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

uint64_t tree__version(struct tree *t)
{
	return stores__version(&t->st);
}

/* When frames last gained names in any store (store__names_version is
 * that second), 0 if never. */
static int64_t names_time(struct tree *t)
{
	int64_t m = 0;

	for (size_t i = 0; i < t->st.n; i++) {
		int64_t x = (int64_t)store__names_version(t->st.v[i].s);

		m = x > m ? x : m;
	}
	return m;
}

uint64_t tree__names_version(struct tree *t)
{
	uint64_t v = 0;

	for (size_t i = 0; i < t->st.n; i++) {
		uint64_t x = store__names_version(t->st.v[i].s);

		v = t->st.n == 1 ? x : hash_pair64(v, x);
	}
	return v;
}

void node__fini(struct node *n)
{
	if (!n)
		return;
	if (n->q) {
		path_query__fini(n->q);
		free(n->q);
	}
	free(n->canon);
	memset(n, 0, sizeof(*n));
}

/* ---- types ---- */

/* Re-reads the type names when the store changed since the last look.
 * Called with t->lock held. */
static int types_refresh(struct tree *t)
{
	uint64_t v = stores__version(&t->st);
	char **names;
	size_t n;
	int err;

	if (t->types_valid && v == t->types_version)
		return 0;
	err = stores__types(&t->st, &names, &n);
	if (err)
		return err;
	t->last_commit = stores__last_commit(&t->st);
	store__free_strv(t->types, t->ntypes);
	t->types = names;
	t->ntypes = n;
	t->types_version = v;
	t->types_valid = true;
	return 0;
}

static int type_exists(struct tree *t, const char *type)
{
	int err;

	pthread_mutex_lock(&t->lock);
	err = types_refresh(t);
	if (!err) {
		err = -ENOENT;
		for (size_t i = 0; i < t->ntypes; i++)
			if (!strcmp(t->types[i], type)) {
				err = 0;
				break;
			}
	}
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* A copy of the type names that the grammar can address (a type named
 * like a reserved root entry, or with a '/' in it, is never listed). */
static int types_copy(struct tree *t, char ***out, size_t *nout)
{
	char **v = NULL;
	size_t n = 0;
	int err;

	pthread_mutex_lock(&t->lock);
	err = types_refresh(t);
	if (err)
		goto out;
	v = calloc(t->ntypes + 1, sizeof(*v));
	if (!v) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t->ntypes; i++) {
		struct path_query q;
		char p[80];

		if (strlen(t->types[i]) > 64)
			continue;
		snprintf(p, sizeof(p), "/%s", t->types[i]);
		if (path__parse(p, &q))
			continue;
		path_query__fini(&q);
		v[n] = strdup(t->types[i]);
		if (!v[n]) {
			err = -ENOMEM;
			goto out;
		}
		n++;
	}
out:
	pthread_mutex_unlock(&t->lock);
	if (err) {
		store__free_strv(v, n);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* ---- selections ---- */

void sel_release(struct sel_hold *h)
{
	for (size_t i = 0; i < h->nm; i++)
		store_matcher__fini(&h->m[i]);
	free(h->m);
	memset(h, 0, sizeof(*h));
}

/* The matcher strings stay owned by pm (the query). Returns 0, -ENOENT
 * (a regex the store refuses) or -ENOMEM. */
int sel_build(const char *type, const struct path_matcher *pm, size_t n,
		     struct sel_hold *h)
{
	int err;

	memset(h, 0, sizeof(*h));
	h->m = calloc(n + 1, sizeof(*h->m));
	if (!h->m)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		h->m[i].name = pm[i].name;
		h->m[i].value = pm[i].value;
		h->m[i].op = pm[i].op;
		err = store_matcher__init(&h->m[i]);
		if (err) {
			sel_release(h);
			return err == -EINVAL ? -ENOENT : err;
		}
		h->nm = i + 1;
	}
	h->sel.type = type;
	h->sel.m = h->m;
	h->sel.nm = h->nm;
	return 0;
}

/* The time (Unix seconds) up to which minutes are complete (SPEC §2
 * Minutes): their end has passed and the writer has stored every sample
 * taken before it (store__complete). A store no daemon wrote to has no
 * mark: its minutes are complete once their end passed. */
static int64_t complete_until(struct tree *t, int64_t now)
{
	int64_t mark;

	if (!store__complete(t->s, &mark) && mark / 1000000000LL < now)
		return mark / 1000000000LL;
	return now;
}

/* complete_until over every store of the tree: the earliest writer's
 * mark. What an open window may keep must be complete in each store;
 * `latest` keeps following the first store's. */
int64_t complete_in_all(struct tree *t, int64_t now)
{
	int64_t c = now, mark;

	for (size_t i = 0; i < t->st.n; i++)
		if (!store__complete(t->st.v[i].s, &mark) && mark / 1000000000LL < c)
			c = mark / 1000000000LL;
	return c;
}

/* Newest minute whose end is not after now, from an ascending list. */
static bool latest_of(const int64_t *minutes, size_t n, int64_t now, int64_t *out)
{
	for (size_t i = n; i-- > 0;)
		if (minutes[i] + 60 <= now) {
			*out = minutes[i];
			return true;
		}
	return false;
}

/* Target of q's latest link: the newest complete minute of its selection. */
static int latest_minute(struct tree *t, const struct path_query *q, int64_t now,
			 int64_t *out)
{
	struct sel_hold h;
	char **pairs = NULL;
	size_t npairs = 0, nmin = 0;
	int64_t *minutes = NULL, m;
	int err;

	err = sel_build(q->type, q->a.m, q->a.nm, &h);
	if (err)
		return err;
	err = stores__latest_minute(&t->st, &h.sel, &m);
	if (err)
		goto out;
	if (m + 60 <= now) {
		*out = m;
		goto out;
	}
	/* The newest minute is still open: look one further back. */
	err = stores__list(&t->st, &h.sel, &pairs, &npairs, &minutes, &nmin);
	if (err)
		goto out;
	err = latest_of(minutes, nmin, now, out) ? 0 : -ENOENT;
out:
	store__free_strv(pairs, npairs);
	free(minutes);
	sel_release(&h);
	return err;
}

/* ---- resolve ---- */

static enum node_kind kind_of(enum path_node pn)
{
	switch (pn) {
	case PN_README:
	case PN_METRICS:
	case PN_FILE:
	case PN_BINFILE:
		return NODE_FILE;
	case PN_LATEST:
		return NODE_SYMLINK;
	default:
		return NODE_DIR;
	}
}

/*
 * The mtime of a node: stable while its content is, so that `tar` and
 * rsync do not see a file change under them. A closed window: its end.
 * Anything else changes with commits, so the last commit time; a last-N
 * window also moves each minute; /metrics changes all the time.
 */
static int64_t node_mtime(struct tree *t, const struct path_query *q,
			  bool immutable, int64_t now)
{
	int64_t from, to, m, minute = now - (now % 60);

	if (q->node == PN_METRICS)
		return now;
	if (q->node == PN_README)
		return t->born;
	if (immutable && q->has_ra) {
		path_range__window(&q->ra, now, &from, &m);
		if (q->has_rb) {
			path_range__window(&q->rb, now, &from, &to);
			if (to > m)
				m = to;
		}
		return m;
	}
	pthread_mutex_lock(&t->lock);
	if (types_refresh(t) || !t->last_commit)
		m = t->born;
	else
		m = t->last_commit;
	pthread_mutex_unlock(&t->lock);
	if ((q->has_ra && q->ra.kind == RANGE_LAST) ||
	    (q->has_rb && q->rb.kind == RANGE_LAST))
		m = m > minute ? m : minute;
	return m;
}

int tree__resolve(struct tree *t, const char *path, struct node *out)
{
	struct path_query *q;
	int64_t now = now_s(), m, blob_mtime = 0;
	int err;

	memset(out, 0, sizeof(*out));
	CNT_ADD(t->c.resolves, 1);
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	err = path__parse(path, q);
	if (err)
		goto err_out;
	if (q->type) {
		err = type_exists(t, q->type);
		if (err) {
			if (err == -ENOENT)
				pr_debug("path %s: no type %s in the store", path, q->type);
			goto err_out;
		}
	}
	if (q->node == PN_BIN) {
		char *b, *d;

		if ((err = bins__names(&t->st, q->bid, &b, &d)))
			goto err_out;
		free(b);
		free(d);
	} else if (q->node == PN_BINFILE) {
		struct stat st;
		int fd;

		if ((err = bins__open(&t->st, q->bid, q->bname, &fd, &st)))
			goto err_out;
		close(fd);
		out->blob = true;
		blob_mtime = st.st_mtim.tv_sec;
	} else if (q->node == PN_LATEST) {
		err = latest_minute(t, q, complete_until(t, now), &m);
		if (err)
			goto err_out;
	} else if (q->a.nm || q->b.nm) {
		/* Regexes the parser let through but the store would not
		 * compile must fail here, not at render time. */
		struct sel_hold h;

		err = sel_build(q->type, q->a.m, q->a.nm, &h);
		if (!err) {
			sel_release(&h);
			err = sel_build(q->type, q->b.m, q->b.nm, &h);
			if (!err)
				sel_release(&h);
		}
		if (err)
			goto err_out;
	}
	out->kind = kind_of(q->node);
	out->canon = strdup(q->canon);
	if (!out->canon) {
		err = -ENOMEM;
		goto err_out;
	}
	out->immutable = path_query__immutable(q, now);
	out->mtime = out->blob ? blob_mtime : node_mtime(t, q, out->immutable, now);
	out->ctime = out->mtime;
	if (out->immutable && !out->blob && q->has_ra) {
		int64_t named = names_time(t);

		out->ctime = named > out->mtime ? named : out->mtime;
	}
	out->q = q;
	return 0;
err_out:
	if (err == -ENOENT)
		CNT_ADD(t->c.enoent, 1);
	path_query__fini(q);
	free(q);
	free(out->canon);
	memset(out, 0, sizeof(*out));
	return err;
}

/* ---- listings ---- */

struct list {
	char **names;
	enum node_kind *kinds;
	size_t n, cap;
	int err;
};

/* Takes ownership of name (a malloc'd string, may be NULL on OOM). */
static void list_take(struct list *l, char *name, enum node_kind k)
{
	if (!name) {
		l->err = -ENOMEM;
		return;
	}
	if (l->err) {
		free(name);
		return;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap; /* names and kinds grow in step */

		if (GROW(l->names, &cap, l->n + 1) || GROW(l->kinds, &l->cap, l->n + 1)) {
			free(name);
			l->err = -ENOMEM;
			return;
		}
	}
	l->names[l->n] = name;
	l->kinds[l->n] = k;
	l->n++;
}

static void list_add(struct list *l, const char *name, enum node_kind k)
{
	list_take(l, strdup(name), k);
}

static bool has_eq(const struct path_matcher *m, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].op == STORE_EQ && strlen(m[i].name) == len &&
		    !memcmp(m[i].name, name, len))
			return true;
	return false;
}

/*
 * A selection directory: one name=value entry per pair of the matching
 * series (pairs whose label the selection already pins with '=' are left
 * out, so a walk of the tree ends), then the windows: minutes and latest
 * under a type; under merged/ and diff/ a few last-N ranges and the days
 * and hours that hold data.
 */
static int list_sel(struct tree *t, const struct path_query *q, struct list *l)
{
	static const char *const lasts[] = { "last-15m", "last-1h", "last-6h", "last-24h", "last-7d" };
	const struct path_matcher *own = q->side_b ? q->b.m : q->a.m;
	size_t nown = q->side_b ? q->b.nm : q->a.nm;
	struct sel_hold h;
	char **pairs = NULL;
	size_t npairs = 0, nmin = 0;
	int64_t *minutes = NULL, latest;
	int err;

	/* The B side lists from its own components only: its listing offers
	 * the values that may replace A's. */
	err = sel_build(q->type, own, nown, &h);
	if (err)
		return err;
	err = stores__list(&t->st, &h.sel, &pairs, &npairs, &minutes, &nmin);
	if (err)
		goto out;
	for (size_t i = 0; i < npairs; i++) {
		const char *eq = strchr(pairs[i], '=');
		char *name, *enc;

		if (!eq || has_eq(own, nown, pairs[i], (size_t)(eq - pairs[i])))
			continue;
		name = strndup(pairs[i], (size_t)(eq - pairs[i]));
		if (!name) {
			err = -ENOMEM;
			goto out;
		}
		enc = path__encode_pair(name, eq + 1);
		free(name);
		if (enc && strlen(enc) > ENTRY_NAME_MAX) {
			free(enc);
			continue;
		}
		list_take(l, enc, NODE_DIR);
	}
	if (q->area == AREA_PLAIN) {
		char m[17];

		for (size_t i = 0; i < nmin; i++) {
			fmt_minute(minutes[i], m);
			list_add(l, m, NODE_DIR);
		}
		if (latest_of(minutes, nmin, complete_until(t, now_s()), &latest))
			list_add(l, "latest", NODE_SYMLINK);
	} else if (nmin) {
		char m[17], prev[17] = "";

		for (size_t i = 0; i < sizeof(lasts) / sizeof(lasts[0]); i++)
			list_add(l, lasts[i], NODE_DIR);
		for (size_t i = 0; i < nmin; i++) {
			fmt_minute(minutes[i], m);
			m[10] = 0;
			if (strcmp(m, prev))
				list_add(l, m, NODE_DIR);
			memcpy(prev, m, sizeof(m));
		}
		prev[0] = 0;
		for (size_t i = 0; i < nmin; i++) {
			fmt_minute(minutes[i], m);
			m[13] = 0;
			if (strcmp(m, prev))
				list_add(l, m, NODE_DIR);
			memcpy(prev, m, sizeof(m));
		}
	}
	err = l->err;
out:
	store__free_strv(pairs, npairs);
	free(minutes);
	sel_release(&h);
	return err;
}

int tree__list(struct tree *t, const struct node *n, char ***names,
	       enum node_kind **kinds, size_t *count)
{
	const struct path_query *q = n->q;
	struct list l = { 0 };
	char **types = NULL;
	size_t ntypes = 0;
	int err = 0;

	if (!q || n->kind != NODE_DIR)
		return -ENOTDIR;
	CNT_ADD(t->c.lists, 1);
	switch (q->node) {
	case PN_ROOT:
	case PN_AREA:
		if (q->node == PN_ROOT) {
			list_add(&l, "README", NODE_FILE);
			list_add(&l, "metrics", NODE_FILE);
			list_add(&l, "merged", NODE_DIR);
			list_add(&l, "diff", NODE_DIR);
			list_add(&l, "binaries", NODE_DIR);
		}
		err = types_copy(t, &types, &ntypes);
		if (err)
			break;
		for (size_t i = 0; i < ntypes; i++)
			list_add(&l, types[i], NODE_DIR);
		store__free_strv(types, ntypes);
		break;
	case PN_SEL:
		err = list_sel(t, q, &l);
		break;
	case PN_DIFF_A:
		list_add(&l, "vs", NODE_DIR);
		break;
	case PN_BINS:
		err = bins__ids(&t->st, &types, &ntypes);
		for (size_t i = 0; !err && i < ntypes; i++)
			list_add(&l, types[i], NODE_DIR);
		store__free_strv(types, ntypes);
		break;
	case PN_BIN: {
		char *b, *d;

		err = bins__names(&t->st, q->bid, &b, &d);
		if (!err && b)
			list_take(&l, b, NODE_FILE);
		if (!err && d)
			list_take(&l, d, NODE_FILE);
		break;
	}
	case PN_WINDOW:
		for (int f = PF_PB; f <= PF_TOP; f++)
			list_add(&l, path__file_name(f), NODE_FILE);
		break;
	default:
		err = -ENOTDIR;
	}
	if (!err)
		err = l.err;
	if (err) {
		tree__free_list(l.names, l.kinds, l.n);
		return err;
	}
	*names = l.names;
	*kinds = l.kinds;
	*count = l.n;
	return 0;
}

void tree__free_list(char **names, enum node_kind *kinds, size_t count)
{
	for (size_t i = 0; i < count; i++)
		free(names[i]);
	free(names);
	free(kinds);
}

int tree__readlink(struct tree *t, const struct node *n, char **target)
{
	int64_t m;
	char buf[17];
	int err;

	if (!n->q || n->kind != NODE_SYMLINK)
		return -EINVAL;
	err = latest_minute(t, n->q, complete_until(t, now_s()), &m);
	if (err)
		return err;
	fmt_minute(m, buf);
	*target = strdup(buf);
	return *target ? 0 : -ENOMEM;
}

uint64_t tree__node_version(struct tree *t, const struct node *n)
{
	const struct path_query *q = n->q;
	uint64_t v = stores__version(&t->st);
	int64_t now;

	if (!q)
		return v;
	if (q->node == PN_METRICS)
		return v ^ hash64(&(int64_t){ now_ns() }, 8, 1);
	now = now_s();
	if ((q->has_ra && q->ra.kind == RANGE_LAST) ||
	    (q->has_rb && q->rb.kind == RANGE_LAST) || q->node == PN_LATEST) {
		int64_t minute = now - (now % 60);

		v ^= hash64(&minute, sizeof(minute), 2);
	}
	return v;
}
