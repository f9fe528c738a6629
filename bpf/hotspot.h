/*
 * hotspot.h - what a BPF walk needs to step through the Java frames of a
 * HotSpot JVM (x86-64), and what it writes for each, shared with
 * sampler/java/. Compiles in BPF and in user space (no libc types).
 *
 * User space fills one struct hs_proc per JVM process (tgid) from the
 * JVM's own introspection tables (sampler/java/hsvm.c): where its code
 * cache is, how to find the CodeBlob that holds a pc (each code heap's
 * segment map), where the fields of a CodeBlob and an nmethod are, and
 * which pcs are the interpreter's. The native walk hands every pc inside
 * [code_lo, code_hi) to the HotSpot step (bpf/hotspot_walk.h), which
 * unwinds that frame and writes one record (two __u64 slots) naming it:
 *
 *   slot 0: bits 0..47  the object: Method* (interpreted), nmethod
 *                       (compiled), CodeBlob (stub)
 *           bits 48..51 its kind (enum hs_kind)
 *           bits 52..55 HS_R_* flags
 *           bits 56..63 the index of the native frame it names: the
 *                       position among the sample's user frames (0: the
 *                       leaf) of the frame slot that holds its pc
 *   slot 1: bits 0..31  bci (interpreted; HS_BCI_NONE if unknown) or the
 *                       pc's offset from the blob's code begin (compiled,
 *                       stub; for a deoptimized frame its original pc's)
 *           bits 32..63 the stamp: ConstMethod* >> 3 (interpreted),
 *                       the compile id (compiled), each folded with the
 *                       unload epoch (hs_stamp); the low half of the name
 *                       pointer (stub)
 *
 * No strings are read in BPF: user space names the object later and the
 * stamp tells whether the object at that address is still the one that
 * was sampled (a freed and reused nmethod has another compile id).
 *
 * A Method has no id of its own: a class unloaded and another of the same
 * shape loaded lays its Methods and ConstMethods out where the old ones
 * were (tests/helpers/java/Unload does it in a few lines), and a freed
 * nmethod's memory still shows its compile id until it is reused, with
 * its Methods' addresses, now the newcomer's. So the stamps of Java
 * frames also hold the JVM's unload epoch, a counter that moves whenever
 * classes may have been unloaded (hs_proc.epoch_addr), read once a
 * sample: a frame sampled before an unload and named after it has
 * another stamp than the object there now and shows as freed, and what
 * user space read in one epoch names only that epoch's samples.
 */
#ifndef PROFFS_BPF_HOTSPOT_H
#define PROFFS_BPF_HOTSPOT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* JVM processes the BPF map holds at most. */
#define HS_MAX_PROCS 1024
/* Code heaps of one JVM (HotSpot has 1 or 3). */
#define HS_MAX_HEAPS 4
/* Records one sample carries at most (a power of 2). The walk goes on
 * past them: deeper Java frames keep their native slot (a pc) without a
 * record, counted as HS_E_TRUNC. */
#define HS_MAX_FRAMES 64
/* Bytes of a CodeBlob read at once: every field hs_proc names lies in
 * them (JDK 17's nmethod needs 308, 25's 216). */
#define HS_BLOB_READ 320
/* Hops back through a segment map to a block's start (each hop is at
 * most 254 segments: 32 KiB of code with 128-byte segments). */
#define HS_SEGMAP_HOPS 16
/* Words above a compiled frame's computed end searched for its return
 * address (pushes the frame size does not count: C1 stub arguments). */
#define HS_RA_SEARCH 6
/* An interpreter frame's rbp must lie this close above its sp. */
#define HS_INTERP_MAX_FRAME (256u << 10)
/* A compiled or stub frame's size at most (bytes). */
#define HS_MAX_FRAME_SIZE (1u << 20)

struct hs_heap {
	__u64 lo, hi;	/* the heap's reserved code range */
	__u64 segmap;	/* its segment map: one byte per segment of [lo, hi) */
};

/* hs_proc.flags */
#define HS_P_CODE_OFFSETS 1u /* code begin/end and the deopt handler are int
			      * offsets from the blob (JDK 23+), not pointers */
#define HS_P_KIND 2u	     /* a blob's kind is its CodeBlob::_kind byte (JDK 23+);
			      * else the first 8 bytes of its name tell */
#define HS_P_FC16 4u	     /* _frame_complete_offset is an int16 (JDK 23+) */

/* Per process (BPF map hs_procs, key: tgid). Offsets are bytes into the
 * blob's first blob_read bytes; -1 where the JVM has no such field. */
