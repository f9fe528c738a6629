/*
 * fake_mem.h - another process's memory made of a fuzzer's input, for the
 * readers that take a read callback and its context.
 */
#ifndef PROFFS_TESTS_FUZZ_FAKE_MEM_H
#define PROFFS_TESTS_FUZZ_FAKE_MEM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The len bytes at b, mapped at base; readable up to len rounded up to a
 * multiple of page (1: len itself), the bytes past len reading as 0. */
struct fake_mem {
	const uint8_t *b;
	size_t len;
	uint64_t base;
	size_t page;
};

/* Reads n bytes at addr of the fake_mem ctx into buf: 0, or -EFAULT for
 * any byte outside what is mapped. */
static int fake_mem_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct fake_mem *m = ctx;
	size_t end = (m->len + m->page - 1) / m->page * m->page;

	if (addr < m->base || addr - m->base > end || n > end - (addr - m->base))
		return -EFAULT;
	memset(buf, 0, n);
	if (addr - m->base < m->len)
		memcpy(buf, m->b + (addr - m->base),
		       n < m->len - (addr - m->base) ? n : m->len - (addr - m->base));
	return 0;
}

#endif
