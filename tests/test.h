/* test.h - the tiny assertion kit of our unit tests. CHECK prints every
 * check, and test_done() ends with "N passed, N failed". */
#ifndef PROFFS_TEST_H
#define PROFFS_TEST_H
#include <errno.h>
#include <stdio.h>

static int test_pass_, test_fail_;
#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			test_pass_++;                                      \
			printf("ok   ");                                   \
		} else {                                                   \
			test_fail_++;                                      \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);        \
		}                                                          \
		printf(__VA_ARGS__);                                       \
		printf("\n");                                              \
	} while (0)
static inline int test_done(void)
{
	printf("%d passed, %d failed\n", test_pass_, test_fail_);
	return test_fail_ ? 1 : 0;
}

/* Named scenarios: each builds its own fixture in a temp directory of its
 * own, so one runs alone ("test_x NAME") and a failure in one cannot leave
 * state that fails the next. test_scenarios_main() runs them all in order
 * when given no argument (what tests/run.sh does), lists them with --list.
 * The directory is made before fn and removed, with all it holds, after. */
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct test_scenario {
	const char *name;
	void (*fn)(const char *dir);
};

static inline int test_rm_(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(path);
}

static inline void test_scenario_run_(const struct test_scenario *t)
{
	char dir[128];
	int p0 = test_pass_, f0 = test_fail_;

	printf("== %s\n", t->name);
	snprintf(dir, sizeof(dir), "/tmp/test.%s.XXXXXX", t->name);
	if (!mkdtemp(dir)) {
		CHECK(0, "%s: temp directory: %s", t->name, strerror(errno));
		return;
	}
	t->fn(dir);
	fflush(stdout);
	if (nftw(dir, test_rm_, 16, FTW_DEPTH | FTW_PHYS))
		printf("warning: could not remove %s\n", dir);
	printf("-- %s: %d passed, %d failed\n", t->name, test_pass_ - p0, test_fail_ - f0);
}

/* Returns the exit status: 0 all passed, 1 a check failed, 2 usage. */
static inline int test_scenarios_main(const struct test_scenario *t, size_t n, int argc,
				      char **argv)
{
	if (argc > 2 || (argc == 2 && !strcmp(argv[1], "--help"))) {
		fprintf(stderr, "usage: %s [--list | SCENARIO]\n", argv[0]);
		return 2;
	}
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", t[i].name);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (argc == 2 && strcmp(argv[1], t[i].name))
			continue;
		test_scenario_run_(&t[i]);
		if (argc == 2)
			return test_done();
	}
	if (argc == 2) {
		fprintf(stderr, "%s: no scenario %s (--list names them)\n", argv[0], argv[1]);
		return 2;
	}
	return test_done();
}

/* The main() of a test that is its scenarios and nothing else: runs the
 * array t (test_scenarios_main). */
#define TEST_SCENARIOS_MAIN(t)                                                         \
	int main(int argc, char **argv)                                                \
	{                                                                              \
		return test_scenarios_main(t, sizeof(t) / sizeof((t)[0]), argc, argv); \
	}
#endif