struct hs_proc {
	__u64 code_lo, code_hi;	    /* CodeCache::_low_bound, _high_bound */
	__u64 interp_lo, interp_hi; /* the template interpreter's code */
	__u64 call_stub_ra;	    /* StubRoutines::_call_stub_return_address */
	struct hs_heap heaps[HS_MAX_HEAPS];
	__u32 nheaps;
	__u32 flags;		    /* HS_P_* */
	__u8 seg_shift;		    /* log2 of the segment size (every heap's) */
	__u8 block_hdr;		    /* sizeof(HeapBlock): the CodeBlob follows it */
	__u8 kind_nmethod;	    /* HS_P_KIND: CodeBlobKind::Nmethod */
	__u8 kind_vtable;	    /* HS_P_KIND: CodeBlobKind::Vtable */
	__u16 blob_read;	    /* bytes of a blob to read (<= HS_BLOB_READ) */
	__u16 cm_size;		    /* sizeof(ConstMethod): the bytecodes follow it */
	/* CodeBlob */
	__s16 cb_name, cb_kind, cb_frame_size, cb_frame_complete, cb_code_begin, cb_code_end;
	/* nmethod (CompiledMethod's fields on JDK 17-22) */
	__s16 nm_compile_id, nm_orig_pc, nm_deopt;
	__s16 nm_verified;	    /* the verified entry: a pointer, or (HS_P_CODE_OFFSETS)
				     * a u16 offset from the code begin */
	/* Method::_constMethod */
	__s16 m_const_method;
	/* Interpreter frame slots, in words from rbp (x86-64, JDK 9+:
	 * method -3, bcp -8, sender sp -1). */
	__s8 if_method, if_bcp, if_sender_sp;
	__u8 pad;
	/* Where the unload epoch's low 32 bits are: the perf data counter
	 * java.cls.unloadedClasses, or (without perf data) the heap's count
	 * of collections, which every unload goes with */
	__u64 epoch_addr;
};

/* A Java frame's stamp: what proves its object (ConstMethod* >> 3, a
 * compile id) under the JVM's unload epoch (0 before any: the id alone). */
static inline __u32 hs_stamp(__u32 id, __u32 epoch)
{
	return id ^ epoch * 0x9e3779b1u;
}

/* A frame's registers as the step sees and leaves them: pc, sp, rbp,
 * and, meaningful in the leaf only (0: not known), r13, where the
 * interpreter keeps its bcp and a method entry the caller's sp, rax and
 * rbx, where a method entry keeps its return address and Method* until
 * its frame holds them (hs_entry in bpf/hotspot_walk.h). */
struct hs_regs {
	__u64 pc, sp, bp, r13;
	__u64 ax, bx;
};

/* What a record names (slot 0, bits 48..51). */
enum hs_kind {
	HS_K_NONE = 0,
	HS_K_INTERP = 1,   /* Method*, bci, ConstMethod* >> 3 */
	HS_K_COMPILED = 2, /* nmethod, pc offset, compile id */
	HS_K_STUB = 3,	   /* CodeBlob, pc offset, name pointer's low half */
};

/* Record flags (slot 0, bits 52..55). */
#define HS_R_EXACT 1u	  /* the pc is where the thread was interrupted, not a
			   * return address: the leaf PcDesc rule applies */
#define HS_R_DEOPT 2u	  /* a deoptimized frame: the offset is its original pc's */
#define HS_R_GUESSED 4u	  /* unwound by a heuristic (prologue, epilogue, a frame
			   * without size, a return address searched for) */

#define HS_BCI_NONE 0xffffffffu

#define HS_ADDR_MASK ((1ull << 48) - 1)

static inline __u64 hs_rec0(__u64 addr, __u32 kind, __u32 flags, __u32 index)
{
	return (addr & HS_ADDR_MASK) | (__u64)(kind & 15) << 48 | (__u64)(flags & 15) << 52 |
	       (__u64)(index & 255) << 56;
}

static inline __u64 hs_rec1(__u32 off, __u32 stamp)
{
	return (__u64)off | (__u64)stamp << 32;
}

static inline __u64 hs_rec_addr(__u64 s0) { return s0 & HS_ADDR_MASK; }
static inline __u32 hs_rec_kind(__u64 s0) { return (__u32)(s0 >> 48) & 15; }
static inline __u32 hs_rec_flags(__u64 s0) { return (__u32)(s0 >> 52) & 15; }
static inline __u32 hs_rec_index(__u64 s0) { return (__u32)(s0 >> 56); }
static inline __u32 hs_rec_off(__u64 s1) { return (__u32)s1; }
static inline __u32 hs_rec_stamp(__u64 s1) { return (__u32)(s1 >> 32); }

/* How a HotSpot step ended (per-CPU counters hs_ends; the twin says the
 * same). HS_E_OK: the frame was unwound and recorded. */
enum hs_end {
	HS_E_OK = 0,
	HS_E_NO_BLOB,	 /* the segment map has no block for the pc (free, or hops out) */
	HS_E_BAD_BLOB,	 /* the block's blob does not hold the pc */
	HS_E_READ,	 /* a read of the process's memory failed */
	HS_E_BAD_FRAME,	 /* no plausible caller: return address, sp or rbp */
	HS_E_INTERP,	 /* an interpreter frame whose rbp is not a frame pointer */
	HS_E_TRUNC,	 /* stepped, but HS_MAX_FRAMES records were written already */
	HS_E_NOT_JAVA,	 /* the pc is not in the code cache (the step was not for it) */
	HS_E_MAX,
};

#endif
