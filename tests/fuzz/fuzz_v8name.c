/* fuzz_v8name: naming JS frames (sampler/v8/v8name.c) over a hostile
 * heap: the input's first 24 bytes are a frame record (object, offset,
 * stamp), the rest is the process's memory at FAKE_BASE; reads elsewhere
 * fail. With V8 11.3's layout (node 20's), every call returns names or an
 * error, never a crash, a leak or a read outside what it asked for; names
 * are NUL-terminated UTF-8. Also the String reader alone, at each tagged
 * word of the heap. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/v8/v8name.h"
#include "tests/fuzz/fake_mem.h"

#define FAKE_BASE 0x100000ull

/* node 20 (V8 11.3) as v8layout__init fills it from the file. */
static const struct v8layout L = {
	.major = 11, .minor = 3, .fp_context = -8, .fp_function = -16, .fp_bytecode_array = -32,
	.fp_bytecode_offset = -40, .map = 0, .map_instance_type = 12, .jsf_shared = 24, .jsf_code = 48,
	.sfi_function_data = 8, .sfi_name_or_scope_info = 16, .sfi_script = 32, .script_source = 8,
	.script_name = 16, .script_line_offset = 24, .script_line_ends = 56, .first_nonstring_type = 128,
	.string_rep_mask = 7, .string_enc_mask = 8, .seq_tag = 0, .cons_tag = 1, .sliced_tag = 3,
	.thin_tag = 5, .one_byte_tag = 8, .string_length = 12, .seq_one_chars = 16, .seq_two_chars = 16,
	.cons_first = 16, .cons_second = 24, .sliced_parent = 16, .sliced_offset = 24, .thin_actual = 16,
	.array_length = 8, .array_data = 16, .bytecode_data = 54, .bytecode_positions = 32,
	.interp_data_bytecode = 8, .code_start_ptr = 40, .code_start_inline = -1, .code_size = 56,
	.code_flags = 48, .code_deopt_data = 16, .code_positions = 24, .kind_mask = 15, .kind_shift = 0,
	.kind_baseline = 11, .dd_inlined_count = 1, .dd_literals = 2, .dd_sfi = 6, .dd_inlining_positions = 7,
	.si_first_vars = 3, .si_ncontextlocals = 2, .si_scope_type_mask = 15, .si_module_scope = 3,
	.si_saved_class_bit = 10, .si_function_var_shift = 12, .si_inferred_name_bit = 14,
	.si_max_inlined_names = 75, .t_sfi = 262, .t_script = 167, .t_scope_info = 261,
	.t_bytecode_array = 191, .t_byte_array = 190, .t_fixed_array = 175, .t_code = 245,
	.t_interpreter_data = 159, .t_oddball = 131, .t_debug_info = 153,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct v8file f;
	struct fake_mem h;
	struct v8_frame fr;
	struct v8name_frame out[4];
	struct v8names *c;
	uint16_t units[64];
	struct v8str st;
	int n;

	if (size < 24)
		return 0;
	memcpy(&fr, data, 16);
	h = (struct fake_mem){ data + 24, size - 24, FAKE_BASE, 1 };
	f.nbytecodes = 200;
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 256; k++)
			f.bc_sizes[s][k] = (uint8_t)(1 + (s + k) % 6);
	/* the object in the heap, its type from the input */
	fr.obj = V8_OBJ(FAKE_BASE + (fr.obj & 0xffff), (fr.obj >> 16) % 5, 0);
	c = v8names__new(1 << 16);
	if (!c)
		return 0;
	for (int pass = 0; pass < 2; pass++) { /* the second from the cache */
		n = v8names__frame(c, 1, &L, &f, fake_mem_read, &h, &fr, data[20] & 1, out, 4);
		if (n > 4 || n == 0)
			abort();
		for (int i = 0; i < n; i++)
			if (strlen(out[i].name) > V8NAME_NAME_CHARS * 3 || strlen(out[i].path) > V8NAME_PATH_BYTES)
				abort();
	}
	v8names__forget(c, 1);
	v8names__free(c);
	for (size_t a = 0; a + 8 <= h.len && a < 512; a += 8) {
		long k = v8name__string(&L, fake_mem_read, &h, FAKE_BASE + a + 1, units, 64, &st);

		if (k > 64)
			abort();
	}
	return 0;
}
