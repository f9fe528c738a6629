/*
 * fhandle - checks what NFS servers (ganesha's FSAL VFS, knfsd) need of a
 * filesystem: file handles that still resolve after the kernel has
 * forgotten the inodes.
 *
 *   fhandle MOUNTPOINT RELPATH...
 *
 * Takes name_to_handle_at() of every path, closes everything, makes the
 * kernel drop its dentry and inode caches, then opens every handle with
 * open_by_handle_at(): files must read back the same bytes as a read by
 * path, directories must be the same inode. Exit 0 when all resolve,
 * 1 otherwise, 77 when handles are not supported at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp_fd(int fd, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *b = malloc(cap);
	ssize_t r;

	while (b && (r = read(fd, b + n, cap - n)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(b, cap *= 2);

			if (!nb) {
				free(b);
				return NULL;
			}
			b = nb;
		}
	}
	*len = n;
	return b;
}

int main(int argc, char **argv)
{
	int n = argc - 2, bad = 0, mfd;
	struct file_handle **h;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: fhandle MOUNTPOINT RELPATH...\n");
		return 2;
	}
	h = calloc(n, sizeof(*h));
	for (int i = 0; i < n; i++) {
		char p[8192];
		int mount_id;

		snprintf(p, sizeof(p), "%s/%s", argv[1], argv[i + 2]);
		h[i] = malloc(sizeof(struct file_handle) + MAX_HANDLE_SZ);
		h[i]->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, p, h[i], &mount_id, 0)) {
			printf("name_to_handle_at %s: %s\n", argv[i + 2], strerror(errno));
			if (errno == EOPNOTSUPP)
				return 77;
			return 1;
		}
	}
	/* Nothing of ours pins the inodes now but the mount root. */
	sync();
	f = fopen("/proc/sys/vm/drop_caches", "w");
	if (!f || fputs("2", f) < 0 || fclose(f)) {
		printf("cannot drop caches: %s\n", strerror(errno));
		return 77;
	}
	mfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char p[8192];
		struct stat a, b;
		int fd = open_by_handle_at(mfd, h[i], O_RDONLY), pfd;

		if (fd < 0) {
			printf("FAIL open_by_handle_at %s: %s\n", argv[i + 2], strerror(errno));
			bad++;
			continue;
		}
		snprintf(p, sizeof(p), "%s/%s", argv[1], argv[i + 2]);
		pfd = open(p, O_RDONLY);
		if (pfd < 0 || fstat(fd, &a) || fstat(pfd, &b)) {
			printf("FAIL open %s by path: %s\n", argv[i + 2], strerror(errno));
			bad++;
		} else if (a.st_ino != b.st_ino) {
			printf("FAIL %s: handle gives inode %llu, path %llu\n", argv[i + 2],
			       (unsigned long long)a.st_ino, (unsigned long long)b.st_ino);
			bad++;
		} else if (S_ISREG(a.st_mode)) {
			size_t la = 0, lb = 0;
			char *da = slurp_fd(fd, &la), *db = slurp_fd(pfd, &lb);

			if (!da || !db || la != lb || memcmp(da, db, la) || la != (size_t)a.st_size) {
				printf("FAIL %s: bytes by handle (%zu) differ from by path (%zu)\n",
				       argv[i + 2], la, lb);
				bad++;
			} else {
				printf("ok %s: %zu bytes by handle\n", argv[i + 2], la);
			}
			free(da);
			free(db);
		} else {
			printf("ok %s: inode %llu by handle\n", argv[i + 2], (unsigned long long)a.st_ino);
		}
		if (pfd >= 0)
			close(pfd);
		close(fd);
	}
	for (int i = 0; i < n; i++)
		free(h[i]);
	free(h);
	close(mfd);
	return bad ? 1 : 0;
}
