/*
 * test_ruby.h - what the Ruby unit tests (test_rbwalk, test_rbbpf) share:
 * Debian's ruby as a child with its stdin and stdout on pipes, and a wait
 * until one of its threads blocks reading stdin.
 */
#ifndef PROFFS_TESTS_UNIT_TEST_RUBY_H
#define PROFFS_TESTS_UNIT_TEST_RUBY_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/spawn.h"

#define RUBY "/usr/bin/ruby"

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
