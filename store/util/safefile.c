/*
 * safefile.c - opening files on behalf of a process (see safefile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "store/util/prom.h"
#include "store/util/safefile.h"
#include "store/util/util.h"

static uint64_t counts[SF_R_MAX];

/* Files already logged: a small direct-mapped table of (reason, file)
 * keys, so a file refused on every retry logs once while memory stays
 * fixed (a key evicted by another file may log again, much later). */
#define LOGGED_SLOTS 1024
static uint64_t logged[LOGGED_SLOTS];
static pthread_mutex_t logged_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const reason_names[SF_R_MAX] = {
	[SF_R_SYMLINK] = "symlink",     [SF_R_NOT_REGULAR] = "not_regular",
	[SF_R_OWNER] = "owner",         [SF_R_PERMISSION] = "permission",
	[SF_R_TOO_BIG] = "too_big",     [SF_R_LINE] = "line_too_long",
	[SF_R_FORMAT] = "bad_format",   [SF_R_TIMEOUT] = "timeout",
	[SF_R_STALE] = "stale",
};

const char *safefile__reason_name(enum sf_reason r)
{
	return r < SF_R_MAX ? reason_names[r] : "unknown";
}

void safefile__counts(uint64_t out[SF_R_MAX])
{
	for (int i = 0; i < SF_R_MAX; i++)
		out[i] = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
}

void safefile__refuse(enum sf_reason r, const char *path, dev_t dev, ino_t ino)
{
	uint64_t k[3] = { r, dev, ino }, h;
	bool first;

	__atomic_add_fetch(&counts[r], 1, __ATOMIC_RELAXED);
	if (log_level < LOG_DEBUG)
		return;
	h = hash64(k, sizeof(k), 0x5afe);
	/* A file refused before it could be stat'ed is known by its path. */
	if (!ino && path)
		h = hash64(path, strlen(path), h);
	h = h ? h : 1;
	pthread_mutex_lock(&logged_lock);
	first = logged[h % LOGGED_SLOTS] != h;
	logged[h % LOGGED_SLOTS] = h;
	pthread_mutex_unlock(&logged_lock);
	if (first)
		pr_debug("safefile: refused %s: %s", path ? path : "?", reason_names[r]);
}


/* An O_PATH descriptor: it opens nothing (a device's open has effects, a
 * FIFO's blocks), yet pins the inode for fstat and the reopen. */
static int open_path(int dirfd, const char *path, bool nofollow, bool in_root)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (in_root ? RESOLVE_IN_ROOT : 0),
	};
	int fd;

	if (!nofollow)
		return openat(dirfd, path, O_PATH | O_CLOEXEC);
	fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	/* Before Linux 5.6: only the last component can be checked. */
	return openat(dirfd, path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
}

/* Could the process's user read this file itself? Mode bits only:
 * supplementary groups are not considered (a refusal, never a leak). */
static bool readable_by(const struct stat *st, const struct sf_cred *c)
{
	if (c->uid == 0)
		return true;
	if (st->st_uid == c->uid)
		return st->st_mode & S_IRUSR;
	if (st->st_gid == c->gid)
		return st->st_mode & S_IRGRP;
	return st->st_mode & S_IROTH;
}

int safefile__open(int dirfd, const char *path, bool nofollow, bool in_root, enum sf_kind kind,
		   const struct sf_cred *c, struct stat *st)
{
	struct stat sb;
	enum sf_reason r;
	int fd, err;


	char self[64];
	int pfd;

	pfd = open_path(dirfd, path, nofollow, in_root);
	if (pfd < 0) {
		err = -errno;
		if (err == -ELOOP) { /* a symlink on the way */
			safefile__refuse(SF_R_SYMLINK, path, 0, 0);
			return -ECANCELED;
		}
		return err;
	}
	if (fstat(pfd, &sb)) {
		err = -errno;
		close(pfd);
		return err;
	}
	/* A symlink itself (O_NOFOLLOW fallback) is not regular either. */
	if (!S_ISREG(sb.st_mode)) {
		r = SF_R_NOT_REGULAR;
	} else if (kind == SF_PERFMAP && c && sb.st_uid != 0 && sb.st_uid != c->uid) {
		r = SF_R_OWNER;
	} else if (c && !readable_by(&sb, c)) {
		r = SF_R_PERMISSION;
	} else if ((kind == SF_PERFMAP && (uint64_t)sb.st_size > SF_PERFMAP_MAX) ||
		   (uint64_t)sb.st_size > SF_ELF_MAX) {
		r = SF_R_TOO_BIG;
	} else {
		/* The same inode, now opened for reading. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		err = fd < 0 ? -errno : 0;
		close(pfd);
		if (err)
			return err;
		if (st)
			*st = sb;
		return fd;
	}
	close(pfd);
	safefile__refuse(r, path, sb.st_dev, sb.st_ino);
	return -ECANCELED;
}

int safefile__read_all(int fd, size_t max, int64_t deadline_ns, char **data, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *b = malloc(cap + 1);
	int err = 0;

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			/* one byte past max tells a file that grew past it */
			size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb;

			if (nc <= cap) {
				err = -EFBIG;
				break;
			}
			nb = realloc(b, nc + 1);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			b = nb;
			cap = nc;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += r;
		if (n > max) {
			err = -EFBIG;
			break;
		}
		if (deadline_ns && now_mono_ns() > deadline_ns) {
			err = -ETIMEDOUT;
			break;
		}
	}
	if (err) {
		free(b);
		return err;
	}
	b[n] = 0;
	*data = b;
	*len = n;
	return 0;
}

void safefile__metrics(struct buf *out)
{
	uint64_t rc[SF_R_MAX];

	safefile__counts(rc);
	prom__family(out, "proffs_files_refused_total", PROM_COUNTER,
		     "Files read on behalf of a process that were refused, by reason.");
	for (int i = 0; i < SF_R_MAX; i++)
		prom__u64_by(out, "proffs_files_refused_total", "reason",
			     safefile__reason_name(i), rc[i]);
}
