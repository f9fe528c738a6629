/*
 * cmd_copy.c - `proffs copy --store DIR DEST`: a consistent, compacted copy
 * of a store, taken while its daemon keeps running (store__copy).
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
	fprintf(f, "usage: proffs copy --store DIR DEST\n"
		   "\n"
		   "Copies the store in DIR to the directory DEST (created if missing;\n"
		   "it must not hold a store yet): one consistent snapshot, free pages\n"
		   "left out. A daemon writing to DIR keeps running. The copy can be\n"
		   "carried to another host and served with `proffs mount`.\n"
		   "\n"
		   "  --store DIR   the store directory (default /var/lib/proffs)\n");
}

int cmd_copy(int argc, char **argv)
{
	static const struct store_cmd cmd = { "copy", ":h", usage };
	struct store_opts so = { .dir = "/var/lib/proffs", .readonly = true };
	struct store *s;
	int rc;

	rc = cmd__parse_store(&cmd, argc, argv, &so);
	if (rc != CMD_GO_ON)
		return rc;
	if (optind >= argc) {
		fprintf(stderr, "proffs copy: DEST is required (try --help)\n");
		return 2;
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "proffs copy: unexpected argument '%s'\n", argv[optind + 1]);
		return 2;
	}
	if (cmd__open_store(cmd.name, &s, &so))
		return 1;
	rc = store__copy(s, argv[optind]);
	store__close(s);
	if (rc) {
		fprintf(stderr, "proffs copy: cannot copy %s to %s: %s\n", so.dir, argv[optind],
			strerror(-rc));
		return 1;
	}
	return 0;
}
