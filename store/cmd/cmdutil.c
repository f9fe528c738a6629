/*
 * cmdutil.c - the option handling and store opening the store subcommands
 * share, so that their usage errors read alike (see cmdutil.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "store/cmd/cmdutil.h"
#include "store/db/store.h"

int cmd__bad_option(const char *name, int c, char **argv)
{
	if (c == ':')
		fprintf(stderr, "proffs %s: option '%s' needs a value\n", name, argv[optind - 1]);
	else
		fprintf(stderr, "proffs %s: unknown option '%s' (try --help)\n", name,
			argv[optind - 1]);
	return 2;
}

int cmd__parse_store(const struct store_cmd *c, int argc, char **argv,
		     struct store_opts *so)
{
	static const struct option opts[] = {
		{ "store", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int o;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, c->shortopts, opts, NULL)) != -1) {
		switch (o) {
		case 's':
			so->dir = optarg;
			break;
		case 'h':
			c->usage(stdout);
			return 0;
		default:
			return cmd__bad_option(c->name, o, argv);
		}
	}
	if (!so->dir) {
		fprintf(stderr, "proffs %s: --store DIR is required (try --help)\n", c->name);
		return 2;
	}
	return CMD_GO_ON;
}

int cmd__open_store(const char *name, struct store **s, const struct store_opts *so)
{
	int err = store__open(s, so);

	if (err)
		fprintf(stderr, "proffs %s: cannot open store %s: %s\n", name, so->dir,
			strerror(-err));
	return err;
}
