/*
 * hsmem.c - reading another process's memory (see hsmem.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/java/hsmem.h"

int hsmem__pid_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	pid_t pid = *(const pid_t *)ctx;
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EFAULT;
}

#define PAGE 4096u

int hsmem__str(const struct hsmem *m, uint64_t addr, char *buf, size_t cap)
{
	size_t got = 0;

	if (!cap)
		return -EINVAL;
	while (got < cap) {
		/* Up to the page's end (a mapping ends at a page boundary),
		 * at most what is left of buf. */
		uint64_t at = addr + got;
		size_t n = PAGE - (size_t)(at & (PAGE - 1));
		int err;

		if (at < addr)
			return -EFAULT;
		if (n > cap - got)
			n = cap - got;
		if (n > 256 && !got)
			n = 256; /* most strings are short: do not copy a page for them */
		err = hsmem__read(m, at, buf + got, n);
		if (err)
			return err;
		if (memchr(buf + got, 0, n))
			return 0;
		got += n;
	}
	buf[cap - 1] = 0;
	return -ENAMETOOLONG;
}
