/*
 * debugfile.c - see debugfile.h. All parsing is elfsym's (libelf, with
 * its bounds on tables and names, fuzzed in fuzz_elfsym); this adds the
 * identity rule: a file names a build id's code only when it says it is
 * of that build id, so a wrong or corrupt answer from a server names
 * nothing rather than everything wrongly.
 */
#include <errno.h>
#include <string.h>

#include "sampler/symbols/debugfile.h"

static int check(int err, const char *bid, struct elf_info *e)
{
	if (!err && strcmp(e->build_id, bid))
		err = -ESTALE;
	else if (!err && (!e->has_symtab || !e->nsyms))
		err = -ENODATA;
	if (err)
		elfsym__fini(e);
	return err;
}

int debugfile__read(int fd, const char *bid, struct elf_info *e)
{
	memset(e, 0, sizeof(*e));
	return check(elfsym__read(fd, true, e), bid, e);
}

int debugfile__read_mem(const void *image, size_t size, const char *bid, struct elf_info *e)
{
	memset(e, 0, sizeof(*e));
	return check(elfsym__read_mem(image, size, e), bid, e);
}
