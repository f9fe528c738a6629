/*
 * inode.c - inode numbers of the FUSE edge.
 *
 * Inode numbers: hash64 of the canonical path for files and symlinks (so
 * the same query reached by two paths is one inode, like a hard link), and
 * hash64 of the path as looked up for directories (a directory must have
 * exactly one parent in the kernel's dentry cache; two paths naming one
 * query would otherwise be aliases of one directory inode). Both are
 * stable across restarts.
 *
 * The inode -> path table holds what the kernel holds: each entry counts
 * the lookups the kernel was answered (its nlookup) and FORGET takes them
 * back. An entry the kernel forgot is kept a while longer, because NFS
 * file handles carry only the inode number and come back after the
 * kernel dropped it: the last INO_FORGOTTEN forgotten entries stay, older
 * ones go (a handle to one then answers ESTALE, and the NFS client looks
 * the path up again). Without this a daemon's table grew by every path
 * ever read, for as long as it ran. (What the kernel holds is bounded by
 * prune.c.)
 *
 * Entries are not malloc'd one by one: after a walk the kernel forgets
 * most of them, and the survivors (the ring, what is in use), scattered
 * one or two to a page among the freed, kept those pages resident (a day
 * of churn's walk left the heap +12.7 MiB with the table pruned to 0.7 MB;
 * packed, +8.4 MiB, 1.3 MB of it the table). They are packed instead into one
 * anonymous mapping, bump-allocated, and moved into a fresh mapping of
 * the right size when over half of it is dead: the old one is unmapped,
 * so memory follows the table down. Only the map holds pointers to
 * entries, and every use of one is under the table's lock, which a move
 * takes for writing.
 */
#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fs/fuse/inode.h"
#include "store/util/buf.h"
#include "store/util/util.h"

/* One record per inode, the strings inline: a walk of a busy tree
 * registers ~200k of them before a prune, so each byte here counts 200k
 * times. A walk of 67k files took 31 MB with three allocations and both
 * strings always stored. */
struct ino_ent {
	uint64_t fp;    /* of the bytes whose size the kernel was last told */
	uint64_t nlookup; /* the kernel's references */
	uint64_t forgot;  /* its slot in the forgotten ring, + 1; 0: held */
	bool has_fp;
	uint32_t path_at; /* where the path starts in s; 0: the path is the key */
	char s[];       /* key (what was hashed: canon for files, path for
			 * dirs), NUL, then the path that resolves to it */
};

static const char *ent_path(const struct ino_ent *e)
{
	return e->path_at ? e->s + e->path_at : e->s;
}

/* The bytes in the arena of an entry whose strings take kl and pl bytes
 * (8-aligned, for the next entry's fields). */
static size_t ent_bytes(size_t kl, size_t pl)
{
	return (sizeof(struct ino_ent) + kl + pl + 7) & ~(size_t)7;
}

static size_t ent_size(const struct ino_ent *e)
{
	return ent_bytes(strlen(e->s) + 1, e->path_at ? strlen(e->s + e->path_at) + 1 : 0);
}

#define ARENA_MIN (64 << 10)

/* Moves the live entries into a fresh mapping with room for need more
 * bytes, and unmaps the old one. t->lock held for writing. 0 or -ENOMEM
 * (t unchanged). */
static int arena_move(struct inotab *t, size_t need)
{
	size_t live = t->used - t->dead, cap = ARENA_MIN, at = 0;
	char *a;

	while (cap < (live + need) + (live + need) / 2)
		cap *= 2;
	a = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return -ENOMEM;
	for (size_t i = 0; i < t->map.cap; i++) {
		size_t n;

		if (!t->map.keys[i])
			continue;
		n = ent_size(t->map.vals[i]);
		memcpy(a + at, t->map.vals[i], n);
		t->map.vals[i] = a + at;
		at += n;
	}
	if (t->arena)
		munmap(t->arena, t->cap);
	t->arena = a;
	t->cap = cap;
	t->used = at;
	t->dead = 0;
	return 0;
}

/* Room for an entry of n bytes (8-aligned), or NULL. Moves the others. */
static struct ino_ent *arena_alloc(struct inotab *t, size_t n)
{
	void *e;

	if (t->used + n > t->cap && arena_move(t, n))
		return NULL;
	e = t->arena + t->used;
	t->used += n;
	return e;
}

/* An entry of n bytes left the map; its bytes are dead until the next
 * move, which this may make (every entry pointer is then stale). */
static void arena_free(struct inotab *t, size_t n)
{
	t->dead += n;
	if (t->dead > ARENA_MIN && t->dead * 2 > t->used)
		arena_move(t, 0); /* failing leaves it as it was */
}

int inotab__init(struct inotab *t)
{
	int err;

	memset(t, 0, sizeof(*t));
	err = pthread_rwlock_init(&t->lock, NULL);
	if (err)
		return -err;
	t->inited = true;
	return 0;
}


