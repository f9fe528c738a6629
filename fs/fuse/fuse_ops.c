/*
 * fuse_ops.c - the tree served over the libfuse 3 low-level API
 * (see mount.h). Every meaning of a path is the tree's business; this file
 * only maps kernel requests onto tree__resolve/list/readlink/render, keeps
 * inode numbers stable, and pins rendered bytes for open files.
 *
 * Inode numbers: hash64 of the canonical path for files and symlinks (so
 * the same query reached by two paths is one inode, like a hard link), and
 * hash64 of the path as looked up for directories (a directory must have
 * exactly one parent in the kernel's dentry cache; two paths naming one
 * query would otherwise be aliases of one directory inode). Both are
 * stable across restarts. The inode -> path table is never pruned on
 * FORGET: NFS file handles carry only the inode number and may come back
 * long after the kernel forgot it.
 *
 * Sizes are exact: a file is rendered (or found in the render cache) at
 * lookup/getattr, and open pins that cache entry in fi->fh so that reads,
 * and getattr on the open file, see exactly the bytes that were measured.
 */
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "fs/cache/cache.h"
#include "fs/fuse/mount.h"
#include "store/util/util.h"

/* Seconds the kernel may keep entries and attributes. */
#define TTL_IMMUTABLE 86400.0
#define TTL_CURRENT 1.0
#define TTL_NEGATIVE 1.0
#define MAX_THREADS 16

struct ino_ent {
	uint64_t ino;
	char *key;  /* what was hashed: canon (files) or path (dirs) */
	char *path; /* a path that resolves to it */
	uint64_t fp; /* of the bytes whose size the kernel was last told */
	bool has_fp;
	struct ino_ent *next;
};

struct inotab {
	pthread_rwlock_t lock;
	struct ino_ent **b;
	size_t nb, n;
};

struct fsmount {
	struct tree *t;
	struct cache *cache;
	struct fuse_session *se;
	char *mountpoint;
	dev_t dev; /* of the mounted filesystem, to abort its connection */
	pthread_t loop;
	bool loop_started, mounted;
	atomic_bool stopping; /* fsmount__stop() began */
	struct inotab inos;
	uid_t uid;
	gid_t gid;
	void (*on_serve)(void *ctx);
	void *on_serve_ctx;
	atomic_uint_fast64_t n_lookup, n_negative, n_getattr, n_open, n_read,
		n_read_bytes, n_readdir, n_erofs, n_render_errors, n_dot;
};

/* An open directory: a snapshot of its listing, with inode numbers. */
struct dirh {
	size_t n;
	char **names;
	enum node_kind *kinds;
	uint64_t *inos;
	uint64_t self, parent;
};

/* ---- inode table ---- */

static int inotab__init(struct inotab *t)
{
	t->nb = 4096;
	t->b = calloc(t->nb, sizeof(*t->b));
	if (!t->b)
		return -ENOMEM;
	pthread_rwlock_init(&t->lock, NULL);
	return 0;
}

static void inotab__fini(struct inotab *t)
{
	for (size_t i = 0; i < t->nb; i++) {
		struct ino_ent *e = t->b[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e->key);
			free(e->path);
			free(e);
		}
	}
	free(t->b);
	pthread_rwlock_destroy(&t->lock);
}

static struct ino_ent *inotab__find(struct inotab *t, uint64_t ino)
{
	struct ino_ent *e = t->b[ino & (t->nb - 1)];

	for (; e; e = e->next)
		if (e->ino == ino)
			return e;
	return NULL;
}

static void inotab__grow(struct inotab *t)
{
	size_t nb = t->nb * 2;
	struct ino_ent **b;

	if (t->n < t->nb)
		return;
	b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < t->nb; i++) {
		struct ino_ent *e = t->b[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->ino & (nb - 1)];
			b[e->ino & (nb - 1)] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
}

/* The inode number of key with the given seed; never 0 or FUSE_ROOT_ID. */
static uint64_t ino_hash(const char *key, uint64_t seed)
{
	uint64_t h = hash64(key, strlen(key), seed);

	return h <= FUSE_ROOT_ID ? h + 2 : h;
}

