/*
 * pyproc.c - what the pipeline needs to know of a CPython file (is it an
 * interpreter, which layout, its libc's version) and how a Python
 * frame's file is shown. The set-up of a process and the merge are in
 * pyrt.c (the runtime the pipeline of sampler/runtime/ drives).
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/python/pyproc.h"
#include "sampler/symbols/elfsym.h"
#include "store/util/util.h"

struct pyfile *pyfile__detect(int fd, const char *path, const struct elf_info *e)
{
	const char *b = strrchr(path, '/'), *env = getenv("PROFFS_PY_WITHHOLD");
	const struct elf_sym *cold;
	struct pyfile *pf;
	char v[16];
	int err;

	/* Cheap first: only a file with the eval loop among its functions
	 * (_PyEval_EvalFrameDefault from 3.6, PyEval_EvalFrameEx before and
	 * beside it: 2.7 has only that one). */
	if (!elfsym__find(e, "_PyEval_EvalFrameDefault") && !elfsym__find(e, "PyEval_EvalFrameEx")) {
		errno = ENOENT;
		return NULL;
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	err = pyinterp__read(fd, b ? b + 1 : path, &pf->pi);
	/* An interpreter without what 3.7 on have (_PyRuntime, PyCode_Type
	 * in reach): one we do not know, counted as such, each process. */
	if (err == -ENOENT && elfsym__find(e, "Py_Initialize"))
		err = -EOPNOTSUPP;
	if (err == -ENOENT || err == -ENOEXEC || err == -ENOMEM) {
		free(pf);
		errno = -err;
		return NULL;
	}
	cold = elfsym__find(e, "_PyEval_EvalFrameDefault.cold");
	if (cold) {
		pf->cold = cold->addr;
		pf->cold_size = cold->size;
	}
	snprintf(v, sizeof(v), "3.%d", pf->pi.minor);
	if (err) {
		pf->status = err == -EOPNOTSUPP ? -EOPNOTSUPP : -EPROTO;
		snprintf(pf->why, sizeof(pf->why), "%s: %s", path, strerror(-err));
	} else if (env && !strcmp(env, v)) {
		pf->status = -EOPNOTSUPP;
		snprintf(pf->why, sizeof(pf->why), "%s: 3.%d withheld (PROFFS_PY_WITHHOLD)", path,
			 pf->pi.minor);
	} else if (!pf->pi.eval_frame) {
		pf->status = -EOPNOTSUPP;
		snprintf(pf->why, sizeof(pf->why), "%s: no _PyEval_EvalFrameDefault symbol", path);
	} else if (!(pf->l = pylayout__get(pf->pi.minor))) {
		pf->status = -EOPNOTSUPP;
		snprintf(pf->why, sizeof(pf->why), "%s: no layout for 3.%d", path, pf->pi.minor);
	} else if ((err = pylayout__check(pf->l, fd, &pf->pi, pf->why, sizeof(pf->why)))) {
		pf->status = -EPROTO;
		pf->l = NULL;
		if (!pf->why[0])
			snprintf(pf->why, sizeof(pf->why), "%s: %s", path, strerror(-err));
	}
	if (pf->status)
		pr_debug("python: %s", pf->why);
	return pf;
}

int pyfile__glibc_minor(int fd)
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

void pyproc__display_name(const char *qualname, const char *path, char *out, size_t cap)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/" };
	const char *f = NULL, *s;

	for (size_t i = 0; i < 2 && !f; i++)
		if ((s = strstr(path, roots[i])))
			f = s + strlen(roots[i]);
	/* The standard library: .../lib/python3.N/ */
	for (s = path; !f && (s = strstr(s, "/lib/python")); s++) {
		const char *d = s + strlen("/lib/python");

		while ((*d >= '0' && *d <= '9') || *d == '.')
			d++;
		if (*d == '/' && d > s + strlen("/lib/python"))
			f = d + 1;
	}
	if (!f) {
		s = strrchr(path, '/');
		f = s ? s + 1 : path;
	}
	snprintf(out, cap, "%s (%s)", qualname, *f ? f : path);
}
