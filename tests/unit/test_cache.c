/* test_cache.c - the render cache: hits, versions, the byte bound, LRU
 * order, pinned entries outliving eviction, one render per key under
 * concurrency, failures not cached; its spill file: bytes read back from
 * it, blocks given back on eviction, files rotated and closed. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/cache/cache.h"
#include "tests/test.h"

struct rctx {
	const char *text;
	size_t len;
	int err;
	int sleep_ms;
	atomic_int calls;
};

static int render(void *ctx, struct buf *out)
{
	struct rctx *r = ctx;

	atomic_fetch_add(&r->calls, 1);
	if (r->sleep_ms)
		usleep(r->sleep_ms * 1000);
	if (r->err)
		return r->err;
	out->data = malloc(r->len ? r->len : 1);
	if (!out->data)
		return -ENOMEM;
	for (size_t i = 0; i < r->len; i++)
		out->data[i] = r->text[i % strlen(r->text)];
	out->len = out->cap = r->len;
	return 0;
}

struct thr {
	struct cache *c;
	struct rctx *r;
	struct cache_entry *e;
	int err;
};

static void *getter(void *arg)
{
	struct thr *t = arg;

	t->err = cache__get(t->c, "/same", 7, render, t->r, &t->e);
	return NULL;
}

/* Blocks the file system holds for fd (what hole punching gives back). */
static long long blocks_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_blocks * 512;
}

static void test_spill(void)
{
	char dir[] = "/tmp/test_cache.XXXXXX", want[1000], got[1000];
	struct rctx r = { .text = "spill", .len = 1000 };
	struct cache_entry *e, *pin;
	struct cache_stats st;
	struct spill *sp;
	struct spill_ext x[20];
	uint64_t off;
	int fd, err;
	struct cache *c;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = "spill"[i % 5];

	c = cache__new(64 * 1024);
	CHECK(cache__spill_to(c, "/nonexistent/dir") < 0, "a spill directory that does not exist is refused");
	err = cache__get(c, "/heap", 1, render, &r, &e);
	CHECK(!err && e->data && cache_entry__fd(e, &off) < 0, "and the cache keeps its bytes in the heap");
	cache__put(c, e);
	cache__free(c);

	c = cache__new(64 * 1024);
	CHECK(!cache__spill_to(c, dir), "a spill file in %s", dir);
	err = cache__get(c, "/a", 1, render, &r, &pin);
	fd = err ? -1 : cache_entry__fd(pin, &off);
	CHECK(!err && !pin->data && fd >= 0 && pread(fd, got, sizeof(got), (off_t)off) == 1000 &&
		      !memcmp(got, want, 1000),
	      "an entry's bytes are in the file, read back with pread");
	cache__stats(c, &st);
	CHECK(st.file_bytes == 4096, "its extent is one page (%llu bytes)", (unsigned long long)st.file_bytes);
	/* Fill past the bound: evicted extents give their blocks back. */
	for (int i = 0; i < 500; i++) {
		char key[32];

		snprintf(key, sizeof(key), "/fill/%d", i);
		if (!cache__get(c, key, 1, render, &r, &e))
			cache__put(c, e);
	}
	cache__stats(c, &st);
	CHECK(st.evictions > 400 && st.file_bytes <= 64 * 1024,
	      "500 entries, %llu evicted: %llu bytes in the file", (unsigned long long)st.evictions,
	      (unsigned long long)st.file_bytes);
	CHECK(blocks_of(fd) >= 0 && blocks_of(fd) <= (long long)st.file_bytes + 4096,
	      "the file system holds %lld bytes for it (holes punched where entries left)", blocks_of(fd));
	memset(got, 0, sizeof(got));
	CHECK(pread(fd, got, sizeof(got), (off_t)off) == 1000 && !memcmp(got, want, 1000),
	      "a pinned entry's bytes outlive its eviction");
	cache__put(c, pin);
	cache__free(c);

	/* Rotation: a 16 KiB file takes four one-page extents. */
	CHECK(!spill__open_rotate(&sp, dir, 16 * 1024), "a spill rotating at 16 KiB");
	for (int i = 0; i < 20; i++)
		CHECK(!spill__put(sp, want, 1000, &x[i]) && x[i].off == (uint64_t)(i % 4) * 4096,
		      "put %d at offset %llu", i, (unsigned long long)x[i].off);
	CHECK(spill__files(sp) == 5, "20 extents in 5 files (%u)", spill__files(sp));
	for (int i = 0; i < 16; i++)
		spill__free(sp, &x[i]);
	CHECK(spill__files(sp) == 1, "retired files close with their last extent (%u open)", spill__files(sp));
	CHECK(spill__bytes(sp) == 4 * 4096, "the current file's four extents remain (%llu bytes)",
	      (unsigned long long)spill__bytes(sp));
	memset(got, 0, sizeof(got));
	CHECK(pread(spill__fd(&x[19]), got, 1000, (off_t)x[19].off) == 1000 && !memcmp(got, want, 1000),
	      "and read back");
	spill__close(sp);
	rmdir(dir);
}

