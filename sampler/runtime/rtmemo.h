/*
 * rtmemo.h - the frames a runtime named for one record, kept for the
 * next record equal to it (a JIT's runtimes: sampler/v8/v8rt.c).
 *
 * A busy JS thread's samples differ in their leaf and share the rest: the
 * same functions at the same call sites under it. Naming such a record
 * again (cache lookups of its function, its position table decoded from
 * the start, its line searched, its display name printed) was most of
 * what the daemon spent on ten busy nodes beyond the batch's memo; here
 * it is one lookup and a copy. The caller's key says everything that
 * decides the frames (process and its image, the record's object, offset
 * and stamp, how the frame was reached); only final results go in (no
 * marker, nothing a later look may name otherwise).
 *
 * Bounded: 1,024 records, 4,096 frames, 96 KiB of names (strings shared
 * between records); full, it remembers nothing more until
 * rt_memo__trim empties it. Not thread-safe: the sampler thread's.
 */
#ifndef PROFFS_RTMEMO_H
#define PROFFS_RTMEMO_H

#include <stdbool.h>
#include <stdint.h>

#include "sampler/batch/stack.h"

struct rt_memo;

/* NULL with errno ENOMEM. */
struct rt_memo *rt_memo__new(void);
void rt_memo__free(struct rt_memo *m);

/* The frames remembered for key, written to out (at most max; a frame's
 * strings are the memo's, valid until rt_memo__trim); their count, or -1
 * when key is not remembered. */
int rt_memo__get(struct rt_memo *m, const uint64_t key[2], struct frame *out, int max);

/* Remembers fr[0..n) (runtime frames: addr, name, sysname, file, line,
 * start_line are kept; strings copied) for key, in place of what another
 * key held in its slot. False when there is no room (nothing kept). */
bool rt_memo__put(struct rt_memo *m, const uint64_t key[2], const struct frame *fr, int n);

/* Empties m when it is nearly full. Call it where no frame got from m is
 * held any more (a merge's start). */
void rt_memo__trim(struct rt_memo *m);

#endif
