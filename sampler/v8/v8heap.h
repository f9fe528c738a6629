/*
 * v8heap.h - reading objects of another process's V8 heap, shared by
 * v8name.c (functions, code, scripts) and v8str.c (strings): tagged
 * values, reads through the caller's read function, instance types.
 * Internal to sampler/v8/.
 */
#ifndef PROFFS_V8HEAP_H
#define PROFFS_V8HEAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/v8/v8name.h"

struct v8names;

/* What a read of one process's heap needs. */
struct v8ctx {
	struct v8names *c;
	pid_t pid;
	const struct v8layout *l;
	const struct v8file *f;
	v8_read_fn rd;
	void *rctx;
};

static inline bool heap_object(uint64_t v)
{
	return (v & 3) == 1 && v > 4096;
}

static inline bool smi(uint64_t v)
{
	return !(v & 1);
}

static inline int32_t smi_val(uint64_t v)
{
	return (int32_t)(v >> 32);
}

static inline int rd(const struct v8ctx *x, uint64_t addr, void *buf, size_t len)
{
	return len ? x->rd(x->rctx, addr, buf, len) : 0;
}

static inline int rd64(const struct v8ctx *x, uint64_t obj, int off, uint64_t *v)
{
	return rd(x, obj - 1 + (uint64_t)off, v, 8);
}

/* The instance type of a heap object, or -1. */
static inline int type_of(const struct v8ctx *x, uint64_t obj)
{
	uint64_t map;
	uint16_t t;

	if (!heap_object(obj) || rd64(x, obj, x->l->map, &map) || !heap_object(map) ||
	    rd(x, map - 1 + x->l->map_instance_type, &t, 2))
		return -1;
	return t;
}

#endif
