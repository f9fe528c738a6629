/*
 * pidstat.c - /proc/PID/stat's state, flags and start time (pidstat.h).
 * The comm, in parentheses, may hold spaces and parentheses of its own:
 * the fields are counted from the last ')'.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/util/pidstat.h"

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

int64_t pidstat__started_ns(pid_t pid)
{
	static int64_t boot_s = -1;
	unsigned long long start;
	long hz = sysconf(_SC_CLK_TCK);
	struct pidstat st;
	int err;

	if (__atomic_load_n(&boot_s, __ATOMIC_RELAXED) < 0) {
		FILE *f = fopen("/proc/stat", "re");
		long long b = -1;
		char line[256];

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "btime %lld", &b) == 1)
				break;
		if (f)
			fclose(f);
		if (b < 0)
			return -EIO;
		__atomic_store_n(&boot_s, (int64_t)b, __ATOMIC_RELAXED);
	}
	err = pidstat__read(pid, &st);
	if (err)
		return err;
	if (hz <= 0)
		return -EIO;
	start = st.start_ticks;
	return boot_s * 1000000000LL + (int64_t)(start / (unsigned long long)hz) * 1000000000LL +
	       (int64_t)(start % (unsigned long long)hz) * (1000000000LL / hz);
}

int pidstat__cred(pid_t pid, struct sf_cred *c, pid_t *nspid)
{
	char p[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return -errno;
	if (nspid)
		*nspid = pid;
	/* Lines are short (procfs writes them); fgets cuts any longer. */
	while (fgets(line, sizeof(line), f)) {
		unsigned long r, e;

		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			c->uid = e;
			found |= 1;
		} else if (sscanf(line, "Gid: %lu %lu", &r, &e) == 2) {
			c->gid = e;
			found |= 2;
		} else if (nspid && !strncmp(line, "NSpid:", 6)) {
			char *last = NULL, *save;

			for (char *t = strtok_r(line + 6, " \t\n", &save); t;
			     t = strtok_r(NULL, " \t\n", &save))
				last = t;
			if (last && atoi(last) > 0)
				*nspid = atoi(last);
		}
	}
	fclose(f);
	return found == 3 ? 0 : -ENOENT;
}
