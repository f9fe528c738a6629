/* fuzz_rbfile: ELF files taken for libruby (sampler/ruby/rbfile.c),
 * which any local user can run and so put before the sampler. The input
 * is the file, written to a memfd (the reader's path: a descriptor,
 * libelf mapping it): rbfile__read never crashes, leaks or reads past
 * the file, returns only its documented errors, and what it accepts has
 * a version in range and facts that are either unknown or plausible;
 * the layout check of a file it accepts says why in a NUL-terminated
 * string. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/ruby/rbfile.h"
#include "sampler/ruby/rblayout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_rbfile", MFD_CLOEXEC);
	const struct rblayout *l;
	struct rbfile rf;
	char why[96];
	int err;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	err = rbfile__read(fd, &rf);
	close(fd);
	if (err) {
		if (err != -ENOEXEC && err != -ENOENT && err != -EINVAL && err != -ENOMEM)
			abort();
		return 0;
	}
	if (rf.major < 1 || rf.major > 9 || rf.minor < 0 || rf.minor > 99 || rf.teeny < 0 ||
	    !memchr(rf.build_id, 0, sizeof(rf.build_id)))
		abort();
	if (rf.global_symbols && (rf.symbols_ids <= 0 || rf.symbols_ids > 64))
		abort();
	if ((rf.tls_modid_got == 0) != (rf.tls_dtpoff == 0 && rf.tls_modid_got == 0))
		abort();
	l = rblayout__get(3, 1);
	memset(why, 'x', sizeof(why));
	err = rblayout__check(l, &rf, why, sizeof(why));
	if ((err && err != -EPROTO) || !memchr(why, 0, sizeof(why)))
		abort();
	return 0;
}
