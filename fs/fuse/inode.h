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

/* Forgotten inodes kept for NFS handles (see inode.c). */
#define INO_FORGOTTEN 4096

/* inode number -> struct ino_ent; thread-safe through lock. */
struct inotab {
	pthread_rwlock_t lock;
	struct hmap map;
	/* The entries, packed in one mapping (see inode.c): used bytes from
	 * the start, dead of them freed since the last compaction. */
	char *arena;
	size_t used, cap, dead;
	uint64_t *ring; /* the last INO_FORGOTTEN forgotten inode numbers */
	uint64_t nforgot; /* forgets that emptied an entry, ever */
	uint64_t nring;   /* entries now kept only by the ring */
	bool inited;
};

/* Returns 0 or -errno. */
int inotab__init(struct inotab *t);
/* Frees every entry; t may be zeroed or half-initialized. */
void inotab__fini(struct inotab *t);
/*
 * Registers key (reachable at path) and returns its inode number, with one
 * kernel reference taken on it (the lookup about to be answered; give it
 * back with inotab__forget(t, ino, 1) if the answer is not sent). A 64-bit
 * collision with another key moves the newcomer to the next seed. Returns
 * 0 on allocation failure.
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
/* The kernel dropped nlookup references on ino (FORGET), or a lookup
 * that took one was not answered after all (1). */
void inotab__forget(struct inotab *t, uint64_t ino, uint64_t nlookup);
/* Inodes the kernel holds, the forgotten ones kept for NFS handles, and
 * the bytes all of them and the table take (metrics, and when to prune). */
void inotab__stats(struct inotab *t, uint64_t *held, uint64_t *forgotten,
		   uint64_t *bytes);
/*
 * The names of the root's children the kernel holds ("cpu", "merged", ...),
 * each NUL-terminated, one after another, ended by an empty name: a
 * malloc'd buffer the caller frees. NULL with errno ENOMEM.
 */
char *inotab__top_names(struct inotab *t);
/* The inode numbers of the files the kernel holds whose size it was told
 * (malloc'd; *n of them), for invalidating them all (names found later,
 * mount.c). NULL with *n = 0 when none or out of memory. */
uint64_t *inotab__held_files(struct inotab *t, size_t *n);
/* The inode number key gets, without registering it (readdir's d_ino). */
uint64_t inotab__peek(const char *key);

#endif
