/* fuzz_elfsym: the ELF reader (files any local user can map executable)
 * never crashes, leaks or reads past the file, both from memory and from a
 * file descriptor (the daemon's path: libelf maps the file); what it
 * returns stays within its caps and its strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/symbols/elfsym.h"

static void check(const struct elf_info *e)
{
	if (e->nsyms > ELFSYM_MAX_SYMS || e->strs_len > ELFSYM_MAX_STRS)
		abort();
	for (size_t i = 0; i < e->nsyms; i++) {
		const struct elf_sym *s = &e->syms[i];

		if (s->name >= e->strs_len || !memchr(e->strs + s->name, 0, e->strs_len - s->name))
			abort();
		if (i && e->syms[i - 1].addr > s->addr)
			abort(); /* lookups need them sorted */
		elfsym__lookup(e, s->addr);
		elfsym__lookup(e, s->addr + s->size);
	}
	for (size_t i = 0; i < e->nloads; i++) {
		uint64_t v;

		elfsym__off_to_vaddr(e, e->loads[i].off, &v);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_info e;
	void *copy;
	int fd;

	/* libelf may convert an image in place: give it its own copy. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (!elfsym__read_mem(copy, size, &e)) {
		check(&e);
		elfsym__fini(&e);
	}
	free(copy);

	fd = memfd_create("fuzz_elfsym", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		if (!elfsym__read(fd, false, &e))
			elfsym__fini(&e);
		if (!elfsym__read(fd, true, &e)) {
			check(&e);
			if (!elfsym__read_debug(fd, &e))
				check(&e);
			elfsym__fini(&e);
		}
	}
	close(fd);
	return 0;
}
