/*
 * v8.h - what the BPF walk needs to tell JS frames of a V8 (Node.js)
 * process, and what it writes for each, shared with sampler/v8/.
 * Compiles in BPF and in user space (no libc types).
 *
 * V8 keeps rbp as a frame pointer in all the code it generates (JIT
 * code in anonymous memory, and its builtins, linked into node or
 * libnode without CFI), so the native walk steps through those frames by
 * rbp (bpf/unwind_walk.h; sampler/unwind/table.c gives the builtins the
 * frame-pointer rule). In that step the hook (bpf/v8_walk.h) reads the
 * frame's fixed slots below rbp together with the saved rbp and return
 * address (one V8_FRAME_READ-byte read), and when the slot at
 * fp + fp_context holds a context (a heap object, not a frame-type SMI)
 * the frame runs a JS function: it reads the JSFunction's shared info
 * and code (one read) and, for optimized or baseline code, the Code's
 * instruction range (one read), and records one struct v8_frame.
 *
 * No strings are read in BPF: user space names the frame later, and the
 * stamp tells it whether the object at that address is still the one
 * sampled (V8's GC moves objects).
 */
#ifndef PROFFS_BPF_V8_H
#define PROFFS_BPF_V8_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* JS frames recorded per sample at most (more: V8_END_TRUNC). */
#define V8_MAX_FRAMES 64
/* V8 processes the BPF map holds at most. */
#define V8_MAX_PROCS 1024
/* The frame read: [fp - V8_FRAME_BELOW, fp + 16), saved rbp and return
 * address included; the fp_* offsets of struct v8_proc must lie in it. */
#define V8_FRAME_BELOW 40
#define V8_FRAME_READ (V8_FRAME_BELOW + 16)
/* The JSFunction read: [jsf + jsf_read_off, + V8_JSF_READ). */
#define V8_JSF_READ 32
/* The Code read: [code + code_read_off, + V8_CODE_READ). */
#define V8_CODE_READ 24
/* The SharedFunctionInfo read (V8_FT_FUNC only): [sfi + sfi_read_off, + V8_SFI_READ). */
#define V8_SFI_READ 32

/* Per process (BPF map v8_procs, key: tgid), from sampler/v8/v8layout.c. */
struct v8_proc {
	/* The embedded builtins: file offsets [blob_off, + blob_len) of the
	 * file (blob_dev, blob_ino), wherever it is mapped (V8 12+ maps a
	 * copy of them per isolate, next to its JIT code, and runs that) */
	__u64 blob_off, blob_len, blob_ino;
	__u32 blob_dev, pad0;
	/* 0: jsf_code is the JSFunction's Code. Else (V8 13+, "leaptiering")
	 * the JSFunction holds a u32 handle there, and its Code is in the
	 * handle's entry of the process's dispatch table at dispatch_base:
	 * V8_DISPATCH_CODE() of the entry's second word */
	__u64 dispatch_base;
	__s8 fp_context;	  /* the context, or a frame-type SMI marker */
	__s8 fp_function;	  /* the JSFunction */
	__s8 fp_bytecode_array;	  /* interpreted frames: the BytecodeArray */
	__s8 fp_bytecode_offset;  /* ... and the bytecode offset (a SMI) */
	__u8 jsf_read_off;	  /* where the JSFunction read starts */
	__u8 jsf_shared, jsf_code; /* offsets into that read */
	__u8 code_read_off;	  /* where the Code read starts */
	__s8 code_start;	  /* into the Code read: a pointer to the instructions;
				   * -1: they start at code + code_start_inline */
	__u8 code_size, code_flags; /* into the Code read: int32, uint32 */
	__u8 kind_mask, kind_shift; /* Code kind = (flags >> shift) & mask */
	__u8 kind_baseline;	  /* Sparkplug's kind */
	__u16 code_start_inline;
	__u8 sfi_read_off;	  /* where the SharedFunctionInfo read starts */
	__u8 sfi_script, sfi_name; /* offsets into it: the V8_FT_FUNC stamp */
	__u8 pad;
};

/*
 * One JS frame in a sample record: two __u64 slots after the native
 * frames (and after Python's, if any). obj is an object's untagged
 * address (8-aligned: bits 0-2 hold V8_FT_*), bits 48-55 the index
 * among the sample's user frames of the native frame the JS frame runs
 * in (the one the rbp step left: its pc is in a builtin or JIT code).
 */
struct v8_frame {
	__u64 obj;
	__u32 off;   /* bytecode offset (V8_FT_INTERP) or pc - code start */
	__u32 stamp; /* see V8_FT_* */
};

enum v8_frame_type {
	/* obj = SharedFunctionInfo, off = the bytecode offset as the frame
	 * holds it (a byte offset into the BytecodeArray object, tagged:
	 * V8's header size - 1 is bytecode 0), stamp = v8_stamp(the frame's
	 * BytecodeArray): user space checks the SFI's bytecode is that one. */
	V8_FT_INTERP = 1,
	/* obj = SharedFunctionInfo, off = pc - instruction start of its
	 * Sparkplug code, stamp = v8_stamp(Code, size << 8 | kind). */
	V8_FT_BASELINE = 2,
	/* obj = Code (TurboFan, Maglev), off = pc - instruction start,
	 * stamp = v8_stamp(SharedFunctionInfo, size << 8 | kind). */
	V8_FT_OPT = 3,
	/* obj = SharedFunctionInfo, no position: a JS builtin (Array.prototype.sort)
	 * or code the function no longer points to (on-stack replacement,
	 * deoptimized); stamp = v8_stamp(its script_or_debug_info,
	 * name_or_scope_info), one more read. */
	V8_FT_FUNC = 4,
};

/* A dispatch table's entry: 16 bytes, the index in the handle's upper
 * 24 bits; its second word holds the Code (untagged) shifted up 16 bits
 * over a mark bit and the parameter count. */
#define V8_DISPATCH_ENTRY(base, handle) ((base) + (((__u64)(handle) & 0xffffffffull) >> 8) * 16)
#define V8_DISPATCH_CODE(w1) (((w1) >> 16) | 1)

#define V8_OBJ_TYPE(o) ((__u32)((o) & 7))
#define V8_OBJ_ADDR(o) ((o) & 0x0000fffffffffff8ull)
#define V8_OBJ_INDEX(o) ((__u32)(((o) >> 48) & 0xff))
/* A record's object without its native frame's index: what identifies it
 * (profile.bpf.c's wake check and v8_emit's chain signature key on it). */
#define V8_OBJ_IDENT_MASK (~(0xffull << 48))
#define V8_OBJ(addr, type, index) \
	(((addr) & 0x0000fffffffffff8ull) | (__u64)(type) | ((__u64)((index) & 0xff) << 48))

/* How a sample's JS part ended (counted per CPU by the hook's user). */
enum v8_end {
	V8_END_NONE = 0, /* not a V8 process */
	V8_END_OK,	 /* every V8 frame the native walk met was read */
	V8_END_TRUNC,	 /* V8_MAX_FRAMES, or no room left in the record */
	V8_END_READ,	 /* a read of the process's memory failed */
	V8_END_MAX,
};

/* 32 bits of two words: a stamp BPF computes from what it read and user
 * space computes again from what it reads later. */
static inline __u32 v8_stamp(__u64 a, __u64 b)
{
	__u64 h = a * 0x9e3779b97f4a7c15ull ^ b;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (__u32)(h ^ (h >> 32));
}

#endif
