/*
 * cmd_import.c - `proffs import`: add pprof files to a store.
 *
 * Every file is read and decoded (with full validation) before the store is
 * even opened, so a malformed file anywhere in the list means nothing of
 * the run is stored: the user fixes the list and re-runs, with no half
 * import to clean up. Each file is then one store__append(), i.e. one
 * LMDB write transaction.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "store/cmd/cmdutil.h"
#include "store/profile/pprof.h"
#include "store/profile/profile.h"
#include "store/db/store.h"
#include "store/util/util.h"

#define IMPORT_MAX_FILE (1ULL << 30)
#define IMPORT_MAX_LABELS 64

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proffs import --store DIR [--type T] [--label k=v]... FILE.pb[.gz]...\n"
		"\n"
		"Adds pprof profiles (raw or gzip) to the store in DIR: Go heap, allocs,\n"
		"goroutine, mutex and block profiles, or CPU profiles from elsewhere.\n"
		"Every file is validated first; if any is malformed, its name and the\n"
		"reason are printed and nothing is stored.\n"
		"\n"
		"  --store DIR     the store directory (created if missing)\n"
		"  --type T        profile type to file them under (default: from the\n"
		"                  profile: cpu, heap, alloc, goroutine, mutex, block, ...)\n"
		"  --label k=v     attach this label to every series (repeatable)\n"
		"  -h, --help      this text\n"
		"\n"
		"Each profile is stored at its time_nanos (now if unset) for its\n"
		"duration_nanos.\n");
}

/*
 * The short type name of a profile. pprof's own files name their values:
 * CPU samples/count + cpu/nanoseconds; Go heap and allocs profiles carry
 * the same four values and differ only in the value shown by default
 * (inuse_space vs alloc_space), so the displayed value decides for them;
 * mutex and block profiles both carry contentions + delay and are told
 * apart by the file name (Go serves them as /debug/pprof/mutex|block).
 * Anything else keeps its own value type name, made path-safe.
 */
static void type_of(const struct profile *p, const char *path, char *out, size_t sz)
{
	const char *first = p->nvalues ? p->strs[p->sample_types[0].type] : "";
	const char *shown = p->nvalues ? p->strs[p->sample_types[profile__display_value(p)].type] : "";
	const char *base = strrchr(path, '/');
	size_t n = 0;

	base = base ? base + 1 : path;
	if (!strcmp(first, "samples") || !strcmp(first, "cpu")) {
		snprintf(out, sz, "cpu");
	} else if (!strncmp(first, "alloc_", 6) || !strncmp(first, "inuse_", 6)) {
		snprintf(out, sz, "%s", !strncmp(shown, "alloc_", 6) ? "alloc" : "heap");
	} else if (!strcmp(first, "goroutine")) {
		snprintf(out, sz, "goroutine");
	} else if (!strcmp(first, "contentions") || !strcmp(first, "delay")) {
		snprintf(out, sz, "%s", strstr(base, "block") ? "block" : "mutex");
	} else {
		for (const char *c = first; *c && n + 1 < sz; c++)
			out[n++] = ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-') ? *c : '_';
		out[n] = '\0';
		if (!n)
			snprintf(out, sz, "unknown");
	}
}

