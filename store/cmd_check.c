/*
 * cmd_check.c - `proffs check --store DIR`: opens the store read-only and
 * walks every database and cross-reference (store__check).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "store.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: proffs check --store DIR\n"
		   "\n"
		   "Verifies the store in DIR: every interned symbol, stack, series,\n"
		   "posting, sample block, rollup and index entry, and every reference\n"
		   "between them. Prints one line per problem; exits 0 when the store\n"
		   "is sound, 1 when something is broken, 2 on bad usage.\n"
		   "\n"
		   "  --store DIR   the store directory (default /var/lib/proffs)\n");
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct store_opts so = { .dir = "/var/lib/proffs", .readonly = true };
	struct store *s;
	int c, rc;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			so.dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "proffs check: option '%s' needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "proffs check: unknown option '%s' (try --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "proffs check: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	rc = store__open(&s, &so);
	if (rc) {
		fprintf(stderr, "proffs check: cannot open store %s: %s\n", so.dir, strerror(-rc));
		return 1;
	}
	rc = store__check(s, stdout);
	store__close(s);
	if (rc < 0) {
		fprintf(stderr, "proffs check: cannot read store %s: %s\n", so.dir, strerror(-rc));
		return 1;
	}
	if (rc > 0) {
		printf("%s: %d problem%s\n", so.dir, rc, rc == 1 ? "" : "s");
		return 1;
	}
	printf("%s: ok\n", so.dir);
	return 0;
}
