/*
 * pathfuzz - random and adversarial lookups and reads over a mounted tree.
 *
 *   pathfuzz MOUNTPOINT [ITERATIONS] [SEED]
 *
 * Builds paths from valid components (types, label pairs, minutes, ranges,
 * file names) mixed with hostile ones (bad dates, "..", 4 KB names, bad
 * %-escapes, deep nesting, unicode and invalid UTF-8, regex bombs for =~)
 * and stats each. Acceptable outcomes: ENOENT, ENAMETOOLONG, ENOTDIR, or
 * success; a regular file found is then read whole, and its size must
 * equal st_size; a directory is listed. Anything else (EIO, ENOTCONN, a
 * size mismatch...) counts as a failure. Finally the mount must still
 * answer. Prints counts; exit 0 when clean, 1 otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tools/xorshift.h"

static const char *const valid[] = {
	"cpu", "merged", "diff", "vs", "latest", "README", "metrics",
	"comm=api", "comm=db", "pid=100", "pid=101", "pid=200", "comm!=api",
	"comm=~a.*", "pid=~1.*", "comm=~(api|db)", "node=x",
	"2026-11-20T10:00", "2026-11-20T10:01", "2026-11-20T11:01",
	"2026-11-20T10", "2026-11-20", "last-15m", "last-6h", "last-7d",
	"2026-11-20T10:00..2026-11-20T11:00", "2026-11-20T09:59..2026-11-20T10:02",
	"profile.pb", "folded.txt", "flamegraph.svg", "top.txt",
};

static const char *const hostile[] = {
	"..", ".", "...", "2026-13-40T25:61", "2026-02-30T10:00", "2026-02-29T10:00",
	"0000-00-00T00:00", "9999-12-31T23:59", "1969-12-31T23:59", "-1",
	"2026-11-20T10:00..2026-11-20T10:00", "2026-11-20T11:00..2026-11-20T10:00",
	"2026-11-20T10:0", "2026-11-20T10:000", "2026-11-20t10:00", "2026-11-20 10:00",
	"+2026-11-20", "2026-11-20T24", "2026-11-32", "20261120",
	"last-0m", "last-m", "last--1h", "last-99999999999999999999d", "last-5y",
	"last-1000000d", "last-15M", "last-1h5m", "..2026-11-20T10:00", "2026-11-20T10:00..",
	"comm=", "=api", "=", "comm", "comm==api", "comm=!api", "comm!=", "comm=~",
	"comm=%", "comm=%G1", "comm=%2", "comm=%zz", "comm=%00", "comm=a%2Fb", "comm=%2F%2F",
	"exe=%2Fusr%2Fbin%2Fpython3", "comm=%25", "comm%3Dapi", "%", "%%", "%2e%2e",
	"comm=h\xc3\xa9llo", "comm=\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x94\xa5", "comm=\xff\xfe",
	"comm=\x01\x02", "comm=a b", "comm=\t", "comm=api\n", " cpu", "cpu ",
	"comm=~(a+)+b", "comm=~((a*)*)*$", "comm=~(.*){1,1000}", "comm=~(a|a)*b",
	"comm=~[", "comm=~(", "comm=~a{99999}", "comm=~a{1,2}{1,2}{1,2}{1,2}{1,2}",
	"comm=~\\", "comm=~*", "comm=~(?:x)", "comm=~[[:alpha:]]+", "comm=~.*.*.*.*.*.*.*.*=",
	"CPU", "Merged", "DIFF", "heap", "profile.PB", "top.txt.bak", "profile.pb~",
	"vs", "vs", "latest", "README", "metrics",
};

/* Checked first, every run: edges that once broke something. */
static const char *const fixed[] = {
	"merged/cpu/9999-12-31T23:59/profile.pb", "cpu/9999-12-31T23:59/top.txt",
	"merged/cpu/9999-12-31/folded.txt", "merged/cpu/9999-12-31T23/top.txt",
	"merged/cpu/2026-11-20T10:00..9999-12-31T23:59/profile.pb",
	"merged/cpu/0000-01-01/profile.pb", "merged/cpu/0001-01-01T00:00/top.txt",
	"merged/cpu/1969-12-31T23:59..2026-11-20T10:00/profile.pb",
	"merged/cpu/1900-01-01..2026-11-20T10:00/folded.txt",
	"merged/cpu/last-99999999999d/profile.pb", "merged/cpu/last-9223372036854775807m/top.txt",
	"merged/cpu/last-3660d/top.txt", "merged/cpu/last-3661d/top.txt", "merged/cpu/last-527040h/top.txt",
	"diff/cpu/9999-12-31/vs/0000-01-01/folded.txt", "diff/cpu/last-99999d/vs/2026-11-20/profile.pb",
	"merged/cpu/comm=~(a+)+b/2026-11-20/top.txt", "merged/cpu/comm=~((a*)*)*$/2026-11-20/top.txt",
	"merged/cpu/comm=~(.*){1,1000}/2026-11-20/top.txt", "merged/cpu/comm=~a{99999}/2026-11-20/top.txt",
	"cpu/comm=%FF%FE/latest", "cpu/comm=%00/2026-11-20T10:00/top.txt", "cpu/latest/top.txt",
	"diff/cpu/2026-11-20T10/vs/vs/2026-11-20T11/top.txt", "diff/cpu/2026-11-20T10/vs/2026-11-20T11/vs/top.txt",
};

