/*
 * hsmem.h - how sampler/java/ reads another process's memory: a read
 * function and its context, so that the readers of JVM structures run
 * against a live process (process_vm_readv) in the sampler and against
 * forged bytes in tests and fuzzers.
 */
#ifndef PROFFS_JAVA_HSMEM_H
#define PROFFS_JAVA_HSMEM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hsmem {
	/* Reads all n bytes at addr into buf: 0, or -errno (-EFAULT when
	 * any of them is not mapped, -ESRCH when the process is gone). */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t n);
	void *ctx;
};

static inline int hsmem__read(const struct hsmem *m, uint64_t addr, void *buf, size_t n)
{
	if (addr + n < addr)
		return -EFAULT;
	return n ? m->read(m->ctx, addr, buf, n) : 0;
}

/* The read function of a live process: ctx points to its pid_t. */
int hsmem__pid_read(void *ctx, uint64_t addr, void *buf, size_t n);

/* Reads a NUL-terminated string at addr of at most cap - 1 bytes into
 * buf (the caller's): 0; -ENAMETOOLONG when no NUL comes within cap
 * bytes; the read's -errno. Reads in pieces that never cross a page a
 * shorter string does not reach. */
int hsmem__str(const struct hsmem *m, uint64_t addr, char *buf, size_t cap);

#endif
