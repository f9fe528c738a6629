/*
 * runtime.h - the language runtimes whose frames the BPF programs walk
 * besides the native stack, and the one per-process entry that says which
 * runtime a process runs. Shared by bpf/ and sampler/runtime/; compiles
 * in both (no libc types).
 *
 * Why one map for every runtime: each sample of every process asks it
 * once (a process runs one interpreter), so a host with no interpreter
 * pays one hash lookup per sample, not one per runtime. The entry holds
 * the runtime's own per-process layout (struct py_proc, rb_proc, ...);
 * user space writes it once the process is set up, BPF drops it at exec
 * and exit and copies it to a forked child.
 */
#ifndef PROFFS_BPF_RUNTIME_H
#define PROFFS_BPF_RUNTIME_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "bpf/python.h"
#include "bpf/ruby.h"
#include "bpf/hotspot.h"
#include "bpf/v8.h"

/* Which runtime a record's runtime frames (and an rt_procs entry) are. */
enum rt_kind {
	RT_NONE = 0,
	RT_PYTHON,
	RT_RUBY,
	RT_HOTSPOT, /* its frames are written by the native walk (hotspot_walk.h) */
	RT_V8,	    /* likewise (v8_walk.h) */
	RT_NKINDS,
#define TEST_REFUSE_TABLES (1u << RT_NONE) /* see TEST_REFUSAL */
#define TEST_REFUSE_OFFCPU (1u << 31)
	/* Not a runtime: the rt_procs entry of a JVM or V8 process whose
	 * set-up is not ready yet (the VM still initialising). The walk
	 * stops at its first anonymous code (PROF_UE_PENDING), so user space
	 * walks that code once the set-up is in, rather than frame pointers
	 * walking it unnamed for good. */
	RT_SETTING_UP = 15,
	/* Not a runtime either: a process user space looked at (its maps
	 * read after its anonymous code was met) and found no runtime in.
	 * Frame pointers walk its anonymous code (a perf-map JIT's, a regex
	 * JIT's). Without any entry, anonymous code goes to user space
	 * (PROF_UE_PENDING) until it knows: a JVM or node whose engine was
	 * mapped after the daemon last read the maps would otherwise have
	 * its first Java or JS frames walked by frame pointers, unnamed
	 * `[jit]` frames for good. */
	RT_NATIVE_JIT = 14,
};

/* The runtimes' walks whose frames the native walk writes, a step each
 * (hotspot_walk.h, v8_walk.h): they need the unwind tables, and a
 * record of theirs is tied to a native frame. */
#define RT_STEP_WALKS ((1u << RT_HOTSPOT) | (1u << RT_V8))
#define RT_ALL_WALKS ((1u << RT_PYTHON) | (1u << RT_RUBY) | RT_STEP_WALKS)
/* Each kind's name: feature names (kfeature.h), metric labels, the
 * runtimes' metric prefixes (proffs_<name>_...). An initializer, so that
 * BPF objects hold no copy. */
#define RT_KIND_NAMES \
	{ [RT_NONE] = "native", [RT_PYTHON] = "python", [RT_RUBY] = "ruby", [RT_HOTSPOT] = "java", [RT_V8] = "js" }

/* How a runtime walk ended: every runtime's enum (py_end, rb_end) starts
 * with these values, so code that only cuts or copies runtime frames
 * needs no runtime's own. */
enum rt_end {
	RT_END_NONE = 0, /* not a process of this runtime */
	RT_END_OK,	 /* reached the thread's oldest frame */
	RT_END_IDLE,	 /* the thread runs no code of the runtime */
	RT_END_TRUNC,	 /* the walk's frame bound, or no room in the record */
	RT_END_READ,	 /* a read of the process's memory failed */
};

/* Processes the BPF map holds at most, all runtimes together. */
#define RT_MAX_PROCS 4096

/* Per process (BPF map rt_procs, key: tgid). */
struct rt_proc {
	__u32 kind; /* enum rt_kind */
	__u32 pad;
	union {
		struct py_proc py;
		struct rb_proc rb;
		struct hs_proc hs;
		struct v8_proc v8;
	};
};

/* Runtime records a record holds at most (each two frame slots). */
#define RT_MAX_FRAMES 65 /* PY_MAX_FRAMES 48, RB_MAX_FRAMES + 1, HS_MAX_FRAMES, V8_MAX_FRAMES 64 */

#endif
