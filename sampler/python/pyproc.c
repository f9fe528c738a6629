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
