/*
 * sampler.h - loading bpf/profile.bpf.c, attaching it to a cpu-clock
 * perf event on every online CPU, and draining its ring buffer.
 */
#ifndef PROFFS_SAMPLER_H
#define PROFFS_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/profile.h"
#include "sampler/unwind/unwinder.h" /* the record layouts (store/profile/profile.h is another file) */

struct sampler;

struct sampler_opts {
	int hz;              /* samples per second per CPU; 0 = 19 */
	pid_t target_tgid;   /* 0 = every process */
	size_t ring_bytes;   /* 0 = sized from hz and the CPU count */
	/* Unwind tables for the BPF walk (borrowed; started after load).
	 * NULL: the kernel's frame-pointer walk. */
	struct unwinder *unwinder;
	/* With an unwinder: anonymous code of a process with no rt_procs
	 * entry is left to user space (its pending walks must run and call
	 * runtimes__mark_native). */
	bool anon_wait;
	/* Called from sampler__poll() for each record, in ring order. The
	 * record (size bytes) is only valid during the call. */
	void (*on_sample)(void *ctx, const struct prof_sample_ev *ev, size_t size);
	void (*on_task)(void *ctx, const struct prof_task_ev *ev);
	void *ctx;
};

/* Loads and attaches. A kernel that refuses the unwind tables or a
 * runtime's walk gets the object without them (sampler/ring/kfeature.h
 * says so): see sampler__walks_tables and sampler__rt_walks. Returns 0 or
 * -errno with a logged reason (-EPERM/-ENOSYS etc. when the kernel or
 * privileges do not allow BPF, or refuse the smallest object). */
int sampler__open(struct sampler **out, const struct sampler_opts *o);
/* Drains whatever is in the ring, waiting up to timeout_ms for a wakeup
 * (lifecycle records wake at once; samples are picked up on the next
 * poll). Returns the number of records handled or -errno. */
int sampler__poll(struct sampler *s, int timeout_ms);
/* Sums the per-CPU loss/volume counters (enum prof_counter). */
int sampler__counters(struct sampler *s, uint64_t out[PROF_CNT_MAX]);
struct buf;
/* Appends /prof/metrics lines of what samples cost the BPF program, by
 * the runtime of the process sampled (time and count: a runtime's walk
 * against native samples of the same seconds). */
void sampler__cost_metrics(struct sampler *s, struct buf *out);
/* A runtime's walks by how they ended (its enum py_end, rb_end, ... and
 * what its map counts after them), as its BPF map named `map` counts
 * them (rt_ops.ends_map), summed over CPUs into out[0..n) (zeros without
 * a sampler or the map). Returns 0 or -errno. */
int sampler__rt_ends(struct sampler *s, const char *map, uint64_t *out, size_t n);
/* Tells BPF how to walk tgid's runtime frames (c copied), or stops it
 * (c NULL). Returns 0 or -errno (-E2BIG: RT_MAX_PROCS are walked). The
 * BPF side forgets a process itself at exec and exit, and copies its
 * entry to a forked child. */
int sampler__rt_set(struct sampler *s, pid_t tgid, const struct rt_proc *c);
/* Makes a sampler__poll waiting now (or the next one) return at once;
 * once per sampler (the daemon's stop). Any thread. */
void sampler__wake(struct sampler *s);
/* Number of CPUs with an attached event. */
int sampler__ncpus(struct sampler *s);
/* The descriptors of the unwind tables' maps (row chunks, rules, files;
 * bpf/unwind_walk.h), owned by s and valid until sampler__close, for
 * another BPF program to walk user stacks with. Returns 0, or -ENOENT
 * when s walks frame pointers. */
int sampler__unwind_fds(struct sampler *s, struct unwind_fds *out);
/* The descriptor of the map of runtime processes BPF walks
 * (sampler__rt_set fills it), owned by s and valid until sampler__close. */
int sampler__rt_procs_fd(struct sampler *s);
/* Does BPF walk user stacks with the unwinder's tables (the kernel took
 * them)? false: frame pointers, and the unwinder was not started. */
bool sampler__walks_tables(const struct sampler *s);
/* The runtime walks the kernel took, 1 << enum rt_kind each. */
uint32_t sampler__rt_walks(const struct sampler *s);
/* Detaches and frees. */
void sampler__close(struct sampler *s);

#endif
