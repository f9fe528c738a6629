/*
 * rblayout.h - where a CRuby version (x86-64, the default build: no
 * VM_DEBUG_BP_CHECK, USE_RVARGC off) keeps the fields the walk and the
 * naming read: one row per version, and a check of a row against what a
 * libruby file itself tells (rbfile.h) before the row is trusted.
 */
#ifndef PROFFS_RBLAYOUT_H
#define PROFFS_RBLAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/ruby/rbfile.h"

struct rblayout {
	int major, minor;
	/* rb_execution_context_t */
	int16_t ec_vm_stack, ec_vm_stack_size, ec_cfp;
	/* rb_control_frame_t */
	int16_t cfp_size, cfp_pc, cfp_iseq, cfp_ep;
	/* rb_iseq_t -> rb_iseq_constant_body */
	int16_t iseq_body;
	int16_t body_iseq_size, body_iseq_encoded; /* unsigned int, VALUE * */
	int16_t body_pathobj, body_label, body_first_lineno; /* location's */
	int16_t body_insns_info, body_insns_size, body_succ_index;
	int16_t insn_info_size, insn_info_line; /* struct iseq_insn_info_entry */
	/* rb_method_entry_t -> rb_method_definition_t */
	int16_t me_def, def_original_id;
	/* RBasic flags: T_STRING, T_ARRAY, T_IMEMO in its low 5 bits; an
	 * imemo's type (iseq, method entry) in the 4 bits at imemo_shift. */
	uint32_t t_string, t_array, t_imemo, imemo_shift, imemo_iseq, imemo_ment;
	/* RString: the heap form's len and ptr; the embedded bytes, their
	 * length's bits in flags, and the flag of the heap form. */
	int16_t str_len, str_ptr, str_embed;
	uint32_t str_noembed, str_embed_shift, str_embed_mask;
	/* RArray likewise (embedded: flag set, length in flags). */
	int16_t ary_len, ary_ptr, ary_embed;
	uint32_t ary_embed_flag, ary_embed_shift, ary_embed_mask;
	/* ruby_global_symbols: last_id and ids; ids[serial / unit] is an
	 * array of `entry_size` VALUEs per serial, the string first. */
	int16_t sym_last_id, sym_ids;
	uint32_t id_entry_unit, id_entry_size;
	int32_t id_last_op, id_scope_shift;
	/* The GC: vm->objspace, its flags, during_gc's bit; a thread's
	 * blocking_region_buffer (rb_thread_t), set while it runs without
	 * the GVL (the GC that runs then is another thread's). */
	int32_t vm_objspace, objspace_flags, during_gc_bit, th_blocking;
};

/* The row for CRuby major.minor, or NULL with errno EOPNOTSUPP. The row
 * is static: it lives as long as the program. */
const struct rblayout *rblayout__get(int major, int minor);

/*
 * Checks row l against the file rf describes: the same version, and
 * every fact the file's code told (the GC's place, the ID rule, the
 * symbol table's fields) equal to the row's; a fact the file did not
 * tell fails the check too. Returns 0 when all agree, -EPROTO when one
 * differs or is missing (why, if not NULL, says which in at most whylen
 * bytes).
 */
int rblayout__check(const struct rblayout *l, const struct rbfile *rf, char *why, size_t whylen);

#endif
