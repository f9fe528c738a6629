/*
 * ruby.h - what a BPF program needs to walk a CRuby thread's control
 * frames, and what it writes for each, shared with sampler/ruby/.
 * Compiles in BPF and in user space (no libc types).
 *
 * User space fills one struct rb_proc per Ruby process (tgid) once it
 * knows the libruby file, its layout row and the process's load bias
 * (sampler/ruby/rbproc.h). For each sample the walk (bpf/ruby_walk.h)
 * finds the sampled thread's own execution context through its TLS
 * variable ruby_current_ec (never the GVL holder's), and walks at most
 * RB_MAX_FRAMES control frames, newest first, writing a struct rb_frame
 * per Ruby method, block or C method after the native frames. No strings
 * are read in BPF: user space names an iseq or a method entry later, and
 * the stamp tells it whether the object at that address is still the one
 * sampled.
 */
#ifndef PROFFS_BPF_RUBY_H
#define PROFFS_BPF_RUBY_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Control frames looked at per sample (deeper stacks end RB_END_TRUNC). */
#define RB_MAX_FRAMES 64
/* Ruby processes the BPF map holds at most. */
#define RB_MAX_PROCS 1024
/* Bytes of a control frame read at once: every field a row names must
 * lie within them (pc, iseq and ep in 3.1). */
#define RB_CFP_READ 40

/* struct rb_proc.flags */
#define RB_TLS_STATIC 1u /* tls_off is known: the EC pointer is at fsbase + tls_off */

/* Per process (BPF map rb_procs, key: tgid). */
struct rb_proc {
	/* ruby_current_ec's TLS block: with RB_TLS_STATIC at fsbase +
	 * tls_off (libruby in the initial TLS image, learnt by the walk from
	 * the first DTV it reads); else dtv = *(fsbase + 8), block =
	 * dtv[modid].val, the EC pointer at block + dtpoff. */
	__s64 tls_off;
	__u64 modid, dtpoff;
	/* The objspace's flags word (0: not known, no GC frames) and the
	 * during_gc bit in it. The GC is the sampled thread's only when it
	 * is not in a blocking region: its rb_thread_t pointer at th_dtpoff
	 * in the TLS block, blocking_region_buffer at th_blocking in it. */
	__u64 gc_flags;
	__u64 th_dtpoff;
	__u32 gc_mask;
	__u32 flags;
	/* A layout row's offsets (sampler/ruby/rblayout.h). */
	__u16 ec_vm_stack, ec_vm_stack_size, ec_cfp;
	__u16 cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	__u16 iseq_body, me_def, th_blocking;
	__u16 pad[2];
};

/* One Ruby frame in a sample record: two of its __u64 frame slots. */
struct rb_frame {
	/* An iseq (rb_iseq_t) or a method entry (RB_FRAME_CFUNC), with flags
	 * in the low 3 bits (Ruby objects are 8-byte aligned); 0 with
	 * RB_FRAME_GC for the GC marker. */
	__u64 addr;
	__u32 pc;	/* an iseq frame's pc, its low 32 bits (0 for others) */
	__u32 stamp;	/* rb_stamp() of iseq->body, or of me->def */
};

#define RB_FRAME_FINISH 1ull /* the first frame its C-level rb_vm_exec ran */
#define RB_FRAME_CFUNC 2ull  /* a C method: addr is its method entry */
#define RB_FRAME_GC 4ull     /* not a frame: the GC was running (first record) */
#define RB_FRAME_FLAGS 7ull

/* The environment's flags word (ep[0]) and what the walk takes from it
 * (CRuby's vm_core.h; the same from 2.3 to 3.4). */
#define RB_ENV_MAGIC_MASK 0x7fff0001u
#define RB_MAGIC_CFUNC 0x55550001u
#define RB_ENV_FLAG_FINISH 0x20u
#define RB_ENV_FLAG_CFRAME 0x80u

/* How a sample's Ruby walk ended. */
enum rb_end {
	RB_END_NONE = 0, /* not a Ruby process */
	RB_END_OK,	 /* reached the thread's oldest frame */
	RB_END_IDLE,	 /* the thread has no EC (not a Ruby thread) or no frame */
	RB_END_TRUNC,	 /* RB_MAX_FRAMES, or no room left in the record */
	RB_END_READ,	 /* a read of the process's memory failed */
	RB_END_MAX,
};
/* rb_ends also counts samples taken while the GC ran, at this index. */
#define RB_CNT_GC RB_END_MAX

/*
 * The stamp of an iseq (its body pointer) or of a method entry (its
 * definition pointer) as BPF read it. User space computes it again from
 * what it reads later; a different value means the object at that
 * address was freed and the address reused.
 */
static inline __u32 rb_stamp(__u64 p)
{
	__u64 h = p * 0x9e3779b97f4a7c15ull;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return (__u32)(h ^ (h >> 32)) | 1u; /* never 0: 0 is "no stamp" */
}

#endif
