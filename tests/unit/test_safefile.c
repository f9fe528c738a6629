/* test_safefile: the opener of files that local users control refuses, by
 * reason and counted, what the daemon must not read: symlinks, FIFOs
 * (without blocking), devices, files over the cap, perf maps owned by
 * another user, files the process's user could not read; the perf map
 * parser skips long lines and cleans names; /proc/PID/stat read for a
 * process running, a zombie and one gone. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/util/pidstat.h"
#include "store/util/safefile.h"
#include "sampler/symbols/perfmap.h"
#include "tests/test.h"

static char dir[] = "/tmp/test_safefile.XXXXXX";

static uint64_t count(enum sf_reason r)
{
	uint64_t c[SF_R_MAX];

	safefile__counts(c);
	return c[r];
}

/* Opens dir/name as a perf map for cred c; checks the result is `want`
 * (0 = opened) and that the refusal, if any, counted under reason r. */
static void expect(const char *name, const struct sf_cred *c, enum sf_kind kind, int want,
		   enum sf_reason r, const char *what)
{
	char p[256];
	uint64_t before = want ? count(r) : 0;
	int rfd = open(dir, O_PATH | O_DIRECTORY), fd;

	snprintf(p, sizeof(p), "%s", name);
	fd = safefile__open(rfd, p, true, true, kind, c, NULL);
	close(rfd);
	if (!want) {
		CHECK(fd >= 0, "%s: opened (%s)", what, fd < 0 ? strerror(-fd) : "ok");
	} else if (want != -ECANCELED) {
		CHECK(fd == want, "%s: %s (got %d)", what, strerror(-want), fd);
	} else {
		CHECK(fd == want && count(r) == before + 1, "%s: refused as %s (got %d, count %llu -> %llu)",
		      what, safefile__reason_name(r), fd, (unsigned long long)before,
		      (unsigned long long)count(r));
	}
	if (fd >= 0)
		close(fd);
}

static void writef(const char *name, const char *s, mode_t mode, uid_t uid)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f) {
		fputs(s, f);
		fclose(f);
	}
	if (chmod(p, mode) || chown(p, uid, uid))
		CHECK(0, "chmod/chown %s", p);
}

