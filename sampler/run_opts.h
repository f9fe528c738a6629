/*
 * run_opts.h - `proffs run`'s command line: every flag parsed and checked
 * into one struct run_opts (what each module's options hold, with their
 * defaults), so cmd_run (daemon.c) only wires the daemon together.
 */
#ifndef PROFFS_RUN_OPTS_H
#define PROFFS_RUN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "fs/fuse/mount.h"
#include "sampler/profiler.h"
#include "sampler/push/push.h"
#include "sampler/scrape/scrape.h"
#include "store/db/store.h"

#define RUN_MAX_LABELS 64

struct run_opts {
	struct store_opts so;
	struct mount_opts mo;
	struct profiler_opts po;
	struct pusher_opts push;        /* push.url NULL: no --push */
	/* --label k=v (a repeated name: the last one), then node=<host name>
	 * unless a --label gave node; the strings are held in dups and host */
	struct store_label extra[RUN_MAX_LABELS + 1];
	size_t nextra;
	char *dups[RUN_MAX_LABELS];
	int ndups;
	char host[256];
	int64_t interval_s;             /* --batch-interval (hidden) */
	int64_t scrape_s;               /* --scrape-interval */
	struct scrape_target *targets;  /* --scrape, ntargets of them */
	size_t ntargets;
	const char *dbg_urls;           /* --debuginfod; NULL: DEBUGINFOD_URLS */
	uint64_t dbg_cache;             /* --debuginfod-cache */
};

/* Parses argv into o (the strings of argv must outlive o). Returns 0 to
 * run, 1 when --help was printed (exit 0), 2 after a usage error was
 * printed to stderr (exit 2). Either way run_opts__fini(o) frees what o
 * holds. */
int run_opts__parse(struct run_opts *o, int argc, char **argv);

/* Frees what o holds (labels' copies, scrape targets o still owns). */
void run_opts__fini(struct run_opts *o);

#endif
