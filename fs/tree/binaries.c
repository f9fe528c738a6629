/*
 * binaries.c - see binaries.h.
 *
 * Nothing is copied: a binary is served from where the daemon read it,
 * opened again through the one safe opener (store/util/safefile.h: no
 * symlink followed, a regular file, readable by the user whose process
 * mapped it) and served only while it is still the file that was read
 * (device, inode, size and mtime as recorded), so an upgraded library is
 * not served under its old build id. A debug file is served from the
 * debug root (/usr/lib/debug/.build-id/, root's) or from debuginfod's
 * cache in the store's directory, which holds only files that checked
 * out as that build id's (sampler/symbols/debuginfod.c).
 */
#include "fs/tree/binaries.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/util/safefile.h"
#include "store/util/util.h"

#define DEBUG_ROOT "/usr/lib/debug"

static int strcmp_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int bins__ids(struct tstores *ts, char ***ids, size_t *n)
{
	char **all = NULL;
	size_t nall = 0, cap = 0, k = 0;
	int err = 0;

	for (size_t i = 0; i < ts->n && !err; i++) {
		char **v;
		size_t nv;

		if ((err = store__binaries(ts->v[i].s, &v, &nv)))
			break;
		if (GROW(all, &cap, nall + nv + 1)) {
			store__free_strv(v, nv);
			err = -ENOMEM;
			break;
		}
		memcpy(all + nall, v, nv * sizeof(*v));
		nall += nv;
		free(v);
	}
	if (err) {
		store__free_strv(all, nall);
		return err;
	}
	if (nall)
		qsort(all, nall, sizeof(*all), strcmp_p);
	for (size_t i = 0; i < nall; i++) {
		if (k && !strcmp(all[k - 1], all[i]))
			free(all[i]);
		else
			all[k++] = all[i];
	}
	*ids = all;
	*n = k;
	return 0;
}

/* The name a recorded path is served under: its base name when that is
 * a plain name (pprof tries <build id>/<base name> first), else "binary"
 * (pprof then finds it among the directory's files). */
static char *served_name(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t len;

	b = b ? b + 1 : path;
	len = strlen(b);
	if (!len || len > 200 || !strcmp(b, ".") || !strcmp(b, ".."))
		return strdup("binary");
	for (size_t i = 0; i < len; i++)
		if (b[i] <= ' ' || b[i] > '~' || b[i] == '%')
			return strdup("binary");
	return strdup(b);
}

/* The first store's record of bid; -ENOENT when none has one. */
static int record(struct tstores *ts, const char *bid, struct store_binary *b, size_t *store)
{
	for (size_t i = 0; i < ts->n; i++)
		if (!store__binary_get(ts->v[i].s, bid, b)) {
			*store = i;
			return 0;
		}
	return -ENOENT;
}

static int open_binary(const struct store_binary *b, struct stat *st)
{
	struct sf_cred c = { .uid = b->uid, .gid = b->gid };
	int fd;

	if (!(b->flags & STORE_BIN_HOST) || b->path[0] != '/')
		return -ENOENT;
	fd = safefile__open(AT_FDCWD, b->path, true, false, SF_ELF, &c, st);
	if (fd < 0)
		return fd;
	if (st->st_dev != b->dev || st->st_ino != b->ino || (uint64_t)st->st_size != b->size ||
	    st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec != b->mtime_ns) {
		close(fd);
		return -ENOENT; /* replaced since: not the file of this build id */
	}
	return fd;
}

static int open_debug(struct tstores *ts, size_t store, const char *bid, struct stat *st)
{
	char p[4200];
	int fd;

	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", DEBUG_ROOT, bid, bid + 2);
	fd = safefile__open(AT_FDCWD, p, false, false, SF_DEBUG, NULL, st);
	if (fd >= 0)
		return fd;
	snprintf(p, sizeof(p), "%s/debuginfod/%s/debuginfo", store__dir(ts->v[store].s), bid);
	fd = safefile__open(AT_FDCWD, p, true, false, SF_DEBUG, NULL, st);
	if (fd >= 0 && !st->st_size) { /* libdebuginfod's mark of a miss */
		close(fd);
		fd = -ENOENT;
	}
	return fd;
}

int bins__names(struct tstores *ts, const char *bid, char **bin, char **dbg)
{
	struct store_binary b;
	struct stat st;
	size_t store;
	char *name;
	int fd, err;

	*bin = *dbg = NULL;
	if ((err = record(ts, bid, &b, &store)))
		return err;
	name = served_name(b.path);
	if (!name) {
		free(b.path);
		return -ENOMEM;
	}
	if ((fd = open_binary(&b, &st)) >= 0) {
		close(fd);
		*bin = strdup(name);
	}
	if ((fd = open_debug(ts, store, bid, &st)) >= 0) {
		close(fd);
		if (asprintf(dbg, "%s.debug", name) < 0)
			*dbg = NULL;
	}
	free(name);
	free(b.path);
	return 0;
}

int bins__open(struct tstores *ts, const char *bid, const char *name, int *fd, struct stat *st)
{
	struct store_binary b;
	size_t store, nl;
	char *served;
	int err;

	*fd = -1;
	if ((err = record(ts, bid, &b, &store)))
		return err;
	served = served_name(b.path);
	err = -ENOENT;
	if (served && !strcmp(name, served)) {
		err = open_binary(&b, st);
	} else if (served && (nl = strlen(served), !strncmp(name, served, nl)) &&
		   !strcmp(name + nl, ".debug")) {
		err = open_debug(ts, store, bid, st);
	}
	free(served);
	free(b.path);
	if (err >= 0) {
		*fd = err;
		return 0;
	}
	return err == -ECANCELED || err == -EACCES ? -ENOENT : err;
}
