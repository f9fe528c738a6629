/*
 * twin.h - the user-space twin of the BPF walk (bpf/unwind_walk.h): the
 * same rows, rules and steps, reading a copied stack instead of live
 * memory. It finishes walks BPF left as PROF_UE_PENDING, and it is what
 * the oracle test holds against libdw's own unwinder.
 */
#ifndef PROFFS_SAMPLER_UNWIND_TWIN_H
#define PROFFS_SAMPLER_UNWIND_TWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/profile.h"

/* How to unwind through the mapping holding an address. */
enum twin_kind {
	TWIN_TABLE,   /* rows + rules */
	TWIN_FP,      /* frame pointers (no unwind info, JIT) */
	TWIN_WAIT,    /* the file's table is being built: try again later */
	TWIN_NOTABLE, /* the file's table cannot be built */
};

struct twin_map {
	uint64_t start, end, pgoff; /* pgoff in bytes */
	enum twin_kind kind;
	const struct unw_row *rows;   /* TWIN_TABLE: the file's rows */
	size_t nrows;
	const struct unw_rule *rules; /* indexed by unw_row.rule */
	size_t nrules;
	uint64_t kdev, ino; /* the mapped file (the kernel's dev encoding); 0, 0: none */
};

/* Fills *m for the executable mapping holding addr; returns 0, or -1 when
 * no executable mapping holds it. The pointers must stay valid until the
 * walk returns. */
typedef int (*twin_map_fn)(void *ctx, uint64_t addr, struct twin_map *m);

struct twin_regs {
	uint64_t pc, sp, bp;
	bool bp_ok, exact; /* exact: pc is not a return address */
	bool stored;       /* pc is already in the output (a BPF walk handed over) */
};

/* A copy of user memory [base, base + len). */
struct twin_mem {
	uint64_t base;
	const uint8_t *buf;
	size_t len;
	bool capped; /* the copy stopped at its size cap, not at the stack's end */
};

/*
 * Walks from r: stores r->pc unless r->stored, steps to the caller, and
 * so on. Frames go to out[*n...] up to max. Returns the end (enum
 * prof_uend; PROF_UE_PENDING means a file's table is not ready: r and *n
 * hold where to resume). Never reads outside mem.
 */
int twin__walk(struct twin_regs *r, const struct twin_mem *mem, twin_map_fn map, void *ctx,
	       __u64 *out, int *n, int max);

/*
 * A runtime's own step (a JVM's code cache, V8's frames), run on each
 * frame after its pc is stored and before the native step, as the BPF
 * walk runs it: index is the frame's place among the sample's user
 * frames (out[index] is its pc), m its mapping. Returns 0: the native
 * step follows (the hook recorded the frame, or it is not the hook's);
 * TWIN_HOOK_STEPPED: the hook stepped r to the caller itself; or
 * -PROF_UE_*: the walk ends so.
 */
#define TWIN_HOOK_STEPPED 1
typedef int (*twin_hook_fn)(void *hctx, struct twin_regs *r, const struct twin_mem *mem,
			    const struct twin_map *m, int index);

/* twin__walk with hook (NULL: none) run on every frame. */
int twin__walk_hooked(struct twin_regs *r, const struct twin_mem *mem, twin_map_fn map, void *ctx,
		      twin_hook_fn hook, void *hctx, __u64 *out, int *n, int max);

#endif
