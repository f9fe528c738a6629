/* fuzz_pyline: CPython line tables read from another process's memory
 * (sampler/python/linetable.c). For every version's format the decoder
 * never crashes, leaks or reads past the bytes it is given; a table it
 * accepts has ranges that grow, no more of them than entries, and
 * pyline__line_at agrees with a linear scan of them. The first 4 bytes
 * are co_firstlineno, the rest the table. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/python/linetable.h"

static void check(const struct pyline *t, size_t len)
{
	uint32_t prev = 0;

	if (t->n > len)
		abort();
	for (uint32_t i = 0; i < t->n; i++) {
		const struct pyline_range *r = &t->r[i];
		int32_t line = 0;

		if (r->end <= prev)
			abort();
		/* Its first byte and its last. */
		uint32_t probe[] = { prev, r->end - 1 };
		for (int k = 0; k < 2; k++) {
			int err = pyline__line_at(t, probe[k], &line);

			if (r->line == PYLINE_NONE ? err != -ENODATA : err || line != r->line)
				abort();
		}
		if (i && r->line == t->r[i - 1].line)
			abort(); /* adjacent ranges of one line are merged */
		prev = r->end;
	}
	int32_t line;
	if (pyline__line_at(t, prev, &line) != -ERANGE || pyline__line_at(t, UINT32_MAX, &line) != -ERANGE)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first = 0;
	uint8_t *tab;
	size_t len;

	if (size >= 4) {
		memcpy(&first, data, 4);
		data += 4;
		size -= 4;
	}
	/* Its own allocation of exactly len bytes, so ASan sees any read past. */
	len = size;
	tab = malloc(len ? len : 1);
	if (!tab)
		return 0;
	memcpy(tab, data, len);
	for (int minor = 10; minor <= 13; minor++) {
		struct pyline *t = pyline__decode(minor, tab, len, first);

		if (!t) {
			if (errno != EINVAL && errno != EFBIG && errno != ENOMEM)
				abort();
			continue;
		}
		check(t, len);
		pyline__free(t);
	}
	free(tab);
	return 0;
}
