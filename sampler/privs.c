/*
 * privs.c - dropping capabilities, and the unmount helper (see privs.h).
 * capset(2) and prctl(2) are called directly: the few lines libcap would
 * save do not justify a new dependency.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/privs.h"
#include "store/util/util.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif
#define FUSE_SUPER_MAGIC 0x65735546

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
};

/* The helper: one request, one answer; it unmounts nothing but a FUSE
 * mount at the mountpoint it was given. */
static void helper_main(int fd, const char *mountpoint)
{
	char c;

	/* Nothing of the daemon's (store, /dev/fuse) stays open here. */
	for (int i = 0; i < 1024; i++)
		if (i != fd && i != 2)
			close(i);
	while (read(fd, &c, 1) == 1) {
		struct statfs sf;
		char r = 'n';

		if (c == 'u' && !statfs(mountpoint, &sf) && sf.f_type == FUSE_SUPER_MAGIC &&
		    !umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW))
			r = 'y';
		if (write(fd, &r, 1) != 1)
			break;
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
	*out = u;
	return 0;
}

int privs__unmount(struct unmounter *u)
{
	struct pollfd p = { .fd = u->fd, .events = POLLIN };
	char c = 'u';

	if (write(u->fd, &c, 1) != 1)
		return -errno;
	if (poll(&p, 1, 1000) != 1)
		return -ETIMEDOUT;
	if (read(u->fd, &c, 1) != 1)
		return -EPIPE;
	return c == 'y' ? 0 : -EPERM;
}

void privs__unmounter_free(struct unmounter *u)
{
	if (!u)
		return;
	close(u->fd); /* the helper reads EOF and exits */
	waitpid(u->pid, NULL, 0);
	free(u);
}
