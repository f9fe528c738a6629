/*
 * labels.c - label discovery from cgroup paths and the kubelet pods dir.
 *
 * Container runtimes name cgroups after the container id, with either
 * cgroup driver:
 *   cgroupfs: /docker/<id>, /kubepods/besteffort/pod<uid>/<id>
 *   systemd:  /system.slice/docker-<id>.scope,
 *             /kubepods.slice/kubepods-besteffort.slice/
 *               kubepods-besteffort-pod<uid_with_underscores>.slice/
 *               cri-containerd-<id>.scope   (crio-<id>.scope for CRI-O)
 * so the id is the innermost component that is 64 hex digits once a
 * runtime prefix and ".scope" are stripped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "store/util/hmap.h"
#include "sampler/proc/labels.h"
#include "store/util/util.h"

const char *const label_names[LBL_MAX] = {
	[LBL_COMM] = "comm",	       [LBL_EXE] = "exe",	  [LBL_PID] = "pid",
	[LBL_UNIT] = "unit",	       [LBL_CONTAINER] = "container",
	[LBL_POD] = "pod",	       [LBL_NAMESPACE] = "namespace",
};

struct pod_ent {
	char *ns, *pod;
};

struct labeler {
	char *cgroup_root, *pods_root;
	struct hmap pods;    /* hash(uid) -> struct pod_ent * */
	struct hmap cgpaths; /* cgroup id -> malloc'd path */
	int64_t pods_scan_ns, cg_scan_ns;
};

static char *find_cgroup2(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char line[1024], dev[256], dir[512], type[64];
	char *r = NULL;

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %511s %63s", dev, dir, type) == 3 && !strcmp(type, "cgroup2")) {
			r = strdup(dir);
			break;
		}
	}
	fclose(f);
	return r;
}

struct labeler *labeler__new(const struct labeler_opts *o)
{
	struct labeler *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cgroup_root = o && o->cgroup_root ? strdup(o->cgroup_root) : find_cgroup2();
	l->pods_root = strdup(o && o->pods_root ? o->pods_root : "/var/log/pods");
	if (!l->pods_root) {
		labeler__free(l);
		errno = ENOMEM;
		return NULL;
	}
	return l;
}

void labeler__free(struct labeler *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->pods.cap; i++) {
		struct pod_ent *p = l->pods.vals[i];

		if (!l->pods.keys[i])
			continue;
		free(p->ns);
		free(p->pod);
		free(p);
	}
	hmap__fini(&l->pods);
	hmap__drain(&l->cgpaths, hmap__free_val, NULL);
	free(l->cgroup_root);
	free(l->pods_root);
	free(l);
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Walks the components of path from the innermost outwards, calling fn
 * with each (not NUL-terminated); stops when fn returns 0. */
static int each_component_rev(const char *path, int (*fn)(const char *c, size_t n, char *out, size_t size),
			      char *out, size_t size)
{
	const char *end = path + strlen(path);

	while (end > path) {
		const char *start = end;

		while (start > path && start[-1] != '/')
			start--;
		if (end > start && !fn(start, end - start, out, size))
			return 0;
		end = start > path ? start - 1 : path;
	}
	return -ENOENT;
}

static int container_fn(const char *c, size_t n, char *out, size_t size)
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-",
						"containerd-", "crio-conmon-" };

	if (n > 6 && !memcmp(c + n - 6, ".scope", 6))
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (n > pl && !memcmp(c, prefixes[i], pl)) {
			c += pl;
			n -= pl;
			break;
		}
	}
	if (n != 64 || !all_hex(c, n) || size < 65)
		return -ENOENT;
	memcpy(out, c, 64);
	out[64] = 0;
	return 0;
}

int labels__container_id(const char *path, char *out, size_t size)
{
	return each_component_rev(path, container_fn, out, size);
}

