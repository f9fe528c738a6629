/*
 * safefile.h - the one way the daemon (root) opens a file on behalf of a
 * process: a perf map, an executable or library, a debug file. Any local
 * user controls these, so a file is opened without following symlinks in
 * the part of its path the user controls, without blocking (a FIFO), and
 * read only when it is a regular file of bounded size that the process's
 * user could read itself (perf maps: owned by root or that user, as perf
 * demands). Every refusal is counted by reason (/prof/metrics) and logged
 * once per file at debug level.
 * Thread-safe: the counters are atomic, the log-once table has a lock.
 */
#ifndef PROFFS_SAFEFILE_H
#define PROFFS_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What a file is read as: decides the size cap and the owner rule. */
enum sf_kind {
	SF_PERFMAP, /* /tmp/perf-PID.map: owner root or the process's uid */
	SF_ELF,     /* a mapped executable or library */
	SF_DEBUG,   /* a separate debug file under the debug root */
};

/* Size caps. A perf map is read whole into memory, so its cap is part of
 * the daemon's 32 MB budget; an ELF file is mapped, not read, and only
 * its symbol tables are touched (their size is capped in elfsym.c). */
#define SF_PERFMAP_MAX (8u << 20)
#define SF_PERFMAP_LINE_MAX 4096
#define SF_ELF_MAX (2ull << 30)

enum sf_reason {
	SF_R_SYMLINK,     /* a symlink where the user controls the path */
	SF_R_NOT_REGULAR, /* FIFO, device, directory, socket */
	SF_R_OWNER,       /* perf map not owned by root or the process's user */
	SF_R_PERMISSION,  /* the process's user could not read it */
	SF_R_TOO_BIG,     /* over the size cap of its kind */
	SF_R_LINE,        /* a line over SF_PERFMAP_LINE_MAX (the line is skipped) */
	SF_R_FORMAT,      /* not what it claims to be (corrupt ELF) */
	SF_R_TIMEOUT,     /* a read that did not finish in time, abandoned */
	SF_R_STALE,       /* perf map written before its process started (a dead one's, same pid) */
	SF_R_MAX
};

/* "symlink", "not_regular", ... for the metric's reason label. */
const char *safefile__reason_name(enum sf_reason r);

/* Whose file it is read for: the process's effective ids. */
struct sf_cred {
	uid_t uid;
	gid_t gid;
};

/*
 * Opens path for reading on behalf of a process with credentials c (NULL:
 * no owner or permission rule, for files only root controls).
 * dirfd/path as for openat; no symlink is followed while resolving path
 * when nofollow (RESOLVE_NO_SYMLINKS: the whole path is the user's), and
 * with in_root the walk cannot leave dirfd (RESOLVE_IN_ROOT: a process's
 * /proc/PID/root). Magic links such as /proc/PID/map_files/... are opened
 * with nofollow false: the kernel, not the user, names their target.
 * The file is checked with fstat (into *st when st is not NULL).
 * Returns the fd (O_RDONLY|O_NONBLOCK|O_CLOEXEC, the caller's to close)
 * or -errno; a refusal is -ECANCELED and has been counted and logged
 * (plain absence, -ENOENT, or the kernel's -EACCES is not a refusal).
 */
int safefile__open(int dirfd, const char *path, bool nofollow, bool in_root, enum sf_kind kind,
		   const struct sf_cred *c, struct stat *st);

/* Counts a refusal of the file (dev, ino; path for the log) found after
 * opening it (a long line, a corrupt ELF, a timeout); logs it once. */
void safefile__refuse(enum sf_reason r, const char *path, dev_t dev, ino_t ino);

/* Appends the refusals so far, by reason, to out (/prof/metrics). */
struct buf;
void safefile__metrics(struct buf *out);

/* Refusals so far, by reason: out[SF_R_MAX]. */
void safefile__counts(uint64_t out[SF_R_MAX]);

/*
 * Reads an open regular file whole into *data (malloc'd, NUL-terminated,
 * the caller frees it), at most max bytes; stops at deadline_ns
 * (CLOCK_MONOTONIC, 0 = none). Returns 0, -EFBIG (grew past max),
 * -ETIMEDOUT, -ENOMEM or -errno of read.
 */
int safefile__read_all(int fd, size_t max, int64_t deadline_ns, char **data, size_t *len);

#endif
