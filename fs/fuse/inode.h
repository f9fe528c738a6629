/*
 * inode.h - the FUSE edge's inode numbers (see inode.c), private to
 * fs/fuse/.
 */
#ifndef PROFFS_FUSE_INODE_H
#define PROFFS_FUSE_INODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/util/hmap.h"

/* inode number -> struct ino_ent; thread-safe through lock. */
struct inotab {
	pthread_rwlock_t lock;
	struct hmap map;
	uint64_t bytes; /* of the entries */
	bool inited;
};

/* Returns 0 or -errno. */
int inotab__init(struct inotab *t);
/* Frees every entry; t may be zeroed or half-initialized. */
void inotab__fini(struct inotab *t);
/*
 * Registers key (reachable at path) and returns its inode number. A 64-bit
 * collision with another key moves the newcomer to the next seed. Returns 0
 * on allocation failure.
 */
uint64_t inotab__assign(struct inotab *t, const char *key, const char *path);
/* A malloc'd copy of the path of ino (the caller frees it), or NULL with
 * errno ESTALE (never assigned) or ENOMEM. */
char *inotab__path(struct inotab *t, uint64_t ino);
/*
 * Records that the kernel now knows the bytes with fingerprint fp for ino
 * (their size, or pages of them). Returns true when it knew different
 * bytes before: a render of the same query that came out different (new
 * data, or a renderer whose output depends on the store's history), so
 * its cached size and pages must be dropped.
 */
bool inotab__swap_fp(struct inotab *t, uint64_t ino, uint64_t fp);
/* Inodes registered, and the bytes they and the table hold (metrics). */
void inotab__stats(struct inotab *t, uint64_t *n, uint64_t *bytes);
/* The inode number key gets, without registering it (readdir's d_ino). */
uint64_t inotab__peek(const char *key);

#endif
