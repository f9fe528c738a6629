// SPDX-License-Identifier: GPL-2.0
/*
 * hs_cost.bpf.c - what bpf/hotspot_walk.h costs in a perf_event program
 * (tests/unit/test_hotspot_bpf.c): for samples of target_tgid whose pc is
 * in the JVM's code cache, hs_sample steps through the Java frames from
 * the sampled registers with bpf_probe_read_user, as the sampler would;
 * hs_sample_base stops after finding the pc in the code cache. With
 * bpf_stats on, the difference of their run times over the Java samples
 * is what the steps cost, and frames_total how many frames they stepped.
 * hs_sample_timed (run alone, after) splits the time by the kind of
 * frame stepped.
 */
#include "bpf/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "tests/bpf/test_maps.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;

__u64 cache_hits, cache_misses;

/* hs_sample_timed's samples, for the known-answer check (user space
 * names them). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} leaves SEC(".maps");
#define HS_CACHE_STATS(hit) __sync_fetch_and_add((hit) ? &cache_hits : &cache_misses, 1)

/* The JVM's set-up. */
TEST_PROCS(hs_procs, struct hs_proc);

#include "bpf/hotspot_walk.h"

static __always_inline struct hs_proc *target_proc(void)
{
	__u32 k = target_tgid;

	return bpf_map_lookup_elem(&hs_procs, &k);
}
#include "tests/bpf/hs_test.h"

__u64 frames_total, samples_java, samples_base, frames_timed, samples_timed;
/* Time in hs_step by what it stepped: [leaf][kind], and how many. */
__u64 step_ns[2][4], step_cnt[2][4];
__u64 read8_ns, read8_cnt, clock_ns, code1_ns, stack1_ns;

/* Whether the sample (id: its pid_tgid) is of target_tgid with its pc in
 * the code cache, the walk begun; its registers in *r. */
static __always_inline bool java_sample(struct bpf_perf_event_data *ctx, __u64 id, struct hs_regs *r)
{
	if ((__u32)(id >> 32) != target_tgid)
		return false;
	r->pc = ctx->regs.ip;
	r->sp = ctx->regs.sp;
	r->bp = ctx->regs.bp;
	r->r13 = ctx->regs.r13;
	r->ax = ctx->regs.ax;
	r->bx = ctx->regs.bx;
	return hs_begin(target_tgid, target_proc()) && hs_owns(r->pc);
}

SEC("perf_event")
int hs_sample(struct bpf_perf_event_data *ctx)
{
	struct hs_regs r;
	__u32 i;

	if (!java_sample(ctx, bpf_get_current_pid_tgid(), &r))
		return 0;
	__sync_fetch_and_add(&samples_java, 1);
	for (i = 0; i < 32; i++) {
		if (!hs_owns(i ? r.pc - 1 : r.pc) || hs_step(&r, !i, i))
			break;
	}
	__sync_fetch_and_add(&frames_total, i);
	return 0;
}

/* The same, each step timed by what it stepped (its record's kind), and
 * 8 reads of 8 bytes timed: the floor every read costs. */
SEC("perf_event")
int hs_sample_timed(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct hs_regs r;
	__u32 i;

	if (!java_sample(ctx, id, &r))
		return 0;
	__sync_fetch_and_add(&samples_timed, 1);
	for (i = 0; i < 32; i++) {
		struct hs_scratch *s;
		__u64 t0;
		int err;

		if (!hs_owns(i ? r.pc - 1 : r.pc))
			break;
		t0 = bpf_ktime_get_ns();
		err = hs_step(&r, !i, i);
		t0 = bpf_ktime_get_ns() - t0;
		s = hs_get();
		if (err || !s)
			break;
		__u32 k = hs_rec_kind(s->rec[(2 * (s->n - 1)) & (2 * HS_MAX_FRAMES - 1)]) & 3;

		__sync_fetch_and_add(&step_ns[!i][k], t0);
		__sync_fetch_and_add(&step_cnt[!i][k], 1);
	}
	__sync_fetch_and_add(&frames_timed, i);
	{
		struct hs_scratch *s = hs_get();
		struct hs_leaf *l;

		if (s && s->n && (l = bpf_ringbuf_reserve(&leaves, sizeof(*l), 0))) {
			l->tid = (__u32)id;
			l->n = s->n;
			l->rec[0] = s->rec[0];
			l->rec[1] = s->rec[1];
			bpf_ringbuf_submit(l, 0);
		}
	}
	{
		__u64 t0 = bpf_ktime_get_ns(), v, acc = 0;

		for (int k = 0; k < 8; k++) {
			bpf_probe_read_user(&v, 8, (void *)(ctx->regs.sp + 8 * k));
			acc += v;
		}
		t0 = bpf_ktime_get_ns() - t0;
		__sync_fetch_and_add(&read8_ns, t0 + (acc & 0));
		__sync_fetch_and_add(&read8_cnt, 1);
		t0 = bpf_ktime_get_ns();
		t0 = bpf_ktime_get_ns() - t0;
		__sync_fetch_and_add(&clock_ns, t0);
		t0 = bpf_ktime_get_ns();
		bpf_probe_read_user(&v, 8, (void *)ctx->regs.ip);
		t0 = bpf_ktime_get_ns() - t0;
		__sync_fetch_and_add(&code1_ns, t0 + (v & 0));
		t0 = bpf_ktime_get_ns();
		bpf_probe_read_user(&v, 8, (void *)ctx->regs.sp);
		t0 = bpf_ktime_get_ns() - t0;
		__sync_fetch_and_add(&stack1_ns, t0 + (v & 0));
	}
	return 0;
}

/* hs_sample's start alone: what a sample costs before any step. */
SEC("perf_event")
int hs_sample_base(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if ((__u32)(id >> 32) != target_tgid)
		return 0;
	if (!hs_begin(target_tgid, target_proc()) || !hs_owns(ctx->regs.ip))
		return 0;
	__sync_fetch_and_add(&samples_base, 1);
	return 0;
}
