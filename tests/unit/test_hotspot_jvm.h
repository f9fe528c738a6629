/*
 * test_hotspot_jvm.h - starting and talking to tests/helpers/java/Known
 * for the tests of sampler/java/ (included by tests/unit/test_hotspot*.c).
 *
 * The JDKs: Debian's 17 at /usr/lib/jvm/java-17-openjdk-amd64 (deps.sh
 * installs it) and Temurin 25 at /usr/lib/jvm/temurin-25-jdk-amd64 (on
 * these hosts, unpackaged); PROFFS_JDK17 and PROFFS_JDK25 name others.
 * A JDK that is not there is a FAIL that names it, never a skip.
 *
 * Known.class and libknownjni.so are found next to the test binary
 * (build/tests/java/, the Makefile's JAVA_HELPERS). Every JVM started is
 * killed by pid (jvm_stop) on every path out of a scenario.
 */
#ifndef PROFFS_TEST_HOTSPOT_JVM_H
#define PROFFS_TEST_HOTSPOT_JVM_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sampler/java/jvmfile.h"
#include "sampler/symbols/elfsym.h"
#include "tests/spawn.h"


struct jvm {
	pid_t pid;
	int in, out;	      /* its stdin (we write), stdout (we read) */
	char buf[1 << 16];    /* what it printed, not yet consumed */
	size_t len;
	char libjvm[512];
	struct jvmfile jf;
	uint64_t bias;
};

static inline const char *jdk_home(int major)
{
	const char *env = getenv(major == 17 ? "PROFFS_JDK17" : "PROFFS_JDK25");

	if (env && *env)
		return env;
	return major == 17 ? "/usr/lib/jvm/java-17-openjdk-amd64"
			   : "/usr/lib/jvm/temurin-25-jdk-amd64";
}

static inline const char *java_dir(void)
{
	static char dir[4096];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);

	if (n < 0)
		return "java";
	dir[n] = 0;
	snprintf(dir + strlen(dirname(dir)), sizeof(dir) - strlen(dir), "/java");
	return dir;
}

static inline int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what the JVM prints until a line equal to `want` (not kept), for
 * at most ms. Lines before it go to *got (NUL-separated, the caller
 * frees). 0, or -ETIMEDOUT, -EPIPE. */
static inline int jvm_until(struct jvm *j, const char *want, int ms, char **got, size_t *gotlen)
{
	int64_t end = now_ms() + ms;
	size_t wl = strlen(want), start = 0;

	if (got) {
		*got = NULL;
		*gotlen = 0;
	}
	for (;;) {
		char *nl;

		while ((nl = memchr(j->buf + start, '\n', j->len - start))) {
			size_t ll = (size_t)(nl - (j->buf + start));
			bool match = ll == wl && !memcmp(j->buf + start, want, wl);

			*nl = 0;
			if (!match && got) {
				char *g = realloc(*got, *gotlen + ll + 1);

				if (g) {
					memcpy(g + *gotlen, j->buf + start, ll + 1);
					*got = g;
					*gotlen += ll + 1;
				}
			}
			start += ll + 1;
			if (match) {
				memmove(j->buf, j->buf + start, j->len - start);
				j->len -= start;
				return 0;
			}
		}
		memmove(j->buf, j->buf + start, j->len - start);
		j->len -= start;
		start = 0;
		int64_t left = end - now_ms();
		struct pollfd p = { j->out, POLLIN, 0 };
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (j->len == sizeof(j->buf))
			j->len = 0; /* a line longer than the buffer: dropped */
		n = read(j->out, j->buf + j->len, sizeof(j->buf) - j->len);
		if (n <= 0)
			return -EPIPE;
		j->len += (size_t)n;
	}
}

/* Sends a command; its answer's lines (up to "end") into *got. */
static inline int jvm_cmd(struct jvm *j, const char *cmd, char **got, size_t *gotlen)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s\n", cmd);

	if (write(j->in, line, (size_t)n) != n)
		return -EPIPE;
	return jvm_until(j, "end", 20000, got, gotlen);
}

static inline void jvm_stop(struct jvm *j)
{
	if (j->pid > 0) {
		kill(j->pid, SIGKILL);
		waitpid(j->pid, NULL, 0);
	}
	if (j->in >= 0)
		close(j->in);
	if (j->out >= 0)
		close(j->out);
	j->pid = -1;
	j->in = j->out = -1;
}

/* libjvm's path and load bias from pid's maps, and its symbols. */
static inline int jvm_find_libjvm(struct jvm *j)
{
	char path[64], line[1024];
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)j->pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t s, e, off;
		char file[512] = "";
		struct elf_info ei;
		uint64_t va;
		int fd;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %511s", &s, &e, &off,
			   file) < 4 ||
		    !strstr(file, "/libjvm.so"))
			continue;
		fd = open(file, O_RDONLY);
		if (fd < 0)
			break;
		err = jvmfile__read(fd, &j->jf);
		if (!err)
			err = elfsym__read(fd, false, &ei);
		close(fd);
		if (err)
			break;
		if (!elfsym__off_to_vaddr(&ei, off, &va))
			err = -ENOEXEC;
		else
			j->bias = s - va;
		elfsym__fini(&ei);
		snprintf(j->libjvm, sizeof(j->libjvm), "%s", file);
		break;
	}
	fclose(f);
	return err;
}

/*
 * Starts Known under JDK `major` with the given extra flags (NULL-ended,
 * may be NULL) and waits for its "ready". Returns 0, or -errno with
 * *why saying what is missing (the JDK, the helpers).
 */
static inline int jvm_start(struct jvm *j, int major, const char *const *flags, char *why, size_t wl)
{
	char java[600], cls[4200], lib[4200];
	const char *argv[32];
	int n = 0, err;

	memset(j, 0, sizeof(*j));
	j->pid = -1;
	j->in = j->out = -1;
	snprintf(java, sizeof(java), "%s/bin/java", jdk_home(major));
	snprintf(cls, sizeof(cls), "%s/Known.class", java_dir());
	snprintf(lib, sizeof(lib), "%s/libknownjni.so", java_dir());
	if (access(java, X_OK)) {
		snprintf(why, wl, "JDK %d: no %.200s (set PROFFS_JDK%d)", major, java, major);
		return -ENOENT;
	}
	if (access(cls, R_OK) || access(lib, R_OK)) {
		snprintf(why, wl, "no %.200s (make all)", access(cls, R_OK) ? cls : lib);
		return -ENOENT;
	}
	argv[n++] = java;
	argv[n++] = "-XX:CompileCommand=quiet";
	argv[n++] = "-XX:CompileCommand=dontinline,Known::heavy";
	argv[n++] = "-XX:CompileCommand=dontinline,Known::light";
	if (major >= 22)
		argv[n++] = "--enable-native-access=ALL-UNNAMED";
	for (int i = 0; flags && flags[i] && n < 28; i++)
		argv[n++] = flags[i];
	argv[n++] = "-cp";
	argv[n++] = java_dir();
	argv[n++] = "Known";
	argv[n++] = lib;
	argv[n] = NULL;
	err = test_spawn(java, (char *const *)argv, NULL, &j->pid, &j->in, &j->out);
	if (err) {
		j->pid = -1;
		jvm_stop(j);
		snprintf(why, wl, "spawn %.200s: %s", java, strerror(-err));
		return err;
	}
	err = jvm_until(j, "ready", 30000, NULL, NULL);
	if (!err)
		err = jvm_find_libjvm(j);
	if (err) {
		snprintf(why, wl, "JDK %d: Known did not start: %s", major, strerror(-err));
		jvm_stop(j);
	}
	return err;
}

#endif
