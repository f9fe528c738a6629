/*
 * rbproc.h - a Ruby process's set-up for the BPF walk (struct rb_proc),
 * the walk's user-space twin, and the merge of a sample's Ruby frames
 * into its native stack. The pipeline (the lead's per-runtime version of
 * sampler/python/pyproc.c) calls these; nothing here keeps state.
 */
#ifndef PROFFS_RBPROC_H
#define PROFFS_RBPROC_H

#include <stdint.h>
#include <sys/types.h>

#include "bpf/ruby.h"
#include "sampler/ruby/rbfile.h"
#include "sampler/ruby/rblayout.h"

/* A libruby as the loader found it (the pipeline keeps one per file,
 * with its symbols, as struct pyfile). */
struct rbinfo {
	int status; /* 0; -EOPNOTSUPP: no row for its version; -EPROTO: the row's check failed */
	struct rbfile rf;
	const struct rblayout *l; /* NULL unless status is 0 */
	char why[160];		  /* why status is not 0 */
};

/*
 * Is the ELF file at fd (path: for messages) CRuby, and can we walk it?
 * Fills *ri. Returns 0 (ri->status tells whether we can walk it);
 * -ENOENT: not CRuby; -ENOEXEC, -EINVAL, -ENOMEM: rbfile__read's.
 * PROFFS_RB_WITHHOLD=X.Y in the environment makes X.Y unknown (tests of
 * an unknown version).
 */
int rbproc__detect(int fd, const char *path, struct rbinfo *ri);

/*
 * Fills *c for process pid, which maps the libruby file rf (checked
 * layout row l) with load bias `bias`, and sets *symbols to the runtime
 * address of its ruby_global_symbols (rbcodes__get needs it). Reads the
 * process: the TLS module id the dynamic linker wrote (and the DTPOFF
 * word, which must equal the file's), the VM's objspace pointer, the
 * symbol table's header (which must look like one). Returns 0; -EAGAIN:
 * not initialised yet (no module id, no VM, no objspace): look again
 * later; -EOPNOTSUPP: a TLS model we do not walk (TLSDESC, a static
 * executable); -EPROTO: the process contradicts the row or the file;
 * -ESRCH, -EPERM, -EFAULT: it could not be read.
 */
int rbproc__setup(pid_t pid, const struct rbfile *rf, const struct rblayout *l, uint64_t bias,
		  struct rb_proc *c, uint64_t *symbols);

/*
 * The BPF walk (bpf/ruby_walk.h) done from user space over
 * process_vm_readv, for a thread of pid whose fsbase is known (stopped
 * with ptrace): the same records, the same end, the same static TLS
 * offset kept in *c. Writes at most max records to out. Returns the
 * records written | enum rb_end << 16, as rb_walk does.
 */
int rbproc__twin(pid_t pid, uint64_t fsbase, struct rb_proc *c, struct rb_frame *out, int max);

/* ---- the merge ---- */

/* What each native frame is to the merge. */
enum rbm_kind {
	RBM_NATIVE = 0, /* kept where it is */
	RBM_ANCHOR,	/* a frame in rb_vm_exec: its Ruby frames take its place */
	RBM_MARKER,	/* a marker that ends the user stack early (unwind failed) */
};

/* One frame of the merged stack: native frame i, Ruby record i, or the
 * GC marker ([ruby: gc]; i is record 0, the GC record). */
struct rbm_item {
	uint8_t ruby; /* 0 native, 1 Ruby record, 2 GC marker */
	int16_t i;
};

/*
 * The merged stack, leaf first, of n native frames (leaf first, kinds
 * kind[0..n)) and m Ruby records (rec[0..m), newest first, as BPF wrote
 * them) into out[0..max). The rule:
 *  - each anchor takes the next group of Ruby records, through the next
 *    one flagged RB_FRAME_FINISH (the frames that rb_vm_exec call ran),
 *    in its place. A group starts with the C methods its Ruby code
 *    called (newest), so a C method stands rootward of the C frames it
 *    ran (`sort_by` above enum_sort_by, rb_block_call, ...), and a block
 *    a C method yielded to is the next group, leafward of those C frames;
 *  - an anchor with no records left stays native;
 *  - a marker that ends the user stack gets every record left, before it;
 *  - records still left after the last native frame go at the root end;
 *  - a GC record (record 0, RB_FRAME_GC) becomes a GC marker just
 *    leafward of the first Ruby frame placed (so the GC's C frames sit
 *    under it, and it under the Ruby code that allocated).
 * Returns the count written to out.
 */
int rbmerge(const uint8_t *kind, int n, const struct rb_frame *rec, int m, struct rbm_item *out,
	    int max);

#endif
