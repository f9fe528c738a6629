/*
 * inode.c - inode numbers of the FUSE edge.
 *
 * Inode numbers: hash64 of the canonical path for files and symlinks (so
 * the same query reached by two paths is one inode, like a hard link), and
 * hash64 of the path as looked up for directories (a directory must have
 * exactly one parent in the kernel's dentry cache; two paths naming one
 * query would otherwise be aliases of one directory inode). Both are
 * stable across restarts. The inode -> path table is never pruned on
 * FORGET: NFS file handles carry only the inode number and may come back
 * long after the kernel forgot it.
 */
#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fuse/inode.h"
#include "store/util/util.h"

struct ino_ent {
	char *key;  /* what was hashed: canon (files) or path (dirs) */
	char *path; /* a path that resolves to it */
	uint64_t fp; /* of the bytes whose size the kernel was last told */
	bool has_fp;
};

int inotab__init(struct inotab *t)
{
	int err;

	memset(&t->map, 0, sizeof(t->map));
	err = pthread_rwlock_init(&t->lock, NULL);
	if (err)
		return -err;
	t->inited = true;
	return 0;
}

static void ino_ent__free(struct ino_ent *e)
{
	if (!e)
		return;
	free(e->key);
	free(e->path);
	free(e);
}

void inotab__fini(struct inotab *t)
{
	if (!t->inited)
		return;
	for (size_t i = 0; i < t->map.cap; i++)
		if (t->map.keys[i])
			ino_ent__free(t->map.vals[i]);
	hmap__fini(&t->map);
	pthread_rwlock_destroy(&t->lock);
	t->inited = false;
}

/* The inode number of key with the given seed; never 0 (the map's empty
 * key) or FUSE_ROOT_ID. */
static uint64_t ino_hash(const char *key, uint64_t seed)
{
	uint64_t h = hash64(key, strlen(key), seed);

	return h <= FUSE_ROOT_ID ? h + 2 : h;
}

uint64_t inotab__peek(const char *key)
{
	return strcmp(key, "/") ? ino_hash(key, 0) : FUSE_ROOT_ID;
}

uint64_t inotab__assign(struct inotab *t, const char *key, const char *path)
{
	struct ino_ent *e;
	uint64_t ino = 0;

	if (!strcmp(key, "/"))
		return FUSE_ROOT_ID;
	pthread_rwlock_wrlock(&t->lock);
	for (uint64_t seed = 0; seed < 64; seed++) {
		ino = ino_hash(key, seed);
		e = hmap__get(&t->map, ino);
		if (!e)
			break;
		if (!strcmp(e->key, key))
			goto out;
		pr_warn("inode collision between '%s' and '%s'", e->key, key);
	}
	if (e) /* 64 collisions in a row: not a hash any more */
		goto fail;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto fail;
	e->key = strdup(key);
	e->path = strdup(path);
	if (!e->key || !e->path || hmap__put(&t->map, ino, e)) {
		ino_ent__free(e);
		goto fail;
	}
out:
	pthread_rwlock_unlock(&t->lock);
	return ino;
fail:
	pthread_rwlock_unlock(&t->lock);
	return 0;
}

char *inotab__path(struct inotab *t, uint64_t ino)
{
	struct ino_ent *e;
	char *p = NULL;

	if (ino == FUSE_ROOT_ID)
		return strdup("/");
	pthread_rwlock_rdlock(&t->lock);
	e = hmap__get(&t->map, ino);
	if (e)
		p = strdup(e->path);
	else
		errno = ESTALE;
	pthread_rwlock_unlock(&t->lock);
	return p;
}

bool inotab__swap_fp(struct inotab *t, uint64_t ino, uint64_t fp)
{
	struct ino_ent *e;
	bool changed = false;

	pthread_rwlock_wrlock(&t->lock);
	e = hmap__get(&t->map, ino);
	if (e) {
		changed = e->has_fp && e->fp != fp;
		e->fp = fp;
		e->has_fp = true;
	}
	pthread_rwlock_unlock(&t->lock);
	return changed;
}
