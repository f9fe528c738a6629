/*
 * pidstat.h - the few fields of /proc/PID/stat the sampler needs: the
 * state (a zombie cannot lend its files), the flags (PF_EXITING: its
 * mappings are going) and the start time (a file written before the
 * process started is another process's).
 */
#ifndef PROFFS_PROC_PIDSTAT_H
#define PROFFS_PROC_PIDSTAT_H

#include <sys/types.h>

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

#endif
