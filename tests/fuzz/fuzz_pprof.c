/*
 * fuzz_pprof.c - libFuzzer target for the pprof decoder. Whatever the
 * bytes, pprof__decode must either refuse them with a reason or return a
 * profile that every consumer can use: it re-encodes, the encoding decodes
 * again to the same bytes, and all renderers run on it. ASan/UBSan catch
 * the rest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "fs/render/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *q = NULL;
	uint8_t *e1 = NULL, *e2 = NULL;
	size_t n1 = 0, n2 = 0;
	struct buf b = { 0 };
	char err[256];

	if (pprof__decode(data, size, &p, err, sizeof(err))) {
		if (!err[0] || strchr(err, '\n'))
			abort(); /* a refusal always says why, on one line */
		return 0;
	}
	if (pprof__encode(p, &e1, &n1))
		abort();
	if (pprof__decode(e1, n1, &q, err, sizeof(err)))
		abort(); /* we must accept what we write */
	if (pprof__encode(q, &e2, &n2) || n1 != n2 || memcmp(e1, e2, n1))
		abort(); /* encoding is a fixed point */
	render__folded(p, &b);
	buf__free(&b);
	render__top(p, &b);
	buf__free(&b);
	render__svg(p, "fuzz", &b);
	buf__free(&b);
	profile__free(p);
	profile__free(q);
	free(e1);
	free(e2);
	return 0;
}
