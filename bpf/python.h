/*
 * python.h - what bpf/profile.bpf.c needs to walk a CPython thread's
 * frames, and what it writes for each, shared with sampler/python/.
 * Compiles in BPF and in user space (no libc types).
 *
 * User space fills one struct py_proc per Python process (tgid) once it
 * knows the interpreter file, its layout row and the thread-state key.
 * For each sample of such a process the BPF program reads the sampled
 * thread's own thread state (its TLS slot, never the GIL holder's) and
 * walks at most PY_MAX_FRAMES frames, newest first, writing per frame a
 * struct py_frame into the record after the native frames. No strings
 * are read in BPF: user space names a code object later, and the stamp
 * tells it whether the object at that address is still the one sampled.
 */
#ifndef PROFFS_BPF_PYTHON_H
#define PROFFS_BPF_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Python frames walked per sample at most (deeper stacks end in a
 * truncation marker: PY_END_TRUNC). */
#define PY_MAX_FRAMES 48
/* Python processes the BPF map holds at most. */
#define PY_MAX_PROCS 1024
/* Bytes of a frame and of a code object read in one go (the fields a
 * row names must lie within them; layout.c's rows do). */
#define PY_FRAME_READ 104
#define PY_CODE_READ 80

/* Per process (its entry in the BPF map rt_procs, key: tgid). Offsets are a layout row's
 * (sampler/python/layout.h); -1 where the version has no such field. */
struct py_proc {
	__u64 tsd_off;	/* the thread-state pointer is at fsbase + tsd_off */
	__u8 minor;	/* 10..13 */
	__u8 pad;
	__s16 ts_frame;	/* 3.10, 3.13: tstate -> newest frame */
	__s16 ts_cframe, cframe_current_frame; /* 3.11, 3.12 */
	__s16 fr_code, fr_previous, fr_instr, fr_is_entry, fr_owner;
	__s16 co_firstlineno, co_filename, co_name, co_code_adaptive;
	__s16 pad2[3];
};

/* One Python frame in a sample record: two of its __u64 frame slots. */
struct py_frame {
	__u64 code;	/* the code object's address; bit 0: PY_FRAME_ENTRY */
	__u32 instr;	/* byte offset of the running (or last started)
			 * instruction in the code, PY_INSTR_NONE if unknown */
	__u32 stamp;	/* py_stamp() of the code object when sampled */
};

/* This frame is the first one its C-level eval loop ran: the frames
 * after it belong to the next _PyEval_EvalFrameDefault out (3.11: the
 * frame's is_entry; 3.12+: a C-stack shim frame follows; 3.10: always). */
#define PY_FRAME_ENTRY 1ull
#define PY_INSTR_NONE 0xffffffffu

/* How a sample's Python walk ended (prof_sample_ev.pyend). */
enum py_end {
	PY_END_NONE = 0,   /* not a Python process (or walking is off) */
	PY_END_OK,	   /* reached the thread's first frame */
	PY_END_IDLE,	   /* the thread has no thread state or no frame */
	PY_END_TRUNC,	   /* PY_MAX_FRAMES, or no room left in the record */
	PY_END_READ,	   /* a read of the process's memory failed */
	PY_END_MAX,
};

/*
 * The stamp of a code object: its co_filename and co_name pointers and
 * co_firstlineno, as BPF read them at sample time. User space computes it
 * again from what it reads later; a different value means the object at
 * that address was freed and the address reused.
 */
static inline __u32 py_stamp(__u64 filename, __u64 name, __s32 firstlineno)
{
	__u64 h = filename * 0x9e3779b97f4a7c15ull ^ name;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (__u32)(h ^ (h >> 32)) ^ (__u32)firstlineno;
}

#endif