static int read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errsz)
{
	int rc = read_file_all(path, IMPORT_MAX_FILE, data, len);

	switch (rc) {
	case 0:
		break;
	case -EFBIG:
		snprintf(err, errsz, "larger than %llu bytes", IMPORT_MAX_FILE);
		break;
	case -ENOMEM:
		snprintf(err, errsz, "out of memory");
		break;
	case -EIO:
		snprintf(err, errsz, "read error");
		break;
	default:
		snprintf(err, errsz, "%s", strerror(-rc));
		break;
	}
	return rc;
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "type", required_argument, NULL, 't' },
		{ "label", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct store_label labels[IMPORT_MAX_LABELS];
	char *dups[IMPORT_MAX_LABELS];
	size_t nlabels = 0;
	const char *dir = NULL, *type = NULL;
	struct profile **profs = NULL;
	struct store *st = NULL;
	struct store_opts so = { 0 };
	int nfiles, c, ret = 1, bad = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			dir = optarg;
			break;
		case 't':
			if (!store__type_ok(optarg, strlen(optarg))) {
				fprintf(stderr, "proffs import: bad --type '%s' (letters, digits, '_', '-', '.'; at most 256)\n", optarg);
				ret = 2;
				goto out;
			}
			type = optarg;
			break;
		case 'l': {
			const char *k, *v;

			if (nlabels == IMPORT_MAX_LABELS) {
				fprintf(stderr, "proffs import: too many --label (at most %d)\n", IMPORT_MAX_LABELS);
				ret = 2;
				goto out;
			}
			if (parse_label(optarg, &dups[nlabels], &k, &v)) {
				fprintf(stderr, "proffs import: bad --label '%s' (want k=v)\n", optarg);
				ret = 2;
				goto out;
			}
			labels[nlabels].name = k;
			labels[nlabels].value = v;
			nlabels++;
			break;
		}
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		default:
			ret = cmd__bad_option("import", c, argv);
			goto out;
		}
	}
	if (!dir) {
		fprintf(stderr, "proffs import: --store DIR is required\n");
		ret = 2;
		goto out;
	}
	nfiles = argc - optind;
	if (nfiles <= 0) {
		fprintf(stderr, "proffs import: no files given\n");
		ret = 2;
		goto out;
	}

	/* Phase 1: decode and validate everything; store nothing yet. */
	profs = calloc((size_t)nfiles, sizeof(*profs));
	if (!profs) {
		fprintf(stderr, "proffs import: out of memory\n");
		goto out;
	}
	for (int i = 0; i < nfiles; i++) {
		const char *path = argv[optind + i];
		uint8_t *data = NULL;
		size_t len = 0;
		char err[256];
		int rc = read_file(path, &data, &len, err, sizeof(err));

		if (!rc) {
			rc = pprof__decode(data, len, &profs[i], err, sizeof(err));
			free(data);
		}
		if (!rc && profs[i]->nvalues == 0) {
			snprintf(err, sizeof(err), "no sample types");
			rc = -EINVAL;
		}
		if (rc) {
			fprintf(stderr, "%s: %s\n", path, err);
			bad++;
		}
	}
	if (bad) {
		fprintf(stderr, "proffs import: %d of %d file%s refused; nothing stored\n", bad,
			nfiles, nfiles == 1 ? "" : "s");
		goto out;
	}

	/* Phase 2: one append (one transaction) per file. */
	so.dir = dir;
	if (cmd__open_store("import", &st, &so))
		goto out;
	for (int i = 0; i < nfiles; i++) {
		const char *path = argv[optind + i];
		const struct profile *p = profs[i];
		char tbuf[STORE_TYPE_MAX + 1];
		int64_t t = p->time_nanos ? p->time_nanos : now_ns();
		int rc;

		if (type)
			snprintf(tbuf, sizeof(tbuf), "%s", type);
		else
			type_of(p, path, tbuf, sizeof(tbuf));
		rc = store__append(st, tbuf, t, p->duration_nanos, p, labels, nlabels);
		if (rc) {
			fprintf(stderr, "%s: cannot store as type %s: %s%s\n", path, tbuf, strerror(-rc),
				rc == -EINVAL ? " (value types differ from that type's)" : "");
			fprintf(stderr, "proffs import: stopped; %d of %d file%s stored\n", i, nfiles,
				nfiles == 1 ? "" : "s");
			goto out;
		}
		printf("%s: %s, %u samples\n", path, tbuf, p->nsamples);
	}
	/* The hours the files filled that have ended get their rollups now
	 * (no later batch may come to close them): an imported hour then
	 * merges from one block, not one per file. Ended: before the
	 * daemon's mark if one writes here, else before now. */
	{
		int64_t mark, until = now_s();
		int rc;

		if (!store__complete(st, &mark) && mark / 1000000000LL < until)
			until = mark / 1000000000LL;
		if ((rc = store__close_hours(st, until, NULL)))
			fprintf(stderr, "proffs import: all %d file%s stored; the rollups of their hours were not built: %s\n",
				nfiles, nfiles == 1 ? "" : "s", strerror(-rc));
	}
	ret = 0;
out:
	if (st)
		store__close(st);
	if (profs)
		for (int i = 0; i < argc - optind; i++)
			profile__free(profs[i]);
	free(profs);
	for (size_t i = 0; i < nlabels; i++)
		free(dups[i]);
	return ret;
}
