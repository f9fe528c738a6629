/* fuzz_debugfile: what a debuginfod server sends is any bytes at all.
 * The check that makes them a build id's debug file (debugfile.h) and
 * the DWARF line lookups over a file that passed it (dwline.h: libdw
 * parses, we bound and walk its units) never crash, leak or read past
 * the file; a file is accepted only under the build id it states, and
 * every line found has a file and a positive number. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/symbols/debugfile.h"
#include "sampler/symbols/dwline.h"

static void lines(int fd, const struct elf_info *e)
{
	struct dwline *d = dwline__open(fd, DWLINE_MAX_BYTES, NULL);
	const char *file;
	int line;

	if (!d)
		return;
	for (size_t i = 0; i < e->nsyms && i < 64; i++)
		for (uint64_t a = e->syms[i].addr; a <= e->syms[i].addr + 1; a++)
			if (dwline__lookup(d, a, &file, &line) && (!file[0] || line <= 0))
				abort();
	dwline__lookup(d, 0, &file, &line);
	dwline__lookup(d, UINT64_MAX, &file, &line);
	dwline__close(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_info hdr, e;
	int fd = memfd_create("fuzz_debugfile", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || elfsym__read(fd, false, &hdr)) {
		close(fd);
		return 0;
	}
	/* As the fetcher asks: under the build id the file states (the
	 * deepest path), and under another, which must be refused. */
	if (!debugfile__read(fd, hdr.build_id, &e)) {
		if (!e.has_symtab || !e.nsyms || strcmp(e.build_id, hdr.build_id))
			abort();
		lines(fd, &e);
		elfsym__fini(&e);
	}
	if (!debugfile__read(fd, "00", &e)) {
		if (strcmp(e.build_id, "00"))
			abort();
		elfsym__fini(&e);
	} else if (e.syms || e.strs || e.loads) {
		abort(); /* refused: nothing held */
	}
	elfsym__fini(&hdr);
	close(fd);
	return 0;
}
