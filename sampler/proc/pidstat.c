/*
 * pidstat.c - /proc/PID/stat's state, flags and start time (pidstat.h).
 * The comm, in parentheses, may hold spaces and parentheses of its own:
 * the fields are counted from the last ')'.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sampler/proc/pidstat.h"

int pidstat__read(pid_t pid, struct pidstat *st)
{
	char p[64], buf[1024], *rp;
	ssize_t n;
	int fd;

	memset(st, 0, sizeof(*st));
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = 0;
	rp = strrchr(buf, ')');
	/* state(3) ppid pgrp session tty_nr tpgid flags(9), minflt cminflt
	 * majflt cmajflt utime stime, cutime cstime priority nice
	 * num_threads itrealvalue, starttime(22) */
	if (!rp || sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			  &st->state, &st->flags, &st->start_ticks) != 3)
		return -EIO;
	return 0;
}
