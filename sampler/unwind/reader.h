/*
 * reader.h - a file's unwind table read on a thread of its own, abandoned
 * if the read hangs.
 *
 * Any read of a file a local user controls can hang: a FUSE or NFS file
 * whose server does not answer keeps the reading thread waiting in the
 * kernel (killable, so the process can still end, but not that thread).
 * The unwinder's worker builds every process's tables one after another;
 * a read that hung there stopped them all, and the daemon's stop joined
 * it forever. So the worker hands each file to a reader thread and waits
 * for it at most UNW_READ_TIMEOUT_NS of wall clock in which the reader
 * used less than UNW_READ_IDLE_CPU_NS of CPU (waiting, not working), or
 * UNW_READ_HARD_NS whatever it did, or until the unwinder stops; then it
 * abandons it. An abandoned reader owns its job alone: when (if) its read
 * returns, it frees what it read and exits.
 */
#ifndef PROFFS_UNWIND_READER_H
#define PROFFS_UNWIND_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/unwind/table.h"

#define UNW_READ_TIMEOUT_NS (2 * 1000000000LL)
#define UNW_READ_IDLE_CPU_NS (50 * 1000000LL)
#define UNW_READ_HARD_NS (20 * 1000000000LL)

/* What to read: opened by open(ctx) on the reader (a safefile open of the
 * file the process mapped; returns an fd or -errno), then, unless the
 * file is over big_bytes (0: no bound), compiled. */
struct unw_read {
	int (*open)(void *ctx);
	void *ctx;              /* copied with ctx_size bytes: the reader's own */
	size_t ctx_size;
	const char *debug_root; /* copied */
	uint64_t big_bytes;
	int64_t delay_ns;       /* tests: sleep first (PROFFS_UNWIND_DELAY) */
};

struct unw_read_result {
	int open_err;   /* < 0: open() failed with it; nothing else is set */
	bool big;       /* over big_bytes: not compiled */
	bool hung;      /* abandoned: err is -ETIMEDOUT */
	int err;        /* the compile's: 0 or -errno */
	struct unw_table *t; /* err == 0: the caller's, to free */
};

/* Reads as said above; returns when done or abandoned, with *out filled.
 * stop: the unwinder's stop flag, polled while waiting. If no thread can
 * be started, reads on the caller's thread. */
void unw_read__run(const struct unw_read *r, const int *stop, struct unw_read_result *out);
/* Readers abandoned so far and still blocked (their reads never came back). */
int unw_read__hung(void);

#endif
