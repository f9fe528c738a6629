/*
 * store_copy.c - a consistent, compacted copy of a live store.
 *
 * LMDB's mdb_env_copy2 with MDB_CP_COMPACT writes the pages of one read
 * snapshot, free pages left out and the rest renumbered, so the copy is
 * what a reader would see at one instant and no larger than the data.
 * Being one read transaction, it never blocks the daemon's appends.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/db/store_int.h"

int store__copy(struct store *s, const char *dest)
{
	char path[4096];
	struct stat st;
	int rc;

	if (!s || !dest || !*dest)
		return -EINVAL;
	if (mkdir(dest, 0700) && errno != EEXIST) {
		rc = -errno;
		pr_err("store: copy: cannot create %s: %s", dest, strerror(errno));
		return rc;
	}
	/* Never overwrite a store: the copy is meant to be carried off, and
	 * writing over a live one would corrupt it under its readers. */
	if (snprintf(path, sizeof(path), "%s/data.mdb", dest) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (!stat(path, &st)) {
		pr_err("store: copy: %s already holds a store", dest);
		return -EEXIST;
	}
	/* Shared: a map grown by another process is adopted under the
	 * exclusive side, which must not happen mid-copy. */
	pthread_rwlock_rdlock(&s->resize_lock);
	rc = mdb_env_copy2(s->env, dest, MDB_CP_COMPACT);
	pthread_rwlock_unlock(&s->resize_lock);
	if (rc) {
		rc = store__errno(rc);
		pr_err("store: copy %s to %s: %s", s->dir, dest, strerror(-rc));
		unlink(path); /* a half copy must not pass for a store */
		return rc;
	}
	return 0;
}
