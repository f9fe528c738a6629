/*
 * closed.h - the rendered bytes of an open window's complete minutes
 * (closed.c says why and how they are used). Private to the tree.
 */
#ifndef PROFFS_CLOSED_H
#define PROFFS_CLOSED_H

#include <stdbool.h>
#include <stdint.h>

#include "store/profile/pprof.h"
#include "store/util/buf.h"

/* What a later part must know of the bytes it follows. */
struct closed_meta {
	struct pprof_ids ids; /* profile.pb: what the bytes number */
	uint64_t vtypes;      /* the value types' hash: a part must have the same */
	bool scaled;          /* folded counts rounded per part: not joinable */
};

struct closed;

/* A cache whose bytes live in a spill file in dir (NULL, or a directory
 * that cannot hold one: the heap). NULL with errno set on failure. The
 * caller frees it with closed__free. */
struct closed *closed__new(const char *dir);
void closed__free(struct closed *c);

/*
 * Appends to out the bytes put for (key, end) at names version names, and
 * fills *meta. Returns 0, -ENOENT when there are none (or they were put at
 * another names version: they are dropped), or -errno (out->err, a read
 * of the spill). Thread-safe.
 */
int closed__get(struct closed *c, uint64_t key, uint64_t names, int64_t end,
		struct closed_meta *meta, struct buf *out);

/* Keeps a copy of bytes [0, len) for (key, end), replacing what key had;
 * parts that end before the newest end put are dropped. Memory that
 * cannot be had just means no entry. Thread-safe. */
void closed__put(struct closed *c, uint64_t key, uint64_t names, int64_t end,
		 const struct closed_meta *meta, const void *bytes, size_t len);

#endif
