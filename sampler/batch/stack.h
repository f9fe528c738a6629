/*
 * stack.h - one sample's frames, symbolized: kernel frames through
 * kallsyms, user frames through the process's mappings, dsos and perf map.
 */
#ifndef PROFFS_STACK_H
#define PROFFS_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/profile.h"
#include "sampler/proc/procinfo.h"
#include "sampler/symbols/symbolize.h"

struct frame {
	uint64_t addr;    /* as sampled (a return address except the leaf) */
	const char *name; /* function, or NULL when unresolved */
	bool kernel;
	bool marker;      /* not a frame: stands for frames lost (truncation) */
	bool jit;         /* name came from the process's perf map */
	struct vma *vma;  /* user frames: the mapping, or NULL (unmapped) */
	uint64_t off;     /* file offset of addr within vma's file */
	/* A runtime's frame (Python, Ruby; addr: the object it names): name
	 * is its display name, "qualname (file)", "label (file.rb)" */
	bool rt;
	const char *sysname;  /* the function's own name (qualname, label) */
	const char *file;     /* full path */
	int32_t line, start_line;
};

/* Frames of one stored stack at most: both native stacks, their
 * markers, and the runtime frames that replace anchor frames. */
#define STACK_MAX_FRAMES (2 * PROF_MAX_FRAMES + RT_MAX_FRAMES + 4)

/* The name of the marker frame that stands for the frames lost when a
 * stack hit the kernel's depth cap (kernel.perf_event_max_stack). */
#define STACK_TRUNCATED "[truncated]"

/* The marker frame that ends a user stack whose walk ended this way
 * (enum prof_uend), or NULL when it ended at a root. Static strings. */
const char *stack__uend_marker(unsigned uend);

/* Fills out[] leaf first: kernel frames, then user frames. Strings point
 * into the symbolizer/procs caches and stay valid until the next call
 * that may reload them (use them at once). Returns the frame count. */
int stack__symbolize(struct procs *ps, struct symbolizer *sym, struct proc *p,
		     const struct prof_sample_ev *ev, struct frame *out, int max);


#endif
