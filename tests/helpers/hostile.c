/*
 * hostile - what a local user may do to a profiler that runs as root
 * (tests/integration/sampler_hostile.sh runs it as nobody):
 *
 *   hostile jit ADDR SECS MODE [TARGET]
 *       runs a machine-code loop copied to anonymous executable memory at
 *       ADDR (hex) for SECS seconds, as a JIT does, and makes
 *       /tmp/perf-PID.map hostile: MODE fifo (a FIFO), sparse (a 100 GB
 *       sparse file), link (a symlink to TARGET: /dev/zero, a root-only
 *       file), rewrite (a valid map naming the loop "jit_rewritten",
 *       rewritten in place 1000 times a second by a thread), stale (a
 *       valid map naming it "jit_stale_name", dated an hour before).
 *   hostile maps N SECS     maps N one-page executable regions (each
 *       different from its neighbours so none merge), runs in the last.
 *   hostile comm SECS       renames itself to a comm holding ';', a
 *       space, a newline and bytes that are not UTF-8, then spins.
 *   hostile badelf OUT      writes a copy of itself whose section header
 *       table claims 2^32 entries and whose .symtab is larger than the
 *       file (the kernel runs it all the same: exec reads no sections).
 *   hostile spin SECS       a plain spinner (the witness); prints the CPU
 *       time it used, in nanoseconds, at exit.
 * x86-64 only for the JIT modes (exit 77 elsewhere).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* mov ecx, 5000000; loop: dec ecx; jnz loop; ret */
