/*
 * pyproc.h - the Python part of the sampling pipeline: which files are
 * CPython interpreters (found by the symbol loader), which processes the
 * BPF program walks (set up from the sampler thread on a process's first
 * samples), and the merge of a sample's Python frames into its native
 * stack when it is stored.
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
 * (struct symtab.py), read-only once published. */
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

/* The N of the highest GLIBC_2.N version a libc.so file defines (its
 * pthread TSD layout depends on it), or -errno. */
int pyfile__glibc_minor(int fd);

/* How far a process's Python walk got (metrics: Python processes by
 * state). */
enum pyproc_state {
	PYP_UNKNOWN = 0, /* no interpreter seen in its stacks (yet) */
	PYP_WAIT,	 /* an interpreter, not initialised yet (or its libc loading) */
	PYP_WALKED,	 /* BPF walks its threads */
	PYP_UNSUPPORTED, /* a version or build we have no layout row for */
	PYP_LAYOUT,	 /* our row disagrees with the file's own tables */
	PYP_TLS,	 /* a libc whose TLS layout we do not know (musl, another glibc) */
	PYP_FAILED,	 /* BPF map full, or its memory could not be read */
	PYP_MAX,
};

/* Per process (struct proc.py); zero is PYP_UNKNOWN. */
struct pyproc {
	uint8_t state;
	uint8_t tries;
	int64_t next_ns;		/* PYP_UNKNOWN, PYP_WAIT: look again then */
	int64_t seen_ns;		/* its first sample in the interpreter */
	const struct pylayout *l;
	uint64_t eval_lo, eval_hi;	/* _PyEval_EvalFrameDefault, runtime addresses */
	uint64_t cold_lo, cold_hi;	/* its .cold part, if known */
};

struct pyprocs;
struct sampler;
struct procs;
struct proc;
struct frame;

struct pyprocs_stats {
	uint64_t procs[PYP_MAX];	/* processes that reached each state, total */
	uint64_t frames;		/* Python frames stored */
	uint64_t ends[PY_END_MAX];	/* filled by the caller from BPF */
	uint64_t stale, unreadable;	/* frames stored as a marker instead, by why */
	uint64_t name_hits, name_misses, name_errors, name_bytes;
};

/* s and ps are borrowed. NULL with errno on failure. */
struct pyprocs *pyprocs__new(struct sampler *s, struct procs *ps);
void pyprocs__free(struct pyprocs *pp);

/*
 * Looks at a sample's symbolized native frames fr[0..n) of p: the first
 * time one runs in an interpreter file, sets up BPF's walk of p (or
 * records why not). now_ns is the sample's time (CLOCK_MONOTONIC), not
 * the drain's: a busy drain takes a short process's whole life in one
 * gulp, and looks spaced by drain time would all fall on its start-up.
 * May re-read p's maps (procs__refresh): the vma pointers of fr, and of
 * every earlier lookup, are invalid after it; call it last. Sampler
 * thread.
 */
void pyprocs__see(struct pyprocs *pp, struct proc *p, const struct frame *fr, int n,
		  int64_t now_ns);

/*
 * The stack to store: fr[0..n) (leaf first) with each eval-loop frame of
 * p's interpreter replaced by the Python frames ev carries for it, named
 * now. out has room for max frames. Returns the count written to out.
 * Names in out live until the next call. Sampler thread.
 */
int pyprocs__merge(struct pyprocs *pp, struct proc *p, const struct prof_sample_ev *ev,
		   const struct frame *fr, int n, struct frame *out, int max);

/* p exec'd or exited: its code objects are gone. */
void pyprocs__forget(struct pyprocs *pp, pid_t pid);

void pyprocs__stats(struct pyprocs *pp, struct pyprocs_stats *st);

/* "qualname (file)": file is the path below site-packages/,
 * dist-packages/ or the standard library's folder, else its base name.
 * Writes at most cap bytes (NUL included) to out. */
void pyproc__display_name(const char *qualname, const char *path, char *out, size_t cap);

#endif
