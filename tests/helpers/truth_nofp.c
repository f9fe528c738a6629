/*
 * truth_nofp - tests/helpers/truth.c built -O2 -fomit-frame-pointer (see
 * the Makefile's HELPER_CFLAGS_truth_nofp): the same 10:1 answer, for an
 * unwinder that must not rely on frame pointers.
 */
#include "truth.c"
