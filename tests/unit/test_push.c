/* test_push: one series' minute as the pusher sends it (push_req.c).
 *  - 40,000 distinct stacks are cut into pieces of at most 16,000 samples
 *    whose totals sum to the whole, each gzip'd pprof that decodes, each
 *    with its own ID, the same IDs when built again
 *  - labels: __name__ = process_cpu, service_name = the comm, names
 *    cleaned to [A-Za-z0-9_], invalid UTF-8 replaced, at most 30 kept
 *  - the request unpacks with the protobuf-c code of push.proto */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/push.pb-c.h"
#include "sampler/push/push.h"
#include "sampler/push/retry_after.h"
#include "store/db/store.h"
#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "tests/test.h"

#define NSTACKS 40000

static const char *label(const struct push_item *it, const char *name)
{
	for (size_t i = 0; i < it->nlabels; i++)
		if (!strcmp(it->names[i], name))
			return it->values[i];
	return NULL;
}

/* Retry-After as libcurl hands header lines over: not NUL-terminated. */
static void retry_after(void)
{
	static const struct {
		const char *line;
		int64_t want;
	} c[] = {
		{ "Retry-After: 120\r\n", 120 },   { "retry-after:7", 7 },
		{ "Retry-After: 99999\r\n", RETRY_AFTER_MAX },
		{ "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", -1 },
		{ "Retry-After: 12abc\r\n", -1 }, { "Retry-After:\r\n", -1 },
		{ "Content-Type: text/plain\r\n", -1 }, { "Retry-After: -5\r\n", -1 },
	};
	int bad = 0;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t n = strlen(c[i].line);
		char *b = malloc(n + 8);

		/* digits right after the line: a parser reading past it would take them */
		memcpy(b, c[i].line, n);
		memcpy(b + n, "1234567", 8);
		if (retry_after__parse(b, n) != c[i].want) {
			printf("  '%s' -> %lld, want %lld\n", c[i].line, (long long)retry_after__parse(b, n),
			       (long long)c[i].want);
			bad++;
		}
		free(b);
	}
	CHECK(!bad, "Retry-After lines: seconds read, capped at %d, dates and garbage ignored, nothing read past the line",
	      RETRY_AFTER_MAX);
}

