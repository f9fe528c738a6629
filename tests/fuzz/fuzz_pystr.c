/* fuzz_pystr: CPython str objects read from another process's memory
 * (sampler/python/pycode.c, pystr__decode). For every version's layout,
 * any bytes: the decoder never crashes or reads past them; it asks for
 * more (-EAGAIN) only beyond what it was given and within its cap, and
 * what it decodes is valid UTF-8 without NULs, within the caller's
 * buffer and character count. The first byte picks the buffer size and
 * character cap, the rest is the object. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/python/layout.h"
#include "sampler/python/pycode.h"
#include "tests/fuzz/strict_utf8.h"

static void one(const struct pylayout *l, const uint8_t *obj, size_t len, size_t max_chars,
		size_t cap)
{
	char *out = malloc(cap ? cap : 1); /* exactly cap: ASan sees a write past */
	struct pystr s;
	int err;

	if (!out)
		return;
	err = pystr__decode(l, obj, len, max_chars, out, cap, &s);
	if (err == -EAGAIN) {
		size_t most = max_chars > SIZE_MAX / 8 ? SIZE_MAX
						       : (size_t)l->compact_data + 4 * max_chars;

		if (s.need <= len || s.need > most)
			abort();
	} else if (!err) {
		long chars = utf8_chars((const uint8_t *)out, s.bytes);

		if (s.need > len || s.bytes >= cap || out[s.bytes] || strlen(out) != s.bytes)
			abort();
		if (chars < 0 || (size_t)chars != s.chars || s.chars > max_chars ||
		    s.chars > s.length || s.cut != (s.chars < s.length))
			abort();
	} else if (err != -EINVAL) {
		abort();
	}
	if (!cap && err != -EINVAL)
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 0, 1, 2, 4, 5, 16, 64, 4 * PYCODE_NAME_CHARS + 1 };
	static const size_t maxes[] = { 0, 1, 3, 16, PYCODE_NAME_CHARS, SIZE_MAX };
	uint8_t *obj;
	size_t cap = 64, max_chars = PYCODE_NAME_CHARS;

	if (size >= 1) {
		cap = caps[data[0] & 7];
		max_chars = maxes[(data[0] >> 3) % 6];
		data++;
		size--;
	}
	/* Its own allocation of exactly size bytes, so ASan sees any read past. */
	obj = malloc(size ? size : 1);
	if (!obj)
		return 0;
	memcpy(obj, data, size);
	for (int minor = 10; minor <= 13; minor++) {
		const struct pylayout *l = pylayout__get(minor);

		one(l, obj, size, max_chars, cap);
		/* And the same bytes with room for everything they claim. */
		one(l, obj, size, PYCODE_FILE_CHARS, 4 * PYCODE_FILE_CHARS + 1);
	}
	free(obj);
	return 0;
}
