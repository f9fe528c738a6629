/*
 * tree_render.c - a /prof file's bytes: the selection's blocks merged
 * (one store or many), a window's complete minutes taken ready (closed.c)
 * with its open part merged now, rendered as pprof, folded text, SVG or
 * top; /README, /metrics and /binaries blobs. tree.c resolves and lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/profile/pprof.h"
#include "fs/tree/tree_int.h"
#include "fs/tree/binaries.h"
#include "fs/tree/closed.h"
#include "store/util/util.h"

static int merge(struct tree *t, const char *type, const struct path_matcher *pm,
		 size_t n, const struct path_range *r, int64_t now,
		 struct profile **out)
{
	struct sel_hold h;
	int64_t from, to, t0 = now_mono_ns();
	int err;

	err = sel_build(type, pm, n, &h);
	if (err)
		return err;
	path_range__window(r, now, &from, &to);
	err = stores__merge(&t->st, &h.sel, from, to, out);
	sel_release(&h);
	CNT_ADD(t->c.merges, 1);
	CNT_ADD(t->c.merge_ns, (uint64_t)(now_mono_ns() - t0));
	return err;
}

static int render_profile(const struct path_query *q, const struct profile *p,
			  struct buf *out)
{
	uint8_t *pb;
	size_t len;
	int err;

	switch (q->file) {
	case PF_PB:
		err = pprof__encode(p, &pb, &len);
		if (err)
			return err;
		buf__take(out, pb, len, len + 1);
		return out->err;
	case PF_FOLDED:
		return render__folded(p, out);
	case PF_TOP:
		return render__top(p, out);
	case PF_SVG:
		return render__svg(p, q->canon, out);
	default:
		return -EINVAL;
	}
}

/* A hash of p's value types: a part joined to bytes must count alike. */
static uint64_t vtypes_of(const struct profile *p)
{
	uint64_t h = p->nvalues;

	for (uint32_t i = 0; i < p->nvalues; i++) {
		const char *ty = p->strs[p->sample_types[i].type], *un = p->strs[p->sample_types[i].unit];

		h = hash_pair64(h, hash64(ty, strlen(ty), 7));
		h = hash_pair64(h, hash64(un, strlen(un), 8));
	}
	return h;
}

/* The complete minutes [from, c) of q's window rendered as q's file, into
 * cb, and what the open part must know (meta); from the cache, else
 * rendered and kept. 1: their render cannot be joined to another part
 * (folded counts that are scaled: the parts' rounding would not add up). */
static int closed_part(struct tree *t, const struct path_query *q, const struct store_sel *sel,
		       int64_t from, int64_t c, struct buf *cb, struct closed_meta *meta)
{
	uint64_t key = hash_pair64(hash64(q->canon, strlen(q->canon), 0xc1),
				   hash_pair64((uint64_t)from, (uint64_t)c));
	uint64_t names = tree__names_version(t);
	struct profile *p = NULL;
	uint8_t *pb;
	size_t len;
	int err;

	err = closed__get(t->closed, key, names, c, meta, cb);
	if (!err && !meta->scaled)
		CNT_ADD(t->c.closed_hits, 1);
	if (err != -ENOENT)
		return err ? err : meta->scaled;
	err = stores__merge(&t->st, sel, from, c, &p);
	CNT_ADD(t->c.merges, 1);
	if (err)
		return err;
	memset(meta, 0, sizeof(*meta));
	meta->vtypes = vtypes_of(p);
	if (q->file == PF_PB) {
		pprof__ids(p, &meta->ids);
		err = pprof__encode(p, &pb, &len);
		if (!err)
			buf__take(cb, pb, len, len + 1);
	} else {
		meta->scaled = render__folded_scaled(p);
		err = meta->scaled ? 1 : render__folded(p, cb);
	}
	err = err ? err : cb->err;
	if (!err || meta->scaled) /* (scaled: remembered as such, no bytes) */
		closed__put(t->closed, key, names, c, meta, cb->data, meta->scaled ? 0 : cb->len);
	profile__free(p);
	return err;
}

/*
 * A profile.pb or folded.txt of a window that holds the open minute: its
 * complete minutes from closed.c, the rest rendered now and joined to them
 * (closed.c). Returns 1 when the window is not of that kind (the caller
 * renders it whole), else 0 or -errno.
 */
