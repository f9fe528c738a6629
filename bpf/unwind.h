/*
 * unwind.h - the unwind tables bpf/profile.bpf.c walks, shared with
 * sampler/unwind/. One row space holds every file's rows (each file a
 * contiguous, sorted range), one rules array the distinct rules of all
 * files, and a hash map names a file's range by (device, inode), so every
 * process mapping a file shares its table. Must compile in BPF and user
 * space (no libc types).
 *
 * The row space is cut in chunks of UNW_CHUNK_ROWS, each its own array
 * map held in an array of maps, and a chunk exists only while rows are
 * in it: an array map's memory is allocated whole when it is created, and
 * one array for the most rows we allow (8 MiB) cost a busy host six times
 * what its tables use. A file of at most UNW_CHUNK_ROWS rows lies inside
 * one chunk; a bigger one starts at a chunk's first row, so its chunk
 * for an offset is found by the first rows of its chunks.
 */
#ifndef PROFFS_BPF_UNWIND_H
#define PROFFS_BPF_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Where the caller's CFA (its stack pointer before the call) is. */
enum unw_cfa {
	UNW_CFA_NONE = 0, /* no unwind info covers this address */
	UNW_CFA_SP,       /* sp + cfa_off */
	UNW_CFA_BP,       /* bp + cfa_off */
	UNW_CFA_PLT,      /* sp + cfa_off, + 8 if (pc & 15) >= arg (PLT stubs) */
	UNW_CFA_DEREF_SP, /* *(sp + cfa_off): a signal frame's saved sp */
	UNW_CFA_BAD,      /* a rule we do not implement: the walk stops */
};

/* Where the return address is. */
enum unw_ra {
	UNW_RA_CFA = 0, /* *(cfa + ra_off) */
	UNW_RA_UNDEF,   /* none: the outermost frame (_start, a thread's start) */
	UNW_RA_SP,      /* *(sp + ra_off): a signal frame's saved ip */
	UNW_RA_REG,     /* in register arg (DWARF number), e.g. __vfork: leaf only */
	UNW_RA_BAD,
};

/* Where the caller's rbp is. */
enum unw_bp {
	UNW_BP_SAME = 0, /* unchanged (rbp is callee-saved) */
	UNW_BP_CFA,      /* *(cfa + bp_off) */
	UNW_BP_SP,       /* *(sp + bp_off): a signal frame's saved rbp */
	UNW_BP_UNDEF,    /* lost: a later rule that needs it fails */
};

#define UNW_R_SIGNAL 1u /* the caller's pc is exact, not a return address */

/* 24 bytes: an mmapable array stores values at 8-byte strides. */
struct unw_rule {
	__u8 cfa, ra, bp, flags;
	__u8 arg; /* UNW_CFA_PLT: the threshold; UNW_RA_REG: the register */
	__u8 pad[3];
	__s32 cfa_off, ra_off, bp_off;
	__u32 pad2;
};

/* A row holds from its file offset up to the next row's. */
struct unw_row {
	__u32 off;  /* file offset (what a mapping's pgoff counts in) */
	__u32 rule; /* index into the rules array; 0 is UNW_CFA_NONE */
};

#define UNW_CHUNK_SHIFT 15
#define UNW_CHUNK_ROWS (1u << UNW_CHUNK_SHIFT) /* 256 KiB of rows */
#define UNW_MAX_CHUNKS 128 /* 4M rows, 32 MiB at most */
/* One file's rows span at most this many chunks (1M rows): the walk's
 * chunk search takes 6 steps. */
#define UNW_FILE_CHUNKS 32

struct unw_file_key {
	__u64 dev; /* the kernel's encoding: major << 20 | minor */
	__u64 ino;
};

enum unw_file_kind {
	UNW_FILE_TABLE = 1, /* rows [base, base + nrows) */
	UNW_FILE_FP,        /* no unwind info in the file: frame pointers */
	UNW_FILE_NONE,      /* unreadable or corrupt, or no room: the walk stops */
};

struct unw_file {
	__u32 base, nrows;
	__u32 kind;
	__u32 pad;
};

/* The vDSO has no file; its table is keyed by this. */
#define UNW_VDSO_DEV 0
#define UNW_VDSO_INO 1

/* Bytes of raw user stack a sample carries when its walk reached a file
 * whose table is not loaded yet (user space finishes the walk). */
#define UNW_STACK_COPY 28672

#endif
