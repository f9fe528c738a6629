/* test.h - the tiny assertion kit of our unit tests. CHECK prints every
 * check, and test_done() ends with "N passed, N failed". */
#ifndef PROFFS_TEST_H
#define PROFFS_TEST_H
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
#endif
