/* fuzz_pyinterp: ELF files taken for CPython interpreters
 * (sampler/python/interp.c), which any local user can run and so put
 * before the sampler. The input is the file, written to a memfd (the
 * reader's path: a descriptor, libelf mapping it): pyinterp__read, then
 * for a file it accepts PyCode_Type's member table, the 3.13 debug
 * offsets and the layout check never crash, leak or read past the file,
 * return only their documented errors and fill no more than asked. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/python/interp.h"
#include "sampler/python/layout.h"

static bool documented(int err)
{
	return !err || err == -EINVAL || err == -ENOEXEC || err == -ENOMEM || err == -EOPNOTSUPP;
}

static void members(int fd, const struct pyinterp *pi)
{
	struct pymember m[PYINTERP_MAX_MEMBERS];
	uint64_t basic = 0, w[48];
	size_t n = 99;
	int err;

	err = pyinterp__code_members(fd, pi, m, PYINTERP_MAX_MEMBERS, &n, &basic);
	if (!documented(err) || n > PYINTERP_MAX_MEMBERS)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!memchr(m[i].name, 0, sizeof(m[i].name)))
			abort();
	/* A smaller table than the file's: refused, never overrun. */
	err = pyinterp__code_members(fd, pi, m, 2, &n, &basic);
	if (!documented(err) || n > 2)
		abort();
	err = pyinterp__debug_offsets(fd, pi, w, sizeof(w) / sizeof(w[0]));
	if (!documented(err) && err != -ENOENT)
		abort();
	if (!pi->debug_offsets && err != -ENOENT)
		abort();
}

static void check(int fd, const char *name)
{
	const struct pylayout *l;
	struct pyinterp pi;
	char why[128];
	int err;

	err = pyinterp__read(fd, name, &pi);
	if (err == -ENOEXEC || err == -ENOENT || err == -EOPNOTSUPP || err == -EINVAL ||
	    err == -ENOMEM)
		return;
	if (err || pi.major != 3 || pi.minor < 10 || pi.minor > 13 || !memchr(pi.build_id, 0, 41))
		abort();
	members(fd, &pi);
	l = pylayout__get(pi.minor);
	if (!l)
		abort();
	err = pylayout__check(l, fd, &pi, why, sizeof(why));
	if (err && !memchr(why, 0, sizeof(why)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_pyinterp", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		/* With no name a file without Py_Version has no version; with
		 * one it is 3.10's. */
		check(fd, NULL);
		check(fd, "libpython3.10.so.1.0");
	}
	close(fd);
	return 0;
}
