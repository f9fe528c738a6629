/*
 * v8dispatch.h - where a V8 13+ process keeps its JSFunctions' dispatch
 * table ("leaptiering": a JSFunction holds a handle, the table's entry
 * holds its Code; bpf/v8.h's V8_DISPATCH_*).
 *
 * One table per process: a 256 MiB reservation whose base the process's
 * IsolateGroup holds. The member's offset is per build (0x3270 in node
 * 24.22.3) and in no v8dbg value, so the IsolateGroup is scanned for a
 * pointer to the start of a mapping whose run of adjacent mappings has a
 * boundary 256 MiB on, and a candidate is taken only if an entry in use
 * decodes to a Code object.
 */
#ifndef PROFFS_V8DISPATCH_H
#define PROFFS_V8DISPATCH_H

#include <stdint.h>
#include <sys/types.h>

#include "sampler/v8/v8layout.h"

/*
 * The table of process pid (layout l), whose IsolateGroup pointer
 * (IsolateGroup::default_isolate_group_) is at runtime address group_ptr.
 * Reads the process's memory and its /proc maps. Returns 0 with *base;
 * -EAGAIN: not there yet (V8 has not started); -EFAULT: unreadable.
 */
int v8dispatch__find(pid_t pid, const struct v8layout *l, uint64_t group_ptr, uint64_t *base);

#endif
