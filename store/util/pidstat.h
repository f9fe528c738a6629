/*
 * pidstat.h - the few facts of /proc/PID the sampler needs: from stat the
 * state (a zombie cannot lend its files), the flags (PF_EXITING: its
 * mappings are going) and the start time (a file written before the
 * process started is another process's); from status whose files it
 * may read (store/util/safefile.h opens them).
 */
#ifndef PROFFS_UTIL_PIDSTAT_H
#define PROFFS_UTIL_PIDSTAT_H

#include <stdint.h>
#include <sys/types.h>

#include "store/util/safefile.h"

struct pidstat {
	char state;		      /* 'R', 'S', 'D', 'Z', 'X', ... */
	unsigned long flags;	      /* PF_* */
	unsigned long long start_ticks; /* since boot, in clock ticks */
};

/*
 * Reads pid's stat into *st (the caller's). Returns 0; -ENOENT or -ESRCH
 * when the process is gone (an empty read too); -EIO when the text is not
 * what the kernel writes; another open's -errno.
 */
int pidstat__read(pid_t pid, struct pidstat *st);

/* When pid started, as CLOCK_REALTIME ns (boot time plus /proc/PID/stat's
 * start time: to the second, boot time being given in seconds); -errno
 * if it cannot be read. */
int64_t pidstat__started_ns(pid_t pid);

/* Effective ids of pid and its pid in its own pid namespace (the last
 * NSpid field: a JIT in a container names its perf map after that), from
 * /proc/PID/status (not the owner of /proc/PID, which a process can make
 * root's with PR_SET_DUMPABLE). nspid may be NULL. Returns 0 or -errno
 * (-ENOENT: gone). */
int pidstat__cred(pid_t pid, struct sf_cred *c, pid_t *nspid);

#endif
