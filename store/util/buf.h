/*
 * buf.h - a growable byte buffer, for renderers and /metrics text.
 */
#ifndef PROFFS_BUF_H
#define PROFFS_BUF_H

#include <stddef.h>

/* A growable byte buffer; data is malloc'd and belongs to whoever holds it.
 * Zero-initialized is empty. Appends that fail set err and are dropped, so
 * a writer checks once at the end. data is NUL-terminated when non-NULL. */
struct buf {
	char *data;
	size_t len, cap;
	int err; /* sticky -ENOMEM */
};
void buf__put(struct buf *b, const void *p, size_t n);
void buf__puts(struct buf *b, const char *s);
void buf__printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Frees the bytes and leaves b empty (reusable). */
void buf__free(struct buf *b);

#endif
