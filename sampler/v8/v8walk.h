/*
 * v8walk.h - the user-space twin of the BPF walk's V8 hook
 * (bpf/v8_walk.h): the same reads and decisions in plain C, over a
 * memory reader instead of bpf_probe_read_user. Tests hold it against
 * what V8 itself reports; the pipeline can use it to finish walks BPF
 * handed over (PROF_UE_PENDING).
 */
#ifndef PROFFS_V8WALK_H
#define PROFFS_V8WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/v8.h"
#include "sampler/unwind/twin.h"

/* Reads len bytes of the process at addr into buf: 0 or -errno. */
typedef int (*v8_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Whether look (a frame's pc, minus one for a return address) in mapping
 * m is in the builtins of p (bpf/v8_walk.h's v8_builtins). */
static inline bool v8walk__builtins(const struct v8_proc *p, const struct twin_map *m, uint64_t look)
{
	uint64_t off = look - m->start + m->pgoff;

	return m->ino && m->ino == p->blob_ino && m->kdev == p->blob_dev && look >= m->start &&
	       off >= p->blob_off && off - p->blob_off < p->blob_len;
}

/*
 * The hook for one frame: pc (the frame's pc, a return address unless it
 * is the leaf) lies in V8 code, in the builtins when builtins (else JIT
 * code); fp is the frame's rbp; index its place among the sample's user
 * frames. Returns 1 and fills *out for a JS frame, 0 for
 * another V8 frame (a frame-type marker at fp + fp_context), -EFAULT when
 * a read failed. Whatever it returns, *next_fp and *ra are the caller's
 * rbp and this frame's return address when the frame was read (else 0).
 */
int v8walk__frame(const struct v8_proc *p, uint64_t pc, bool builtins, uint64_t fp, unsigned index,
		  v8_read_fn rd, void *ctx, struct v8_frame *out, uint64_t *next_fp, uint64_t *ra);

/* The outcome of a whole walk. */
struct v8walk_out {
	__u64 pcs[PROF_MAX_FRAMES]; /* native frames, leaf first */
	int npcs;
	int uend;		    /* enum prof_uend */
	struct v8_frame js[V8_MAX_FRAMES];
	int njs;
	int v8end;		    /* enum v8_end */
};

/*
 * The native walk of twin__walk from r (over the stack copy mem and the
 * mappings map() gives), with the hook run on every frame whose pc lies
 * in V8 code (a TWIN_FP mapping, or p's builtins) before it is stepped,
 * as bpf/v8_walk.h does (the maps must fill kdev and ino). Heap objects are read with rd. Fills *o.
 */
void v8walk__walk(const struct v8_proc *p, struct twin_regs *r, const struct twin_mem *mem,
		  twin_map_fn map, void *mctx, v8_read_fn rd, void *rctx, struct v8walk_out *o);

/*
 * The merge rule, for a sample's native frames (npcs, leaf first) and its
 * JS records js[0..njs) (each tied to a native frame by V8_OBJ_INDEX):
 * a native frame with a JS frame tied to it is replaced by that JS frame
 * (the native frame is the builtin or JIT code running it); every other
 * native frame stays where it is (JSEntry, C++ between two JS frames:
 * JSON.parse calling a reviver). out[k] is >= 0 for native frame out[k],
 * or -1 - j for JS record j. Records tied to no frame in range go before
 * the root-side end, as Python's leftovers do. Returns the count (at most
 * max). Pure.
 */
int v8walk__merge(int npcs, const struct v8_frame *js, int njs, int *out, int max);

#endif
