/*
 * tree.h - the /prof tree without FUSE: path -> node -> listing, link
 * target or file bytes. The FUSE layer (fs/fuse/ops.c) and `proffs cat` are
 * its two clients; everything a path means is decided here and in path.c.
 */
#ifndef PROFFS_TREE_H
#define PROFFS_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fs/render/render.h"
#include "store/db/store.h"

enum node_kind { NODE_DIR, NODE_FILE, NODE_SYMLINK };

/* A resolved path. canon is the canonical form (malloc'd, owned by the
 * node, freed by node__fini): equal queries have equal canon, and inode
 * numbers are hash64(canon). immutable: the node's content can never change
 * again (a closed minute or range wholly in the past), so FUSE may cache it
 * for long. */
struct node {
	enum node_kind kind;
	char *canon;
	bool immutable;
	int64_t mtime; /* Unix seconds shown as mtime: window end, or now */
	/* ... and as ctime: mtime, or for a complete window the time its
	 * frames last gained names (SPEC §2's one change of a complete
	 * minute; NFS clients revalidate cached pages by ctime). */
	int64_t ctime;
	/* A file under /binaries (issue 30): its bytes are a file's on disk,
	 * read through tree__open_blob, never rendered into the render
	 * cache (a debug file may be hundreds of MB). */
	bool blob;
	void *q;       /* parsed query, private to tree.c */
};
void node__fini(struct node *n);

struct tree;
/* metrics_cb, when set, appends the embedder's own metrics (the mount's
 * render cache and FUSE figures, the daemon's sampler figures) to
 * /metrics. */
struct tree_opts {
	void (*metrics_cb)(struct buf *out, void *ctx);
	void *metrics_ctx;
};
/* The tree borrows s; s must outlive it. Returns NULL with errno set. */
struct tree *tree__new(struct store *s, const struct tree_opts *o);
/* A tree over n stores served as one (stores.h): s[i] borrowed, must
 * outlive the tree; nodes[i] (copied) is the node= value of store i's
 * series that carry no node label; nodes NULL: no labelling. */
struct tree *tree__new_multi(struct store *const *s, const char *const *nodes, size_t n,
			     const struct tree_opts *o);
void tree__free(struct tree *t);

/* Resolves an absolute path ("/", "/cpu/comm=x/2026-11-22T10:15/top.txt").
 * Returns 0 and fills *out, or -ENOENT for anything that does not parse or
 * does not exist. Thread-safe. */
int tree__resolve(struct tree *t, const char *path, struct node *out);

/* Directory entries of a NODE_DIR (without "." and ".."): names (malloc'd
 * array of malloc'd strings, already percent-encoded) and kinds. Free with
 * tree__free_list(). Thread-safe. */
int tree__list(struct tree *t, const struct node *n, char ***names,
	       enum node_kind **kinds, size_t *count);
void tree__free_list(char **names, enum node_kind *kinds, size_t count);

/* Target of a NODE_SYMLINK (e.g. "2026-11-22T10:15"), malloc'd. */
int tree__readlink(struct tree *t, const struct node *n, char **target);

/* The bytes of a NODE_FILE, rendered now (no caching here). Thread-safe. */
int tree__render(struct tree *t, const struct node *n, struct buf *out);


/* Opens the file behind a blob node: *fd (read-only, the caller's) and
 * its stat (st_size is what a read returns). -ENOENT when it is no longer
 * there or no longer the file recorded. Thread-safe. */
int tree__open_blob(struct tree *t, const struct node *n, int *fd, struct stat *st);

/* The store's data version (cache key part). */
uint64_t tree__version(struct tree *t);

/* What the bytes of a complete minute or range depend on besides its
 * canon (SPEC §2's one exception: a frame stored without a name gains it
 * once its symbols turn up, store__names_version): a cache of immutable
 * nodes keys on it. Cheap (re-read only when a store's version moved). */
uint64_t tree__names_version(struct tree *t);

/* What n's bytes depend on besides its canon: the store's data version,
 * mixed with the current minute for last-N windows and latest links
 * (they move with the clock even when no data arrives) and with the clock
 * itself for /metrics. A render cache keyed by (canon, this) never serves
 * stale bytes. */
uint64_t tree__node_version(struct tree *t, const struct node *n);

#endif