/* Inode number of key without registering it (readdir). */
static uint64_t ino_peek(const char *key)
{
	return strcmp(key, "/") ? ino_hash(key, 0) : FUSE_ROOT_ID;
}

/*
 * Registers key (reachable at path) and returns its inode number. A 64-bit
 * collision with another key moves the newcomer to the next seed. Returns 0
 * on allocation failure.
 */
static uint64_t inotab__assign(struct inotab *t, const char *key,
			       const char *path)
{
	struct ino_ent *e;
	uint64_t ino = 0;

	if (!strcmp(key, "/"))
		return FUSE_ROOT_ID;
	pthread_rwlock_wrlock(&t->lock);
	for (uint64_t seed = 0; seed < 64; seed++) {
		ino = ino_hash(key, seed);
		e = inotab__find(t, ino);
		if (!e)
			break;
		if (!strcmp(e->key, key))
			goto out;
		pr_warn("inode collision between '%s' and '%s'", e->key, key);
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto fail;
	e->ino = ino;
	e->key = strdup(key);
	e->path = strdup(path);
	if (!e->key || !e->path) {
		free(e->key);
		free(e->path);
		free(e);
		goto fail;
	}
	e->next = t->b[ino & (t->nb - 1)];
	t->b[ino & (t->nb - 1)] = e;
	t->n++;
	inotab__grow(t);
out:
	pthread_rwlock_unlock(&t->lock);
	return ino;
fail:
	pthread_rwlock_unlock(&t->lock);
	return 0;
}

/* A malloc'd copy of the path of ino, or NULL (errno ESTALE or ENOMEM). */
static char *inotab__path(struct inotab *t, uint64_t ino)
{
	struct ino_ent *e;
	char *p = NULL;

	if (ino == FUSE_ROOT_ID)
		return strdup("/");
	pthread_rwlock_rdlock(&t->lock);
	e = inotab__find(t, ino);
	if (e)
		p = strdup(e->path);
	else
		errno = ESTALE;
	pthread_rwlock_unlock(&t->lock);
	return p;
}

/*
 * Records that the kernel now knows the bytes with fingerprint fp for ino
 * (their size, or pages of them). Returns true when it knew different
 * bytes before: a render of the same query that came out different (new
 * data, or a renderer whose output depends on the store's history), so
 * its cached size and pages must be dropped.
 */
static bool inotab__swap_fp(struct inotab *t, uint64_t ino, uint64_t fp)
{
	struct ino_ent *e;
	bool changed = false;

	pthread_rwlock_wrlock(&t->lock);
	e = inotab__find(t, ino);
	if (e) {
		changed = e->has_fp && e->fp != fp;
		e->fp = fp;
		e->has_fp = true;
	}
	pthread_rwlock_unlock(&t->lock);
	return changed;
}

/* ---- paths ---- */

static char *path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p;

	if (dl == 1 && dir[0] == '/')
		dl = 0;
	p = malloc(dl + nl + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, nl + 1);
	return p;
}

/* "/a/b" -> "/a", "/a" -> "/", "/" -> "/". */
static char *path_parent(const char *p)
{
	const char *slash = strrchr(p, '/');
	size_t n = slash ? (size_t)(slash - p) : 0;
	char *r;

	if (n == 0)
		return strdup("/");
	r = malloc(n + 1);
	if (!r)
		return NULL;
	memcpy(r, p, n);
	r[n] = 0;
	return r;
}

/* ---- nodes and bytes ---- */

