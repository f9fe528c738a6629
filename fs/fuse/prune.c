/*
 * prune.c - bounding the inode table by asking the kernel to let go.
 *
 * The inode table (inode.c) must answer for every inode the kernel holds,
 * and the kernel holds every dentry it was ever given until memory runs
 * short: on a host with 24 GiB that is never. A walk of a day of churn
 * (`find` four levels down) left 261,599 of them, 26.9 MB of table, for
 * as long as the daemon ran. No timeout helps: a FUSE dentry whose entry
 * timeout has passed is revalidated when next used, not dropped (the
 * kernel deletes stale dentries on their last use for virtiofs only, and
 * libfuse 3.14 has no way to ask for it).
 *
 * What does work is an invalidation of a directory entry
 * (FUSE_NOTIFY_INVAL_ENTRY): the kernel unhashes that dentry and prunes
 * every unused dentry below it (d_invalidate, shrink_dcache_parent); the
 * pruned inodes are evicted and their FORGETs come back to inode.c. The
 * kernel alone knows what is in use - a working directory, an open file,
 * a dentry under one of them - and keeps exactly that. So a prune
 * invalidates the root's children (cpu, merged, diff, ...), nothing
 * deeper, and names no file.
 *
 * The cost is confined to those few names. An unhashed directory that is
 * still in use (someone's working directory is /prof/cpu itself, or
 * something below it is held) stays valid for its users, but getcwd() in
 * it would fail until the name is looked up again; a lookup splices the
 * old dentry back (d_splice_alias reuses a directory's alias). So each
 * name is looked up again at once, by a stat from this thread. Dentries
 * below the root's children are never unhashed, only dropped when unused.
 * Pruned files lose their page cache; a read renders again (or takes the
 * render cache's copy).
 *
 * When (mount.c): once reads stop, if more than INO_PRUNE_IDLE inodes are
 * held; and while reads go on, if more than INO_PRUNE_BUSY are, at most
 * every INO_PRUNE_BUSY_GAP_S seconds. The notification must not come from
 * a thread that serves requests: the kernel takes the root's lock, which
 * a lookup in progress holds until a worker answers it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fuse/fuse_int.h"
#include "store/util/util.h"

int fsmount__prune(struct fsmount *m)
{
	char *names = inotab__top_names(&m->inos), *p;
	char path[PATH_MAX];
	struct stat st;

	if (!names)
		return -errno;
	for (p = names; *p; p += strlen(p) + 1) {
		int err = fuse_lowlevel_notify_inval_entry(m->se, FUSE_ROOT_ID, p, strlen(p));

		/* -ENOENT: the kernel had already dropped it. */
		if (err && err != -ENOENT) {
			pr_debug("prune %s: %s", p, strerror(-err));
			continue;
		}
		/* Back in the dentry cache, for a getcwd() in it (above). */
		if (snprintf(path, sizeof(path), "%s/%s", m->mountpoint, p) < (int)sizeof(path))
			stat(path, &st);
	}
	free(names);
	atomic_fetch_add(&m->n_prunes, 1);
	return 0;
}
