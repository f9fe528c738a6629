/*
 * rt_int.h - what a runtime (sampler/python/pyrt.c, sampler/ruby/rbrt.c)
 * gives the pipeline of sampler/runtime/runtime.c, and the helpers the
 * pipeline gives it back. Nothing outside sampler/runtime/ and the
 * runtimes' own rt files includes this.
 */
#ifndef PROFFS_RT_INT_H
#define PROFFS_RT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/runtime/runtime.h"
#include "store/util/hmap.h"

struct vma;
struct twin_regs;
struct twin_mem;
struct rtcache;
struct rtview;

/* A runtime's counters, summed into its /prof/metrics lines. */
struct rt_counts {
	uint64_t frames;	/* runtime frames stored */
	uint64_t stale;		/* frames stored as a marker: the object was freed */
	uint64_t unreadable;	/* ... it could not be read */
	uint64_t unsettled;	/* frames named short of what a later merge may find */
};

/* Its name cache's, taken at the snapshot: hits and misses its view's,
 * errors its own count, bytes its share of the shared cache. */
struct rt_cache_stats {
	uint64_t hits, misses, errors, bytes;
};

struct rt_ops {
	const char *name;	  /* "python": metrics proffs_python_*, frames [python: ...] */
	const char *ends_what;	  /* "walks" (NULL) or "steps": what the ends count */
	uint8_t kind;		  /* enum rt_kind */
	/* Walk ends as bpf/<runtime>.h counts them (enum py_end, rb_end):
	 * labels of proffs_<name>_walks_total{end=...}, NULL to leave one
	 * out; counters after nends in the same map go to extra_metrics. */
	const char *const *ends;
	int nends, nextra;
	const char *ends_map;	  /* the BPF map counting them (bpf/<runtime>.h) */
	const char *stale_reason; /* label of frame_errors for a freed object */
	/* Is fd (symbols e) this runtime's interpreter? Fills f (kind set by
	 * the caller) and returns 0; -ENOENT: not ours; another -errno: not
	 * usable (an error to log). Symbol loader's thread. */
	int (*detect)(int fd, const char *path, const struct elf_info *e, struct rtfile *f);
	void (*file_free)(void *data);
	/* The runtime's state, the sampler thread's: state_size bytes
	 * starting with a struct rt_head, zeroed, which the pipeline makes
	 * and frees. Its names are names_new's view of the shared cache
	 * (RTVIEW_DECLARE's T__view_new, T__view_free); state_init and
	 * state_fini (NULL: none) make and free what else it holds. */
	size_t state_size;
	void *(*names_new)(struct rtcache *rc);
	void (*names_free)(void *names);
	int (*state_init)(void *st);
	void (*state_fini)(void *st);
	/* Sets up the walk of p, whose interpreter file (symbols t, t->rt)
	 * is mapped by v: fills *c and p->rt's layout, anchors and aux, and
	 * returns RTS_WALKED; RTS_WAIT: not initialised yet, look again; any
	 * other state: why it is not walked. May call rt__refresh_maps (v is
	 * invalid after it). */
	int (*setup)(void *st, struct runtimes *rts, struct proc *p, const struct vma *v,
		     const struct symtab *t, struct rt_proc *c);
	/* The merge (runtime.h's runtimes__merge), p walked by this runtime. */
	int (*merge)(void *st, struct proc *p, const struct prof_sample_ev *ev,
		     const struct frame *fr, int n, struct frame *out, int max, struct rt_counts *cnt);
	/* Its names' errors so far (objects that could not be read or
	 * decoded), for name_cache_total{result="error"}. */
	uint64_t (*name_errors)(void *st);
	/* Lines of its own beyond the common ones (NULL: none); extra holds
	 * the nextra counters after its walk ends. */
	void (*extra_metrics)(struct buf *out, const uint64_t *extra);
	/* Runtimes whose frames the native walk steps (HotSpot, V8): the
	 * step BPF takes, for the pending walk (runtime.h's
	 * runtimes__twin_step; NULL: none). */
	int (*twin_step)(void *st, struct proc *p, struct twin_regs *r, const struct twin_mem *mem,
			 const struct twin_map *m, int index, uint64_t rec[2]);
};

/*
 * What every runtime's state starts with, kept by the pipeline: its view
 * of the shared cache, its per-process data (a JVM's tables, a V8's
 * layout: those that keep any), and one merge's names. The pipeline
 * makes and frees them, and forgets a process's data at its exit.
 */
struct rt_pdata {
	struct hmap live;   /* pid + 1 -> data */
	struct rt_dead { void *data; int64_t free_ns; } *dead;
	size_t ndead, capdead;
};
#define RT_TEXT_BYTES (64u << 10)
struct rt_text {
	size_t used;
	char buf[RT_TEXT_BYTES];
};
struct rt_head {
	struct rtview *names; /* names_new's (rtcache.h) */
	struct rt_pdata pdata;
	struct rt_text text;
};

