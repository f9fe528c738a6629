/*
 * cmd_mount.c - `proffs mount`: serve an existing store read-only over
 * FUSE, no sampling. Another process (an import, a daemon) may write the
 * same store meanwhile; the tree sees its commits without a remount.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "fs/fuse/mount.h"
#include "store/db/store.h"
#include "fs/tree/tree.h"
#include "store/util/util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proffs mount --store DIR [--store DIR]... [--allow-other] [--cache-size SIZE] MOUNTPOINT\n"
		"\n"
		"Serves the store in DIR read-only as the /prof tree at MOUNTPOINT, without\n"
		"sampling. Runs in the foreground; SIGINT/SIGTERM unmount and exit 0.\n"
		"Several stores are served as one tree: series without a node label get\n"
		"node=<the store directory's name>; merged/ and diff/ work across stores.\n"
		"\n"
		"  --store DIR        a store directory (required; repeatable)\n"
		"  --allow-other      let users other than root read the mount\n"
		"  --cache-size SIZE  bound of the render cache, kept in an unlinked file in\n"
		"                     the store's directory (default 32M)\n"
		"  -h, --help         this text\n");
}

#define MAX_STORES 256

/* The store directory's own name ("/mnt/web-1/" -> "web-1"), malloc'd;
 * NULL for "/" or no memory. */
static char *dir_name(const char *dir)
{
	size_t end = strlen(dir), start;

	while (end > 0 && dir[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && dir[start - 1] != '/')
		start--;
	return end > start ? strndup(dir + start, end - start) : NULL;
}

/* /metrics gets the render cache's figures through this. */
static void metrics_cb(struct buf *out, void *ctx)
{
	struct fsmount **m = ctx;

	fsmount__metrics(__atomic_load_n(m, __ATOMIC_ACQUIRE), out);
}

int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "allow-other", no_argument, NULL, 'a' },
		{ "cache-size", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct store_opts so = { .readonly = true };
	struct mount_opts mo = { 0 };
	struct tree_opts to = { 0 };
	struct fsmount *m = NULL;
	struct store *s[MAX_STORES] = { 0 };
	char *nodes[MAX_STORES] = { 0 };
	const char *dirs[MAX_STORES];
	size_t ns = 0;
	struct tree *t = NULL;
	sigset_t sigs;
	uint64_t size;
	int c, sig, err, rc = 1;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (ns == MAX_STORES) {
				fprintf(stderr, "proffs mount: at most %d --store\n", MAX_STORES);
				return 2;
			}
			dirs[ns++] = optarg;
			break;
		case 'a':
			mo.allow_other = true;
			break;
		case 'c':
			if (parse_size(optarg, &size) || size == 0) {
				fprintf(stderr, "proffs mount: bad --cache-size '%s' (e.g. 64M, 1G)\n", optarg);
				return 2;
			}
			mo.cache_bytes = size;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "proffs mount: option '%s' needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "proffs mount: unknown option '%s' (try --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (!ns) {
		fprintf(stderr, "proffs mount: --store DIR is required\n");
		return 2;
	}
	if (optind != argc - 1) {
		fprintf(stderr, optind >= argc ? "proffs mount: MOUNTPOINT is required\n" :
			"proffs mount: exactly one MOUNTPOINT expected\n");
		return 2;
	}
	mo.mountpoint = argv[optind];

	for (size_t i = 0; i < ns; i++) {
		so.dir = dirs[i];
		err = store__open(&s[i], &so);
		if (err) {
			fprintf(stderr, "proffs mount: cannot open store %s: %s\n", so.dir,
				strerror(-err));
			goto out_store;
		}
		if (ns > 1 && !(nodes[i] = dir_name(dirs[i]))) {
			fprintf(stderr, "proffs mount: no name for store %s\n", dirs[i]);
			goto out_store;
		}
	}
	to.metrics_cb = metrics_cb;
	to.metrics_ctx = &m;
	t = tree__new_multi(s, ns > 1 ? (const char *const *)nodes : NULL, ns, &to);
	if (!t) {
		fprintf(stderr, "proffs mount: cannot build the tree: %s\n", strerror(errno));
		goto out_store;
	}

	/* Blocked before any FUSE thread exists, so every thread inherits the
	 * mask and only sigwait() below takes these signals (libfuse's own
	 * handlers lose them when a worker thread catches one). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	mo.spill_dir = dirs[0];
	err = fsmount__start(&m, t, &mo);
	if (err) {
		fprintf(stderr, "proffs mount: cannot mount at %s: %s\n", mo.mountpoint, strerror(-err));
		goto out_tree;
	}
	sig = fsmount__wait_signal(m, &sigs);
	pr_info("signal %d, unmounting", sig);
	fsmount__stop(__atomic_exchange_n(&m, NULL, __ATOMIC_ACQ_REL));
	rc = 0;
out_tree:
	tree__free(t);
out_store:
	for (size_t i = 0; i < ns; i++) {
		store__close(s[i]);
		free(nodes[i]);
	}
	return rc;
}
