/*
 * dwline.c - see dwline.h. libdw finds the compilation unit through
 * .debug_aranges; compilers that omit it (clang by default) leave a walk
 * over the units asking each whether it covers the address, which is what
 * dwarf_addrdie cannot do alone. The walk is bounded by the file's units
 * and runs only for addresses aranges does not answer.
 */
#include <errno.h>
#include <stdlib.h>

#include <elfutils/libdw.h>

#include "sampler/symbols/dwline.h"

struct dwline {
	Dwarf *dw;
};

struct dwline *dwline__open(int fd)
{
	struct dwline *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->dw = dwarf_begin(fd, DWARF_C_READ);
	if (!d->dw) {
		free(d);
		errno = ENODATA;
		return NULL;
	}
	return d;
}

/* The unit covering vaddr without aranges: each unit's own ranges. */
static bool cu_walk(Dwarf *dw, uint64_t vaddr, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	unsigned n = 0;

	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0 && n++ < (1u << 20)) {
		if (dwarf_offdie(dw, off + hsize, cu) && dwarf_haspc(cu, vaddr) == 1)
			return true;
		off = next;
	}
	return false;
}

bool dwline__lookup(struct dwline *d, uint64_t vaddr, const char **file, int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *f;

	if (!d || !d->dw)
		return false;
	if (!dwarf_addrdie(d->dw, vaddr, &cu) && !cu_walk(d->dw, vaddr, &cu))
		return false;
	l = dwarf_getsrc_die(&cu, vaddr);
	if (!l || dwarf_lineno(l, line) || *line <= 0)
		return false;
	f = dwarf_linesrc(l, NULL, NULL);
	if (!f || !*f)
		return false;
	*file = f;
	return true;
}

void dwline__close(struct dwline *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	free(d);
}
