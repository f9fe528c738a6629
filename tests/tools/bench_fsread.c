/*
 * bench_fsread.c - timed reads of a mounted /prof tree for `make bench`
 * (plain POSIX calls, the way a client sees the mount).
 *
 *   bench_fsread ls DIR [REPEAT]          readdir of DIR: entries, ms per pass
 *   bench_fsread first-byte FILE...       per file: open + read of 1 byte, ms
 *   bench_fsread read FILE REPEAT         whole-file reads: ms and MB/s each
 *   bench_fsread parallel N SECONDS LIST  N threads read whole files named in
 *                                         LIST (one per line, each once) until
 *                                         the list or the time runs out
 * Results are key=value lines on stdout; exit 1 on any read error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/tools/bench.h"

#define RBUF (1 << 20)

/* Reads all of path through buf[RBUF]; returns bytes read or -1. */
static long read_all(const char *path, char *buf)
{
	long total = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "bench_fsread: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = read(fd, buf, RBUF)) > 0)
		total += n;
	if (n < 0)
		fprintf(stderr, "bench_fsread: read %s: %s\n", path, strerror(errno));
	close(fd);
	return n < 0 ? -1 : total;
}

static int do_ls(const char *dir, int repeat)
{
	double *t = calloc(repeat, sizeof(double));
	long count = 0;

	for (int i = 0; i < repeat; i++) {
		double t0 = now();
		DIR *d = opendir(dir);
		struct dirent *e;

		if (!d) {
			fprintf(stderr, "bench_fsread: opendir %s: %s\n", dir, strerror(errno));
			return 1;
		}
		count = 0;
		while ((e = readdir(d)))
			count++;
		closedir(d);
		t[i] = (now() - t0) * 1e3;
	}
	printf("entries=%ld\nfirst_ms=%.2f\n", count, t[0]);
	qsort(t, repeat, sizeof(double), cmp_d);
	printf("median_ms=%.2f\nmin_ms=%.2f\n", t[repeat / 2], t[0]);
	free(t);
	return 0;
}

static int do_first_byte(int n, char **files)
{
	double *t = calloc(n, sizeof(double));

	for (int i = 0; i < n; i++) {
		double t0 = now();
		char c;
		int fd = open(files[i], O_RDONLY);

		if (fd < 0 || read(fd, &c, 1) != 1) {
			fprintf(stderr, "bench_fsread: %s: %s\n", files[i], strerror(errno));
			return 1;
		}
		t[i] = (now() - t0) * 1e3;
		close(fd);
	}
	printf("files=%d\nfirst_ms=%.2f\n", n, t[0]);
	qsort(t, n, sizeof(double), cmp_d);
	printf("median_ms=%.2f\nmax_ms=%.2f\nmin_ms=%.2f\n", t[n / 2], t[n - 1], t[0]);
	free(t);
	return 0;
}

static int do_read(const char *file, int repeat)
{
	double *t = calloc(repeat, sizeof(double));
	char *buf = malloc(RBUF);
	long size = 0;

	if (!t || !buf)
		return 1;
	for (int i = 0; i < repeat; i++) {
		double t0 = now();

		size = read_all(file, buf);
		if (size < 0)
			return 1;
		t[i] = (now() - t0) * 1e3;
	}
	free(buf);
	qsort(t, repeat, sizeof(double), cmp_d);
	printf("bytes=%ld\nmedian_ms=%.3f\nmin_ms=%.3f\nmedian_MBps=%.0f\n", size,
	       t[repeat / 2], t[0], size / 1e6 / (t[repeat / 2] / 1e3));
	free(t);
	return 0;
}

static char **plist;
static long nlist;
static atomic_long next_idx, done, errs;
static atomic_llong bytes;
static double deadline;

static void *reader(void *arg)
{
	char *buf = malloc(RBUF);

	(void)arg;
	if (!buf) {
		atomic_fetch_add(&errs, 1);
		return NULL;
	}
	for (;;) {
		long i = atomic_fetch_add(&next_idx, 1), n;

		if (i >= nlist || now() > deadline)
			break;
		n = read_all(plist[i], buf);
		if (n < 0) {
			atomic_fetch_add(&errs, 1);
			continue;
		}
		atomic_fetch_add(&bytes, n);
		atomic_fetch_add(&done, 1);
	}
	free(buf);
	return NULL;
}

static int do_parallel(int n, double secs, const char *list)
{
	FILE *f = fopen(list, "r");
	pthread_t *th = calloc(n, sizeof(*th));
	char line[4096];
	long cap = 0;
	double t0, el;

	if (!f || !th)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!*line)
			continue;
		if (nlist == cap) {
			cap = cap ? cap * 2 : 1024;
			plist = realloc(plist, cap * sizeof(char *));
		}
		plist[nlist++] = strdup(line);
	}
	fclose(f);
	t0 = now();
	deadline = t0 + secs;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	el = now() - t0;
	printf("readers=%d\nfiles=%ld\nerrors=%ld\nseconds=%.2f\nrenders_per_s=%.1f\nMBps=%.1f\n",
	       n, (long)done, (long)errs, el, done / el, bytes / 1e6 / el);
	for (long i = 0; i < nlist; i++)
		free(plist[i]);
	free(plist);
	free(th);
	return errs ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "ls"))
		return do_ls(argv[2], argc > 3 ? atoi(argv[3]) : 5);
	if (argc >= 3 && !strcmp(argv[1], "first-byte"))
		return do_first_byte(argc - 2, argv + 2);
	if (argc == 4 && !strcmp(argv[1], "read"))
		return do_read(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "parallel"))
		return do_parallel(atoi(argv[2]), atof(argv[3]), argv[4]);
	fprintf(stderr, "usage: bench_fsread ls DIR [REPEAT] | first-byte FILE... |"
			" read FILE REPEAT | parallel N SECONDS LIST\n");
	return 2;
}
