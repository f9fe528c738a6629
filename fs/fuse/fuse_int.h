/*
 * fuse_int.h - what ops.c (the request handlers) and mount.c (the mount's
 * lifetime) share; private to fs/fuse/.
 */
#ifndef PROFFS_FUSE_INT_H
#define PROFFS_FUSE_INT_H

#include <fuse_lowlevel.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fs/cache/cache.h"
#include "fs/fuse/inode.h"
#include "fs/fuse/mount.h"

struct fsmount {
	struct tree *t;
	struct cache *cache;
	struct fuse_session *se;
	char *mountpoint;
	dev_t dev; /* of the mounted filesystem, to abort its connection */
	pthread_t loop;
	bool loop_started, loop_joined, mounted;
	int (*abort_conn)(void *ctx); /* mount_opts.abort_conn */
	void *abort_ctx;
	atomic_bool stopping; /* fsmount__stop() began */
	struct inotab inos;
	uid_t uid;
	gid_t gid;
	void (*on_serve)(void *ctx); /* mount_opts.on_serve */
	void *on_serve_ctx;
	/* request counters of /metrics, bumped by the handlers */
	atomic_uint_fast64_t n_lookup, n_negative, n_getattr, n_open, n_read,
		n_read_bytes, n_readdir, n_erofs, n_render_errors, n_dot, n_prunes,
		n_renamed; /* names found later: the kernel's files invalidated */
};

/* When the inode table is pruned (prune.c): inodes held once reads have
 * stopped, and while they go on (at most every gap seconds). */
#define INO_PRUNE_IDLE 4096
#define INO_PRUNE_BUSY 65536
#define INO_PRUNE_BUSY_GAP_S 10

/*
 * Asks the kernel to drop the dentries it holds and nobody uses (see
 * prune.c); their FORGETs then empty the inode table. Call from a thread
 * that serves no request. Returns 0 or -errno.
 */
int fsmount__prune(struct fsmount *m);

/* The request handlers; each request's userdata is its struct fsmount. */
extern const struct fuse_lowlevel_ops fsmount__ops;

#endif
