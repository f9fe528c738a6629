/*
 * cmdutil.h - what the subcommands that work on a store (cat, check,
 * import) share: the one-line usage errors of their getopt loops, the
 * `--store DIR` / `--help` option loop of those that take nothing else,
 * and opening the store with the message they all print.
 */
#ifndef PROFFS_CMDUTIL_H
#define PROFFS_CMDUTIL_H

#include <stdio.h>

struct store;
struct store_opts;

/* What cmd__parse_store returns when the subcommand should go on. */
#define CMD_GO_ON (-1)

/*
 * Prints "proffs NAME: option '...' needs a value" (c is ':') or "proffs
 * NAME: unknown option '...' (try --help)" (any other c) to stderr, for
 * the option getopt_long just refused (argv[optind - 1]). Returns 2, the
 * usage-error exit status.
 */
int cmd__bad_option(const char *name, int c, char **argv);

/* A subcommand whose only options are --store DIR and --help. */
struct store_cmd {
	const char *name;        /* "cat": messages start "proffs cat: " */
	const char *shortopts;   /* getopt_long's; ':' first (after any '+') */
	void (*usage)(FILE *f);  /* the --help text */
};

/*
 * Parses argv's options (getopt_long from optind 1; opterr is turned off)
 * into so->dir, which keeps pointing into argv. Returns CMD_GO_ON to go on
 * with the operands at argv[optind..]; otherwise the exit status to return
 * at once: 0 after --help (usage on stdout), 2 after a one-line usage
 * error on stderr, among them a missing --store when so->dir had no
 * default.
 */
int cmd__parse_store(const struct store_cmd *c, int argc, char **argv,
		     struct store_opts *so);

/*
 * store__open(s, so); on failure also prints "proffs NAME: cannot open
 * store DIR: reason" to stderr. Returns 0 or -errno; *s as store__open.
 */
int cmd__open_store(const char *name, struct store **s, const struct store_opts *so);

#endif
