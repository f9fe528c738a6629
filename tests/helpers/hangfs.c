/*
 * hangfs - a FUSE file system whose one file hangs: hangfs SRC LIMIT MNT
 * serves SRC's bytes as MNT/prog (mode 0755), but a read that reaches
 * past LIMIT bytes never answers (until the file system is unmounted or
 * hangfs killed). Any local user can mount such a thing: the tests use it
 * to check that the daemon's reads of files users control are abandoned.
 * Runs in the foreground, multi-threaded (reads below LIMIT still answer).
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse3/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *data;
static size_t size, limit;

static int hf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/prog"))
		return -ENOENT;
	st->st_mode = S_IFREG | 0755;
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	return 0;
}

static int hf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags fl)
{
	(void)off;
	(void)fi;
	(void)fl;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "prog", NULL, 0, 0);
	return 0;
}

static int hf_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/prog"))
		return -ENOENT;
	fi->keep_cache = 1;
	return 0;
}

static int hf_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	if ((size_t)off >= size)
		return 0;
	if (n > size - (size_t)off)
		n = size - (size_t)off;
	if ((size_t)off + n > limit) {
		fprintf(stderr, "hangfs: read of %zu at %lld hangs\n", n, (long long)off);
		for (;;)
			pause();
	}
	memcpy(buf, data + off, n);
	return (int)n;
}

static const struct fuse_operations ops = {
	.getattr = hf_getattr,
	.readdir = hf_readdir,
	.open = hf_open,
	.read = hf_read,
};

int main(int argc, char **argv)
{
	FILE *f;
	struct stat st;

	if (argc != 4) {
		fprintf(stderr, "usage: hangfs SRC LIMIT MOUNTPOINT\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fstat(fileno(f), &st))
		return perror(argv[1]), 1;
	size = (size_t)st.st_size;
	limit = strtoul(argv[2], NULL, 0);
	data = malloc(size);
	if (!data || fread(data, 1, size, f) != size)
		return perror("read"), 1;
	fclose(f);
	char *fa[] = { argv[0], "-f", "-o", "fsname=hangfs,default_permissions", argv[3], NULL };
	return fuse_main(5, fa, &ops, NULL);
}
