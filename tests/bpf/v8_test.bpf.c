// SPDX-License-Identifier: GPL-2.0
/*
 * v8_test.bpf.c - test-only programs around bpf/v8_walk.h, so the hook
 * the sampler will call passes this kernel's verifier and its records can
 * be held against its twin (sampler/v8/v8walk.c) and timed.
 *
 * A frame-pointer walk with the hook on every frame in V8 code stands in
 * for the table walk (V8's frames are all rbp frames, and so are node's
 * C++ frames on the paths used here):
 * - v8_test_read, a uprobe on libuv's uv_fs_read(): the thread test_v8walk
 *   stops (known.js blocks reading stdin in the middle of its JS frames)
 *   walks its stack here just before it blocks; the records go to
 *   `result`. (Not libc's read(): Debian's libuv, between the two, keeps
 *   no frame pointer; node's C++ and V8 do.)
 *   Anonymous executable memory and the builtins (by their file
 *   offsets) are told by the mapping mt_lookup() finds, as the sampler's
 *   walk tells them (bpf/maple_walk.h).
 * - v8_test_sample, a perf_event program: the same walk per cpu-clock
 *   sample of target_tgid, for BPF's run time per sample (bpf_stats).
 */
#include "bpf/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "bpf/profile.h"
#include "bpf/maple_walk.h"
#include "tests/bpf/test_maps.h"
/* The process's set-up. */
TEST_PROCS(v8_procs, struct v8_proc);

#include "bpf/v8_walk.h"
#include "tests/bpf/v8_test.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct v8_test_result);
} result SEC(".maps");

struct walk_state {
	struct v8_walk v;
	__u64 pc, sp, bp;
	__u32 n, end, exact, hardirq;
};

/* Whether look is in anonymous executable memory (JIT code: *anon) or
 * in the builtins (*blt). */
static __always_inline void code_of(struct task_struct *task, const struct v8_walk *v, __u64 look, int *anon,
				    int *blt)
{
	struct vm_area_struct *vma = task->mm ? mt_lookup(task->mm, look) : 0;
	struct file *f;
	__u64 start;

	*anon = *blt = 0;
	if (!vma)
		return;
	start = BPF_CORE_READ(vma, vm_start);
	if (look < start || look >= BPF_CORE_READ(vma, vm_end) || !(BPF_CORE_READ(vma, vm_flags) & 0x4))
		return;
	f = BPF_CORE_READ(vma, vm_file);
	if (!f) {
		*anon = 1;
		return;
	}
	*blt = v8_builtins(v, BPF_CORE_READ(f, f_inode, i_sb, s_dev), BPF_CORE_READ(f, f_inode, i_ino),
			   look - start + (BPF_CORE_READ(vma, vm_pgoff) << 12));
}

static long step(__u64 i, void *data)
{
	struct walk_state *s = data;
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct v8_test_result *r = bpf_map_lookup_elem(&result, &zero);
	__u64 look = s->pc - (s->exact ? 0 : 1), ra, nbp;
	int anon, blt, end;

	if (!r || s->n >= TEST_FRAMES)
		return 1;
	/* (bpf_find_vma, used here before, fails while another thread maps
	 * or unmaps, which V8's GC threads do: JIT frames were then lost in
	 * one stop in fifteen under load. The sampler never takes the lock.) */
	code_of(task, &s->v, look, &anon, &blt);
	if (!s->hardirq && s->n < TEST_FRAMES)
		r->pcs[s->n] = s->pc;
	s->n++;
	if (s->v.on && (anon || blt)) {
		struct v8_regs vr = { s->pc, s->sp, s->bp };

		end = v8_step(&s->v, &vr, s->n - 1, blt);
		s->pc = vr.pc;
		s->sp = vr.sp;
		s->bp = vr.bp;
	} else {
		if (!s->bp)
			end = PROF_UE_FP_END;
		else if (s->bp < s->sp || bpf_probe_read_user(&ra, 8, (void *)(s->bp + 8)) ||
			 bpf_probe_read_user(&nbp, 8, (void *)s->bp))
			end = PROF_UE_BAD_FRAME;
		else if (!ra)
			end = PROF_UE_FP_END;
		else {
			s->sp = s->bp + 16;
			s->bp = nbp;
			s->pc = ra;
			end = 0;
		}
	}
	s->exact = 0;
	if (end) {
		s->end = end;
		return 1;
	}
	return 0;
}

static __always_inline void walk(struct pt_regs *regs, __u32 tgid, int hardirq)
{
	__u32 zero = 0;
	struct v8_test_result *r = bpf_map_lookup_elem(&result, &zero);
	struct walk_state s = {};

	if (!r)
		return;
	v8_begin(&s.v, bpf_map_lookup_elem(&v8_procs, &tgid), bpf_ktime_get_ns());
	s.pc = PT_REGS_IP(regs);
	s.sp = PT_REGS_SP(regs);
	s.bp = PT_REGS_FP(regs);
	s.exact = 1;
	s.hardirq = hardirq;
	s.end = PROF_UE_TRUNC;
	bpf_loop(TEST_FRAMES, step, &s, 0);
	if (!hardirq) {
		r->npcs = s.n;
		r->uend = s.end;
		r->njs = v8_emit(&s.v, r->frames, 0);
		r->end = s.v.end;
		r->runs++;
	} else {
		r->js_total += s.v.njs;
		r->samples++;
	}
}

SEC("uprobe")
int v8_test_read(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	/* uv_fs_read(loop, req, file 0, ...) in the target process: a stop's
	 * (known.js reads stdin nowhere else) */
	if ((id >> 32) != target_tgid || PT_REGS_PARM3(ctx) != 0)
		return 0;
	walk(ctx, id >> 32, 0);
	return 0;
}

SEC("perf_event")
int v8_test_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;

	if (id >> 32 != target_tgid || !task->mm)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	walk(regs, id >> 32, 1);
	return 0;
}
