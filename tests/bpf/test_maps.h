/*
 * test_maps.h - maps the programs of tests/bpf/ declare as
 * bpf/profile.bpf.c declares its own (BPF side only: include after
 * bpf/vmlinux.h and bpf/bpf_helpers.h).
 */
#ifndef PROFFS_TESTS_BPF_TEST_MAPS_H
#define PROFFS_TESTS_BPF_TEST_MAPS_H

/* A runtime's set-up by tgid (value_type: its struct), as rt_procs holds
 * it in bpf/profile.bpf.c; the test fills it. */
#define TEST_PROCS(name, value_type) \
	struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16); __type(key, __u32); __type(value, value_type); } name SEC(".maps")

/* One value_type per CPU at key 0: a record too big for the BPF stack is
 * built there. */
#define TEST_SCRATCH(name, value_type) \
	struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, value_type); } name SEC(".maps")

#endif