static struct fsmount *fsm(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* /metrics changes with every request it counts: it gets a fresh render
 * each second instead of one per data version. */
static bool node__volatile(const struct node *n)
{
	return !n->immutable && n->canon && !strcmp(n->canon, "/metrics");
}

struct render_ctx {
	struct tree *t;
	const struct node *n;
};

static int render_cb(void *ctx, struct buf *out)
{
	struct render_ctx *rc = ctx;

	return tree__render(rc->t, rc->n, out);
}

/* A referenced cache entry holding the bytes of file node n. */
static int file_bytes(struct fsmount *m, const struct node *n,
		      struct cache_entry **e)
{
	struct render_ctx rc = { m->t, n };
	uint64_t ver = n->immutable ? 0 : tree__version(m->t);
	int err;

	if (node__volatile(n)) {
		int64_t now = now_s();

		ver = hash64(&now, sizeof(now), ver);
	}
	err = cache__get(m->cache, n->canon, ver, render_cb, &rc, e);
	if (err) {
		atomic_fetch_add(&m->n_render_errors, 1);
		pr_warn("render of %s failed: %s", n->canon, strerror(-err));
	}
	return err;
}

static double node_ttl(const struct node *n)
{
	return n->immutable ? TTL_IMMUTABLE : TTL_CURRENT;
}

/* Fills st for node n with inode ino. For files, size comes from pinned
 * (an open file's bytes) or a fresh cache lookup. */
static int node_stat(struct fsmount *m, const struct node *n, uint64_t ino,
		     const struct cache_entry *pinned, struct stat *st)
{
	struct cache_entry *e = NULL;
	char *target = NULL;
	int err = 0;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = m->uid;
	st->st_gid = m->gid;
	st->st_blksize = 4096;
	st->st_atim.tv_sec = st->st_mtim.tv_sec = st->st_ctim.tv_sec = n->mtime;
	switch (n->kind) {
	case NODE_DIR:
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		break;
	case NODE_SYMLINK:
		err = tree__readlink(m->t, n, &target);
		if (err)
			break;
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = strlen(target);
		free(target);
		break;
	case NODE_FILE:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		if (!pinned) {
			err = file_bytes(m, n, &e);
			if (err)
				break;
			pinned = e;
		}
		st->st_size = pinned->len;
		st->st_blocks = (pinned->len + 511) / 512;
		inotab__swap_fp(&m->inos, ino, pinned->fp);
		cache__put(m->cache, e);
		break;
	default:
		err = -EIO;
	}
	return err;
}

/* Resolution errors that mean "no such path" to the caller. */
static bool is_absent(int err)
{
	return err == -ENOENT || err == -EINVAL || err == -ENOTDIR ||
	       err == -ERANGE || err == -EILSEQ || err == -EOVERFLOW;
}

/* Resolves path and registers it. */
static int resolve(struct fsmount *m, const char *path, struct node *n,
		   uint64_t *ino)
{
	int err = tree__resolve(m->t, path, n);

	if (err)
		return err;
	*ino = inotab__assign(&m->inos, n->kind == NODE_DIR ? path : n->canon,
			      path);
	if (!*ino) {
		node__fini(n);
		return -ENOMEM;
	}
	return 0;
}

/* ---- operations ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* NFS re-exports (ganesha, knfsd) look inodes up by handle. */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* Page cache validity is decided by keep_cache per open. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fsmount *m = fsm(req);
	struct fuse_entry_param ep = { 0 };
	char *ppath, *path = NULL;
	struct node n = { 0 };
	uint64_t ino;
	int err;

	atomic_fetch_add(&m->n_lookup, 1);
	ppath = inotab__path(&m->inos, parent);
	if (!ppath) {
		fuse_reply_err(req, errno);
		return;
	}
	/* The kernel itself never asks for these; NFS export code does,
	 * to turn a file handle (a node id) back into a dentry. */
	if (!strcmp(name, ".")) {
		atomic_fetch_add(&m->n_dot, 1);
		path = strdup(ppath);
	} else if (!strcmp(name, "..")) {
		atomic_fetch_add(&m->n_dot, 1);
		path = path_parent(ppath);
	} else {
		path = path_join(ppath, name);
	}
	if (!path) {
		err = -ENOMEM;
		goto out;
	}
	err = resolve(m, path, &n, &ino);
	if (err) {
		if (!is_absent(err))
			goto out;
		/* A negative entry: the kernel caches the absence. */
		pr_debug("lookup %s: %s", path, strerror(-err));
		atomic_fetch_add(&m->n_negative, 1);
		ep.ino = 0;
		ep.entry_timeout = TTL_NEGATIVE;
		fuse_reply_entry(req, &ep);
		err = 0;
		goto out_free;
	}
	err = node_stat(m, &n, ino, NULL, &ep.attr);
	if (err)
		goto out_node;
	ep.ino = ino;
	ep.generation = 0;
	/* A current file may be re-rendered with a new size within the 1 s;
	 * open notices (fingerprint) and makes the kernel ask again. */
	ep.entry_timeout = node_ttl(&n);
	ep.attr_timeout = node_ttl(&n);
	fuse_reply_entry(req, &ep);
out_node:
	node__fini(&n);
out:
	if (err)
		fuse_reply_err(req, -err);
out_free:
	free(ppath);
	free(path);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	fuse_reply_none(req);
}

