/*
 * rbfile.h - is this ELF file CRuby (a libruby-X.Y.so, or a ruby
 * executable linked with it statically), which version, and what the
 * per-process set-up needs from it.
 *
 * A file is CRuby when its dynamic symbols (else .symtab) define
 * `ruby_version`, `rb_vm_exec` and `ruby_current_ec`; the version is
 * `ruby_version`'s string. Debian's libruby-3.1.so is stripped, so the
 * few facts that have no exported symbol are read from the code of two
 * exported one-liners, by matching the handful of instructions GCC
 * makes of them (and refused, not guessed, when they do not match):
 *   rb_during_gc:  vm->objspace, the objspace's flags byte, during_gc's bit;
 *   ruby_thread_has_gvl_p: the thread pointer in TLS, its blocking region;
 *   rb_id2str:     the ID -> serial rule, and (in the function it jumps
 *                  to) ruby_global_symbols' last_id and ids fields.
 * Addresses are link-time (add a mapping's load bias).
 *
 * Files are untrusted: reads are bounded by the file and its PT_LOAD
 * segments, code matched within the function's symbol size, anything
 * inconsistent refused with -EINVAL.
 */
#ifndef PROFFS_RBFILE_H
#define PROFFS_RBFILE_H

#include <stdint.h>

/* A fact the code did not tell (rbfile fields below). */
#define RBF_UNKNOWN (-1)

struct rbfile {
	int major, minor, teeny; /* ruby_version "3.1.2" */
	uint64_t vm_exec, vm_exec_size;	/* rb_vm_exec: the merge's anchor */
	uint64_t vm_ptr;		/* ruby_current_vm_ptr (rb_vm_t *), 0 if none */
	/* ruby_current_ec's TLS: the GOT pair the dynamic linker fills
	 * (R_X86_64_DTPMOD64 at tls_modid_got) and the offset in libruby's
	 * TLS block (DTPOFF64's value). 0/0: no such relocation (TLSDESC or
	 * a static executable: not supported). */
	uint64_t tls_modid_got, tls_dtpoff;
	/* From rb_during_gc (RBF_UNKNOWN when it did not match). */
	int32_t vm_objspace, objspace_flags, during_gc_bit;
	/* From ruby_thread_has_gvl_p: the thread's rb_thread_t pointer's
	 * place in libruby's TLS block, and its blocking_region_buffer
	 * (set while the thread runs without the GVL). */
	int32_t th_dtpoff, th_blocking;
	/* From rb_id2str: an ID above id_last_op is shifted right by
	 * id_scope_shift to give its serial. */
	int32_t id_last_op, id_scope_shift;
	/* ruby_global_symbols (its last_id field, the struct's first) and
	 * the distance of its ids field from it; 0 when not found. */
	uint64_t global_symbols;
	int32_t symbols_ids;
	char build_id[41];
};

/*
 * Reads the ELF file open at fd (only read; the caller keeps it) into
 * *rf. Returns 0; -ENOEXEC: not an ELF file we read (or not x86-64
 * little-endian 64-bit); -ENOENT: not CRuby; -EINVAL: a ruby_version
 * that is no version, or symbols outside the file; -ENOMEM. Facts the
 * code did not tell are left RBF_UNKNOWN / 0 (the layout check decides).
 */
int rbfile__read(int fd, struct rbfile *rf);

#endif
