// SPDX-License-Identifier: GPL-2.0
/*
 * hs_iter.bpf.c - bpf/hotspot_walk.h under test (tests/unit/
 * test_hotspot_bpf.c): for the task target_tid, stopped by the test with
 * ptrace, steps through the HotSpot frames from in_regs while their pcs
 * stay in the code cache, reading the task's memory with
 * bpf_copy_from_user_task (a sleepable task iterator: the test runs it by
 * reading the iterator), and leaves the records and the registers where
 * it left the cache in `out`. The test compares them with the user-space
 * twin's (sampler/java/hswalk.c) over the same stopped thread.
 */
#include "bpf/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "tests/bpf/test_maps.h"

char LICENSE[] SEC("license") = "GPL";

__u32 target_tid = 0;

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* The stopped task's memory (this program runs in the test's context). */
static __always_inline long test_read(void *dst, __u32 size, const void *src)
{
	struct task_struct *t;
	long err;

	t = bpf_task_from_pid(target_tid);
	if (!t)
		return -3;
	err = bpf_copy_from_user_task(dst, size, src, t, 0);
	bpf_task_release(t);
	return err;
}

#define HS_READ_USER(dst, size, src) test_read(dst, size, (const void *)(src))

/* The JVM's set-up. */
TEST_PROCS(hs_procs, struct hs_proc);

#include "bpf/hotspot_walk.h"
#include "tests/bpf/hs_test.h"

struct hs_regs in_regs;
__u32 in_leaf, in_index;
struct hs_out out;

SEC("iter.s/task")
int hs_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct hs_regs r = in_regs;
	struct hs_scratch *s;
	int end = HS_E_OK;
	__u32 i, tgid;

	if (!task || task->pid != target_tid)
		return 0;
	tgid = task->tgid;
	if (!hs_begin(task->tgid, bpf_map_lookup_elem(&hs_procs, &tgid))) {
		out.end = HS_E_NOT_JAVA;
		return 0;
	}
	for (i = 0; i < HS_MAX_FRAMES; i++) {
		__u32 leaf = in_leaf && !i;

		if (!hs_owns(leaf ? r.pc : r.pc - 1))
			break;
		end = hs_step(&r, leaf, in_index + i);
		if (end)
			break;
	}
	s = hs_get();
	if (!s)
		return 0;
	out.regs = r;
	out.end = end;
	out.steps = i;
	out.n = hs_finish(out.rec, 0, 2 * HS_MAX_FRAMES);
	return 0;
}
