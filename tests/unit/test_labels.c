/* test_labels: label discovery without a cluster - container ids from the
 * cgroup paths of docker, containerd and CRI-O under both cgroup drivers,
 * pod uids, systemd units, pod/namespace from a fake kubelet pods dir, and
 * cgroup id -> path through a fake cgroup root. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/proc/labels.h"
#include "tests/test.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "5f0e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b"
#define UID_ "5f0e4c3a_1b2d_4e6f_8a9b_0c1d2e3f4a5b"

static void want(int (*fn)(const char *, char *, size_t), const char *what, const char *path,
		 const char *expect)
{
	char out[128];
	int err = fn(path, out, sizeof(out));

	if (expect)
		CHECK(!err && !strcmp(out, expect), "%s of %s = %s (got %s)", what, path, expect,
		      err ? "none" : out);
	else
		CHECK(err == -ENOENT, "%s of %s: none (got %s)", what, path, err ? "none" : out);
}

int main(void)
{
	/* container ids */
	want(labels__container_id, "container", "/docker/" ID64, ID64);
	want(labels__container_id, "container", "/system.slice/docker-" ID64 ".scope", ID64);
	want(labels__container_id, "container",
	     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	     ".slice/cri-containerd-" ID64 ".scope", ID64);
	want(labels__container_id, "container", "/kubepods/burstable/pod" UID "/" ID64, ID64);
	want(labels__container_id, "container",
	     "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID64 ".scope", ID64);
	want(labels__container_id, "container", "/machine.slice/libpod-" ID64 ".scope/container", ID64);
	want(labels__container_id, "container", "/user.slice/user-1000.slice/session-2.scope", NULL);
	want(labels__container_id, "container", "/docker/" "0123456789abcdef", NULL);
	want(labels__container_id, "container", "/", NULL);
	want(labels__container_id, "container", "", NULL);

	/* pod uids, both drivers */
	want(labels__pod_uid, "pod uid",
	     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	     ".slice/cri-containerd-" ID64 ".scope", UID);
	want(labels__pod_uid, "pod uid", "/kubepods.slice/kubepods-pod" UID_ ".slice", UID);
	want(labels__pod_uid, "pod uid", "/kubepods/besteffort/pod" UID "/" ID64, UID);
	want(labels__pod_uid, "pod uid", "/kubepods/besteffort/podnotauid/" ID64, NULL);
	want(labels__pod_uid, "pod uid", "/system.slice/docker-" ID64 ".scope", NULL);

	/* systemd units */
	want(labels__unit, "unit", "/system.slice/nginx.service", "nginx.service");
	want(labels__unit, "unit", "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service",
	     "foo.service");
	want(labels__unit, "unit", "/system.slice/cron.service/child", "cron.service");
	want(labels__unit, "unit", "/user.slice/user-1000.slice/session-2.scope", "session-2.scope");
	want(labels__unit, "unit", "/", NULL);
	want(labels__unit, "unit", "/kubepods/besteffort", NULL);

	/* A fake node: pods dir and cgroup root are plain directories. */
	char root[] = "/tmp/test_labels.XXXXXX", p[512];
	struct labeler *l;
	char *vals[LBL_MAX] = { 0 };
	struct stat st;

	if (!mkdtemp(root)) {
		CHECK(0, "mkdtemp");
		return test_done();
	}
	snprintf(p, sizeof(p), "%s/pods", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/pods/shop_cart-7d9f_%s", root, UID);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/pods/stray-dir", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/cg", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/cg/a", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/cg/a/b", root);
	mkdir(p, 0755);
	stat(p, &st);

	char pods[512], cg[512];
	snprintf(pods, sizeof(pods), "%s/pods", root);
	snprintf(cg, sizeof(cg), "%s/cg", root);
	l = labeler__new(&(struct labeler_opts){ .cgroup_root = cg, .pods_root = pods });
	CHECK(l != NULL, "labeler__new");
	if (l) {
		labeler__from_cgroup(l,
				     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
				     ".slice/cri-containerd-" ID64 ".scope", vals);
		CHECK(vals[LBL_POD] && !strcmp(vals[LBL_POD], "cart-7d9f"), "pod = cart-7d9f (%s)",
		      vals[LBL_POD] ? vals[LBL_POD] : "none");
		CHECK(vals[LBL_NAMESPACE] && !strcmp(vals[LBL_NAMESPACE], "shop"), "namespace = shop (%s)",
		      vals[LBL_NAMESPACE] ? vals[LBL_NAMESPACE] : "none");
		CHECK(vals[LBL_CONTAINER] && !strcmp(vals[LBL_CONTAINER], ID64), "container id");
		CHECK(!vals[LBL_UNIT], "a container's scope is not its unit");
		for (int i = 0; i < LBL_MAX; i++) {
			free(vals[i]);
			vals[i] = NULL;
		}
		labeler__from_cgroup(l, "/kubepods/besteffort/pod" "11111111-2222-3333-4444-555555555555/" ID64, vals);
		CHECK(!vals[LBL_POD] && !vals[LBL_NAMESPACE] && vals[LBL_CONTAINER],
		      "unknown pod uid: no pod/namespace, still a container");
		for (int i = 0; i < LBL_MAX; i++)
			free(vals[i]);

		char *path = labeler__cgroup_path(l, st.st_ino);
		CHECK(path && !strcmp(path, "/a/b"), "cgroup id %llu -> /a/b (%s)",
		      (unsigned long long)st.st_ino, path ? path : "none");
		free(path);
		path = labeler__cgroup_path(l, 1);
		CHECK(!path, "unknown cgroup id -> none");
		free(path);
		labeler__free(l);
	}
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	if (system(p))
		CHECK(0, "cleanup");
	return test_done();
}
