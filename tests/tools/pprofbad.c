/*
 * pprofbad - writes the crafted malformed pprof files of
 * tests/unit/pprof_bad.h into DIR, one NAME.pb each, and prints
 * "NAME<TAB>expected reason substring" per file for the test to check.
 * Also writes DIR/good.pb, the unbroken profile they all start from
 * (not listed).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/pprof_bad.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pprofbad DIR\n");
		return 2;
	}
	{
		struct pb_good g;
		size_t n = 0;
		uint8_t *b;
		char path[4096];
		FILE *f;

		pb_good_init(&g);
		b = pb_pack(&g.m, &n);
		snprintf(path, sizeof(path), "%s/good.pb", argv[1]);
		f = fopen(path, "wb");
		if (!b || !f || fwrite(b, 1, n, f) != n || fclose(f)) {
			perror(path);
			return 1;
		}
		free(b);
	}
	for (size_t i = 0; i < PB_NBAD; i++) {
		const char *expect;
		size_t n = 0;
		uint8_t *b = pb_bad(i, &n, &expect);
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s.pb", argv[1], pb_bad_names[i]);
		f = fopen(path, "wb");
		if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
			perror(path);
			return 1;
		}
		printf("%s\t%s\n", pb_bad_names[i], expect);
		free(b);
	}
	return 0;
}
