/*
 * cmd_check.c - `proffs check --store DIR`: opens the store read-only and
 * walks every database and cross-reference (store__check).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "store/cmd/cmdutil.h"
#include "store/db/store.h"
#include "store/util/util.h"

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
	/* Only the long --store, and operands may come first: check's flags as
	 * they have always been. */
	static const struct store_cmd cmd = { "check", ":h", usage };
	struct store_opts so = { .dir = "/var/lib/proffs", .readonly = true };
	struct store *s;
	int rc;

	rc = cmd__parse_store(&cmd, argc, argv, &so);
	if (rc != CMD_GO_ON)
		return rc;
	if (optind < argc) {
		fprintf(stderr, "proffs check: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (cmd__open_store(cmd.name, &s, &so))
		return 1;
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
