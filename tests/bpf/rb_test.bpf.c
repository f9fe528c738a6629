// SPDX-License-Identifier: GPL-2.0
/*
 * rb_test.bpf.c - a test-only perf_event program around bpf/ruby_walk.h
 * (test_rbbpf): for samples of one process it runs the Ruby walk as
 * profile.bpf.c would after the native frames (here none: at = 0) and
 * sends the records, so the verifier of this kernel sees the walk and a
 * test can hold its records against the user-space twin's.
 */
#include "bpf/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/profile.h"
#include "tests/bpf/test_maps.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
/* true: everything but the walk (the program's own cost, for bpf_stats). */
const volatile bool walk_off = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} rb_events SEC(".maps");

TEST_SCRATCH(scratch, struct prof_sample_ev);

/* The process's entry. */
TEST_PROCS(rb_procs, struct rb_proc);

#include "bpf/ruby_walk.h"

SEC("perf_event")
int on_rb_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 zero = 0, r, n;
	struct prof_sample_ev *ev;
	__u64 size;

	if (id >> 32 != target_tgid)
		return 0;
	ev = bpf_map_lookup_elem(&scratch, &zero);
	if (!ev)
		return 0;
	ev->type = PROF_EV_SAMPLE;
	ev->tgid = id >> 32;
	ev->tid = (__u32)id;
	ev->nkern = 0;
	ev->nuser = 0;
	r = walk_off ? 0 : (__u32)rb_walk(ev, bpf_map_lookup_elem(&rb_procs, &ev->tgid), 0);
	n = r & 0xff;
	ev->nrt = n;
	ev->rtend = r >> 16;
	ev->rtkind = RT_RUBY;
	size = __builtin_offsetof(struct prof_sample_ev, frames) + 2 * n * sizeof(__u64);
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	bpf_ringbuf_output(&rb_events, ev, size, BPF_RB_NO_WAKEUP);
	return 0;
}
