/* xorshift.h - Marsaglia's xorshift64 (shifts 13, 7, 17): the cheap,
 * seedable and so repeatable numbers of the tests and their tools. */
#ifndef PROFFS_TESTS_XORSHIFT_H
#define PROFFS_TESTS_XORSHIFT_H

#include <stdint.h>

/* Steps the state *s (never 0) and returns the new one. */
static inline uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
