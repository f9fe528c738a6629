/*
 * glibc.c - a C library's version, read from its version definitions
 * (glibc.h).
 */
#include <errno.h>
#include <stdio.h>

#include <gelf.h>
#include <libelf.h>

#include "sampler/symbols/glibc.h"

int glibc__minor(int fd)
{
	Elf_Scn *scn = NULL;
	int best = -ENOENT;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t off = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_GNU_verdef)
			continue;
		d = elf_getdata(scn, NULL);
		/* sh_info: the number of definitions; each is bounded by the
		 * section's data (libelf checks vd_next and vda offsets). */
		for (unsigned i = 0; d && i < sh.sh_info && i < 4096; i++) {
			GElf_Verdef vd;
			GElf_Verdaux va;
			const char *name;
			int maj, min;

			if (!gelf_getverdef(d, (int)off, &vd) ||
			    !gelf_getverdaux(d, (int)(off + vd.vd_aux), &va))
				break;
			name = elf_strptr(elf, sh.sh_link, va.vda_name);
			if (name && sscanf(name, "GLIBC_%d.%d", &maj, &min) == 2 && maj == 2 &&
			    min > best)
				best = min;
			if (!vd.vd_next)
				break;
			off += vd.vd_next;
		}
	}
	elf_end(elf);
	return best;
}
