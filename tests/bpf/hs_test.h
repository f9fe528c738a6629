/*
 * hs_test.h - what the programs of tests/bpf/ leave for the test that
 * runs them (tests/unit/test_hotspot_bpf.c).
 */
#ifndef PROFFS_TESTS_BPF_HS_TEST_H
#define PROFFS_TESTS_BPF_HS_TEST_H

#include "bpf/hotspot.h"

struct hs_out {
	struct hs_regs regs; /* where the walk left the code cache (or stopped) */
	__u64 rec[2 * HS_MAX_FRAMES];
	__u32 n, end, steps, pad;
};

/* hs_cost.bpf.c's samples (ring buffer leaves): the thread and its
 * leaf's record. */
struct hs_leaf {
	__u32 tid, n;
	__u64 rec[2];
};

#endif
