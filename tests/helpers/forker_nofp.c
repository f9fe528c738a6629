/*
 * forker_nofp - tests/helpers/forker.c built -O2 -fomit-frame-pointer
 * (HELPER_CFLAGS_forker_nofp): a fork storm of short children whose
 * stacks only unwind tables can walk.
 */
#include "forker.c"
