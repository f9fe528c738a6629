/*
 * pyproc.h - CPython files as the pipeline sees them (found by the
 * symbol loader: sampler/runtime/runtime.h), and how a Python frame is
 * named. The runtime itself (set-up, merge) is pyrt.c's.
 */
#ifndef PROFFS_PYPROC_H
#define PROFFS_PYPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/profile.h"
#include "sampler/python/interp.h"
#include "sampler/python/layout.h"

struct elf_info;

/* An interpreter file as the loader found it; held by its symbol table
 * (struct symtab.rt's data), read-only once published. */
struct pyfile {
	int status;			/* 0; -EOPNOTSUPP: no row for it; -EPROTO: check failed */
	struct pyinterp pi;
	const struct pylayout *l;	/* NULL unless status is 0 */
	uint64_t cold, cold_size;	/* _PyEval_EvalFrameDefault.cold (link-time), 0 if unknown */
	char why[160];			/* why status is not 0 */
};

/*
 * Is the ELF file at fd (symbols e, from elfsym__read) a CPython
 * interpreter? Returns a pyfile the caller owns (free()), status telling
 * whether we can walk it, or NULL: not an interpreter (errno ENOENT) or
 * out of memory. PROFFS_PY_WITHHOLD=3.N in the environment makes 3.N
 * unknown (tests of an unknown layout).
 */
struct pyfile *pyfile__detect(int fd, const char *path, const struct elf_info *e);


/* "qualname (file)": file is the path below site-packages/,
 * dist-packages/ or the standard library's folder, else its base name.
 * Writes at most cap bytes (NUL included) to out. */
void pyproc__display_name(const char *qualname, const char *path, char *out, size_t cap);

#endif