/* The path of ino, resolved into *n (*err: tree__resolve's result). The
 * path is the caller's to free. NULL when ino is unknown: req has then been
 * answered already. */
static char *ino__resolve(struct fsmount *m, fuse_req_t req, fuse_ino_t ino,
			  struct node *n, int *err)
{
	char *path = inotab__path(&m->inos, ino);

	if (!path) {
		fuse_reply_err(req, errno);
		return NULL;
	}
	*err = tree__resolve(m->t, path, n);
	return path;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fsmount *m = fsm(req);
	const struct cache_entry *pinned = NULL;
	struct node n = { 0 };
	struct stat st;
	char *path;
	int err;

	atomic_fetch_add(&m->n_getattr, 1);
	path = ino__resolve(m, req, ino, &n, &err);
	if (!path)
		return;
	if (err)
		goto out;
	if (fi && fi->fh && n.kind == NODE_FILE)
		pinned = (const struct cache_entry *)(uintptr_t)fi->fh;
	err = node_stat(m, &n, ino, pinned, &st);
	if (!err)
		fuse_reply_attr(req, &st, node_ttl(&n));
	node__fini(&n);
out:
	if (err)
		fuse_reply_err(req, is_absent(err) ? ENOENT : -err);
	free(path);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fsmount *m = fsm(req);
	struct node n = { 0 };
	char *path, *target = NULL;
	int err;

	path = ino__resolve(m, req, ino, &n, &err);
	if (!path)
		return;
	if (err)
		goto out;
	if (n.kind != NODE_SYMLINK)
		err = -EINVAL;
	else
		err = tree__readlink(m->t, &n, &target);
	if (!err)
		fuse_reply_readlink(req, target);
	node__fini(&n);
out:
	if (err)
		fuse_reply_err(req, is_absent(err) && err != -EINVAL ? ENOENT : -err);
	free(target);
	free(path);
}

