/*
 * labels.h - the labels proffs attaches to a process's CPU samples, found
 * without asking any API server: comm, exe, pid from /proc; unit, container
 * and the Kubernetes pod uid from the cgroup path; pod and namespace from
 * the kubelet's log directory (<pods_root>/<namespace>_<pod>_<uid>/).
 */
#ifndef PROFFS_LABELS_H
#define PROFFS_LABELS_H

#include <stdint.h>

enum label_id {
	LBL_COMM,
	LBL_EXE,
	LBL_PID,
	LBL_UNIT,
	LBL_CONTAINER,
	LBL_POD,
	LBL_NAMESPACE,
	LBL_MAX,
};

extern const char *const label_names[LBL_MAX];

struct labeler;

struct labeler_opts {
	const char *cgroup_root; /* cgroup2 mount; NULL = found in /proc/self/mounts */
	const char *pods_root;   /* NULL = /var/log/pods */
};

/* Returns a labeler, or NULL with errno set. Not thread-safe. */
struct labeler *labeler__new(const struct labeler_opts *o);
void labeler__free(struct labeler *l);

/*
 * Fills vals[LBL_UNIT], vals[LBL_CONTAINER], vals[LBL_POD] and
 * vals[LBL_NAMESPACE] from a cgroup path (a line of /proc/PID/cgroup
 * without its "N:ctrl:" prefix). Each is a malloc'd string or NULL when
 * not discoverable; the caller frees them. Other slots are untouched.
 */
void labeler__from_cgroup(struct labeler *l, const char *path, char *vals[LBL_MAX]);

/* The path (relative to the cgroup2 root, starting with "/") of the
 * cgroup with this id (its inode number), malloc'd; NULL if unknown.
 * Used when a process is gone before its /proc entry could be read. */
char *labeler__cgroup_path(struct labeler *l, uint64_t id);

/* Pure helpers, exported for unit tests: the container id (64 hex) in a
 * cgroup path, the pod uid (with dashes), the systemd unit. Each writes a
 * NUL-terminated string to out and returns 0, or -ENOENT. */
int labels__container_id(const char *path, char *out, size_t size);
int labels__pod_uid(const char *path, char *out, size_t size);
int labels__unit(const char *path, char *out, size_t size);

#endif
