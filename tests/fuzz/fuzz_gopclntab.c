/* fuzz_gopclntab: a Go binary's function table is whatever bytes a local
 * user put in a file. gopclntab__walk and gopclntab__walk_sp (the stack
 * depths the unwinder builds rows from) and gopclntab__line (a frame's
 * file and line) never crash or read past them,
 * and every name it hands on lies inside the table, is non-empty and has
 * no control byte; a function never ends before it begins. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/symbols/gopclntab.h"

struct span {
	const uint8_t *lo, *hi;
};

static int check(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t n)
{
	const struct span *s = ctx;

	if (!n || (const uint8_t *)name < s->lo || (const uint8_t *)name + n > s->hi || end < entry)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((uint8_t)name[i] < 0x20)
			abort();
	return 0;
}

/* A run of one stack depth: within the function's bounds, not empty. */
static int check_sp(void *ctx, uint64_t lo, uint64_t hi, int32_t d, const char *name, size_t n)
{
	(void)d;
	if (hi <= lo)
		abort();
	return check(ctx, lo, hi, name, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The table's own copy, so ASan sees a read one past it. */
	uint8_t *t = malloc(size ? size : 1);
	struct span s = { t, t + size };

	if (!t)
		return 0;
	memcpy(t, data, size);
	gopclntab__layout(t, size);
	gopclntab__walk(t, size, 0x401000, check, &s);
	gopclntab__walk(t, size, 0, check, &s);
	gopclntab__walk_sp(t, size, 0x401000, check_sp, &s);
	/* Lines at addresses about the text: a path returned lies in the
	 * table, NUL-terminated there. */
	for (uint64_t pc = 0x401000; pc < 0x401000 + 4096; pc += 61) {
		uint32_t fo;
		int32_t ln;

		if (!gopclntab__line(t, size, 0x401000, pc, &fo, &ln) &&
		    (fo >= size || !memchr(t + fo, 0, size - fo)))
			abort();
	}
	free(t);
	return 0;
}
