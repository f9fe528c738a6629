/* fuzz_rbline: Ruby line tables read from another process's memory
 * (sampler/ruby/rbline.c). The input: the iseq's size in VALUEs (2
 * bytes), the entry count (2 bytes), then 12-byte insns_info entries,
 * then the succ index (made exactly as long as the size needs, so the
 * lookup runs; a second call with the raw rest checks the length test).
 * The decoder never crashes or reads past what it is given (each part
 * in its own allocation of exactly its size), and every answer is one
 * of the entries' lines, -EBADMSG, or -ERANGE past the code. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/ruby/rbline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t isz = 0, n = 0;
	size_t elen, slen, need;
	uint8_t *ent, *succ;
	struct rbline *t;

	if (size < 4)
		return 0;
	memcpy(&isz, data, 2);
	memcpy(&n, data + 2, 2);
	data += 4;
	size -= 4;
	n %= 1024;
	elen = (size_t)n * 12 <= size ? (size_t)n * 12 : size / 12 * 12;
	n = (uint16_t)(elen / 12);
	slen = size - elen;
	need = rbline__succ_bytes(isz);
	ent = malloc(elen ? elen : 1);
	succ = malloc(need ? need : 1);
	if (!ent || !succ)
		goto out;
	memcpy(ent, data, elen);
	memset(succ, 0, need);
	memcpy(succ, data + elen, slen < need ? slen : need);
	/* The raw rest: accepted only when it is the size Ruby allocates. */
	t = rbline__new(ent, n, 12, 0, data + elen, slen, isz);
	if (t ? (n > 1 && slen != need) : (errno != EINVAL && errno != ENOMEM))
		abort();
	rbline__free(t);
	t = rbline__new(ent, n, 12, 0, succ, need, isz);
	if (!t) {
		if (n <= isz && errno != ENOMEM)
			abort();
		goto out;
	}
	for (uint32_t p = 0; p <= isz; p++) {
		int32_t line = 0;
		int err = rbline__at(t, p, &line);
		uint32_t k;

		if (p == isz ? (n && err != -ERANGE) : 0)
			abort();
		if (err == 0) {
			for (k = 0; k < n && memcmp(ent + 12 * k, &line, 4); k++)
				;
			if (k == n)
				abort();
		} else if (err != -EBADMSG && err != -ERANGE && err != -ENOENT) {
			abort();
		}
	}
	rbline__free(t);
out:
	free(ent);
	free(succ);
	return 0;
}
