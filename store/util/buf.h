/*
 * buf.h - the growable byte buffer every text producer writes into
 * (renderers, the tree's files, canonical paths). Errors are sticky: a
 * producer appends freely and checks b->err once at the end.
 */
#ifndef PROFFS_BUF_H
#define PROFFS_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialise to start. data is malloc'd, NUL-terminated once
 * anything was put, and belongs to whoever holds the buffer: release it
 * with buf__free() or take it (and free() it) yourself. */
struct buf {
	char *data;
	size_t len, cap;
	int err; /* sticky -ENOMEM (or -EINVAL from a bad format) */
};
void buf__put(struct buf *b, const void *p, size_t n);
void buf__puts(struct buf *b, const char *s);
void buf__printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void buf__free(struct buf *b);
/* Room for n more bytes now (a writer that knows its size saves the
 * copies of growing); false when out of memory (b->err is set). */
bool buf__room(struct buf *b, size_t n);
/* Appends the n bytes of p, a malloc'd block of cap > n bytes that the
 * buffer takes (the caller must not touch it after): an empty buffer
 * adopts it whole, without a copy (a 5 MB profile.pb was copied, and its
 * fresh pages faulted in, for nothing); else its bytes are put and it is
 * freed. */
void buf__take(struct buf *b, void *p, size_t n, size_t cap);

#endif
