/*
 * runtime.h - the language runtimes of the sampling pipeline (CPython,
 * CRuby): one pipeline, each runtime plugged into it (rt_int.h).
 *
 * The pipeline, the same for every runtime:
 *  - detection per ELF file, by its symbols, when the symbol loader reads
 *    the file anyway (rtfile__detect): an interpreter we can walk, or one
 *    whose version we have no layout for (counted, never guessed);
 *  - set-up per process, as early as it can be: from the maps read at
 *    exec and 10 ms later (a short script's first samples), then from
 *    samples that show the interpreter's code (a process started before
 *    the daemon, an interpreter loaded with dlopen); an interpreter not
 *    initialised yet is looked at again on a timer, not only when its
 *    next sample is drained;
 *  - BPF walks the sampled thread's own frames after the native ones
 *    (bpf/runtime_walk.h), each frame with a stamp of the object it names;
 *  - user space names them with process_vm_readv (the runtime's cache,
 *    checked by the stamp) and puts them where the runtime's anchor frame
 *    (the eval loop, rb_vm_exec) is in the native stack;
 *  - each runtime's /prof/metrics lines: processes by state, walks by how
 *    they ended, frames, frames stored as a marker, its name cache.
 */
#ifndef PROFFS_RUNTIME_H
#define PROFFS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/profile.h"
#include "bpf/runtime.h"

struct elf_info;
struct symtab;
struct sampler;
struct procs;
struct proc;
struct frame;
struct buf;
struct twin_regs;
struct twin_mem;
struct twin_map;


/* An interpreter file as the symbol loader found it (struct symtab.rt);
 * read-only once published. */
struct rtfile {
	uint8_t kind;	/* enum rt_kind */
	int status;	/* 0: walkable; -EOPNOTSUPP: no layout for its version;
			 * -EPROTO: the layout's check failed */
	char why[160];	/* why status is not 0 */
	void *data;	/* the runtime's own (struct pyfile, struct rbinfo) */
};

/*
 * Is the ELF file at fd (path for messages, symbols e from elfsym__read)
 * an interpreter of a runtime we know? Returns an rtfile the caller owns
 * (rtfile__free), or NULL: no runtime's (errno ENOENT) or out of memory.
 * Called by the symbol loader's thread.
 */
struct rtfile *rtfile__detect(int fd, const char *path, const struct elf_info *e);
void rtfile__free(struct rtfile *f);

#include "sampler/proc/rtproc.h" /* struct rtproc, kept in struct proc */


struct runtimes;

/* s and ps are borrowed. NULL with errno on failure. */
struct runtimes *runtimes__new(struct sampler *s, struct procs *ps);
void runtimes__free(struct runtimes *rts);

/*
 * p's maps were read (at exec, or the read 10 ms later): a file of an
 * interpreter among them sets its walk up now, before its samples are
 * drained. now_ns: CLOCK_MONOTONIC. May re-read p's maps: earlier vma
 * pointers of p are invalid after it. Sampler thread.
 */
void runtimes__maps(struct runtimes *rts, struct proc *p, int64_t now_ns);

/*
 * p's anonymous code was walked by frame pointers in user space with maps
 * read after the sample, and p runs no runtime BPF walks: BPF may walk
 * its anonymous code itself from now on (RT_NATIVE_JIT). Once per
 * process image. Sampler thread.
 */
void runtimes__mark_native(struct runtimes *rts, struct proc *p);

/*
 * Looks at a sample's symbolized native frames fr[0..n) of p: the first
 * time one runs in an interpreter file, sets up BPF's walk of p (or
 * records why not). now_ns is the sample's time (CLOCK_MONOTONIC), not
 * the drain's. May re-read p's maps (vma pointers invalid after it):
 * call it last. Sampler thread.
 */
void runtimes__see(struct runtimes *rts, struct proc *p, const struct frame *fr, int n,
		   int64_t now_ns);

/* Set-ups waiting for an interpreter to initialise that are due by now_ns
 * are tried again; returns the milliseconds until the next one, or -1.
 * Sampler thread (the poll loop's timer). */
int runtimes__due(struct runtimes *rts, int64_t now_ns);

/* Would runtimes__see look at a sample of p taken at now_ns? (A caller
 * that skips the frames of a sample it has seen before must not skip
 * this look.) */
bool runtimes__wants_look(const struct runtimes *rts, const struct proc *p, int64_t now_ns);

/* What one merge named: frames of runtime kind, and whether a later
 * merge of the same record could name it otherwise (an object unreadable
 * or freed, code not found yet): then its result is not to be reused. */
struct rt_merged {
	uint8_t kind;
	bool unsure;
	uint32_t frames;
};

/*
 * The stack to store: fr[0..n) (leaf first) with ev's runtime frames,
 * named now, in place of the runtime's anchor frames. out has room for
 * max frames; returns the count written and fills *m. Names in out live
 * until the next call. Sampler thread.
 */
int runtimes__merge(struct runtimes *rts, struct proc *p, const struct prof_sample_ev *ev,
		    const struct frame *fr, int n, struct frame *out, int max, struct rt_merged *m);

/* Counts m's frames as a merge would have (a caller that reused a
 * merge's result instead of merging again). */
void runtimes__count(struct runtimes *rts, const struct rt_merged *m);

/*
 * The pending walk (sampler/unwind/pending.c) of a sample of p meets the
 * frame at r (index: its place among the user frames; m: the mapping
 * holding its pc; mem: the stack the sample copied): the step BPF would have
 * taken there for p's runtime. Returns 0: not the runtime's frame, the
 * native step follows; 1: rec holds the frame's record (bpf/hotspot.h,
 * bpf/v8.h) and the native step follows; 2: rec holds it and r was
 * stepped to the caller; -PROF_UE_*: the walk ends so. Sampler thread.
 */
int runtimes__twin_step(struct runtimes *rts, struct proc *p, struct twin_regs *r,
			const struct twin_mem *mem, const struct twin_map *m, int index, uint64_t rec[2]);

/* p exec'd or exited: its objects are gone. */
void runtimes__forget(struct runtimes *rts, pid_t pid);

/* Takes a snapshot of the counters for runtimes__metrics (about once a
 * second). Sampler thread. */
void runtimes__update(struct runtimes *rts);

/* Appends every runtime's /prof/metrics lines (Prometheus text) from the
 * last snapshot. Any thread; rts may be NULL (nothing). */
void runtimes__metrics(struct runtimes *rts, struct buf *out);

/* Samples whose stored stack holds frames of a runtime, all runtimes:
 * for the tests' figures. */
uint64_t runtimes__frames(struct runtimes *rts);

#endif
