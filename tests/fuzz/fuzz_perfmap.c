/* fuzz_perfmap: the perf-map parser (bytes any local user writes to
 * /tmp/perf-PID.map) never crashes or leaks, holds at most
 * PERFMAP_MAX_SYMS symbols, and every name it returns is a NUL-terminated
 * string without control bytes (it ends up in folded.txt and SVG). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/symbols/perfmap.h"

static void check_name(const char *n)
{
	if (!n)
		return;
	if (!*n)
		abort(); /* an empty name is skipped by the parser */
	for (; *n; n++)
		if ((unsigned char)*n < 0x20 || *n == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	struct perfmap *m = NULL;
	size_t nlong = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0; /* as safefile__read_all leaves it */
	if (perfmap__parse(buf, size, 0, &m, &nlong))
		return 0;
	if (perfmap__bytes(m) < sizeof(void *))
		abort();
	/* Probe addresses that appear in the input, and around them. */
	for (size_t i = 0; i + 8 <= size && i < 4096; i += 7) {
		uint64_t a;

		memcpy(&a, data + i, 8);
		check_name(perfmap__lookup(m, a));
		check_name(perfmap__lookup(m, a & 0xffffffff));
		check_name(perfmap__lookup(m, strtoull((const char *)buf + i, NULL, 16)));
	}
	check_name(perfmap__lookup(m, 0));
	check_name(perfmap__lookup(m, UINT64_MAX));
	perfmap__free(m);
	return 0;
}
