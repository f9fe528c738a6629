/*
 * unwind_table FILE... - compiles each ELF file's unwind table as the
 * daemon does (sampler/unwind/table.c) and prints rows, distinct rules,
 * ranges with rules we do not implement, the build time and the source
 * section. With -v, every row. For BENCHMARKS.md and for looking at a
 * table by hand.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler/unwind/table.h"

int main(int argc, char **argv)
{
	int verbose = argc > 1 && !strcmp(argv[1], "-v"), rc = 0;

	for (int i = 1 + verbose; i < argc; i++) {
		struct unw_table *t;
		struct timespec a, b;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), err;

		if (fd < 0) {
			perror(argv[i]);
			rc = 1;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &a);
		err = unw_table__compile(fd, NULL, NULL, &t);
		clock_gettime(CLOCK_MONOTONIC, &b);
		close(fd);
		if (err) {
			printf("%s: no table: %s\n", argv[i], strerror(-err));
			continue;
		}
		printf("%s: %zu rows, %zu rules, %u unsupported ranges, %.1f ms, %s\n", argv[i], t->nrows,
		       t->nrules, t->unsupported,
		       (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6, t->source);
		for (size_t r = 0; verbose && r < t->nrows; r++) {
			const struct unw_rule *u = &t->rules[t->rows[r].rule];

			printf("  %#x cfa %d%+d ra %d%+d bp %d%+d flags %u arg %u\n", t->rows[r].off, u->cfa,
			       u->cfa_off, u->ra, u->ra_off, u->bp, u->bp_off, u->flags, u->arg);
		}
		unw_table__free(t);
	}
	return rc;
}
