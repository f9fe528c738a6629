/* rss.h - what of a file this test process has resident: the KiB that
 * /proc/self/smaps counts for the mappings of the path. For the tests of
 * code that gives mapped pages back (the store's, a debug file's). */
#ifndef PROFFS_TESTS_UNIT_RSS_H
#define PROFFS_TESTS_UNIT_RSS_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* KiB of path's mappings resident in this process, or -1. */
static inline long file_rss_kib(const char *path)
{
	char line[4608];
	FILE *f = fopen("/proc/self/smaps", "re");
	size_t want = strlen(path);
	long kib = 0;
	bool in = false;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		long v;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, ' ')) {
			size_t n = strlen(line);

			while (n && line[n - 1] == '\n')
				line[--n] = 0;
			in = n >= want && !strcmp(line + n - want, path);
		} else if (in && sscanf(line, "Rss: %ld kB", &v) == 1) {
			kib += v;
		}
	}
	fclose(f);
	return kib;
}

#endif
