/*
 * test_ruby.h - what the Ruby unit tests (test_rbwalk, test_rbbpf,
 * test_rbline) share: their main(), Debian's ruby as a child with its
 * stdin and stdout on pipes, libruby's mappings in a process, and a wait
 * until one of its threads blocks reading stdin.
 */
#ifndef PROFFS_TESTS_UNIT_TEST_RUBY_H
#define PROFFS_TESTS_UNIT_TEST_RUBY_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/spawn.h"
#include "tests/test.h"

#define RUBY "/usr/bin/ruby"

/* main()'s work: the scenarios t[0..n) (test_scenarios_main), or, where
 * Debian's ruby is missing, one failed check that says so. */
static inline int ruby_scenarios_main(const struct test_scenario *t, size_t n, int argc,
				      char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (access(RUBY, X_OK)) {
		CHECK(0, "%s is missing (apt-get install ruby; scripts/deps.sh)", RUBY);
		return test_done();
	}
	return test_scenarios_main(t, n, argc, argv);
}

/* The main() of a Ruby test: ruby_scenarios_main over the array t. */
#define RUBY_SCENARIOS_MAIN(t)                                                         \
	int main(int argc, char **argv)                                                \
	{                                                                              \
		return ruby_scenarios_main(t, sizeof(t) / sizeof((t)[0]), argc, argv); \
	}

struct child {
	pid_t pid;
	FILE *out;
	int in;
};

static inline int spawn_ruby(struct child *ch, char *const argv[])
{
	int out = -1, err = test_spawn(RUBY, argv, NULL, &ch->pid, &ch->in, &out);

	if (!err)
		ch->out = fdopen(out, "r");
	return err;
}

static inline void kill_child(struct child *ch)
{
	if (ch->pid > 0) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, NULL, 0);
	}
	if (ch->out)
		fclose(ch->out);
	if (ch->in > 0)
		close(ch->in);
	memset(ch, 0, sizeof(*ch));
}

/* Calls fn(ctx, start, file offset, path) on each mapping of libruby in
 * pid's maps, in their order, until fn returns nonzero. Returns that, 0
 * when fn never did, or -errno when the maps are unreadable. */
static inline int libruby_maps(pid_t pid,
			       int (*fn)(void *ctx, unsigned long lo, unsigned long off,
					 const char *path),
			       void *ctx)
{
	char maps[64], line[1024];
	int r = 0;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "r")))
		return -errno;
	while (!r && fgets(line, sizeof(line), f)) {
		unsigned long lo, off;
		char p[512] = "";

		if (sscanf(line, "%lx-%*x %*s %lx %*s %*s %511s", &lo, &off, p) == 3 &&
		    strstr(p, "libruby"))
			r = fn(ctx, lo, off, p);
	}
	fclose(f);
	return r;
}

/* Waits until thread tid of pid blocks reading stdin (read(0, ...) or a
 * poll): the point printed its locations before it got there. */
static inline bool wait_read(pid_t pid, pid_t tid)
{
	char path[96], buf[128];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	for (int i = 0; i < 400; i++) {
		FILE *f = fopen(path, "r");
		bool in = f && fgets(buf, sizeof(buf), f) &&
			  (!strncmp(buf, "0 0x0 ", 6) || !strncmp(buf, "7 ", 2) ||
			   !strncmp(buf, "271 ", 4));

		if (f)
			fclose(f);
		if (in)
			return true;
		usleep(5000);
	}
	return false;
}

#endif
