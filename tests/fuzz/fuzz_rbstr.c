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

/* Strict UTF-8 without NUL: true when p[0..n) is. */
static bool valid(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k;

		if (!p[i])
			return false;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0)
			k = 1, cp = p[i] & 0x1f;
		else if ((p[i] & 0xf0) == 0xe0)
			k = 2, cp = p[i] & 0x0f;
		else if ((p[i] & 0xf8) == 0xf0)
			k = 3, cp = p[i] & 0x07;
		else
			return false;
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n || (p[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

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
	if (w >= cap || out[w] || strlen(out) != w || !valid((uint8_t *)out, w) ||
	    (!cut && w < size))
		abort();
done:
	free(obj);
	free(out);
	return 0;
}
