/*
 * fuzz_retry_after.c - libFuzzer target for the one thing --push reads
 * from a server's headers: a Retry-After line. The bytes are copied to a
 * buffer of exactly their size (libcurl's header lines are not
 * NUL-terminated), so a read past them is an ASan error. Whatever the
 * bytes: -1 or 0..RETRY_AFTER_MAX, and "Retry-After: <digits>\r\n" gives
 * the number, capped.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/push/retry_after.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = malloc(size ? size : 1);
	int64_t v;

	if (!b)
		return 0;
	memcpy(b, data, size);
	v = retry_after__parse(b, size);
	if (v < -1 || v > RETRY_AFTER_MAX)
		abort();
	free(b);
	/* The well-formed line built from the input's leading digits. */
	{
		char line[64] = "Retry-After: ";
		size_t n = strlen(line), d = 0;
		int64_t want = 0;

		while (d < size && d < 12 && data[d] >= '0' && data[d] <= '9') {
			line[n++] = (char)data[d];
			want = want * 10 + (data[d] - '0');
			d++;
		}
		memcpy(line + n, "\r\n", 2);
		n += 2;
		v = retry_after__parse(line, n);
		if (d && v != (want > RETRY_AFTER_MAX ? RETRY_AFTER_MAX : want))
			abort();
		if (!d && v != -1)
			abort();
	}
	return 0;
}