static int failures;

/* Reads p whole; its size must be what fstat of the open file says (what
 * cp, tar and rsync trust). A stat before the open may legitimately see
 * an older render of a file that changes (metrics, current minutes). */
static void check_file(const char *p, const struct stat *pst, long *reads)
{
	char buf[65536];
	long long total = 0;
	struct stat fst;
	const struct stat *st = &fst;
	ssize_t n;
	int fd = open(p, O_RDONLY);

	if (fd < 0) {
		printf("FAIL open %s: %s\n", p, strerror(errno));
		failures++;
		return;
	}
	if (fstat(fd, &fst))
		st = pst;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	if (n < 0) {
		printf("FAIL read %s: %s\n", p, strerror(errno));
		failures++;
	} else if (total != (long long)st->st_size) {
		printf("FAIL %s: st_size %lld, read %lld\n", p, (long long)st->st_size, total);
		failures++;
	}
	close(fd);
	(*reads)++;
}

static void check_dir(const char *p, long *lists)
{
	DIR *d = opendir(p);
	struct dirent *de;

	if (!d) {
		printf("FAIL opendir %s: %s\n", p, strerror(errno));
		failures++;
		return;
	}
	errno = 0;
	while ((de = readdir(d)))
		;
	if (errno) {
		printf("FAIL readdir %s: %s\n", p, strerror(errno));
		failures++;
	}
	closedir(d);
	(*lists)++;
}

/* What the lookups found. */
struct counts {
	long ok, enoent, toolong, notdir, reads, lists;
};

/* Stats path and counts what it finds: found (a regular file then read
 * whole; with fuzzed, a directory listed one time in four, by rnd()) or
 * ENOENT, and with fuzzed ENAMETOOLONG and ENOTDIR too. Anything else is
 * a failure, printed; then returns errno as it is after the printing,
 * else 0. */
static int lookup(const char *path, int fuzzed, struct counts *c)
{
	struct stat st;

	if (stat(path, &st) == 0) {
		c->ok++;
		if (S_ISREG(st.st_mode))
			check_file(path, &st, &c->reads);
		else if (fuzzed && S_ISDIR(st.st_mode) && rnd() % 4 == 0)
			check_dir(path, &c->lists);
	} else if (errno == ENOENT) {
		c->enoent++;
	} else if (fuzzed && errno == ENAMETOOLONG) {
		c->toolong++;
	} else if (fuzzed && errno == ENOTDIR) {
		c->notdir++;
	} else {
		printf("FAIL stat %.300s: %s\n", path, strerror(errno));
		failures++;
		return errno;
	}
	return 0;
}

