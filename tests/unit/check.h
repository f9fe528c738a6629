/* check.h - the unit tests' CHECK: prints "ok" or "FAIL" and the message,
 * the failing condition's place, and counts failures in the including
 * file's `failures`. */
#ifndef PROFFS_TESTS_UNIT_CHECK_H
#define PROFFS_TESTS_UNIT_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                              \
	do {                                                          \
		if (cond) {                                           \
			printf("ok   " __VA_ARGS__);                  \
		} else {                                              \
			printf("FAIL " __VA_ARGS__);                  \
			printf("     (%s:%d: %s)\n", __FILE__, __LINE__, #cond); \
			failures++;                                   \
		}                                                     \
		printf("\n");                                         \
	} while (0)

#endif
