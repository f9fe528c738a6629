/*
 * mount.h - serving a tree over FUSE (libfuse 3 low-level API).
 */
#ifndef PROFFS_MOUNT_H
#define PROFFS_MOUNT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "fs/tree/tree.h"

struct mount_opts {
	const char *mountpoint;
	bool allow_other;
	size_t cache_bytes; /* render cache bound; 0 = CACHE_DEFAULT_BYTES (32 MiB) */
	/* The render cache's bytes go to an unlinked file here (fs/cache/
	 * spill.h: page cache, not the daemon's heap); NULL, or a directory
	 * that cannot take one (read-only): the heap. */
	const char *spill_dir;
	/* Called first in the thread that serves the mount, before it starts
	 * any other (every FUSE thread descends from it and inherits what it
	 * sets, capabilities included); NULL = none. */
	void (*on_serve)(void *ctx);
	void *on_serve_ctx;
	/* Aborts this mount's FUSE connection (fusectl) for a process that
	 * no longer may: the last resort of fsmount__stop when the request
	 * loop does not end. NULL = abort it here, with our own privileges. */
	int (*abort_conn)(void *ctx);
	void *abort_ctx;
};

struct fsmount;
/*
 * Mounts t at o->mountpoint (detaching a stale mount left by a crash
 * first) and serves it from background threads. The caller keeps t alive
 * until fsmount__stop(). Signals: the caller blocks SIGINT/SIGTERM in every
 * thread before calling this (threads inherit the mask) and waits for them
 * itself (sigwait), then calls fsmount__stop(). When the mount is removed
 * from outside (fusermount3 -u, umount), the process is sent SIGTERM so
 * that it shuts down the same way. Returns 0 or -errno.
 */
int fsmount__start(struct fsmount **out, struct tree *t,
		   const struct mount_opts *o);
/*
 * Ends the request loop while the mount is still attached here: libfuse
 * looks at its exit flag only between requests, so this sends some (a
 * stat of a fresh name) until a worker sees it, for up to about a second.
 * Call it before anything detaches the mount (the unmount helper): once
 * detached in our namespace no request of ours reaches it, and a copy of
 * the mount in another namespace (a container start, `unshare -m`, a
 * service with PrivateTmp=) keeps the connection alive, so nothing would
 * wake the workers. Returns 0, or -ETIMEDOUT (fsmount__stop goes on to
 * its last resorts).
 */
int fsmount__end_loop(struct fsmount *m);
/* Someone else (the unmount helper) detached the mount: fsmount__stop
 * does not try to unmount it again. */
void fsmount__detached(struct fsmount *m);
/* Ends the loop (if fsmount__end_loop did not), unmounts, joins the FUSE
 * threads and frees m. Safe with open files. */
void fsmount__stop(struct fsmount *m);
/*
 * The main thread's wait: returns the first of sigs (blocked in every
 * thread) that arrives. Meanwhile, once a second, it notices reads that
 * have stopped (no request for FSMOUNT_IDLE_S): then it prunes the inode
 * table if it is large and hands the heap's free pages back (heap_trim),
 * so a walk's peak does not stay resident. m may be NULL (no mount).
 */
#define FSMOUNT_IDLE_S 5
int fsmount__wait_signal(struct fsmount *m, const sigset_t *sigs);

/* Appends the render cache's and the FUSE requests' metrics (Prometheus
 * text) to out; m may be NULL (nothing). Both `proffs mount` and `proffs
 * run` append these to /prof/metrics through their tree's metrics_cb. */
void fsmount__metrics(struct fsmount *m, struct buf *out);

#endif
