/*
 * hswalk.h - the user-space twin of the BPF HotSpot step
 * (bpf/hotspot_walk.h): the same rules over the same per-process set-up
 * (struct hs_proc), reading memory through an hsmem instead of
 * bpf_probe_read_user. Tests run it over a thread stopped with ptrace as
 * the oracle for the BPF program's records, and it documents the rules
 * in plain C. Keep the two in step.
 *
 * The rules (x86-64). A pc in the code cache is:
 *  - in the interpreter's code (its range is known): an interpreter
 *    frame, framed by rbp; Method* at rbp-24, bcp at rbp-64 (r13 holds
 *    the live bcp in the leaf), the caller's sp at rbp-8, its rbp at rbp,
 *    the return address at rbp+8; a leaf in a method entry whose frame
 *    has no Method* yet is read from rsp, rax, rbx and r13 instead
 *    (hswalk.c's entry());
 *  - else in a CodeBlob, found through its heap's segment map (hop back
 *    by the map's bytes to the block's first segment; the blob follows
 *    the block's header). An nmethod or a stub with a frame size: the
 *    caller's sp is sp + frame size, the return address and rbp are the
 *    two words below it (HotSpot saves rbp in every compiled frame); a
 *    return address not in the code cache is searched for up to
 *    HS_RA_SEARCH words further up (C1 pushes stub arguments the frame
 *    size does not count). A stub without a frame size is framed by rbp
 *    (the call stub, StubRoutines), or has pushed nothing (vtable stubs).
 *  - In the leaf only, the instruction at the pc tells whether the frame
 *    is still being built (before frame_complete: push rbp, sub rsp,
 *    the stack bang; before the verified entry, nothing pushed) or torn
 *    down (pop rbp, the return poll, ret, leave).
 *  - A non-leaf nmethod frame returning to its deopt handler was
 *    deoptimized: its original pc is saved in its frame at sp +
 *    orig_pc_offset, and that pc names it.
 */
#ifndef PROFFS_JAVA_HSWALK_H
#define PROFFS_JAVA_HSWALK_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/hotspot.h"
#include "sampler/java/hsmem.h"

/*
 * One HotSpot frame at r->pc: writes its record (bpf/hotspot.h) into
 * rec[0..1] with `index` as its native frame index and steps r to the
 * caller. leaf: r->pc is where the thread was interrupted (and r->r13
 * its r13), not a return address. Returns HS_E_OK, or the enum hs_end
 * that stopped it (r and rec unchanged then).
 */
int hswalk__step(const struct hsmem *m, const struct hs_proc *c, struct hs_regs *r, bool leaf,
		 uint32_t index, uint64_t rec[2]);

/* How a leaf's frame stands, from the instruction at its pc. */
enum {
	HSWALK_FULL,	  /* built: the frame size rule */
	HSWALK_FULL_BP,	  /* built, but rbp not saved yet (it still is the caller's) */
	HSWALK_NOTHING,	  /* nothing pushed: the return address at sp */
	HSWALK_BP_PUSHED, /* rbp pushed: the return address at sp + 8 */
	HSWALK_RBP_FRAME, /* framed by rbp: leave; ret */
};

/* The state of a leaf frame from the 16 bytes of code [pc - 8, pc + 8)
 * in b (b + 8 is the pc); prologue: the pc is before the blob's
 * frame_complete_offset. Pure. */
int hswalk__leaf_state(const uint8_t *b, bool prologue);

/* Is addr in c's code cache (a pc the step is for)? */
static inline bool hswalk__owns(const struct hs_proc *c, uint64_t addr)
{
	return addr >= c->code_lo && addr < c->code_hi;
}

#endif
