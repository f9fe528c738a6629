/* test_rtmemo: a runtime record's named frames, kept (sampler/runtime/
 * rtmemo.h). Frames come back as put, strings shared and copied; another
 * check or another key is a miss; a record in another's slot replaces
 * it; markers and frames without names are refused; a full memo refuses
 * and trim empties it, and nothing else does. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sampler/runtime/rtmemo.h"
#include "tests/test.h"

static struct frame rtf(uint64_t addr, const char *name, const char *sys, const char *file, int line)
{
	return (struct frame){ .addr = addr, .name = name, .sysname = sys, .file = file, .rt = true,
			       .line = line, .start_line = line - 1 };
}

int main(void)
{
	struct rt_memo *m = rt_memo__new();
	char name[64] = "heavy (known.js)", path[64] = "/srv/app/known.js", nm[32];
	struct frame in[2], out[4];
	const uint64_t ka[2] = { 5, 55 }, kb[2] = { 6, 66 }, ka2[2] = { 5, 99 }, kc[2] = { 5 + 1024, 77 };
	int n, puts = 0;

	CHECK(m != NULL, "new memo");
	if (!m)
		return test_done();
	CHECK(rt_memo__get(m, ka, out, 4) == -1, "empty: a miss");
	in[0] = rtf(0x1000 + 12, name, "heavy", path, 12);
	in[1] = rtf(0x2000 + 40, "outer (known.js)", "outer", path, 40);
	CHECK(rt_memo__put(m, ka, in, 2), "put two frames");
	strcpy(name, "overwritten");
	n = rt_memo__get(m, ka, out, 4);
	CHECK(n == 2 && out[0].addr == 0x100c && !strcmp(out[0].name, "heavy (known.js)") &&
		      !strcmp(out[0].sysname, "heavy") && !strcmp(out[0].file, "/srv/app/known.js") &&
		      out[0].line == 12 && out[0].start_line == 11 && out[0].rt && !out[0].marker &&
		      !strcmp(out[1].name, "outer (known.js)") && out[1].line == 40,
	      "get: the frames as put, strings copied (%d)", n);
	CHECK(n == 2 && out[0].file == out[1].file, "a string kept once for both frames");
	CHECK(rt_memo__get(m, ka, out, 1) == 1, "get with room for one: one");
	CHECK(rt_memo__get(m, ka2, out, 4) == -1, "same slot and first hash, other check: a miss");
	CHECK(rt_memo__get(m, kb, out, 4) == -1, "another key: a miss");
	CHECK(rt_memo__put(m, kc, in, 1) && rt_memo__get(m, kc, out, 4) == 1 &&
		      rt_memo__get(m, ka, out, 4) == -1,
	      "a record in the slot of another replaces it");
	in[1].marker = true;
	CHECK(!rt_memo__put(m, kb, in, 2) && rt_memo__get(m, kb, out, 4) == -1, "a marker is not kept");
	in[1] = rtf(0x3000, "x (y.js)", NULL, path, 1);
	CHECK(!rt_memo__put(m, kb, in, 2), "a frame without its own name is not kept");
	rt_memo__trim(m);
	CHECK(rt_memo__get(m, kc, out, 4) == 1, "trim of a memo far from full keeps it");
	/* fill: frames until refused */
	in[1] = rtf(0x3000, "x (y.js)", "x", path, 1);
	for (uint64_t i = 0; i < 5000; i++) {
		snprintf(nm, sizeof(nm), "f%llu (y.js)", (unsigned long long)i);
		in[0] = rtf(0x4000 + i, nm, "f", path, 2);
		puts += rt_memo__put(m, (const uint64_t[2]){ 100 + i, i }, in, 2);
	}
	CHECK(puts > 1000 && puts < 2048, "bounded: %d of 5,000 two-frame records kept", puts);
	rt_memo__trim(m);
	CHECK(rt_memo__get(m, kc, out, 4) == -1 && rt_memo__get(m, (const uint64_t[2]){ 100, 0 }, out, 4) == -1,
	      "trim of a nearly full memo empties it");
	CHECK(rt_memo__put(m, ka, in, 2) && rt_memo__get(m, ka, out, 4) == 2, "and it keeps records again");
	rt_memo__free(m);
	return test_done();
}
