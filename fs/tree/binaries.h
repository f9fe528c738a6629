/*
 * binaries.h - /binaries/<build id>/ (issue 30), private to the tree: the
 * executables and libraries the daemon read symbols from, and their debug
 * files, laid out as `go tool pprof` looks for them under
 * PPROF_BINARY_PATH: <path>/<build id>/<file's base name> first, then any
 * file in <path>/<build id>/ (its internal/driver/fetch.go, Go 1.19's
 * vendored copy read on this machine), each checked by build id.
 */
#ifndef PROFFS_TREE_BINARIES_H
#define PROFFS_TREE_BINARIES_H

#include <sys/stat.h>

#include "fs/tree/stores.h"

/* Every build id some store recorded, sorted, without duplicates; free
 * with store__free_strv(). Returns 0 or -errno. */
int bins__ids(struct tstores *ts, char ***ids, size_t *n);

/* The names /binaries/<bid>/ holds now (malloc'd, NULL when absent): the
 * binary under its base name, when it can still be opened and is the
 * file that was read, and its debug file, "<name>.debug", when one is
 * on this host. Returns 0 or -ENOENT (no store recorded bid). */
int bins__names(struct tstores *ts, const char *bid, char **bin, char **dbg);

/* Opens /binaries/<bid>/<name> for reading: *fd (the caller's) and its
 * stat. -ENOENT when name is not one bins__names gives now. */
int bins__open(struct tstores *ts, const char *bid, const char *name, int *fd, struct stat *st);

#endif
