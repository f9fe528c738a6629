/* test_hsperf: the class-unload counter found in a JVM's perf data
 * (sampler/java/hsperf.h), in bytes laid out as HotSpot lays them: the
 * counter's offset among other entries; a vector or an int of that name
 * is not it; a region not accessible yet, of another magic, byte order
 * or version is refused; an entry whose length, name or data breaks the
 * buffer, or a count more entries than fit, is refused, never read past. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sampler/java/hsperf.h"
#include "tests/test.h"

#define NAME "java.cls.unloadedClasses"

static uint8_t buf[4096];
static size_t used;

static void put32(size_t at, uint32_t v) { memcpy(buf + at, &v, 4); }

static void prologue(void)
{
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "\xca\xfe\xc0\xc0", 4);
	buf[4] = 1; /* little-endian */
	buf[5] = 2; /* version 2.0 */
	buf[7] = 1; /* accessible */
	put32(24, 32);
	used = 32;
}

/* Appends an entry: name, type, vector length; its data 8 bytes of v.
 * Returns the data's offset. */
static size_t entry(const char *name, char type, uint32_t vlen, uint64_t v)
{
	size_t at = used, nlen = strlen(name) + 1, doff = (20 + nlen + 7) / 8 * 8, len = doff + 8;

	put32(at, (uint32_t)len);
	put32(at + 4, 20);
	put32(at + 8, vlen);
	buf[at + 12] = (uint8_t)type;
	put32(at + 16, (uint32_t)doff);
	memcpy(buf + at + 20, name, nlen);
	memcpy(buf + at + doff, &v, 8);
	used += len;
	put32(28, (uint32_t)(buf[28] | buf[29] << 8) + 1);
	put32(8, (uint32_t)used);
	return at + doff;
}

int main(void)
{
	uint32_t u, off;
	size_t want;
	uint64_t v;

	prologue();
	entry("sun.rt.createVmBeginTime", 'J', 0, 1);
	entry(NAME, 'J', 4, 0);	  /* a vector of that name */
	entry(NAME, 'I', 0, 0);	  /* an int of that name */
	want = entry(NAME, 'J', 0, 7);
	entry("java.cls.loadedClasses", 'J', 0, 600);
	CHECK(!hsperf__used(buf, HSPERF_PROLOGUE, &u) && u == used, "used: %u bytes of %zu", u, used);
	CHECK(!hsperf__find(buf, used, NAME, &off) && off == want && (memcpy(&v, buf + off, 8), v == 7),
	      "the scalar long counter at %u (want %zu), the vector and the int before it passed over",
	      off, want);
	CHECK(hsperf__find(buf, used, "sun.cls.unloadedBytes", &off) == -ENOENT, "a name not there: ENOENT");

	/* The prologue: each a byte of it set to a lie, then put back. */
	{
		static const struct {
			size_t at;
			uint8_t lie;
			int err;
			const char *what;
		} lies[] = {
			{ 7, 0, -EAGAIN, "not accessible yet: EAGAIN" },
			{ 4, 0, -EPROTO, "big-endian: refused" },
			{ 5, 1, -EPROTO, "version 1: refused" },
			{ 0, 0xc0, -EPROTO, "another magic: refused" },
		};

		for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
			uint8_t was = buf[lies[i].at];

			buf[lies[i].at] = lies[i].lie;
			CHECK(hsperf__used(buf, HSPERF_PROLOGUE, &u) == lies[i].err, "%s", lies[i].what);
			buf[lies[i].at] = was;
		}
	}
	put32(8, HSPERF_MAX + 1);
	CHECK(hsperf__used(buf, HSPERF_PROLOGUE, &u) == -EPROTO, "more used than we read: refused");
	put32(8, (uint32_t)used);

	/* Bounds: each a copy of the good buffer with one lie. */
	{
		static uint8_t good[sizeof(buf)];

		memcpy(good, buf, sizeof(buf));
		put32(32, (uint32_t)used); /* the first entry runs past the end */
		CHECK(hsperf__find(buf, used, NAME, &off) == -EPROTO, "an entry past the buffer: refused");
		memcpy(buf, good, sizeof(buf));
		put32(32 + 4, 4000); /* its name past the entry */
		CHECK(hsperf__find(buf, used, NAME, &off) == -EPROTO, "a name past its entry: refused");
		memcpy(buf, good, sizeof(buf));
		put32(32 + 16, 4000); /* data past the entry */
		CHECK(hsperf__find(buf, used, NAME, &off) == -EPROTO, "data past its entry: refused");
		memcpy(buf, good, sizeof(buf));
		put32(28, (uint32_t)(used / 20 + 1));
		CHECK(hsperf__find(buf, used, NAME, &off) == -EPROTO, "more entries than fit: refused");
		memcpy(buf, good, sizeof(buf));
		put32(32, 0); /* a zero length: would loop */
		CHECK(hsperf__find(buf, used, NAME, &off) == -EPROTO, "an empty entry: refused");
		memcpy(buf, good, sizeof(buf));
		put32(24, 8); /* entries start inside the prologue */
		CHECK(hsperf__find(buf, used, NAME, &off) == -EPROTO, "entries inside the prologue: refused");
		memcpy(buf, good, sizeof(buf));
		CHECK(hsperf__find(buf, want + 4, NAME, &off) == -EPROTO,
		      "the buffer ending inside the counter's entry: refused");
	}
	return test_done();
}