/* Appends one component to path (with its leading '/'). */
static void add_component(char *path, size_t size, int hostile_pct)
{
	size_t len = strlen(path);
	char comp[8192];
	uint64_t r = rnd() % 100;

	if (r < (uint64_t)hostile_pct) {
		uint64_t k = rnd() % 20;

		if (k == 0) { /* a long name: 200..4200 bytes */
			size_t n = 200 + rnd() % 4000;

			memset(comp, "ac=%~"[rnd() % 5], n);
			memcpy(comp, "comm=", 5);
			comp[n] = 0;
		} else if (k == 1) { /* random bytes, no '/' or NUL */
			size_t n = 1 + rnd() % 40;

			for (size_t i = 0; i < n; i++) {
				char c = (char)(1 + rnd() % 255);
				comp[i] = c == '/' ? '_' : c;
			}
			comp[n] = 0;
		} else {
			snprintf(comp, sizeof(comp), "%s",
				 hostile[rnd() % (sizeof(hostile) / sizeof(hostile[0]))]);
		}
	} else {
		snprintf(comp, sizeof(comp), "%s", valid[rnd() % (sizeof(valid) / sizeof(valid[0]))]);
	}
	if (len + 1 + strlen(comp) + 1 < size)
		snprintf(path + len, size - len, "/%s", comp);
}

int main(int argc, char **argv)
{
	struct counts tally = { 0 };
	long iters;
	static char path[65536];
	const char *mp;
	struct stat st;

	if (argc < 2) {
		fprintf(stderr, "usage: pathfuzz MOUNTPOINT [ITERATIONS] [SEED]\n");
		return 2;
	}
	mp = argv[1];
	iters = argc > 2 ? atol(argv[2]) : 10000;
	rng = (argc > 3 ? strtoull(argv[3], NULL, 0) : 42) * 0x9e3779b97f4a7c15ULL + 7;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		int err;

		snprintf(path, sizeof(path), "%s/%s", mp, fixed[i]);
		err = lookup(path, 0, &tally);
		if (err) {
			if (err == ENOTCONN || err == ECONNABORTED)
				iters = 0; /* the daemon is gone */
			break;
		}
	}
	for (long i = 0; i < iters; i++) {
		uint64_t shape = rnd() % 10;
		int ncomp, hostile_pct, err;

		snprintf(path, sizeof(path), "%s", mp);
		if (shape < 5) { /* mostly valid, one hostile somewhere */
			ncomp = 1 + rnd() % 7;
			hostile_pct = 15;
		} else if (shape < 8) { /* anything goes */
			ncomp = 1 + rnd() % 10;
			hostile_pct = 50;
		} else if (shape < 9) { /* deep nesting of selections */
			static const char *const labels[] = {
				"comm=api", "pid=100", "comm!=db", "pid=~1.*", "comm=~.*",
			};
			size_t len;

			snprintf(path, sizeof(path), "%s/%s", mp, rnd() % 2 ? "cpu" : "merged/cpu");
			for (int c = 20 + rnd() % 60; c > 0; c--) {
				len = strlen(path);
				snprintf(path + len, sizeof(path) - len, "/%s", labels[rnd() % 5]);
			}
			ncomp = rnd() % 2;
			hostile_pct = 20;
		} else { /* a known-good prefix, then a hostile tail */
			snprintf(path, sizeof(path), "%s/%s", mp,
				 rnd() % 2 ? "merged/cpu" : "diff/cpu/comm=api/2026-11-20/vs");
			ncomp = 1 + rnd() % 3;
			hostile_pct = 60;
		}
		for (int c = 0; c < ncomp; c++)
			add_component(path, sizeof(path), hostile_pct);

		err = lookup(path, 1, &tally);
		if (err == ENOTCONN || err == ECONNABORTED)
			break;
		if (failures > 20)
			break;
	}
	snprintf(path, sizeof(path), "%s/README", mp);
	if (stat(path, &st) || !S_ISREG(st.st_mode)) {
		printf("FAIL mount no longer answers: %s\n", strerror(errno));
		failures++;
	} else {
		check_file(path, &st, &tally.reads);
	}
	printf("%ld lookups: %ld found (%ld files read, %ld dirs listed), %ld ENOENT, "
	       "%ld ENAMETOOLONG, %ld ENOTDIR, %d failures\n",
	       iters, tally.ok, tally.reads, tally.lists, tally.enoent, tally.toolong, tally.notdir, failures);
	return failures ? 1 : 0;
}
