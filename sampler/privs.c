/*
 * privs.c - dropping capabilities, and the unmount helper (see privs.h).
 * capset(2) and prctl(2) are called directly: the few lines libcap would
 * save do not justify a new dependency.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/privs.h"
#include "sampler/unwind/unwinder.h"
#include "store/util/util.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/*
 * What the daemon does after the drop, and what it needs for it:
 *  - /proc/PID/maps, /proc/PID/root, /proc/PID/map_files of other users'
 *    processes: ptrace read access, CAP_SYS_PTRACE;
 *  - /proc/PID/map_files links: CAP_CHECKPOINT_RESTORE (Linux >= 5.9;
 *    CAP_SYS_ADMIN before);
 *  - executables and perf maps in directories closed to others (a home
 *    directory, a container's root): CAP_DAC_READ_SEARCH - read and
 *    search only, never write (CAP_DAC_OVERRIDE is dropped).
 * Reading the BPF ring and maps through descriptors opened before needs
 * nothing; the store is root's own files.
 */
static const int kept[] = { CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE };

const char *privs__kept(void)
{
	return "cap_sys_ptrace,cap_dac_read_search,cap_checkpoint_restore";
}

int privs__drop(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	int last = CAP_LAST_CAP;
	char buf[16];
	int fd;

	/* The running kernel may know more capabilities than our headers. */
	fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		if (n > 0) {
			buf[n] = 0;
			last = atoi(buf);
		}
		close(fd);
	}
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		d[kept[i] / 32].effective |= 1u << (kept[i] % 32);
		d[kept[i] / 32].permitted |= 1u << (kept[i] % 32);
	}
	/* Bounding set first: dropping from it needs CAP_SETPCAP, which
	 * capset below takes away. */
	for (int c = 0; c <= last && c < 64; c++) {
		bool keep = false;

		for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
			keep |= kept[i] == c;
		if (!keep && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &h, d))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

struct unmounter {
	pid_t pid;
	int fd; /* our end of the socket pair */
	pthread_mutex_t lock; /* one request and its answer at a time */
	bool broken; /* an answer came late: the pairing is lost */
};

/* Sends the answer r, and fd with it unless it is negative. */
static int answer(int sock, char r, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm = { 0 };
	struct iovec iov = { .iov_base = &r, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		m.msg_control = cm.b;
		m.msg_controllen = sizeof(cm.b);
		cm.h.cmsg_level = SOL_SOCKET;
		cm.h.cmsg_type = SCM_RIGHTS;
		cm.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&cm.h), &fd, sizeof(int));
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Copies a /proc/self/mountinfo path field (spaces and the like written
 * \ooo) into out; false if it does not fit. */
static bool unescape(const char *f, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		char c = f[i];

		if (c == '\\' && i + 3 < n && f[i + 1] >= '0' && f[i + 1] <= '3') {
			c = (char)((f[i + 1] - '0') << 6 | (f[i + 2] - '0') << 3 | (f[i + 3] - '0'));
			i += 3;
		}
		if (k + 1 >= cap)
			return false;
		out[k++] = c;
	}
	out[k] = 0;
	return true;
}

/*
 * The FUSE connection (its device minor) of the newest FUSE mount at
 * mountpoint in our namespace, from /proc/self/mountinfo, or -1. Read
 * from the kernel's table, never through the mount: once the daemon's
 * request loop has ended, a stat or statfs of the mount would wait for
 * an answer that never comes.
 */
static int fuse_conn_at(const char *mountpoint)
{
	char line[4096], mp[PATH_MAX];
	int conn = -1;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor root mountpoint opts... - fstype ... */
		unsigned maj, min;
		char *mp_f, *dash, *fs;
		int off = 0;

		if (sscanf(line, "%*u %*u %u:%u %*s %n", &maj, &min, &off) != 2 || !off)
			continue;
		mp_f = line + off;
		dash = strstr(mp_f, " - ");
		fs = dash ? dash + 3 : NULL;
		if (!fs || strncmp(fs, "fuse", 4) || (fs[4] != ' ' && fs[4] != '.'))
			continue;
		if (unescape(mp_f, strcspn(mp_f, " "), mp, sizeof(mp)) && !strcmp(mp, mountpoint))
			conn = (int)min;
	}
	fclose(f);
	return conn;
}

