/*
 * retry_after.c - see retry_after.h. Fuzzed (tests/fuzz/fuzz_retry_after.c):
 * the bytes come from whatever server --push points at.
 */
#include "sampler/push/retry_after.h"

#include <stdbool.h>
#include <strings.h>

int64_t retry_after__parse(const char *b, size_t len)
{
	static const char name[] = "Retry-After:";
	const size_t nl = sizeof(name) - 1;
	int64_t v = 0;
	size_t i = nl;
	bool digits = false;

	if (len <= nl || strncasecmp(b, name, nl))
		return -1;
	while (i < len && (b[i] == ' ' || b[i] == '\t'))
		i++;
	for (; i < len && b[i] >= '0' && b[i] <= '9'; i++) {
		digits = true;
		if (v <= RETRY_AFTER_MAX)
			v = v * 10 + (b[i] - '0');
	}
	/* Seconds only (then optional spaces and the line end); an HTTP date
	 * counts as "no hint". */
	while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
		i++;
	if (!digits || i != len)
		return -1;
	return v > RETRY_AFTER_MAX ? RETRY_AFTER_MAX : v;
}
