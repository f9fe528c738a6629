/*
 * test_v8.h - the Node.js runtimes the V8 tests run, and how to start
 * them: NodeSource's node 20 (/usr/bin/node, V8 11.3, non-PIE, engine in
 * the executable), Debian's node 18 (V8 10.2, engine in libnode.so.108),
 * unpacked by scripts/deps.sh into /opt/proffs-test/node18 and run with
 * LD_LIBRARY_PATH, and the official node 22 (V8 12.4) and 24 (V8 13.6) from
 * the npm registry (scripts/deps.sh: /opt/proffs-test/node/NN). Header-only, for
 * tests/unit/test_*.c.
 */
#ifndef PROFFS_TESTS_TEST_V8_H
#define PROFFS_TESTS_TEST_V8_H

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/spawn.h"

struct node_rt {
	const char *name;   /* for messages */
	const char *exe;
	const char *libdir; /* LD_LIBRARY_PATH, or NULL */
	const char *engine; /* the file that carries V8 */
	int v8_major, v8_minor;
};

#define NODE18_ROOT "/opt/proffs-test/node18"
#define NODE_ROOT "/opt/proffs-test/node"

static const struct node_rt node_rts[] = {
	{ "node20", "/usr/bin/node", NULL, "/usr/bin/node", 11, 3 },
	{ "node18", NODE18_ROOT "/usr/bin/node", NODE18_ROOT "/usr/lib/x86_64-linux-gnu",
	  NODE18_ROOT "/usr/lib/x86_64-linux-gnu/libnode.so.108", 10, 2 },
	{ "node22", NODE_ROOT "/22/bin/node", NULL, NODE_ROOT "/22/bin/node", 12, 4 },
	{ "node24", NODE_ROOT "/24/bin/node", NULL, NODE_ROOT "/24/bin/node", 13, 6 },
};
#define NODE_RTS (sizeof(node_rts) / sizeof(node_rts[0]))

/* tests/helpers/js/NAME, found from the test binary (build/tests/X). */
static inline const char *js_helper(const char *name)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return name;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/../../tests/helpers/js/%s", dirname(exe), name);
	return path;
}

/* Whether rt's files exist (a missing runtime is a FAIL, said by the caller). */
static inline int node_present(const struct node_rt *rt)
{
	return access(rt->exe, X_OK) == 0 && access(rt->engine, R_OK) == 0;
}

/*
 * Starts `node ARGS...` (argv[0] is replaced by rt's exe; at most 14
 * arguments) with its stdout on a pipe whose read end goes to *out, and
 * its stdin on one whose write end goes to *in (NULL: leave it alone).
 * Returns the pid, or -1.
 */
static inline pid_t node_spawn2(const struct node_rt *rt, char *const argv[], int *out, int *in)
{
	char *av[16], lib[PATH_MAX + 32], *env[1024];
	int i = 0, e = 0;
	pid_t pid;

	av[i++] = (char *)rt->exe;
	for (int k = 1; argv[k] && i < 15; k++)
		av[i++] = argv[k];
	av[i] = NULL;
	/* Ours, with LD_LIBRARY_PATH for a node whose engine is a library. */
	if (rt->libdir) {
		snprintf(lib, sizeof(lib), "LD_LIBRARY_PATH=%s", rt->libdir);
		env[e++] = lib;
	}
	for (char **p = environ; *p && e < 1023; p++)
		if (!rt->libdir || strncmp(*p, "LD_LIBRARY_PATH=", 16))
			env[e++] = *p;
	env[e] = NULL;
	return test_spawn(rt->exe, av, env, &pid, in, out) ? -1 : pid;
}

static inline pid_t node_spawn(const struct node_rt *rt, char *const argv[], int *out)
{
	return node_spawn2(rt, argv, out, NULL);
}

static inline void node_kill(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

#endif
