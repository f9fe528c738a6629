/*
 * buf.c - the growable byte buffer of buf.h.
 */
#include "store/util/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/util.h"

/* Makes room for n more bytes plus a NUL; on failure the error sticks so
 * a renderer can check once at the end. */
static bool buf__reserve(struct buf *b, size_t n)
{
	if (b->err)
		return false;
	if (b->len + n + 1 > b->cap && GROW(b->data, &b->cap, b->len + n + 1)) {
		b->err = -ENOMEM;
		return false;
	}
	return true;
}

bool buf__room(struct buf *b, size_t n)
{
	return buf__reserve(b, n);
}

void buf__put(struct buf *b, const void *p, size_t n)
{
	if (!buf__reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf__take(struct buf *b, void *p, size_t n, size_t cap)
{
	if (!b->err && !b->len && cap > n) {
		free(b->data);
		b->data = p;
		b->len = n;
		b->cap = cap;
		b->data[n] = '\0';
		return;
	}
	buf__put(b, p, n);
	free(p);
}

void buf__puts(struct buf *b, const char *s)
{
	buf__put(b, s, strlen(s));
}

void buf__printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!buf__reserve(b, 256))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -EINVAL;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (!buf__reserve(b, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void buf__free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->err = 0;
}
