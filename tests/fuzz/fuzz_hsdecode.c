/* fuzz_hsdecode: HotSpot's compressed streams as read from a JVM's
 * memory (sampler/java/hsdecode.c): line number tables, PcDesc tables,
 * scopes and Symbols' modified UTF-8. None crashes, leaks or reads past
 * the bytes it is given; a line table decoded is HotSpot's rule applied
 * to its own pairs (the line of a pair's bci is that pair's or an
 * earlier equal one's); a scope read lies within the data; UTF-8 out is
 * valid. The first byte picks x (UNSIGNED5's excluded bytes) and the pc
 * looked up, the rest is the bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/java/hsdecode.h"

/* Valid UTF-8 without NUL, n bytes. */
static void check_utf8(const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;

	if (strlen(s) != n)
		abort();
	for (size_t i = 0; i < n;) {
		size_t k = p[i] < 0x80 ? 1 : (p[i] & 0xe0) == 0xc0 ? 2 : (p[i] & 0xf0) == 0xe0 ? 3
			   : (p[i] & 0xf8) == 0xf0 ? 4 : 0;

		if (!k || i + k > n)
			abort();
		for (size_t j = 1; j < k; j++)
			if ((p[i + j] & 0xc0) != 0x80)
				abort();
		i += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned x;
	uint8_t *buf;
	size_t len, used = 0;
	struct hsline *t;
	char out[64];

	if (size < 1)
		return 0;
	x = data[0] & 1;
	len = size - 1;
	/* Exactly len bytes of its own: ASan sees any read past. */
	buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, len);

	t = hsline__decode(buf, len, x, &used);
	if (t) {
		if (used > len || t->n > len)
			abort();
		for (uint32_t i = 0; i < t->n; i++) {
			int32_t l = hsline__line_at(t, UINT32_MAX, t->p[i].bci);
			uint32_t j;

			if (t->p[i].bci < 0)
				continue;
			/* the first pair of that bci gives its line */
			for (j = 0; j < t->n && t->p[j].bci != t->p[i].bci; j++)
				;
			if (l != t->p[j].line)
				abort();
		}
		if (hsline__line_at(t, 10, -5) != -1 || hsline__line_at(t, 10, 10) != -1)
			abort();
		free(t);
	} else if (errno != ENODATA && errno != EINVAL && errno != E2BIG) {
		abort();
	}

	/* PcDescs of 16 bytes (pc at 0, scope at 4), as HotSpot's. */
	{
		const struct hspc_geo g = { 16, 0, 4 };
		int32_t pc = (int32_t)(data[0] >> 1) * 8, at;
		uint32_t scope;

		for (int exact = 0; exact < 2; exact++)
			if (!hspc__find(buf, len / 16, &g, pc, exact, &scope, &at) && exact && at != pc)
				abort();
		if (hspc__find(buf, len / 16, &(struct hspc_geo){ 4, 2, 0 }, pc, 1, &scope, &at) !=
		    -EINVAL)
			abort();
	}

	/* Scopes from every offset, their chains bounded. */
	for (uint32_t off = 0; off < len && off < 64; off++) {
		struct hsscope s;
		int err = hsscope__read(buf, len, off, x, &s);

		if (!err && !off)
			abort();
	}

	hsstr__utf8(buf, len, out, sizeof(out));
	check_utf8(out, strlen(out));
	if (hsstr__utf8(buf, len, out, 1) != 0 || out[0])
		abort();
	free(buf);
	return 0;
}
