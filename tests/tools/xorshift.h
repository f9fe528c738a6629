/*
 * xorshift.h - the tools' pseudo-random numbers: xorshift64 (13, 7, 17)
 * over rng, which the tool seeds (a seed of 0 gives only 0s).
 */
#ifndef PROFFS_TESTS_TOOLS_XORSHIFT_H
#define PROFFS_TESTS_TOOLS_XORSHIFT_H

#include <stdint.h>

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#endif
