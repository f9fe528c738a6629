/*
 * strict_utf8.h - the fuzzers' own judge of the UTF-8 a decoder writes,
 * independent of the code under test.
 */
#ifndef PROFFS_TESTS_FUZZ_STRICT_UTF8_H
#define PROFFS_TESTS_FUZZ_STRICT_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Strict UTF-8: shortest forms, no surrogates, nothing past U+10FFFF,
 * no NUL; returns the code points of p[0..n), or -1. */
static long utf8_chars(const uint8_t *p, size_t n)
{
	long chars = 0;

	for (size_t i = 0; i < n; chars++) {
		uint32_t cp;
		size_t k;

		if (!p[i])
			return -1;
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
			return -1;
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n || (p[i + j] & 0xc0) != 0x80)
				return -1;
			cp = cp << 6 | (p[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		i += k + 1;
	}
	return chars;
}

#endif