int main(void)
{
	struct sf_cred user = { 65534, 65534 }, me = { getuid(), getgid() };
	char p[256], q[256];
	int fd;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return test_done();
	}
	chmod(dir, 0755);
	writef("ok.map", "1000 10 f\n", 0644, 65534);
	writef("root.map", "1000 10 f\n", 0644, 0);
	writef("other.map", "1000 10 f\n", 0644, 1234);
	writef("secret.map", "1000 10 secret\n", 0600, 0);
	snprintf(p, sizeof(p), "%s/fifo.map", dir);
	CHECK(!mkfifo(p, 0644), "mkfifo");
	snprintf(p, sizeof(p), "%s/sparse.map", dir);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && !ftruncate(fd, 100LL << 30), "a 100 GB sparse file");
	close(fd);
	snprintf(p, sizeof(p), "%s/zero.map", dir);
	CHECK(!symlink("/dev/zero", p), "symlink");
	snprintf(p, sizeof(p), "%s/sub", dir);
	snprintf(q, sizeof(q), "%s/linkdir", dir);
	CHECK(!mkdir(p, 0755) && !symlink(p, q), "a directory and a link to it");
	writef("sub/in.map", "1000 10 f\n", 0644, 65534);

	expect("ok.map", &user, SF_PERFMAP, 0, 0, "the user's own perf map");
	expect("root.map", &user, SF_PERFMAP, 0, 0, "a perf map owned by root, readable");
	expect("other.map", &user, SF_PERFMAP, -ECANCELED, SF_R_OWNER, "a perf map of another user");
	expect("secret.map", &user, SF_PERFMAP, -ECANCELED, SF_R_PERMISSION, "a root-only file");
	expect("secret.map", &me, SF_ELF, 0, 0, "the same file for a root process");
	expect("fifo.map", &user, SF_PERFMAP, -ECANCELED, SF_R_NOT_REGULAR, "a FIFO (no block)");
	expect("sparse.map", &user, SF_PERFMAP, -ECANCELED, SF_R_TOO_BIG, "a 100 GB sparse file");
	expect("zero.map", &user, SF_PERFMAP, -ECANCELED, SF_R_SYMLINK, "a symlink to /dev/zero");
	expect("linkdir/in.map", &user, SF_PERFMAP, -ECANCELED, SF_R_SYMLINK, "a symlink on the way");
	expect("sub/in.map", &user, SF_PERFMAP, 0, 0, "the same file without the link");
	expect("../../../etc/passwd", &user, SF_PERFMAP, -ENOENT, 0, "no way out of the root");
	fd = safefile__open(AT_FDCWD, "/dev/zero", false, false, SF_PERFMAP, NULL, NULL);
	CHECK(fd == -ECANCELED, "a device, named directly: refused (%d)", fd);

	/* read_all stops at its cap even when the file grows past fstat. */
	snprintf(p, sizeof(p), "%s/sparse.map", dir);
	fd = open(p, O_RDONLY);
	{
		char *data = NULL;
		size_t len = 0;
		int err = safefile__read_all(fd, 1 << 20, 0, &data, &len);

		CHECK(err == -EFBIG && !data, "read_all of a huge file: -EFBIG (%d)", err);
	}
	close(fd);

	/* The parser: a long line skipped and counted, control bytes cleaned,
	 * later lines win. */
	{
		size_t n = SF_PERFMAP_LINE_MAX + 200, nlong = 0;
		char *b = malloc(n + 200);
		struct perfmap *m = NULL;
		const char *name;

		memset(b, 'x', n);
		memcpy(b, "2000 10 ", 8);
		b[n - 1] = '\n';
		n += sprintf(b + n, "3000 10 a\tb\x01" "c\n3000 10 later\n4000 10 \n");
		CHECK(!perfmap__parse(b, n, 0, &m, &nlong), "parse");
		CHECK(nlong == 1 && !perfmap__lookup(m, 0x2000), "a %d-byte line skipped (%zu)",
		      SF_PERFMAP_LINE_MAX + 200, nlong);
		name = perfmap__lookup(m, 0x3004);
		CHECK(name && !strcmp(name, "later"), "the later of two equal starts wins: %s", name ? name : "none");
		CHECK(!perfmap__lookup(m, 0x4000), "an empty name is no symbol");
		perfmap__free(m);
		b = malloc(64);
		n = sprintf(b, "5000 10 a\tb\x01" "c\n");
		CHECK(!perfmap__parse(b, n, 0, &m, NULL), "parse");
		name = perfmap__lookup(m, 0x5000);
		CHECK(name && !strcmp(name, "a?b?c"), "control bytes become '?': %s", name ? name : "none");
		perfmap__free(m);
	}
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p))
		CHECK(0, "cleanup");
	/* /proc/PID/stat: this process running, started moments ago (boot
	 * time is to the second); a child exited and not reaped a zombie; a
	 * reaped one gone. */
	{
		struct pidstat st;
		struct timespec now;
		int64_t started = pidstat__started_ns(getpid()), age;
		pid_t c;

		clock_gettime(CLOCK_REALTIME, &now);
		age = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - started;
		CHECK(started > 0 && age > -2000000000LL && age < 60000000000LL,
		      "started_ns: this process started %.1f s ago", (double)age / 1e9);
		CHECK(!pidstat__read(getpid(), &st) && st.state == 'R', "pidstat: this process running (%c)",
		      st.state ? st.state : '?');
		c = fork();
		if (c == 0)
			_exit(0);
		for (int i = 0; i < 200 && !pidstat__read(c, &st) && st.state != 'Z'; i++)
			usleep(5000);
		CHECK(!pidstat__read(c, &st) && st.state == 'Z', "pidstat: an exited child not reaped is a zombie (%c)",
		      st.state ? st.state : '?');
		waitpid(c, NULL, 0);
		CHECK(pidstat__read(c, &st) == -ENOENT && pidstat__started_ns(c) == -ENOENT,
		      "pidstat, started_ns: a reaped child is gone (ENOENT)");
	}
	return test_done();
}