void inotab__fini(struct inotab *t)
{
	if (!t->inited)
		return;
	free(t->ring);
	t->ring = NULL;
	if (t->arena)
		munmap(t->arena, t->cap);
	t->arena = NULL;
	t->used = t->cap = t->dead = 0;
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
		if (!strcmp(e->s, key))
			goto ref;
		pr_warn("inode collision between '%s' and '%s'", e->s, key);
	}
	if (e) /* 64 collisions in a row: not a hash any more */
		goto fail;
	size_t kl = strlen(key) + 1, pl = strcmp(key, path) ? strlen(path) + 1 : 0;

	if (kl + pl > UINT32_MAX)
		goto fail;
	size_t n = ent_bytes(kl, pl);

	e = arena_alloc(t, n);
	if (!e)
		goto fail;
	e->fp = 0;
	e->nlookup = 0;
	e->forgot = 0;
	e->has_fp = false;
	e->path_at = pl ? (uint32_t)kl : 0;
	memcpy(e->s, key, kl);
	if (pl)
		memcpy(e->s + kl, path, pl);
	if (hmap__put(&t->map, ino, e)) {
		t->used -= n; /* the last bytes of the arena: give them back */
		goto fail;
	}
ref:
	/* The reference is taken here, under the lock that a forget needs:
	 * between this and the reply no ring eviction can free it. */
	e->nlookup++;
	if (e->forgot) { /* held again: its ring slot is void */
		e->forgot = 0;
		t->nring--;
	}
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
		p = strdup(ent_path(e));
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

/* t->lock held for writing. */
static void forget_one(struct inotab *t, uint64_t ino, uint64_t n)
{
	struct ino_ent *e = hmap__get(&t->map, ino);
	uint64_t slot, old;

	if (!e || ino == FUSE_ROOT_ID)
		return;
	e->nlookup = n < e->nlookup ? e->nlookup - n : 0;
	if (e->nlookup || e->forgot)
		return;
	if (!t->ring && !(t->ring = calloc(INO_FORGOTTEN, sizeof(*t->ring))))
		return; /* kept: a leak is better than a lost handle */
	slot = t->nforgot++;
	old = t->ring[slot % INO_FORGOTTEN];
	t->ring[slot % INO_FORGOTTEN] = ino;
	e->forgot = slot + 1;
	t->nring++;
	/* The slot's previous occupant goes, unless held again since (its
	 * forgot no longer names this slot). Last: freeing may move every
	 * entry, e included. */
	if (slot >= INO_FORGOTTEN) {
		struct ino_ent *o = hmap__get(&t->map, old);

		if (o && o->forgot == slot - INO_FORGOTTEN + 1) {
			size_t n = ent_size(o);

			hmap__del(&t->map, old);
			t->nring--;
			hmap__shrink(&t->map);
			arena_free(t, n);
		}
	}
}

void inotab__forget(struct inotab *t, uint64_t ino, uint64_t nlookup)
{
	pthread_rwlock_wrlock(&t->lock);
	forget_one(t, ino, nlookup);
	pthread_rwlock_unlock(&t->lock);
}

void inotab__stats(struct inotab *t, uint64_t *held, uint64_t *forgotten,
		   uint64_t *bytes)
{
	pthread_rwlock_rdlock(&t->lock);
	*held = t->map.len - t->nring;
	*forgotten = t->nring;
	/* the entries, and the table's two arrays */
	*bytes = t->cap + t->map.cap * (sizeof(*t->map.keys) + sizeof(*t->map.vals));
	pthread_rwlock_unlock(&t->lock);
}

uint64_t *inotab__held_files(struct inotab *t, size_t *n)
{
	uint64_t *v;

	*n = 0;
	pthread_rwlock_rdlock(&t->lock);
	v = malloc((t->map.len + 1) * sizeof(*v));
	for (size_t i = 0; v && i < t->map.cap; i++) {
		const struct ino_ent *e = t->map.vals[i];

		if (t->map.keys[i] && !e->forgot && e->has_fp)
			v[(*n)++] = t->map.keys[i];
	}
	pthread_rwlock_unlock(&t->lock);
	return v;
}

char *inotab__top_names(struct inotab *t)
{
	struct buf b = { 0 };

	pthread_rwlock_rdlock(&t->lock);
	for (size_t i = 0; i < t->map.cap; i++) {
		const struct ino_ent *e = t->map.vals[i];
		const char *p;

		if (!t->map.keys[i] || e->forgot)
			continue;
		p = ent_path(e);
		if (p[0] == '/' && p[1] && !strchr(p + 1, '/'))
			buf__put(&b, p + 1, strlen(p + 1) + 1);
	}
	pthread_rwlock_unlock(&t->lock);
	buf__put(&b, "", 1);
	if (b.err) {
		buf__free(&b);
		errno = ENOMEM;
		return NULL;
	}
	return b.data;
}