static int pod_fn(const char *c, size_t n, char *out, size_t size)
{
	const char *p = NULL;
	size_t i, len;

	if (n > 6 && !memcmp(c + n - 6, ".slice", 6))
		n -= 6;
	/* "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid>" (systemd) */
	if (n > 3 && !memcmp(c, "pod", 3))
		p = c + 3;
	else
		for (i = 0; i + 4 <= n; i++)
			if (!memcmp(c + i, "-pod", 4))
				p = c + i + 4;
	if (!p)
		return -ENOENT;
	len = c + n - p;
	if (len != 36 || size < 37)
		return -ENOENT;
	for (i = 0; i < len; i++) {
		char ch = p[i] == '_' ? '-' : p[i];

		if (!(ch == '-' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return -ENOENT;
		out[i] = ch;
	}
	out[len] = 0;
	return 0;
}

int labels__pod_uid(const char *path, char *out, size_t size)
{
	return each_component_rev(path, pod_fn, out, size);
}

static int unit_fn(const char *c, size_t n, char *out, size_t size)
{
	static const char *const sfx[] = { ".service", ".scope", ".socket", ".mount", ".swap" };

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t sl = strlen(sfx[i]);

		if (n > sl && !memcmp(c + n - sl, sfx[i], sl) && n < size) {
			memcpy(out, c, n);
			out[n] = 0;
			return 0;
		}
	}
	return -ENOENT;
}

int labels__unit(const char *path, char *out, size_t size)
{
	return each_component_rev(path, unit_fn, out, size);
}

static uint64_t str_key(const char *s)
{
	uint64_t h = hash64(s, strlen(s), 0x90d);

	return h ? h : 1;
}

/* Re-reads <pods_root>: entries are <namespace>_<pod>_<uid>. */
static void scan_pods(struct labeler *l)
{
	DIR *d = opendir(l->pods_root);
	struct dirent *e;

	l->pods_scan_ns = now_mono_ns();
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *u1 = strchr(e->d_name, '_'), *u2 = strrchr(e->d_name, '_');
		struct pod_ent *p;
		uint64_t k;

		if (!u1 || u1 == u2 || strlen(u2 + 1) != 36)
			continue;
		k = str_key(u2 + 1);
		if (hmap__get(&l->pods, k))
			continue;
		p = calloc(1, sizeof(*p));
		if (!p)
			break;
		p->ns = strndup(e->d_name, u1 - e->d_name);
		p->pod = strndup(u1 + 1, u2 - u1 - 1);
		if (!p->ns || !p->pod || hmap__put(&l->pods, k, p)) {
			free(p->ns);
			free(p->pod);
			free(p);
			break;
		}
	}
	closedir(d);
}

void labeler__from_cgroup(struct labeler *l, const char *path, char *vals[LBL_MAX])
{
	char buf[256];
	struct pod_ent *p;

	if (!path)
		return;
	if (!vals[LBL_CONTAINER] && !labels__container_id(path, buf, sizeof(buf)))
		vals[LBL_CONTAINER] = strdup(buf);
	if (!vals[LBL_UNIT] && !labels__unit(path, buf, sizeof(buf)) && !vals[LBL_CONTAINER])
		vals[LBL_UNIT] = strdup(buf);
	if (vals[LBL_POD] || labels__pod_uid(path, buf, sizeof(buf)))
		return;
	p = hmap__get(&l->pods, str_key(buf));
	/* New pods appear all the time; rescan at most once a second. */
	if (!p && now_mono_ns() - l->pods_scan_ns > 1000000000LL) {
		scan_pods(l);
		p = hmap__get(&l->pods, str_key(buf));
	}
	if (!p)
		return;
	vals[LBL_POD] = strdup(p->pod);
	vals[LBL_NAMESPACE] = strdup(p->ns);
}

static struct labeler *walk_l;
static size_t walk_prefix;

static int walk_fn(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	if (type != FTW_D)
		return 0;
	if (!hmap__get(&walk_l->cgpaths, sb->st_ino)) {
		char *p = strdup(fpath[walk_prefix] ? fpath + walk_prefix : "/");

		if (p && hmap__put(&walk_l->cgpaths, sb->st_ino, p))
			free(p);
	}
	return 0;
}

char *labeler__cgroup_path(struct labeler *l, uint64_t id)
{
	char *p;

	if (!id || !l->cgroup_root)
		return NULL;
	p = hmap__get(&l->cgpaths, id);
	if (!p && now_mono_ns() - l->cg_scan_ns > 1000000000LL) {
		/* Not thread-safe (a static for nftw), like the rest of this. */
		walk_l = l;
		walk_prefix = strlen(l->cgroup_root);
		l->cg_scan_ns = now_mono_ns();
		nftw(l->cgroup_root, walk_fn, 16, FTW_PHYS | FTW_MOUNT);
		p = hmap__get(&l->cgpaths, id);
	}
	return p ? strdup(p) : NULL;
}
