/*
 * closed.c - the complete minutes of an open window, rendered once.
 *
 * A window that ends in the current minute (last-15m) changes with every
 * batch the daemon stores, so each read of it rendered every minute of it
 * again: on a busy host a later read cost what the first one did. Its
 * complete minutes cannot change any more (the writer's mark says every
 * sample before it is stored; a frame named later moves the names
 * version, which the entries are keyed on, as the render cache keys
 * closed ranges). So the tree renders such a window in two parts: the
 * complete minutes [from, c), kept here as the bytes of their render, and
 * the open part [c, to), rendered at each read and joined to them
 * (profile.pb: a second Profile message numbered past the first,
 * pprof__encode_after; folded.txt: the two sorted texts merged). A later
 * read costs the open minute, not the window; when the minute turns, the
 * window's complete part is new and rendered once more.
 *
 * The bytes are held in a spill file in the store's directory (page cache,
 * not the daemon's heap; spill.h says why), in the heap where there is
 * none (a read-only store). Entries of a minute older than the newest one
 * put are of no use to a last-N window any more and go first.
 */
#include "fs/tree/closed.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs/cache/spill.h"

#define CLOSED_MAX 8 /* entries: a few windows, each its file kinds */

struct closed_ent {
	uint64_t key, names; /* 0 key: free */
	int64_t end;         /* c: the first minute not in it */
	struct closed_meta meta;
	struct spill_ext ext; /* bytes in the spill... */
	char *heap;           /* ...or here */
	size_t len;
	uint64_t used;        /* LRU clock */
};

struct closed {
	pthread_mutex_t lock;
	struct spill *sp; /* NULL: the heap */
	struct closed_ent v[CLOSED_MAX];
	uint64_t clock;
	int64_t newest; /* the latest end put */
};

struct closed *closed__new(const char *dir)
{
	struct closed *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	if (dir && spill__open(&c->sp, dir))
		c->sp = NULL; /* the heap then */
	return c;
}

static void ent_drop(struct closed *c, struct closed_ent *e)
{
	if (!e->key)
		return;
	if (e->heap)
		free(e->heap);
	else if (c->sp)
		spill__free(c->sp, &e->ext);
	memset(e, 0, sizeof(*e));
}

void closed__free(struct closed *c)
{
	if (!c)
		return;
	for (int i = 0; i < CLOSED_MAX; i++)
		ent_drop(c, &c->v[i]);
	spill__close(c->sp);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Reads e's bytes into out (under the lock: a put may drop e). */
static int ent_read(const struct closed_ent *e, struct buf *out)
{
	int err;

	if (e->heap) {
		buf__put(out, e->heap, e->len);
		return out->err;
	}
	if (!buf__room(out, e->len))
		return out->err;
	if ((err = spill__read(&e->ext, out->data + out->len)))
		return err;
	out->len += e->len;
	return 0;
}

int closed__get(struct closed *c, uint64_t key, uint64_t names, int64_t end,
		struct closed_meta *meta, struct buf *out)
{
	int err = -ENOENT;

	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < CLOSED_MAX; i++) {
		struct closed_ent *e = &c->v[i];

		if (e->key != key || e->end != end)
			continue;
		if (e->names != names) { /* frames named since: render again */
			ent_drop(c, e);
			break;
		}
		err = ent_read(e, out);
		if (!err) {
			*meta = e->meta;
			e->used = ++c->clock;
		}
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

void closed__put(struct closed *c, uint64_t key, uint64_t names, int64_t end,
		 const struct closed_meta *meta, const void *bytes, size_t len)
{
	struct closed_ent *slot = NULL;

	pthread_mutex_lock(&c->lock);
	if (end > c->newest)
		c->newest = end;
	for (int i = 0; i < CLOSED_MAX; i++) {
		struct closed_ent *e = &c->v[i];

		/* another thread's render of the same part, or a part of an
		 * older minute: a last-N window has moved past it */
		if (e->key && (e->key == key || e->end < c->newest))
			ent_drop(c, e);
		if (!e->key && !slot)
			slot = e;
	}
	if (!slot) { /* all of this minute: the least used goes */
		slot = &c->v[0];
		for (int i = 1; i < CLOSED_MAX; i++)
			if (c->v[i].used < slot->used)
				slot = &c->v[i];
		ent_drop(c, slot);
	}
	if (end < c->newest)
		goto out; /* of no use to anybody (a read that straddled the turn) */
	if (!c->sp || spill__put(c->sp, bytes, len, &slot->ext)) {
		slot->heap = malloc(len ? len : 1);
		if (!slot->heap)
			goto out;
		memcpy(slot->heap, bytes, len);
	}
	slot->key = key;
	slot->names = names;
	slot->end = end;
	slot->meta = *meta;
	slot->len = len;
	slot->used = ++c->clock;
out:
	pthread_mutex_unlock(&c->lock);
}