extern const struct rt_ops rt_python_ops, rt_ruby_ops, rt_hotspot_ops, rt_v8_ops;

/* runtimes__new with the runtimes ops[kind] (ops[RT_NONE] unused; every
 * other one set), borrowed for the pipeline's life: a test's fakes. A
 * NULL s tells BPF nothing (the processes' rt_procs entries). */
struct runtimes *runtimes__new_with(struct sampler *s, struct procs *ps,
				    const struct rt_ops *const ops[RT_NKINDS]);

/*
 * What a runtime keeps per process beyond struct rtproc (a JVM's layout
 * read from its tables, a V8's code range): owned here, keyed by pid. A
 * process's data outlives its forget (exec, exit) by RT_PDATA_GRACE_NS,
 * longer than a sample can be held, so a late sample never names with
 * freed memory.
 */
#define RT_PDATA_GRACE_NS (30 * 1000000000LL)
void *rt_pdata__get(const struct rt_pdata *d, pid_t pid);
/* Takes data (malloc'd) as pid's, the one it had going the way of a
 * forget. Returns 0 or -ENOMEM (data freed). */
int rt_pdata__put(struct rt_pdata *d, pid_t pid, void *data);
void rt_pdata__forget(struct rt_pdata *d, pid_t pid);
void rt_pdata__free(struct rt_pdata *d);

/*
 * The merge of runtimes whose native walk wrote one record per frame it
 * stepped (HotSpot, V8): each record names the native frame it belongs to
 * by its index among the sample's user frames (0: the leaf). A native
 * frame with records is replaced by what name() makes of them (one record
 * may stand for several frames: inlined methods, innermost first); every
 * other native frame stays; records tied to no frame go before a marker
 * that ends the user stack. name(ctx, i, ret, out, max) writes the frames
 * of record i (ret: its frame's pc is a return address) and returns how
 * many; nf: the native frame it replaces, NULL for one tied to none).
 * Returns the count written to out.
 */
typedef int (*rt_name_fn)(void *ctx, int i, bool ret, const struct frame *nf, struct frame *out,
			  int max);
int rt__merge_indexed(const struct prof_sample_ev *ev, const struct frame *fr, int n,
		      const uint32_t *index, int nrec, rt_name_fn name, void *ctx,
		      struct frame *out, int max);

/*
 * One merge's names (struct rt_head's text). A runtime's cache may
 * evict an entry at its next call, so the frames of a merge point into
 * this instead, until the next merge (the batch copies the stacks it
 * keeps).
 */
/* A copy of s (NULL: "") in t, or NULL when it does not fit. */
const char *rt_text__keep(struct rt_text *t, const char *s);
typedef void (*rt_display_fn)(const char *name, const char *file, char *out, size_t cap);
/* The display name display(name, file) writes, in t; NULL when fewer
 * than 64 bytes are left. */
const char *rt_text__display(struct rt_text *t, rt_display_fn display, const char *name, const char *file);

/* *o made the marker of a frame at addr that could not be named: freed
 * (stale: its stale_name, counted stale) or not read (unreadable). */
void rt__marker(struct frame *o, uint64_t addr, bool stale, const char *stale_name,
		const char *unreadable, struct rt_counts *cnt);

/* fr[0..n) as they are into out (max at most); how many. */
int rt__copy(const struct frame *fr, int n, struct frame *out, int max);

/* Reads n bytes at addr of process pid. Returns 0 or -errno (-EFAULT: a
 * short read). */
int rt__read(pid_t pid, uint64_t addr, void *buf, size_t n);

/* The pending walk's memory: the stack as the sample copied it, the rest
 * of process pid as it is now. rt__twin_read(ctx, ...) reads it as
 * rt__read does (ctx: a struct rt_twin_mem). */
struct rt_twin_mem {
	pid_t pid;
	const struct twin_mem *stack;
};
int rt__twin_read(void *ctx, uint64_t addr, void *buf, size_t n);

/* Re-reads p's maps if they were read before since_ns (CLOCK_MONOTONIC):
 * the maps read at exec lack what ld.so mapped after it. True when they
 * were read after since_ns (now or before). */
bool rt__maps_fresh(struct runtimes *rts, struct proc *p, int64_t since_ns);

/* p's mapping holding addr, its dso resolved (procs__vma). */
struct vma *rt__vma(struct runtimes *rts, struct proc *p, uint64_t addr);

/* The load bias of the file that v maps (symbols t): its runtime
 * addresses minus its link-time ones; false if no segment holds v's
 * offset. */
bool rt__bias(const struct vma *v, const struct symtab *t, uint64_t *bias);

#endif