static int render_open(struct tree *t, const struct path_query *q, int64_t now, struct buf *out)
{
	struct buf cb = { 0 }, ob = { 0 };
	struct profile *op = NULL;
	struct closed_meta meta;
	struct sel_hold h;
	int64_t from, to, c;
	uint8_t *pb;
	size_t len;
	int err;

	if (q->area == AREA_DIFF || !q->has_ra || (q->file != PF_PB && q->file != PF_FOLDED))
		return 1;
	path_range__window(&q->ra, now, &from, &to);
	c = complete_in_all(t, now);
	c -= c % 60;
	/* nothing open, or too little complete to be worth a part */
	if (c >= to || c - from < 2 * 60)
		return 1;
	err = sel_build(q->type, q->a.m, q->a.nm, &h);
	if (err)
		return err;
	err = closed_part(t, q, &h.sel, from, c, &cb, &meta);
	if (!err) {
		err = stores__merge(&t->st, &h.sel, c, to, &op);
		CNT_ADD(t->c.merges, 1);
	}
	if (!err && op->nsamples && vtypes_of(op) != meta.vtypes)
		err = 1; /* another store of the tree counts otherwise */
	if (err)
		goto out;
	op->time_nanos = from * 1000000000LL;
	op->duration_nanos = (to - from) * 1000000000LL;
	if (q->file == PF_PB) {
		err = pprof__encode_after(op, &meta.ids, &pb, &len);
		if (err)
			goto out;
		buf__take(out, cb.data, cb.len, cb.cap);
		cb = (struct buf){ 0 };
		buf__put(out, pb, len);
		free(pb);
		err = out->err;
	} else {
		err = render__folded(op, &ob);
		if (!err)
			err = render__folded_sum(cb.data, cb.len, ob.data, ob.len, out);
	}
	CNT_ADD(t->c.open_renders, 1);
out:
	sel_release(&h);
	profile__free(op);
	buf__free(&cb);
	buf__free(&ob);
	return err;
}

static int render_file(struct tree *t, const struct path_query *q, struct buf *out)
{
	struct profile *a = NULL, *b = NULL, *d = NULL;
	struct path_matcher *mb = NULL;
	size_t nmb;
	int64_t now = now_s();
	int err;

	err = render_open(t, q, now, out);
	if (err <= 0)
		return err;
	err = merge(t, q->type, q->a.m, q->a.nm, &q->ra, now, &a);
	if (err)
		goto out;
	if (q->area != AREA_DIFF) {
		err = render_profile(q, a, out);
		goto out;
	}
	err = path_query__sel_b(q, &mb, &nmb);
	if (err)
		goto out;
	err = merge(t, q->type, mb, nmb, &q->rb, now, &b);
	if (err)
		goto out;
	if (q->file == PF_FOLDED) {
		err = render__folded_diff(a, b, out);
		goto out;
	}
	d = profile__diff(a, b);
	if (!d) {
		err = errno ? -errno : -ENOMEM;
		goto out;
	}
	err = render_profile(q, d, out);
out:
	free(mb);
	profile__free(a);
	profile__free(b);
	profile__free(d);
	return err;
}

static enum render_kind rkind_of(const struct path_query *q)
{
	switch (q->node) {
	case PN_README: return RK_README;
	case PN_METRICS: return RK_METRICS;
	default: break;
	}
	switch (q->file) {
	case PF_PB: return RK_PB;
	case PF_FOLDED: return RK_FOLDED;
	case PF_SVG: return RK_SVG;
	default: return RK_TOP;
	}
}

int tree__open_blob(struct tree *t, const struct node *n, int *fd, struct stat *st)
{
	const struct path_query *q = n->q;

	if (!q || !n->blob || q->node != PN_BINFILE)
		return -EINVAL;
	return bins__open(&t->st, q->bid, q->bname, fd, st);
}

/* A blob read whole (tree__render's callers that know no blobs). */
static int render_blob(struct tree *t, const struct node *n, struct buf *out)
{
	struct stat st;
	char chunk[65536];
	ssize_t r;
	int fd, err = tree__open_blob(t, n, &fd, &st);

	if (err)
		return err;
	while ((r = read(fd, chunk, sizeof(chunk))) > 0)
		buf__put(out, chunk, (size_t)r);
	err = r < 0 ? -errno : out->err;
	close(fd);
	return err;
}

int tree__render(struct tree *t, const struct node *n, struct buf *out)
{
	const struct path_query *q = n->q;
	enum render_kind k;
	int64_t t0 = now_mono_ns(), dt;
	int err, b;

	if (!q || n->kind != NODE_FILE)
		return -EISDIR;
	if (n->blob)
		return render_blob(t, n, out);
	k = rkind_of(q);
	switch (q->node) {
	case PN_README:
		buf__puts(out, tree_readme_text);
		err = out->err;
		break;
	case PN_METRICS:
		err = tree_metrics__render(t->s, &t->c, &t->o, out);
		break;
	default:
		err = render_file(t, q, out);
		break;
	}
	dt = now_mono_ns() - t0;
	CNT_ADD(t->c.renders[k], 1);
	CNT_ADD(t->c.ns[k], (uint64_t)dt);
	for (b = 0; b < RENDER_NBUCKETS - 1; b++) {
		int64_t limit = 1000000LL;

		for (int i = 0; i < b; i++)
			limit *= 10;
		if (dt <= limit)
			break;
	}
	CNT_ADD(t->c.buckets[k][b], 1);
	if (err) {
		CNT_ADD(t->c.errors[k], 1);
		pr_debug("render %s: %s", n->canon, strerror(-err));
	} else {
		CNT_ADD(t->c.bytes[k], out->len);
	}
	return err;
}
