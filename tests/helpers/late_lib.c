/*
 * late_lib.c - a process whose library arrives after ld.so is done
 * (tests/integration/offcpu.sh): it waits DELAY ms, dlopens libz, and
 * blocks in libz's gzread on its stdin (a pipe) until the pipe closes,
 * then exits at once: the daemon's maps read at exec and 10 ms later do
 * not hold libz, no CPU sample asks for them again, and the process is
 * gone by the time its off-CPU block is drained.
 *
 *   late_lib DELAY_MS < pipe
 *
 * Exits 0 once the pipe closed, 1 if libz is missing or the read failed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef void *gzfile_t;

int main(int argc, char **argv)
{
	int delay = argc > 1 ? atoi(argv[1]) : 50;
	gzfile_t (*gz_dopen)(int, const char *);
	int (*gz_read)(gzfile_t, void *, unsigned);
	char buf[64];
	void *h;

	usleep((useconds_t)delay * 1000);
	h = dlopen("libz.so.1", RTLD_NOW);
	gz_dopen = h ? (gzfile_t(*)(int, const char *))dlsym(h, "gzdopen") : NULL;
	gz_read = h ? (int (*)(gzfile_t, void *, unsigned))dlsym(h, "gzread") : NULL;
	if (!gz_dopen || !gz_read) {
		fprintf(stderr, "late_lib: no libz.so.1: %s\n", dlerror());
		return 1;
	}
	/* Its result used after the call: not a tail call, main stays a frame. */
	return gz_read(gz_dopen(0, "rb"), buf, sizeof(buf)) < 0;
}