int main(void)
{
	retry_after();
	static const char *const types[] = { "samples", "cpu" }, *const units[] = { "count", "nanoseconds" };
	char dir[] = "/tmp/test_push.XXXXXX", cmd[64];
	struct store_opts o = { .dir = dir };
	struct store_label extra[40];
	char names[40][16];
	struct store *s = NULL;
	struct profile *p = profile__new();
	struct store_series *ser = NULL;
	struct push_item it, again;
	size_t nser = 0;
	int64_t minute = 1795400000 / 60 * 60, want = 0, got = 0;
	uint64_t pieces_samples = 0;
	int bad = 0;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	CHECK(store__open(&s, &o) == 0, "open store");
	profile__set_value_types(p, 2, types, units);
	p->period = 1000000;
	for (int i = 0; i < NSTACKS; i++) {
		char fn[32];
		struct prof_function f = { 0 };
		struct prof_line ln = { 0 };
		struct prof_location loc = { 0 };
		struct prof_label l[2];
		uint64_t lid;
		int64_t v[2] = { 1 + i % 3, (1 + i % 3) * 1000000 };

		snprintf(fn, sizeof(fn), "f%d", i);
		f.name = f.system_name = profile__intern_str(p, fn);
		ln.function_id = profile__add_function(p, &f);
		loc.address = 0x1000 + i;
		loc.nlines = 1;
		loc.lines = &ln;
		lid = profile__add_location(p, &loc);
		l[0] = (struct prof_label){ .key = profile__intern_str(p, "comm"),
					    .str = profile__intern_str(p, "a\xff" "b") };
		l[1] = (struct prof_label){ .key = profile__intern_str(p, "pid"),
					    .str = profile__intern_str(p, "7") };
		if (profile__add_sample(p, &lid, 1, l, 2, v))
			bad++;
		want += v[0];
	}
	CHECK(!bad, "%d samples could not be added", bad);
	for (int i = 0; i < 35; i++) {
		snprintf(names[i], sizeof(names[i]), i ? "x%02d" : "weird.name", i);
		extra[i] = (struct store_label){ names[i], "v" };
	}
	CHECK(store__append(s, "cpu", (minute + 5) * 1000000000LL, 10000000000LL, p, extra, 35) == 0,
	      "append");
	profile__free(p);

	CHECK(store__minute_series(s, "cpu", minute, &ser, &nser) == 0 && nser == 1,
	      "one series in the minute (%zu)", nser);
	store__free_series(ser, nser);
	CHECK(store__minute_series(s, "cpu", minute, &ser, &nser) == 0 && nser == 1, "again");
	CHECK(push_item__build(s, "cpu", &ser[0], minute, &it) == 0, "build");
	CHECK(it.nprof == 3, "40,000 samples in 3 pieces (%zu)", it.nprof);
	for (size_t i = 0; i < it.nprof; i++) {
		struct profile *q = NULL;
		char err[128] = "";

		CHECK(it.gz[i][0] == 0x1f && it.gz[i][1] == 0x8b, "piece %zu is gzip", i);
		CHECK(pprof__decode(it.gz[i], it.gzlen[i], &q, err, sizeof(err)) == 0,
		      "piece %zu decodes: %s", i, err);
		if (!q)
			continue;
		CHECK(q->nsamples <= 16000, "piece %zu: %u samples", i, q->nsamples);
		pieces_samples += q->nsamples;
		got += profile__total(q, 0);
		profile__free(q);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(it.ids[i], it.ids[j]), "ids %zu and %zu differ", i, j);
	}
	CHECK(pieces_samples == NSTACKS, "every sample in one piece (%llu)",
	      (unsigned long long)pieces_samples);
	CHECK(got == want, "pieces sum to the whole: %lld vs %lld", (long long)got, (long long)want);
	CHECK(it.nlabels == 30 && it.labels_cut > 0, "30 labels kept (%zu), %llu cut", it.nlabels,
	      (unsigned long long)it.labels_cut);
	CHECK(label(&it, "__name__") && !strcmp(label(&it, "__name__"), "process_cpu"), "__name__");
	CHECK(label(&it, "service_name") && !strcmp(label(&it, "service_name"), "a?b"),
	      "service_name is the comm, invalid UTF-8 replaced (%s)", label(&it, "service_name"));
	CHECK(label(&it, "weird_name") != NULL, "label names cleaned");
	CHECK(label(&it, "comm") && !strcmp(label(&it, "comm"), "a?b"), "comm value cleaned");

	CHECK(push_item__build(s, "cpu", &ser[0], minute, &again) == 0, "build again");
	for (size_t i = 0; i < it.nprof && i < again.nprof; i++)
		CHECK(!strcmp(it.ids[i], again.ids[i]), "piece %zu keeps its id", i);
	{
		uint8_t *body = NULL;
		size_t len = 0;
		Push__V1__PushRequest *r;

		CHECK(push_req__encode(&it, 1, &body, &len) == 0, "encode");
		r = push__v1__push_request__unpack(NULL, len, body);
		CHECK(r && r->n_series == 1 && r->series[0]->n_samples == 3 &&
			      r->series[0]->n_labels == 30,
		      "request unpacks: 1 series, 3 profiles, 30 labels");
		if (r)
			push__v1__push_request__free_unpacked(r, NULL);
		free(body);
	}
	push_item__fini(&again);
	push_item__fini(&it);
	CHECK(!strcmp(push__profile_name("heap"), "memory") && !strcmp(push__profile_name("alloc"), "memory") &&
		      !strcmp(push__profile_name("goroutine"), "goroutine"),
	      "type names");
	store__free_series(ser, nser);
	store__close(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return test_done();
}
