/* fuzz_v8pos: V8's position tables, Sparkplug's pc -> bytecode tables
 * and line ends (sampler/v8/v8pos.c) from arbitrary bytes. Never a crash
 * or a read past the input; an entry found is at or before the offset
 * asked, and later offsets find later (or the same) entries; a line found
 * ends at or after the position. Input: 1 byte split point, 1 byte which
 * table, then the bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/v8/v8pos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t sizes[3][256];
	int64_t prev_at = INT64_MIN;
	size_t split, n;
	uint32_t ends[64], line;

	if (size < 2)
		return 0;
	split = data[0] * (size - 2) / 255;
	for (int64_t off = -1; off < 300; off += 7) {
		uint64_t raw;
		int64_t at;
		int err = v8pos__find(data + 2, size - 2, off, &raw, &at);

		if (!err && (at > off || at < prev_at || v8pos__external(raw)))
			abort();
		if (!err)
			prev_at = at;
		if (err && err != -ENOENT && err != -EINVAL)
			abort();
	}
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 256; k++)
			sizes[s][k] = (uint8_t)(1 + (k * 7 + s * 3 + data[1]) % 9);
	for (uint32_t pc = 0; pc < 200; pc += 13) {
		int32_t bc;
		int err = v8pos__baseline(data + 2, split, data + 2 + split, size - 2 - split, sizes,
					  1 + data[1], pc, &bc);

		if (!err && (bc < -1 || (size_t)(bc + 1) > size - 2 - split))
			abort();
	}
	n = data[1] & 1 ? v8pos__line_ends2(data + 2, (size - 2) / 2, ends, 64)
			: v8pos__line_ends1(data + 2, size - 2, ends, 64);
	if (n > 64)
		n = 64;
	for (uint32_t pos = 0; pos < size; pos += 5)
		if (!v8pos__line(ends, n, pos, &line) && (line >= n || ends[line] < pos))
			abort();
	return 0;
}
