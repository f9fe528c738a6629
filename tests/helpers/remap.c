/*
 * remap - loads two shared libraries in turn, for argv[1] seconds:
 * dlopen(argv[2]), its remapBurn(), dlclose, then argv[3]'s, and again.
 * The second usually lands where the first was just unmapped, so one
 * address is a different file (another frame layout) every ~40 ms: a walk
 * that trusted an old picture of the process's mappings would apply the
 * wrong file's unwind rules there. Prints how many loads landed where
 * the other library had been ("same base N of M").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* One library's turn; returns its load address, 0 on error. */
__attribute__((noinline)) static unsigned long cycle(const char *path)
{
	struct link_map *lm = NULL;
	void (*burn)(void);
	unsigned long base;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h || !(burn = (void (*)(void))dlsym(h, "remapBurn")) || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
		fprintf(stderr, "remap: %s\n", dlerror());
		return 0;
	}
	base = lm->l_addr;
	burn();
	dlclose(h);
	return base;
}

int main(int argc, char **argv)
{
	double end;
	unsigned long last = 0, base;
	int same = 0, loads = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: remap SECONDS LIB_A LIB_B\n");
		return 2;
	}
	end = now() + atof(argv[1]);
	while (now() < end) {
		for (int i = 2; i <= 3; i++) {
			if (!(base = cycle(argv[i])))
				return 1;
			same += base == last;
			last = base;
			loads++;
		}
	}
	printf("same base %d of %d\n", same, loads);
	return 0;
}
