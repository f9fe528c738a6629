/*
 * pprofcat - decode pprof files with proffs' decoder and write what the
 * renderers make of them to stdout. Used by the format tests.
 *
 *   pprofcat encode FILE           re-encoded profile.pb
 *   pprofcat folded FILE           folded.txt
 *   pprofcat top FILE              top.txt
 *   pprofcat svg FILE              flamegraph.svg
 *   pprofcat totals FILE           "type/unit total" per sample type
 *   pprofcat diff A B              profile__diff(A, B) encoded
 *   pprofcat folded-diff A B       differential folded
 *   pprofcat svg-diff A B          flame graph of profile__diff(A, B)
 *   pprofcat top-diff A B          top.txt of profile__diff(A, B)
 *   pprofcat check FILE...         decode only; "FILE: reason" on failure
 *
 * Exit 0 on success, 1 on a refused file or render error, 2 on usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "fs/render/render.h"
#include "store/util/util.h"

static struct profile *load(const char *path)
{
	struct profile *p = NULL;
	uint8_t *d = NULL;
	size_t n = 0;
	char err[256];
	int rc = read_file_all(path, 0, &d, &n);

	if (rc) {
		fprintf(stderr, "%s: %s\n", path, strerror(-rc));
		return NULL;
	}
	rc = pprof__decode(d, n, &p, err, sizeof(err));
	free(d);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, err);
		return NULL;
	}
	return p;
}

static int emit_pb(const struct profile *p)
{
	uint8_t *out = NULL;
	size_t n = 0;
	int rc = pprof__encode(p, &out, &n);

	if (rc) {
		fprintf(stderr, "encode: %s\n", strerror(-rc));
		return 1;
	}
	fwrite(out, 1, n, stdout);
	free(out);
	return 0;
}

static int emit_buf(struct buf *b, int rc)
{
	if (rc) {
		fprintf(stderr, "render: %s\n", strerror(-rc));
		buf__free(b);
		return 1;
	}
	fwrite(b->data, 1, b->len, stdout);
	buf__free(b);
	return 0;
}

int main(int argc, char **argv)
{
	struct profile *a = NULL, *b = NULL, *d = NULL;
	struct buf out = { 0 };
	const char *cmd = argc > 1 ? argv[1] : "";
	bool two = !strcmp(cmd, "diff") || !strcmp(cmd, "folded-diff") || !strcmp(cmd, "svg-diff") ||
		   !strcmp(cmd, "top-diff");
	int ret = 1;

	if (!strcmp(cmd, "check")) {
		ret = 0;
		for (int i = 2; i < argc; i++) {
			a = load(argv[i]);
			if (!a)
				ret = 1;
			profile__free(a);
		}
		return argc > 2 ? ret : 2;
	}
	if (argc != (two ? 4 : 3)) {
		fprintf(stderr, "usage: pprofcat encode|folded|top|svg|totals FILE | diff|folded-diff|svg-diff|top-diff A B | check FILE...\n");
		return 2;
	}
	a = load(argv[2]);
	if (!a)
		return 1;
	if (two) {
		b = load(argv[3]);
		if (!b)
			goto out;
	}
	if (!strcmp(cmd, "encode")) {
		ret = emit_pb(a);
	} else if (!strcmp(cmd, "folded")) {
		ret = emit_buf(&out, render__folded(a, &out));
	} else if (!strcmp(cmd, "top")) {
		ret = emit_buf(&out, render__top(a, &out));
	} else if (!strcmp(cmd, "svg")) {
		ret = emit_buf(&out, render__svg(a, argv[2], &out));
	} else if (!strcmp(cmd, "totals")) {
		for (uint32_t i = 0; i < a->nvalues; i++)
			printf("%s/%s %" PRId64 "\n", a->strs[a->sample_types[i].type],
			       a->strs[a->sample_types[i].unit], profile__total(a, i));
		ret = 0;
	} else if (!strcmp(cmd, "folded-diff")) {
		ret = emit_buf(&out, render__folded_diff(a, b, &out));
	} else if (!strcmp(cmd, "diff") || !strcmp(cmd, "svg-diff") || !strcmp(cmd, "top-diff")) {
		d = profile__diff(a, b);
		if (!d) {
			fprintf(stderr, "diff: %s\n", strerror(errno));
			goto out;
		}
		if (!strcmp(cmd, "diff"))
			ret = emit_pb(d);
		else if (!strcmp(cmd, "top-diff"))
			ret = emit_buf(&out, render__top(d, &out));
		else
			ret = emit_buf(&out, render__svg(d, "diff", &out));
	} else {
		fprintf(stderr, "pprofcat: unknown command '%s'\n", cmd);
		ret = 2;
	}
out:
	profile__free(a);
	profile__free(b);
	profile__free(d);
	return ret;
}
