/* test_inode.c - the FUSE edge's inode table: an entry lives while the
 * kernel holds it, and the last INO_FORGOTTEN forgotten ones stay for NFS
 * handles; older forgotten ones go, and one held again is never freed by
 * its stale slot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fuse/inode.h"
#include "tests/test.h"


static uint64_t count(struct inotab *t)
{
	uint64_t n, f, b;

	inotab__stats(t, &n, &f, &b);
	return n + f;
}

int main(void)
{
	enum { N = 3 * INO_FORGOTTEN };
	static uint64_t ino[N];
	struct inotab t;
	char key[64], *p;
	int ok = 1;

	CHECK(!inotab__init(&t), "init");
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "/cpu/m%d/profile.pb", i);
		ino[i] = inotab__assign(&t, key, key);
		ok &= ino[i] != 0 && inotab__assign(&t, key, key) == ino[i]; /* twice: nlookup 2 */
	}
	CHECK(ok && count(&t) == N, "%d paths looked up twice each: %llu inodes", N,
	      (unsigned long long)count(&t));
	for (int i = 0; i < N; i++)
		inotab__forget(&t, ino[i], 1);
	CHECK(count(&t) == N, "one of two references forgotten: all %llu kept",
	      (unsigned long long)count(&t));
	/* Path 0 is looked up again before its second forget: held. */
	inotab__assign(&t, "/cpu/m0/profile.pb", "/cpu/m0/profile.pb");
	for (int i = 0; i < N; i++)
		inotab__forget(&t, ino[i], 1);
	CHECK(count(&t) == INO_FORGOTTEN + 1, "all forgotten: the last %d stay, and the one held (%llu)",
	      INO_FORGOTTEN, (unsigned long long)count(&t));
	p = inotab__path(&t, ino[0]);
	CHECK(p && !strcmp(p, "/cpu/m0/profile.pb"), "the held one resolves (%s)", p ? p : "-");
	free(p);
	p = inotab__path(&t, ino[1]);
	CHECK(!p && errno == ESTALE, "an old forgotten one is gone: ESTALE");
	free(p);
	p = inotab__path(&t, ino[N - 1]);
	CHECK(p != NULL, "a recently forgotten one resolves (an NFS handle)");
	free(p);
	/* Held again, then its slot comes round: not freed by the old slot. */
	snprintf(key, sizeof(key), "/cpu/m%d/profile.pb", N - INO_FORGOTTEN);
	inotab__assign(&t, key, key);
	for (int i = 0; i < INO_FORGOTTEN; i++) {
		char k2[64];
		uint64_t x;

		snprintf(k2, sizeof(k2), "/other/%d", i);
		x = inotab__assign(&t, k2, k2);
		inotab__forget(&t, x, 1);
	}
	p = inotab__path(&t, ino[N - INO_FORGOTTEN]);
	CHECK(p != NULL, "one held again outlives its old ring slot");
	free(p);
	inotab__fini(&t);

	/* Held and forgotten are told apart, the table's slots shrink back
	 * after a burst, and the root's held children are listed (prune.c). */
	uint64_t held, forgot, b0, b1, b2;

	CHECK(!inotab__init(&t), "init again");
	inotab__stats(&t, &held, &forgot, &b0);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "/cpu/comm=x%d", i);
		ino[i] = inotab__assign(&t, key, key);
	}
	inotab__assign(&t, "/cpu", "/cpu");
	inotab__assign(&t, "/merged", "/merged");
	inotab__assign(&t, "/metrics", "/metrics");
	uint64_t gone = inotab__assign(&t, "/diff", "/diff");

	inotab__forget(&t, gone, 1);
	inotab__stats(&t, &held, &forgot, &b1);
	CHECK(held == N + 3 && forgot == 1, "held %llu (want %d), forgotten %llu (want 1)",
	      (unsigned long long)held, N + 3, (unsigned long long)forgot);
	p = inotab__top_names(&t);
	int ncpu = 0, nmerged = 0, nmetrics = 0, nother = 0;

	for (char *q = p; q && *q; q += strlen(q) + 1) {
		if (!strcmp(q, "cpu"))
			ncpu++;
		else if (!strcmp(q, "merged"))
			nmerged++;
		else if (!strcmp(q, "metrics"))
			nmetrics++;
		else
			nother++;
	}
	CHECK(p && ncpu == 1 && nmerged == 1 && nmetrics == 1 && !nother,
	      "top names: cpu, merged, metrics once each, nothing forgotten or deeper (%d others)",
	      nother);
	free(p);
	for (int i = 0; i < N; i++)
		inotab__forget(&t, ino[i], 1);
	inotab__stats(&t, &held, &forgot, &b2);
	CHECK(held == 3 && forgot == INO_FORGOTTEN, "all forgotten: %llu held, %llu kept for handles",
	      (unsigned long long)held, (unsigned long long)forgot);
	CHECK(b2 <= b1 / 2, "the table shrank from %llu to %llu bytes", (unsigned long long)b1,
	      (unsigned long long)b2);
	inotab__fini(&t);
	return test_done();
}
