/*
 * rblayout.c - the rows of rblayout.h and their check.
 *
 * Where the 3.1 numbers come from: CRuby 3.1's vm_core.h (execution
 * context, control frame: pc, sp, iseq, self, ep, block_code, __bp__,
 * jit_return = 64 bytes), iseq.h/vm_core.h (rb_iseq_constant_body:
 * type, iseq_size, iseq_encoded, param (48 bytes), location {pathobj,
 * base_label, label, first_lineno, ...} at 64, insns_info {body,
 * positions, size, succ_index_table} at 120; 12-byte insn_info entries
 * with the line first), method.h (definition: 8 bytes of bit fields, a
 * 24-byte body union, original_id), include/ruby/internal/core/rstring.h
 * and rarray.h (embedded lengths in the flags' user bits), symbol.h
 * (rb_symbols_t: last_id, str_sym, ids) and gc.c (objspace flags after
 * malloc_params), vm_core.h (rb_thread_t's blocking_region_buffer).
 * /work/shared/RUNTIMES.md proved the walk's fields with
 * a live walk of Debian's 3.1.2; test_rbwalk proves them again on every
 * run. The facts the file's code tells (the GC's place, the ID rule,
 * the symbol fields) are checked against each file before use.
 *
 * A new version gets a row from its headers and must pass test_rbwalk
 * and test_rbline on a real build of it.
 */
#include <errno.h>
#include <stdio.h>

#include "sampler/ruby/rblayout.h"

static const struct rblayout rows[] = {
	{
		.major = 3, .minor = 1,
		.ec_vm_stack = 0, .ec_vm_stack_size = 8, .ec_cfp = 16,
		.cfp_size = 64, .cfp_pc = 0, .cfp_iseq = 16, .cfp_ep = 32,
		.iseq_body = 16,
		.body_iseq_size = 4, .body_iseq_encoded = 8,
		.body_pathobj = 64, .body_label = 80, .body_first_lineno = 88,
		.body_insns_info = 120, .body_insns_size = 136, .body_succ_index = 144,
		.insn_info_size = 12, .insn_info_line = 0,
		.me_def = 16, .def_original_id = 32,
		.t_string = 0x05, .t_array = 0x07, .t_imemo = 0x1a,
		.imemo_shift = 12, .imemo_iseq = 7, .imemo_ment = 6,
		.str_len = 16, .str_ptr = 24, .str_embed = 16,
		.str_noembed = 1u << 13, .str_embed_shift = 14, .str_embed_mask = 0x1f,
		.ary_len = 16, .ary_ptr = 32, .ary_embed = 16,
		.ary_embed_flag = 1u << 13, .ary_embed_shift = 15, .ary_embed_mask = 0x3,
		.sym_last_id = 0, .sym_ids = 16, .id_entry_unit = 512, .id_entry_size = 2,
		.id_last_op = 0xa9, .id_scope_shift = 4,
		.vm_objspace = 0x450, .objspace_flags = 0x10, .during_gc_bit = 5,
		.th_blocking = 0xa8,
	},
};

const struct rblayout *rblayout__get(int major, int minor)
{
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].major == major && rows[i].minor == minor)
			return &rows[i];
	errno = EOPNOTSUPP;
	return NULL;
}

#define WHY(...) (why && whylen ? snprintf(why, whylen, __VA_ARGS__) : 0, -EPROTO)

int rblayout__check(const struct rblayout *l, const struct rbfile *rf, char *why, size_t whylen)
{
	const struct {
		const char *what;
		int32_t file, row;
	} f[] = {
		{ "vm->objspace (rb_during_gc)", rf->vm_objspace, l->vm_objspace },
		{ "objspace flags (rb_during_gc)", rf->objspace_flags, l->objspace_flags },
		{ "during_gc bit (rb_during_gc)", rf->during_gc_bit, l->during_gc_bit },
		{ "blocking_region_buffer (ruby_thread_has_gvl_p)", rf->th_blocking, l->th_blocking },
		{ "the thread's TLS (ruby_thread_has_gvl_p)", rf->th_dtpoff >= 0 ? 0 : -1, 0 },
		{ "tLAST_OP_ID (rb_id2str)", rf->id_last_op, l->id_last_op },
		{ "ID_SCOPE_SHIFT (rb_id2str)", rf->id_scope_shift, l->id_scope_shift },
		{ "symbols ids - last_id (rb_id2str)", rf->global_symbols ? rf->symbols_ids : -1,
		  l->sym_ids - l->sym_last_id },
	};

	if (why && whylen)
		why[0] = 0;
	if (rf->major != l->major || rf->minor != l->minor)
		return WHY("a %d.%d row for a %d.%d file", l->major, l->minor, rf->major,
			   rf->minor);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (f[i].file == RBF_UNKNOWN)
			return WHY("%d.%d: the file does not tell %s", l->major, l->minor, f[i].what);
		if (f[i].file != f[i].row)
			return WHY("%d.%d: %s is %d in the file, %d in our row", l->major, l->minor,
				   f[i].what, f[i].file, f[i].row);
	}
	return 0;
}
