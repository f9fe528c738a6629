/*
 * jitmap - a stand-in for a JIT: copies a machine-code loop into an
 * anonymous executable mapping, announces it in /tmp/perf-PID.map as
 * "jitted_hot_loop" (the perf map convention), and runs it for argv[1]
 * seconds (default 10). Removes the map file at exit. x86-64 only
 * (exits 77 elsewhere). With JITMAP_PRINT set, writes no map: prints the
 * code's "ADDRESS SIZE" (hex) on stdout instead, for a test to write a
 * map of its own making (another owner, mode or content).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	/* mov ecx, 50000000; loop: dec ecx; jnz loop; ret */
	static const unsigned char code[] = { 0xb9, 0x80, 0xf0, 0xfa, 0x02, 0xff, 0xc9,
					      0x75, 0xfc, 0xc3 };
	double secs = argc > 1 ? atof(argv[1]) : 10;
	char path[64];
	struct timespec t0, t;
	unsigned char *mem;
	FILE *f;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	/* Not at the start of the page: offsets must be honoured. */
	memcpy(mem + 64, code, sizeof(code));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (getenv("JITMAP_PRINT")) {
		printf("%lx %zx\n", (unsigned long)(mem + 64), sizeof(code));
		fflush(stdout);
		path[0] = 0;
	} else {
		f = fopen(path, "w");
		if (!f)
			return 1;
		fprintf(f, "%lx %zx jitted_hot_loop\n", (unsigned long)(mem + 64), sizeof(code));
		fclose(f);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		((void (*)(void))(mem + 64))();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	if (path[0])
		unlink(path);
	return 0;
#else
	fprintf(stderr, "jitmap: x86-64 only\n");
	return 77;
#endif
}
