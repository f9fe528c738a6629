/*
 * cmd_cat.c - `proffs cat --store DIR PATH`: prints what a mount of the
 * store serves at PATH, with no mount: a file's exact bytes, a directory's
 * entries one per line, a symlink's target. Symlinks inside PATH (latest)
 * are followed the way the kernel would.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "store/cmd/cmdutil.h"
#include "store/db/store.h"
#include "fs/tree/tree.h"
#include "store/util/util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proffs cat --store DIR PATH\n"
		"\n"
		"Prints what `proffs mount` serves at PATH (a path inside the mount,\n"
		"e.g. /cpu/comm=api/latest/top.txt): a file's bytes, a directory's\n"
		"entries one per line, a symlink's target. Nothing is mounted.\n"
		"\n"
		"  -s, --store DIR   the store directory (required)\n"
		"  -h, --help        this text\n"
		"\n"
		"Exit status: 0 on success, 1 if PATH does not exist or the store\n"
		"cannot be read, 2 on a usage error. /README describes the paths.\n");
}

/*
 * Resolves path like the kernel walking a mount: when a prefix of it is a
 * symlink, the link's target replaces that component and the walk starts
 * over. *cur is the malloc'd path finally resolved (the caller frees it).
 */
static int resolve_follow(struct tree *t, const char *path, struct node *n,
			  char **cur)
{
	char *p = strdup(path);
	int err = -ENOMEM;

	if (!p)
		return -ENOMEM;
	for (int hops = 0; hops < 8; hops++) {
		bool followed = false;

		err = tree__resolve(t, p, n);
		if (err != -ENOENT)
			break;
		for (char *slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
			struct node pre;
			char *target, *next, *dir_end;

			*slash = 0;
			err = tree__resolve(t, p, &pre);
			if (err) {
				*slash = '/';
				break;
			}
			if (pre.kind != NODE_SYMLINK) {
				node__fini(&pre);
				*slash = '/';
				continue;
			}
			err = tree__readlink(t, &pre, &target);
			node__fini(&pre);
			if (err) {
				*slash = '/';
				break;
			}
			dir_end = strrchr(p, '/');
			*dir_end = 0;
			if (asprintf(&next, "%s/%s/%s", p, target, slash + 1) < 0)
				next = NULL;
			free(target);
			free(p);
			p = next;
			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			followed = true;
			break;
		}
		if (!followed) {
			err = -ENOENT;
			break;
		}
	}
out:
	if (err) {
		free(p);
		return err;
	}
	*cur = p;
	return 0;
}

static int print_node(struct tree *t, const struct node *n)
{
	char **names = NULL, *target = NULL;
	enum node_kind *kinds = NULL;
	struct buf b = { 0 };
	size_t count = 0;
	int err = 0;

	switch (n->kind) {
	case NODE_DIR:
		err = tree__list(t, n, &names, &kinds, &count);
		for (size_t i = 0; !err && i < count; i++)
			printf("%s\n", names[i]);
		tree__free_list(names, kinds, count);
		break;
	case NODE_SYMLINK:
		err = tree__readlink(t, n, &target);
		if (!err)
			printf("%s\n", target);
		free(target);
		break;
	case NODE_FILE:
		if (n->blob) { /* a file under /binaries: copied, not rendered */
			struct stat st;
			char chunk[65536];
			ssize_t r = 0;
			int fd = -1;

			err = tree__open_blob(t, n, &fd, &st);
			while (!err && (r = read(fd, chunk, sizeof(chunk))) > 0)
				if (fwrite(chunk, 1, (size_t)r, stdout) != (size_t)r)
					err = -EIO;
			if (!err && r < 0)
				err = -errno;
			if (fd >= 0)
				close(fd);
			break;
		}
		err = tree__render(t, n, &b);
		if (!err && b.len && fwrite(b.data, 1, b.len, stdout) != b.len)
			err = -EIO;
		buf__free(&b);
		break;
	}
	if (fflush(stdout) && !err)
		err = errno ? -errno : -EIO;
	return err;
}

int cmd_cat(int argc, char **argv)
{
	static const struct store_cmd cmd = { "cat", ":s:h", usage };
	struct store_opts so = { .readonly = true };
	struct store *s = NULL;
	struct tree *t = NULL;
	struct node n = { 0 };
	char *path = NULL, *cur = NULL;
	size_t len;
	int err, rc = 1, status;

	status = cmd__parse_store(&cmd, argc, argv, &so);
	if (status != CMD_GO_ON)
		return status;
	if (optind != argc - 1) {
		fprintf(stderr, "proffs cat: expected exactly one PATH (try --help)\n");
		return 2;
	}
	/* "cpu/x" and "/cpu/x/" mean "/cpu/x", as they would in a shell. */
	if (asprintf(&path, "%s%s", argv[optind][0] == '/' ? "" : "/", argv[optind]) < 0) {
		fprintf(stderr, "proffs cat: out of memory\n");
		return 1;
	}
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = 0;

	if (cmd__open_store(cmd.name, &s, &so))
		goto out;
	t = tree__new(s, NULL);
	if (!t) {
		fprintf(stderr, "proffs cat: %s\n", strerror(errno));
		goto out;
	}
	err = resolve_follow(t, path, &n, &cur);
	if (err) {
		fprintf(stderr, "proffs cat: %s: %s\n", argv[optind], strerror(-err));
		goto out;
	}
	err = print_node(t, &n);
	if (err) {
		fprintf(stderr, "proffs cat: %s: %s\n", argv[optind], strerror(-err));
		goto out;
	}
	rc = 0;
out:
	node__fini(&n);
	free(cur);
	free(path);
	tree__free(t);
	if (s)
		store__close(s);
	return rc;
}
