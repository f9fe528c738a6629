/*
 * ops.c - the tree served over the libfuse 3 low-level API (see mount.h):
 * the request handlers. Every meaning of a path is the tree's business;
 * this file only maps kernel requests onto tree__resolve/list/readlink/
 * render, asks inode.c for stable inode numbers, and pins rendered bytes
 * for open files.
 *
 * Sizes are exact: a file is rendered (or found in the render cache) at
 * lookup/getattr, and open pins that cache entry in fi->fh so that reads,
 * and getattr on the open file, see exactly the bytes that were measured.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs/fuse/fuse_int.h"
#include "store/util/util.h"

/* Seconds the kernel may keep entries and attributes. */
#define TTL_IMMUTABLE 86400.0
#define TTL_CURRENT 1.0
#define TTL_NEGATIVE 1.0

/* An open directory: a snapshot of its listing, with inode numbers. */
struct dirh {
	size_t n;
	char **names;
	enum node_kind *kinds;
	uint64_t *inos;
	uint64_t self, parent;
};

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

	/* Reads are going on: the blocks up to 1 MiB this render frees stay
	 * in the heap for the next one (each render faulted ~1,400 pages in
	 * again; ~620 now), until reads stop (fsmount__wait_signal). */
	heap_keep(true);
	return tree__render(rc->t, rc->n, out);
}

/*
 * An open file under /binaries (issue 30): its bytes are a file on disk,
 * read with pread, never rendered into the render cache. Its fh has bit 0
 * set; a cache entry's never does (malloc'd, aligned). Referenced like a
 * cache entry: a read's reply may still be in flight when RELEASE runs on
 * another thread, and the last reference closes the fd.
 */
struct blobh {
	atomic_int refs;
	int fd;
	uint64_t size;
};

static bool fh_blob(uint64_t fh)
{
	return fh & 1;
}

static struct blobh *blobh_of(uint64_t fh)
{
	return (struct blobh *)(uintptr_t)(fh & ~(uint64_t)1);
}

static void blobh_put(struct blobh *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
		close(b->fd);
		free(b);
	}
}

/* A referenced cache entry holding the bytes of file node n. Complete
 * minutes key on the names version: a frame stored without a name may
 * gain it once (SPEC §2), and their bytes with it. */
static int file_bytes(struct fsmount *m, const struct node *n,
		      struct cache_entry **e)
{
	struct render_ctx rc = { m->t, n };
	uint64_t ver = n->immutable ? tree__names_version(m->t) : tree__version(m->t);
	int err;

	if (node__volatile(n)) {
		int64_t now = now_s();

		ver = hash_pair64(ver, (uint64_t)now);
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
	st->st_atim.tv_sec = st->st_mtim.tv_sec = n->mtime;
	st->st_ctim.tv_sec = n->ctime;
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
		if (n->blob) {
			struct stat fst;
			int fd;

			err = tree__open_blob(m->t, n, &fd, &fst);
			if (err)
				break;
			close(fd);
			st->st_size = fst.st_size;
			st->st_blocks = (fst.st_size + 511) / 512;
			break;
		}
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
	if (err) {
		inotab__forget(&m->inos, ino, 1);
		goto out_node;
	}
	ep.ino = ino;
	ep.generation = 0;
	/* A current file may be re-rendered with a new size within the 1 s;
	 * open notices (fingerprint) and makes the kernel ask again. */
	ep.entry_timeout = node_ttl(&n);
	ep.attr_timeout = node_ttl(&n);
	if (fuse_reply_entry(req, &ep))
		inotab__forget(&m->inos, ino, 1); /* the kernel never got it */
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
	inotab__forget(&fsm(req)->inos, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		inotab__forget(&fsm(req)->inos, forgets[i].ino, forgets[i].nlookup);
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
	if (fi && fi->fh && n.kind == NODE_FILE && !fh_blob(fi->fh))
		pinned = (const struct cache_entry *)(uintptr_t)fi->fh;
	err = node_stat(m, &n, ino, pinned, &st);
	if (!err && fi && fi->fh && fh_blob(fi->fh)) {
		/* The open file's size: what its reads return. */
		st.st_size = (off_t)blobh_of(fi->fh)->size;
		st.st_blocks = (st.st_size + 511) / 512;
	}
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
	d->parent = inotab__peek(ppath);
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
			d->inos[i] = inotab__peek(cp);
		else
			d->inos[i] = inotab__peek(c.canon);
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
	else if (n.blob) {
		struct blobh *b = calloc(1, sizeof(*b));
		struct stat st;

		err = b ? tree__open_blob(m->t, &n, &b->fd, &st) : -ENOMEM;
		if (!err) {
			atomic_init(&b->refs, 1);
			b->size = (uint64_t)st.st_size;
			fi->fh = (uintptr_t)b | 1;
			fi->keep_cache = 1; /* the file recorded, checked at open */
			if (fuse_reply_open(req, fi) != 0)
				blobh_put(b);
		} else {
			free(b);
		}
		node__fini(&n);
		goto out;
	} else
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
	uint64_t base;
	int fd;

	if (!e) {
		fuse_reply_err(req, EBADF);
		return;
	}
	atomic_fetch_add(&m->n_read, 1);
	if (fh_blob(fi->fh)) {
		struct blobh *b = blobh_of(fi->fh);
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);

		if (off >= 0 && (uint64_t)off < b->size)
			n = b->size - (uint64_t)off < size ? b->size - (uint64_t)off : size;
		atomic_fetch_add(&m->n_read_bytes, n);
		atomic_fetch_add(&b->refs, 1);
		bv.buf[0].size = n;
		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = b->fd;
		bv.buf[0].pos = off;
		fuse_reply_data(req, &bv, 0);
		blobh_put(b);
		return;
	}
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
	fd = cache_entry__fd(e, &base);
	if (fd >= 0 && n) {
		/* libfuse preads (or splices) straight from the spill file. */
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(n);

		bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv.buf[0].fd = fd;
		bv.buf[0].pos = (off_t)(base + (uint64_t)off);
		fuse_reply_data(req, &bv, 0);
	} else {
		fuse_reply_buf(req, n ? e->data + off : NULL, n);
	}
	cache__put(m->cache, e);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	if (fh_blob(fi->fh))
		blobh_put(blobh_of(fi->fh));
	else
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

const struct fuse_lowlevel_ops fsmount__ops = {
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
