/* fuzz_path: the path parser never crashes, never leaks, and whatever it
 * accepts has a canonical form that parses back to itself; encoding any
 * label pair and parsing it back gives the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/path/path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct path_query q, q2;
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;

	if (path__parse(s, &q) == 0) {
		int64_t from, to;

		if (path__parse(q.canon, &q2) != 0 || strcmp(q.canon, q2.canon) ||
		    q.node != q2.node)
			abort();
		path_query__fini(&q2);
		if (q.has_ra) {
			path_range__window(&q.ra, 1700000000, &from, &to);
			if (to <= from)
				abort();
		}
		if (q.area == AREA_DIFF) {
			struct path_matcher *m;
			size_t n;

			if (path_query__sel_b(&q, &m, &n) == 0) {
				if (n > q.a.nm + q.b.nm)
					abort();
				free(m);
			}
		}
		(void)path_query__immutable(&q, 1700000000);
		path_query__fini(&q);
	}

	/* Round trip: the input split at its first NUL-free '\x01' into a
	 * name and a value (both NUL-terminated by construction). */
	{
		char *sep = strchr(s, 1);

		if (sep && sep != s) {
			char *pair, *path;

			*sep = 0;
			pair = path__encode_pair(s, sep + 1);
			if (pair && asprintf(&path, "/cpu/%s", pair) > 0) {
				if (path__parse(path, &q) != 0 || q.a.nm != 1 ||
				    strcmp(q.a.m[0].name, s) || strcmp(q.a.m[0].value, sep + 1) ||
				    q.a.m[0].op != STORE_EQ)
					abort();
				path_query__fini(&q);
				free(path);
			}
			free(pair);
		}
	}
	free(s);
	return 0;
}
