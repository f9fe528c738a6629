/*
 * rtproc.h - what the runtime pipeline (sampler/runtime/) keeps per
 * process, inside struct proc (procinfo.h): plain fields, so that proc/
 * needs nothing of runtime/. Its meaning is runtime.c's; proc/ only
 * zeroes it at exec and copies it at fork (BPF copies the walk's entry).
 */
#ifndef PROFFS_PROC_RTPROC_H
#define PROFFS_PROC_RTPROC_H

#include <stdbool.h>
#include <stdint.h>

/* How far a process's set-up got (metrics: processes by state). */
enum rt_state {
	RTS_UNKNOWN = 0, /* no interpreter seen in it (yet) */
	RTS_WAIT,	 /* an interpreter not initialised yet (or its libc loading) */
	RTS_WALKED,	 /* BPF walks its threads */
	RTS_UNSUPPORTED, /* a version or build we have no layout for */
	RTS_LAYOUT,	 /* our layout disagrees with the file's or process's own */
	RTS_TLS,	 /* a thread-local storage we do not know (musl, another glibc) */
	RTS_FAILED,	 /* the BPF map full, or its memory could not be read */
	RTS_MAX,
};

/* Per process (struct proc.rt); zero is RTS_UNKNOWN. */
struct rtproc {
	uint8_t kind;	 /* enum rt_kind (bpf/runtime.h), once an interpreter was seen */
	uint8_t state;	 /* enum rt_state */
	uint8_t tries;
	bool setting_up; /* rt_procs holds RT_SETTING_UP for it */
	bool native;	 /* rt_procs holds RT_NATIVE_JIT for it */
	int64_t next_ns; /* RTS_UNKNOWN, RTS_WAIT: look again then */
	int64_t seen_ns; /* its first sample (or maps read) showing the interpreter */
	const void *layout;		 /* the runtime's layout row */
	uint64_t anchor_lo[2], anchor_hi[2]; /* where the runtime's frames go (runtime addresses) */
	uint64_t aux;			 /* the runtime's (Ruby: its global symbol table) */
};

#endif
