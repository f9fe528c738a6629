/*
 * v8_test.h - what tests/bpf/v8_test.bpf.c hands to tests/unit/test_v8walk.c
 * (one entry of its `result` array map). BPF and user space.
 */
#ifndef PROFFS_TESTS_BPF_V8_TEST_H
#define PROFFS_TESTS_BPF_V8_TEST_H

#include "bpf/profile.h"
#include "bpf/v8.h"

#define TEST_FRAMES 127

struct v8_test_result {
	__u64 pcs[TEST_FRAMES]; /* the rbp walk's native frames */
	__u32 npcs, njs, end, uend;
	__u64 frames[2 * PROF_MAX_FRAMES]; /* njs struct v8_frame, as v8_emit writes them */
	__u64 runs;	      /* uprobe walks */
	__u64 js_total, samples; /* perf_event walks: JS frames, samples */
};

#endif