/* Fails every request of FUSE connection conn, pending or future, and
 * wakes whoever waits on it (fusectl; mounted first if it is not). */
static bool abort_conn(int conn)
{
	char p[64];
	int fd;

	if (conn < 0)
		return false;
	snprintf(p, sizeof(p), "/sys/fs/fuse/connections/%d/abort", conn);
	if (access(p, F_OK))
		mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, "1", 1) == 1;
	close(fd);
	return ok;
}

/* The helper: one request, one answer. It unmounts nothing but a FUSE
 * mount at the mountpoint it was given, aborts no connection but that
 * mount's, and creates nothing but maps of the one shape the unwinder's
 * row chunks have, which hold only what the daemon writes into them. */
static void helper_main(int fd, const char *mountpoint)
{
	int conn = -1; /* the connection of the mount 'u' detached */
	char c;

	/* Nothing of the daemon's (store, /dev/fuse) stays open here. */
	for (int i = 0; i < 1024; i++)
		if (i != fd && i != 2)
			close(i);
	while (read(fd, &c, 1) == 1) {
		char r = 'n';
		int mfd = -1;

		if (c == 'u' && (conn = fuse_conn_at(mountpoint)) >= 0 &&
		    !umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW))
			r = 'y';
		if (c == 'a' && abort_conn(conn >= 0 ? conn : fuse_conn_at(mountpoint)))
			r = 'y';
		if (c == 'c' && (mfd = unwinder__chunk_create()) >= 0)
			r = 'y';
		if (answer(fd, r, mfd))
			break;
		if (mfd >= 0)
			close(mfd);
	}
	_exit(0);
}

int privs__start_unmounter(const char *mountpoint, struct unmounter **out)
{
	struct unmounter *u = calloc(1, sizeof(*u));
	int sv[2];

	if (!u)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		free(u);
		return -errno;
	}
	u->pid = fork();
	if (u->pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		free(u);
		return err;
	}
	if (u->pid == 0) {
		close(sv[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		prctl(PR_SET_NAME, "proffs-umount", 0, 0, 0);
		helper_main(sv[1], mountpoint);
	}
	close(sv[1]);
	u->fd = sv[0];
	pthread_mutex_init(&u->lock, NULL);
	*out = u;
	return 0;
}

/* Sends request c and waits up to 1 s for the answer, and the fd that
 * comes with it if fd is not NULL. Returns 0 or -errno. */
static int ask(struct unmounter *u, char c, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cm;
	struct pollfd p = { .fd = u->fd, .events = POLLIN };
	struct iovec iov = { .iov_base = &c, .iov_len = 1 }; /* the answer lands in c */
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			    .msg_controllen = sizeof(cm.b) };
	struct cmsghdr *h;
	int err = 0, got = -1;

	pthread_mutex_lock(&u->lock);
	if (u->broken) {
		err = -EPIPE;
		goto out;
	}
	if (write(u->fd, &c, 1) != 1) {
		err = -errno;
		goto out;
	}
	if (poll(&p, 1, 1000) != 1) {
		u->broken = true;
		err = -ETIMEDOUT;
		goto out;
	}
	if (recvmsg(u->fd, &m, MSG_CMSG_CLOEXEC) != 1) {
		err = -EPIPE;
		goto out;
	}
	for (h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
		    h->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&got, CMSG_DATA(h), sizeof(int));
	if (c != 'y')
		err = -EPERM;
	else if (fd && got < 0)
		err = -EPROTO;
out:
	pthread_mutex_unlock(&u->lock);
	if (!err && fd)
		*fd = got;
	else if (got >= 0)
		close(got);
	return err;
}

int privs__unmount(struct unmounter *u)
{
	return ask(u, 'u', NULL);
}

int privs__abort(void *u)
{
	return ask(u, 'a', NULL);
}

int privs__unwind_chunk(void *u)
{
	int fd, err = ask(u, 'c', &fd);

	return err ? err : fd;
}

void privs__unmounter_free(struct unmounter *u)
{
	if (!u)
		return;
	close(u->fd); /* the helper reads EOF and exits */
	waitpid(u->pid, NULL, 0);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
