/* spawn.h - the unit tests' one way to start a program they talk to:
 * test_spawn() runs path with argv (and envp; NULL: ours), its stdin on a
 * pipe whose write end goes to *in and its stdout on one whose read end
 * goes to *out (either NULL: the test's own), with posix_spawn. Both ends
 * are O_CLOEXEC, so a later child does not hold them. Returns 0 with *pid
 * set, or -errno (nothing left open). The caller reaps the child. */
#ifndef PROFFS_TESTS_SPAWN_H
#define PROFFS_TESTS_SPAWN_H

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <unistd.h>

extern char **environ;

static inline int test_spawn(const char *path, char *const argv[], char *const envp[], pid_t *pid, int *in,
			     int *out)
{
	int i[2] = { -1, -1 }, o[2] = { -1, -1 }, err = 0;
	posix_spawn_file_actions_t fa;

	if ((in && pipe2(i, O_CLOEXEC)) || (out && pipe2(o, O_CLOEXEC))) {
		err = -errno;
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	if (in)
		posix_spawn_file_actions_adddup2(&fa, i[0], 0);
	if (out)
		posix_spawn_file_actions_adddup2(&fa, o[1], 1);
	err = -posix_spawn(pid, path, &fa, NULL, argv, envp ? envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		goto fail;
	if (in) {
		close(i[0]);
		*in = i[1];
	}
	if (out) {
		close(o[1]);
		*out = o[0];
	}
	return 0;
fail:
	for (int k = 0; k < 2; k++) {
		if (i[k] >= 0)
			close(i[k]);
		if (o[k] >= 0)
			close(o[k]);
	}
	return err;
}

#endif
