/* fuzz_rbstr: Ruby String and Array headers and string bytes read from
 * another process's memory (sampler/ruby/rbcode.c). Any bytes as an
 * object of any length: the header readers never read past it and what
 * they accept lies within it (embedded) or names a length and a pointer
 * (heap); the UTF-8 sanitizer, for any cap, writes valid UTF-8 without
 * NULs within the cap, NUL-terminated. The first byte picks the cap. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/ruby/rbcode.h"
#include "sampler/ruby/rblayout.h"
#include "tests/fuzz/strict_utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 1, 2, 3, 4, 5, 16, 64, 4100 };
	const struct rblayout *l = rblayout__get(3, 1);
	uint8_t *obj;
	char *out;
	size_t cap = 64, w;
	struct rbstr s;
	struct rbary a;
	bool cut;
	int err;

	if (size >= 1) {
		cap = caps[data[0] & 7];
		data++;
		size--;
	}
	obj = malloc(size ? size : 1);
	out = malloc(cap);
	if (!obj || !out)
		goto done;
	memcpy(obj, data, size);
	err = rbstr__header(l, obj, size, &s);
	if (!err && !s.ptr && (s.at > size || s.len > size - s.at))
		abort();
	if (err && err != -EINVAL && err != -EBADMSG)
		abort();
	err = rbary__header(l, obj, size, &a);
	if (!err && !a.ptr && (a.at > size || a.len > (size - a.at) / 8))
		abort();
	if (err && err != -EINVAL && err != -EBADMSG)
		abort();
	w = rbstr__utf8(obj, size, out, cap, &cut);
	if (w >= cap || out[w] || strlen(out) != w || utf8_chars((uint8_t *)out, w) < 0 ||
	    (!cut && w < size))
		abort();
done:
	free(obj);
	free(out);
	return 0;
}
