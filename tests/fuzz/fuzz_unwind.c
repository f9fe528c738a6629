/* fuzz_unwind: the unwind table compiler (sampler/unwind/table.c) over
 * arbitrary ELF input never crashes or leaks, and what it builds is a
 * table the BPF walk can trust: rows strictly sorted, every rule index
 * valid. The twin then walks a stack made of the same bytes through that
 * table without reading outside them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/unwind/table.h"
#include "sampler/unwind/twin.h"

static const struct unw_table *cur;

static int map_fn(void *ctx, uint64_t addr, struct twin_map *m)
{
	if (addr < 0x1000 || addr >= 0x1000 + (1u << 24))
		return -1;
	m->start = 0x1000;
	m->end = 0x1000 + (1u << 24);
	m->pgoff = 0;
	m->kind = TWIN_TABLE;
	m->rows = cur->rows;
	m->nrows = cur->nrows;
	m->rules = cur->rules;
	m->nrules = cur->nrules;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unw_table *t;
	uint8_t *img = malloc(size ? size : 1);

	if (!img)
		return 0;
	memcpy(img, data, size);
	if (unw_table__compile_mem(img, size, &t) == 0) {
		if (!t->nrows || t->nrules < 1)
			abort();
		for (size_t i = 0; i < t->nrows; i++)
			if (t->rows[i].rule >= t->nrules || (i && t->rows[i].off <= t->rows[i - 1].off))
				abort();
		/* A walk over the input's own bytes as the stack. */
		struct twin_mem mem = { 0x7f0000000000ull, data, size };
		struct twin_regs r = { .pc = 0x1000 + (size > 64 ? data[64] : 0), .sp = mem.base,
				       .bp = mem.base + 16, .bp_ok = true, .exact = true };
		__u64 out[PROF_MAX_FRAMES];
		int n = 0;

		cur = t;
		twin__walk(&r, &mem, map_fn, NULL, out, &n, PROF_MAX_FRAMES);
		if (n > PROF_MAX_FRAMES)
			abort();
		unw_table__free(t);
	}
	free(img);
	return 0;
}
