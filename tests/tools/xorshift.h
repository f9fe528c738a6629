/*
 * xorshift.h - the tools' pseudo-random numbers: tests/xorshift.h's
 * xorshift64 over rng, which the tool seeds (a seed of 0 gives only 0s).
 */
#ifndef PROFFS_TESTS_TOOLS_XORSHIFT_H
#define PROFFS_TESTS_TOOLS_XORSHIFT_H

#include "tests/xorshift.h"

static uint64_t rng;

static uint64_t rnd(void)
{
	return xorshift64(&rng);
}

#endif
