/*
 * glibc.h - a C library's version from its file: the walkers need glibc's
 * minor version for its thread-local storage layout (Python's thread
 * state, sampler/python/pyrt.c).
 */
#ifndef PROFFS_GLIBC_H
#define PROFFS_GLIBC_H

/* The N of the highest GLIBC_2.N version a libc.so file defines (its
 * pthread TSD layout depends on it), or -errno. */
int glibc__minor(int fd);

#endif