static const unsigned char code[] = { 0xb9, 0x40, 0x4b, 0x4c, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

volatile unsigned long sink;

__attribute__((noinline)) static void spin_some(void)
{
	for (unsigned long i = 0; i < 5000000; i++)
		sink = sink * 31 + i;
}

static int spin(double secs)
{
	double t0 = now();
	struct timespec c;

	while (now() - t0 < secs)
		spin_some();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
	printf("%lld\n", (long long)c.tv_sec * 1000000000LL + c.tv_nsec);
	return 0;
}

static void *jit_at(uintptr_t addr)
{
	void *m = mmap((void *)addr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (m == MAP_FAILED || (uintptr_t)m != addr) {
		perror("hostile: mmap");
		exit(1);
	}
	memcpy((char *)m + 64, code, sizeof(code));
	return (char *)m + 64;
}

static void run_jit(void *fn, double secs)
{
	double t0 = now();

	while (now() - t0 < secs)
		((void (*)(void))fn)();
}

static char map_path[64];
static void *fn_addr;

/* In place, as a careless JIT would: the reader may see it half written. */
static void *rewriter(void *arg)
{
	char buf[65536];
	int n = 0;

	(void)arg;
	for (int i = 0; i < 1000; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%lx 1 jit_filler_%d\n",
			      0x100000UL + 16UL * i, i);
	n += snprintf(buf + n, sizeof(buf) - n, "%lx %zx jit_rewritten\n", (unsigned long)fn_addr,
		      sizeof(code));
	for (;;) {
		int fd = open(map_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			if (write(fd, buf, n) != n)
				perror("hostile: write");
			close(fd);
		}
		usleep(1000);
	}
	return NULL;
}

static int jit(int argc, char **argv)
{
#if defined(__x86_64__)
	uintptr_t addr = strtoul(argv[2], NULL, 16);
	double secs = atof(argv[3]);
	const char *mode = argv[4];
	pthread_t t;
	int fd;

	fn_addr = jit_at(addr);
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
	if (!strcmp(mode, "fifo")) {
		if (mkfifo(map_path, 0644))
			return perror("hostile: mkfifo"), 1;
	} else if (!strcmp(mode, "sparse")) {
		fd = open(map_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, 100LL << 30))
			return perror("hostile: sparse"), 1;
		close(fd);
	} else if (!strcmp(mode, "link") && argc > 5) {
		if (symlink(argv[5], map_path))
			return perror("hostile: symlink"), 1;
	} else if (!strcmp(mode, "rewrite")) {
		if (pthread_create(&t, NULL, rewriter, NULL))
			return 1;
	} else if (!strcmp(mode, "stale")) {
		/* a well-formed map dated an hour before this process: as a dead
		 * process's map left in /tmp looks to one that got its pid */
		struct timespec old[2];
		FILE *f = fopen(map_path, "w");

		if (!f || fprintf(f, "%lx %zx jit_stale_name\n", (unsigned long)fn_addr, sizeof(code)) < 0 ||
		    fclose(f))
			return perror("hostile: stale map"), 1;
		clock_gettime(CLOCK_REALTIME, &old[0]);
		old[0].tv_sec -= 3600;
		old[1] = old[0];
		if (utimensat(AT_FDCWD, map_path, old, 0))
			return perror("hostile: utimensat"), 1;
	} else {
		fprintf(stderr, "hostile: bad jit mode %s\n", mode);
		return 2;
	}
	run_jit(fn_addr, secs);
	unlink(map_path);
	return 0;
#else
	fprintf(stderr, "hostile: x86-64 only\n");
	return 77;
#endif
}

static int maps(int argc, char **argv)
{
#if defined(__x86_64__)
	long n = atol(argv[2]);
	double secs = atof(argv[3]);
	char *m = mmap(NULL, n * 4096L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *last = NULL;

	if (m == MAP_FAILED)
		return perror("hostile: mmap"), 1;
	/* One region cut in n: neighbours differ in protection, so none merge. */
	for (long i = 0; i < n; i++) {
		memcpy(m + i * 4096L + 64, code, sizeof(code));
		if (i & 1)
			continue;
		if (mprotect(m + i * 4096L, 4096, PROT_READ | PROT_EXEC)) {
			fprintf(stderr, "hostile: %ld mappings: %s\n", i, strerror(errno));
			return 1;
		}
		last = m + i * 4096L + 64;
	}
	fprintf(stderr, "hostile: %ld mappings\n", n);
	run_jit(last, secs);
	return 0;
#else
	return 77;
#endif
}

static int comm(double secs)
{
	/* 15 bytes: the kernel's limit */
	static const char name[] = "a;b c\n\xff\xfe\xc3(z;\n";

	prctl(PR_SET_NAME, name, 0, 0, 0);
	double t0 = now();

	while (now() - t0 < secs)
		spin_some();
	return 0;
}

static int badelf(const char *out)
{
	int in = open("/proc/self/exe", O_RDONLY), fd;
	struct stat st;
	char *b;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;

	if (in < 0 || fstat(in, &st))
		return perror("hostile: self"), 1;
	b = malloc(st.st_size);
	if (!b || read(in, b, st.st_size) != st.st_size)
		return perror("hostile: read self"), 1;
	close(in);
	eh = (Elf64_Ehdr *)b;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) > (uint64_t)st.st_size) {
		fprintf(stderr, "hostile: not a 64-bit ELF with section headers\n");
		return 1;
	}
	sh = (Elf64_Shdr *)(b + eh->e_shoff);
	int found = 0;
	for (int i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB) {
			sh[i].sh_size = (uint64_t)st.st_size * 16;
			found = 1;
		}
	if (!found) {
		fprintf(stderr, "hostile: no .symtab to corrupt (stripped build?)\n");
		return 1;
	}
	/* Extended numbering: e_shnum 0 says "the count is section 0's sh_size". */
	sh[0].sh_size = 1ULL << 32;
	eh->e_shnum = 0;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, b, st.st_size) != st.st_size)
		return perror("hostile: write"), 1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!strcmp(m, "jit") && argc > 4)
		return jit(argc, argv);
	if (!strcmp(m, "maps") && argc > 3)
		return maps(argc, argv);
	if (!strcmp(m, "comm") && argc > 2)
		return comm(atof(argv[2]));
	if (!strcmp(m, "badelf") && argc > 2)
		return badelf(argv[2]);
	if (!strcmp(m, "spin") && argc > 2)
		return spin(atof(argv[2]));
	fprintf(stderr, "usage: hostile jit ADDR SECS fifo|sparse|link|rewrite [TARGET] | maps N SECS | "
			"comm SECS | badelf OUT | spin SECS\n");
	return 2;
}
