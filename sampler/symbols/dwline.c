/*
 * dwline.c - see dwline.h. libdw finds the compilation unit through
 * .debug_aranges; compilers that omit it (clang by default) leave a walk
 * over the units asking each whether it covers the address, which is what
 * dwarf_addrdie cannot do alone. The walk is bounded by the file's units
 * and runs only for addresses aranges does not answer.
 */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "sampler/symbols/dwline.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

struct dwline {
	Dwarf *dw;
	/* libelf's mapping of the file (0: not found): libdw copies Debian's
	 * compressed sections out as it inflates them, after which the pages
	 * it read through the map are held for nothing (dwline__unmap). */
	uintptr_t map_lo, map_hi;
	/* Relative paths joined to their unit's directory, by the pair of
	 * libdw strings they came from (stable while dw lives): pprof -list
	 * then finds the source from any working directory. */
	struct hmap joined;
};

/* file, made absolute with cu's DW_AT_comp_dir when relative; a string
 * d keeps, or file itself. */
static const char *absolute(struct dwline *d, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute a;
	const char *dir;
	uintptr_t k2[2];
	uint64_t k;
	char *p;

	if (file[0] == '/' || !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a))) ||
	    dir[0] != '/')
		return file;
	k2[0] = (uintptr_t)file;
	k2[1] = (uintptr_t)dir;
	k = hash64(k2, sizeof(k2), 0xd1);
	k = k ? k : 1;
	if ((p = hmap__get(&d->joined, k)))
		return p;
	if (asprintf(&p, "%s/%s", dir, file) < 0)
		return file;
	if (hmap__put(&d->joined, k, p)) {
		free(p);
		return file;
	}
	return p;
}

/* What libdw will hold of fd's debug sections: their sizes once
 * decompressed (section headers only; nothing is decompressed here). */
static int debug_bytes(int fd, uint64_t *total)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int err = 0;

	*total = 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENODATA;
	if (elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		err = -ENODATA;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		/* .zdebug_ (GNU's old form) says its size in its own header,
		 * which libdw reads when it decompresses: count it as 4x. */
		if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
			*total += ch.ch_size;
		else
			*total += name[1] == 'z' ? 4 * sh.sh_size : sh.sh_size;
	}
out:
	elf_end(e);
	return err;
}

/* The file's image as libelf mapped it, if it did: libelf reads a file
 * it cannot map into the heap, whose pages must not be given back. */
static void find_map(struct dwline *d, int fd)
{
	Elf *e = dwarf_getelf(d->dw);
	struct stat st;
	uintptr_t lo, hi;
	size_t n = 0;
	char *img = e ? elf_rawfile(e, &n) : NULL;

	if (!img || !n || fstat(fd, &st) ||
	    self_file_map(st.st_dev, st.st_ino, (uintptr_t)img, false, &lo, &hi) ||
	    (uintptr_t)img + n > hi)
		return;
	d->map_lo = lo;
	d->map_hi = hi;
}

struct dwline *dwline__open(int fd, uint64_t max, uint64_t *bytes)
{
	struct dwline *d;
	uint64_t size;

	if (debug_bytes(fd, &size) || !size) {
		errno = ENODATA;
		return NULL;
	}
	if (bytes)
		*bytes = size;
	if (max && size > max) {
		errno = EFBIG;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->dw = dwarf_begin(fd, DWARF_C_READ);
	if (!d->dw) {
		free(d);
		errno = ENODATA;
		return NULL;
	}
	find_map(d, fd);
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
	*file = absolute(d, &cu, f);
	return true;
}

void dwline__unmap(struct dwline *d)
{
	/* A private read-only map of the file: its pages are the page
	 * cache's, and come back at a later read through it. */
	if (d && d->map_lo)
		madvise((void *)d->map_lo, d->map_hi - d->map_lo, MADV_DONTNEED);
}

void dwline__close(struct dwline *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	hmap__drain(&d->joined, hmap__free_val, NULL);
	free(d);
}