static void dirh__free(struct dirh *d)
{
	if (!d)
		return;
	tree__free_list(d->names, d->kinds, d->n);
	free(d->inos);
	free(d);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fsmount *m = fsm(req);
	struct dirh *d = NULL;
	struct node n = { 0 };
	char *path, *ppath = NULL;
	int err;

	path = ino__resolve(m, req, ino, &n, &err);
	if (!path)
		return;
	if (err)
		goto out;
	if (n.kind != NODE_DIR) {
		err = -ENOTDIR;
		goto out_node;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		err = -ENOMEM;
		goto out_node;
	}
	err = tree__list(m->t, &n, &d->names, &d->kinds, &d->n);
	if (err) {
		free(d);
		d = NULL;
		goto out_node;
	}
	d->inos = calloc(d->n ? d->n : 1, sizeof(*d->inos));
	ppath = path_parent(path);
	if (!d->inos || !ppath) {
		err = -ENOMEM;
		goto out_node;
	}
	d->self = ino;
	d->parent = ino_peek(ppath);
	/* d_ino must match what lookup will say (NFS reconnects directories
	 * by scanning the parent for the child's inode number). */
	for (size_t i = 0; i < d->n; i++) {
		char *cp = path_join(path, d->names[i]);
		struct node c = { 0 };

		if (!cp) {
			err = -ENOMEM;
			goto out_node;
		}
		if (d->kinds[i] == NODE_DIR || tree__resolve(m->t, cp, &c))
			d->inos[i] = ino_peek(cp);
		else
			d->inos[i] = ino_peek(c.canon);
		node__fini(&c);
		free(cp);
	}
	fi->fh = (uintptr_t)d;
	fi->cache_readdir = n.immutable;
	fi->keep_cache = n.immutable;
	if (fuse_reply_open(req, fi) == 0)
		d = NULL;
	atomic_fetch_add(&m->n_readdir, 1);
out_node:
	node__fini(&n);
out:
	dirh__free(d);
	if (err)
		fuse_reply_err(req, is_absent(err) && err != -ENOTDIR ? ENOENT : -err);
	free(ppath);
	free(path);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *buf;
	size_t pos = 0;

	if (!d) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < d->n + 2; i++) {
		struct stat st = { 0 };
		const char *name;
		size_t need;

		if (i == 0) {
			name = ".";
			st.st_ino = d->self;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			st.st_ino = d->parent;
			st.st_mode = S_IFDIR;
		} else {
			name = d->names[i - 2];
			st.st_ino = d->inos[i - 2];
			st.st_mode = d->kinds[i - 2] == NODE_DIR ? S_IFDIR :
				     d->kinds[i - 2] == NODE_SYMLINK ? S_IFLNK :
								       S_IFREG;
		}
		need = fuse_add_direntry(req, NULL, 0, name, NULL, 0);
		if (pos + need > size)
			break;
		fuse_add_direntry(req, buf + pos, size - pos, name, &st, i + 1);
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	dirh__free((struct dirh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fsmount *m = fsm(req);
	struct cache_entry *e = NULL;
	struct node n = { 0 };
	char *path;
	int err;

	atomic_fetch_add(&m->n_open, 1);
	if ((fi->flags & O_ACCMODE) != O_RDONLY ||
	    (fi->flags & (O_TRUNC | O_CREAT | O_APPEND))) {
		fuse_reply_err(req, EACCES);
		return;
	}
	path = ino__resolve(m, req, ino, &n, &err);
	if (!path)
		return;
	if (err)
		goto out;
	if (n.kind == NODE_DIR)
		err = -EISDIR;
	else if (n.kind != NODE_FILE)
		err = -ELOOP;
	else
		err = file_bytes(m, &n, &e);
	if (!err) {
		bool changed = inotab__swap_fp(&m->inos, ino, e->fp);

		fi->fh = (uintptr_t)e;
		/* Closed windows never change: keep their pages. Current
		 * ones are re-read at each open. */
		fi->keep_cache = n.immutable && !changed;
		/* The kernel may hold the size of other bytes for a day:
		 * make it ask again (getattr on the open file answers with
		 * the pinned bytes). Attributes only, so no page locks. */
		if (changed)
			fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
		if (fuse_reply_open(req, fi) != 0)
			cache__put(m->cache, e);
	}
	node__fini(&n);
out:
	if (err)
		fuse_reply_err(req, is_absent(err) ? ENOENT : -err);
	free(path);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fsmount *m = fsm(req);
	struct cache_entry *e = (struct cache_entry *)(uintptr_t)fi->fh;
	size_t n = 0;

	if (!e) {
		fuse_reply_err(req, EBADF);
		return;
	}
	atomic_fetch_add(&m->n_read, 1);
	if (off >= 0 && (uint64_t)off < e->len) {
		n = e->len - off;
		if (n > size)
			n = size;
	}
	atomic_fetch_add(&m->n_read_bytes, n);
	/* The reply of an async (readahead) read can complete the kernel's
	 * last use of the file, so RELEASE may run on another thread before
	 * fuse_reply_buf() has returned here: hold the bytes until then. */
	cache__ref(m->cache, e);
	fuse_reply_buf(req, n ? e->data + off : NULL, n);
	cache__put(m->cache, e);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	cache__put(fsm(req)->cache, (struct cache_entry *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv = { 0 };

	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_files = 1;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

/* Every mutation: the tree is read-only. The "ro" mount option makes the
 * kernel refuse most of these before they get here. */
static void erofs(fuse_req_t req)
{
	atomic_fetch_add(&fsm(req)->n_erofs, 1);
	fuse_reply_err(req, EROFS);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	erofs(req);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	erofs(req);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	erofs(req);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	erofs(req);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	erofs(req);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	erofs(req);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	erofs(req);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	erofs(req);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	erofs(req);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	erofs(req);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	erofs(req);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			 off_t offset, off_t length, struct fuse_file_info *fi)
{
	erofs(req);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.write = op_write,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
};

/* ---- mount lifetime ---- */

static void *loop_main(void *arg)
{
	struct fsmount *m = arg;
	struct fuse_loop_config *cfg;
	int err;

	if (m->on_serve)
		m->on_serve(m->on_serve_ctx);
	cfg = fuse_loop_cfg_create();
	if (cfg) {
		fuse_loop_cfg_set_max_threads(cfg, MAX_THREADS);
		fuse_loop_cfg_set_clone_fd(cfg, 0);
	}
	err = fuse_session_loop_mt(m->se, cfg);
	if (err)
		pr_debug("fuse loop ended: %d", err);
	fuse_loop_cfg_destroy(cfg);
	/* Unmounted from outside (fusermount3 -u, umount): nothing is served
	 * any more, so ask the process to shut down the way SIGTERM does;
	 * its signal-waiting thread takes it (the mask is inherited). */
	if (!atomic_load(&m->stopping)) {
		pr_warn("%s was unmounted from outside; shutting down", m->mountpoint);
		kill(getpid(), SIGTERM);
	}
	return NULL;
}

/* A mountpoint whose FUSE daemon died answers ENOTCONN; detach it.
 * statfs, unlike stat, is never answered from the kernel's attribute
 * cache, so it sees a dead connection at once. */
static void detach_stale(const char *mp)
{
	struct statvfs sv;

	if (statvfs(mp, &sv) == 0 || errno != ENOTCONN)
		return;
	pr_warn("%s: stale mount (transport endpoint not connected), detaching",
		mp);
	if (umount2(mp, MNT_DETACH))
		pr_warn("%s: umount2: %s", mp, strerror(errno));
}

static void fsmount__free(struct fsmount *m)
{
	if (m->se)
		fuse_session_destroy(m->se);
	cache__free(m->cache);
	if (m->inos.b)
		inotab__fini(&m->inos);
	free(m->mountpoint);
	free(m);
}

int fsmount__start(struct fsmount **out, struct tree *t,
		   const struct mount_opts *o)
{
	char opts[256];
	char *argv[] = { "proffs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct fsmount *m;
	struct stat st;
	int err;

	*out = NULL;
	detach_stale(o->mountpoint);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->t = t;
	m->uid = getuid();
	m->gid = getgid();
	m->on_serve = o->on_serve;
	m->on_serve_ctx = o->on_serve_ctx;
	m->mountpoint = realpath(o->mountpoint, NULL);
	if (!m->mountpoint) {
		err = -errno;
		pr_err("mountpoint %s: %s", o->mountpoint, strerror(errno));
		goto err_free;
	}
	if (stat(m->mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		err = -ENOTDIR;
		pr_err("mountpoint %s: not a directory", m->mountpoint);
		goto err_free;
	}
	m->cache = cache__new(o->cache_bytes);
	if (!m->cache || inotab__init(&m->inos)) {
		err = -ENOMEM;
		goto err_free;
	}
	snprintf(opts, sizeof(opts),
		 "ro,default_permissions,fsname=proffs,subtype=proffs%s",
		 o->allow_other ? ",allow_other" : "");
	m->se = fuse_session_new(&args, &ops, sizeof(ops), m);
	fuse_opt_free_args(&args);
	if (!m->se) {
		err = -EINVAL;
		pr_err("fuse_session_new failed");
		goto err_free;
	}
	if (fuse_session_mount(m->se, m->mountpoint)) {
		err = -EIO;
		pr_err("cannot mount FUSE at %s", m->mountpoint);
		goto err_free;
	}
	m->mounted = true;
	/* Published before the loop runs: /metrics may be read at once. */
	*out = m;
	err = pthread_create(&m->loop, NULL, loop_main, m);
	if (err) {
		*out = NULL;
		err = -err;
		goto err_unmount;
	}
	m->loop_started = true;
	/* Remember which FUSE connection is ours (see fsmount__stop). */
	if (stat(m->mountpoint, &st) == 0)
		m->dev = st.st_dev;
	pr_info("mounted at %s", m->mountpoint);
	return 0;

err_unmount:
	fuse_session_unmount(m->se);
err_free:
	fsmount__free(m);
	return err;
}

static void *poke_main(void *arg)
{
	struct stat st;

	stat((const char *)arg, &st);
	free(arg);
	return NULL;
}

/* Sends one request through the mount so that a worker wakes up, sees
 * the session exited and ends the loop (libfuse only checks between
 * requests). The path is new each time so no negative entry hides it. */
static void poke(struct fsmount *m)
{
	static atomic_uint seq;
	pthread_attr_t attr;
	pthread_t th;
	char *p;

	if (asprintf(&p, "%s/.proffs-stop-%d-%u", m->mountpoint, (int)getpid(),
		     atomic_fetch_add(&seq, 1)) < 0)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, poke_main, p))
		free(p);
	pthread_attr_destroy(&attr);
}

/* Last resort: abort our connection through fusectl, which fails every
 * pending and future request and wakes every worker. */
static void abort_conn(struct fsmount *m)
{
	char p[64];
	FILE *f;

	if (!m->dev)
		return;
	snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%u/abort",
		 minor(m->dev));
	if (access(p, F_OK))
		mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	f = fopen(p, "w");
	if (!f) {
		pr_warn("cannot abort FUSE connection: %s: %s", p, strerror(errno));
		return;
	}
	fputs("1", f);
	fclose(f);
}

/* libfuse skips the unmount when it believes the connection is already
 * gone; make sure no mount of ours (now dead: the device fd is closed, so
 * this stat cannot hang) stays at the mountpoint. */
static void ensure_unmounted(struct fsmount *m)
{
	struct stat st;

	if (stat(m->mountpoint, &st) == 0 ? st.st_dev != m->dev || !m->dev
					  : errno != ENOTCONN)
		return;
	pr_warn("%s: still mounted after unmount, detaching", m->mountpoint);
	if (umount2(m->mountpoint, MNT_DETACH))
		pr_warn("%s: umount2: %s", m->mountpoint, strerror(errno));
}

static int join_for(pthread_t th, int secs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	return pthread_timedjoin_np(th, NULL, &ts);
}

void fsmount__stop(struct fsmount *m)
{
	bool joined = false;

	if (!m)
		return;
	atomic_store(&m->stopping, true);
	if (m->loop_started) {
		fuse_session_exit(m->se);
		for (int i = 0; i < 3 && !joined; i++) {
			poke(m);
			joined = join_for(m->loop, 1) == 0;
		}
		if (!joined) {
			/* Unmounting ends the connection when no file is open. */
			fuse_session_unmount(m->se);
			m->mounted = false;
			joined = join_for(m->loop, 2) == 0;
		}
		if (!joined) {
			abort_conn(m);
			pthread_join(m->loop, NULL);
		}
	}
	/* Lazy: a reader still holding a file open keeps its (now dead) file
	 * but the mountpoint is free at once. Closing the device fd in
	 * fuse_session_destroy() then fails its further reads with ENOTCONN. */
	if (m->mounted)
		fuse_session_unmount(m->se);
	fuse_session_destroy(m->se);
	m->se = NULL;
	ensure_unmounted(m);
	pr_info("unmounted %s", m->mountpoint);
	fsmount__free(m);
}

void fsmount__metrics(struct fsmount *m, struct buf *out)
{
	struct cache_stats cs;

	if (!m)
		return;
	cache__stats(m->cache, &cs);
	buf__printf(out,
		    "# HELP proffs_render_cache_hits_total Renders served from the cache.\n"
		    "# TYPE proffs_render_cache_hits_total counter\n"
		    "proffs_render_cache_hits_total %llu\n"
		    "# HELP proffs_render_cache_misses_total Renders started because the cache had no entry.\n"
		    "# TYPE proffs_render_cache_misses_total counter\n"
		    "proffs_render_cache_misses_total %llu\n"
		    "# HELP proffs_render_cache_waits_total Requests that waited for a render already in progress.\n"
		    "# TYPE proffs_render_cache_waits_total counter\n"
		    "proffs_render_cache_waits_total %llu\n"
		    "# HELP proffs_render_cache_evictions_total Entries dropped to stay within the bound.\n"
		    "# TYPE proffs_render_cache_evictions_total counter\n"
		    "proffs_render_cache_evictions_total %llu\n"
		    "# HELP proffs_render_cache_failures_total Renders that failed.\n"
		    "# TYPE proffs_render_cache_failures_total counter\n"
		    "proffs_render_cache_failures_total %llu\n"
		    "# HELP proffs_render_cache_bytes Bytes held by the render cache.\n"
		    "# TYPE proffs_render_cache_bytes gauge\n"
		    "proffs_render_cache_bytes %llu\n"
		    "# HELP proffs_render_cache_entries Entries in the render cache.\n"
		    "# TYPE proffs_render_cache_entries gauge\n"
		    "proffs_render_cache_entries %llu\n"
		    "# HELP proffs_render_cache_max_bytes Bound of the render cache.\n"
		    "# TYPE proffs_render_cache_max_bytes gauge\n"
		    "proffs_render_cache_max_bytes %llu\n",
		    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		    (unsigned long long)cs.waits,
		    (unsigned long long)cs.evictions,
		    (unsigned long long)cs.failures,
		    (unsigned long long)cs.bytes,
		    (unsigned long long)cs.entries,
		    (unsigned long long)cs.max_bytes);
	buf__printf(out,
		    "# HELP proffs_fuse_requests_total FUSE requests by operation.\n"
		    "# TYPE proffs_fuse_requests_total counter\n"
		    "proffs_fuse_requests_total{op=\"lookup\"} %llu\n"
		    "proffs_fuse_requests_total{op=\"getattr\"} %llu\n"
		    "proffs_fuse_requests_total{op=\"opendir\"} %llu\n"
		    "proffs_fuse_requests_total{op=\"open\"} %llu\n"
		    "proffs_fuse_requests_total{op=\"read\"} %llu\n"
		    "proffs_fuse_requests_total{op=\"mutation\"} %llu\n"
		    "# HELP proffs_fuse_negative_lookups_total Lookups of paths that do not exist.\n"
		    "# TYPE proffs_fuse_negative_lookups_total counter\n"
		    "proffs_fuse_negative_lookups_total %llu\n"
		    "# HELP proffs_fuse_handle_lookups_total Lookups of . and .. (file handles of NFS re-exports).\n"
		    "# TYPE proffs_fuse_handle_lookups_total counter\n"
		    "proffs_fuse_handle_lookups_total %llu\n"
		    "# HELP proffs_fuse_read_bytes_total Bytes returned by reads.\n"
		    "# TYPE proffs_fuse_read_bytes_total counter\n"
		    "proffs_fuse_read_bytes_total %llu\n"
		    "# HELP proffs_fuse_render_errors_total Renders that failed while serving a request.\n"
		    "# TYPE proffs_fuse_render_errors_total counter\n"
		    "proffs_fuse_render_errors_total %llu\n",
		    (unsigned long long)m->n_lookup,
		    (unsigned long long)m->n_getattr,
		    (unsigned long long)m->n_readdir,
		    (unsigned long long)m->n_open,
		    (unsigned long long)m->n_read,
		    (unsigned long long)m->n_erofs,
		    (unsigned long long)m->n_negative,
		    (unsigned long long)m->n_dot,
		    (unsigned long long)m->n_read_bytes,
		    (unsigned long long)m->n_render_errors);
}