int main(void)
{
	struct cache *c = cache__new(64 * 1024);
	struct cache_entry *e1, *e2, *big, *pinned;
	struct cache_stats st;
	struct rctx r = { .text = "abc", .len = 1000 };
	char key[64];
	int err;

	if (!c) {
		printf("cache__new failed\n");
		return 1;
	}

	/* miss, then hit with the very same bytes */
	err = cache__get(c, "/cpu/a", 1, render, &r, &e1);
	CHECK(!err && e1->len == 1000 && !memcmp(e1->data, "abcabc", 6), "first get renders 1000 bytes");
	err = cache__get(c, "/cpu/a", 1, render, &r, &e2);
	CHECK(!err && e2 == e1 && r.calls == 1, "second get is a hit on the same entry (renders: %d)", r.calls);
	cache__stats(c, &st);
	CHECK(st.hits == 1 && st.misses == 1 && st.entries == 1, "stats: hits %llu misses %llu entries %llu",
	      (unsigned long long)st.hits, (unsigned long long)st.misses, (unsigned long long)st.entries);
	cache__put(c, e1);
	cache__put(c, e2);

	/* a new data version is a new key */
	err = cache__get(c, "/cpu/a", 2, render, &r, &e1);
	CHECK(!err && r.calls == 2, "a new version renders again (renders: %d)", r.calls);
	cache__put(c, e1);

	/* bound and LRU: 200 entries of 1000 bytes into 64 KiB; /keep is
	 * touched after every insert and must survive */
	err = cache__get(c, "/keep", 1, render, &r, &pinned);
	cache__put(c, pinned);
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "/fill/%d", i);
		if (!cache__get(c, key, 1, render, &r, &e1))
			cache__put(c, e1);
		if (!cache__get(c, "/keep", 1, render, &r, &e1))
			cache__put(c, e1);
	}
	cache__stats(c, &st);
	CHECK(st.bytes <= st.max_bytes && st.evictions > 100,
	      "bound holds: %llu bytes <= %llu, %llu evictions", (unsigned long long)st.bytes,
	      (unsigned long long)st.max_bytes, (unsigned long long)st.evictions);
	r.calls = 0;
	err = cache__get(c, "/keep", 1, render, &r, &e1);
	CHECK(!err && r.calls == 0, "the most recently used entry survived");
	cache__put(c, e1);
	err = cache__get(c, "/fill/0", 1, render, &r, &e1);
	CHECK(!err && r.calls == 1, "the least recently used entry was evicted");
	cache__put(c, e1);

	/* a pinned entry keeps its bytes after eviction */
	err = cache__get(c, "/pinned", 1, render, &r, &pinned);
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "/evict/%d", i);
		if (!cache__get(c, key, 1, render, &r, &e1))
			cache__put(c, e1);
	}
	CHECK(!err && pinned->len == 1000 && !memcmp(pinned->data, "abcabc", 6),
	      "pinned entry still readable after its eviction");
	cache__put(c, pinned);

	/* larger than the whole cache: served, not kept */
	struct rctx rb = { .text = "x", .len = 100 * 1024 };
	err = cache__get(c, "/big", 1, render, &rb, &big);
	CHECK(!err && big->len == 100 * 1024, "an oversized render is returned");
	cache__stats(c, &st);
	CHECK(st.bytes <= st.max_bytes, "and not kept (%llu bytes)", (unsigned long long)st.bytes);
	cache__put(c, big);

	/* failures are returned, not cached */
	struct rctx rf = { .err = -EIO };
	err = cache__get(c, "/fail", 1, render, &rf, &e1);
	CHECK(err == -EIO && !e1, "a failed render returns its error");
	err = cache__get(c, "/fail", 1, render, &rf, &e1);
	CHECK(err == -EIO && rf.calls == 2, "and is tried again next time (renders: %d)", rf.calls);

	/* 16 threads on one key: one render, one shared entry */
	struct rctx rs = { .text = "slow", .len = 5000, .sleep_ms = 200 };
	struct thr th[16];
	pthread_t tid[16];
	for (int i = 0; i < 16; i++) {
		th[i] = (struct thr){ .c = c, .r = &rs };
		pthread_create(&tid[i], NULL, getter, &th[i]);
	}
	int same = 1;
	for (int i = 0; i < 16; i++) {
		pthread_join(tid[i], NULL);
		same &= !th[i].err && th[i].e == th[0].e;
	}
	CHECK(rs.calls == 1 && same, "16 concurrent gets: %d render(s), one shared entry", rs.calls);
	cache__stats(c, &st);
	CHECK(st.waits >= 1, "waiters counted (%llu)", (unsigned long long)st.waits);
	for (int i = 0; i < 16; i++)
		cache__put(c, th[i].e);

	/* an entry still referenced when the cache is freed is freed too */
	err = cache__get(c, "/leaked-by-a-dead-connection", 1, render, &r, &e1);
	CHECK(!err, "entry held across cache__free (ASan checks no leak)");
	cache__free(c);

	test_spill();
	return test_done();
}
