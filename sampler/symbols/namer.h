/*
 * namer.h - names found later (issue 30): the daemon's thread that gives
 * stored frames without a name (`module+0xOFFSET`) their names once the
 * symbols of their build id turn up, and records the files the
 * symbolizer read for /binaries.
 *
 * Every few seconds (and after each stored batch) it scans the locations
 * stored since its last scan for frames without lines whose mapping has a
 * build id (store__unnamed). A build id it has no symbols for is looked
 * for: a debug file under the debug root, one debuginfod fetched, or the
 * binary itself once it can be read (a file whose symbol table the
 * symbolizer just read); again on a schedule, and at once when the
 * symbolizer or the fetcher says something arrived. When one is found,
 * every stored location of that build id is named (store__name_late:
 * once, in a table beside the locations, with file and line from DWARF
 * where the file has it), and the symbolizer is told, so that new
 * samples are named when stored.
 *
 * It never runs on the sampler thread and holds the store's append lock
 * only around its writes; its scans are read snapshots.
 */
#ifndef PROFFS_NAMER_H
#define PROFFS_NAMER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/symbols/dbgsched.h"
#include "store/db/store.h"

struct dbgd;
struct namer;

struct namer_opts {
	struct store *store;
	pthread_mutex_t *store_mu; /* held around each store write */
	const char *debug_root;    /* NULL: /usr/lib/debug */
	const char *cache_dir;     /* debuginfod's cache, NULL: none */
	struct dbgd *dbgd;         /* NULL: debuginfod off */
	/* Build id bid has symbols now (the symbolizer reads its table
	 * again). Called on the namer's thread. */
	void (*symbols_changed)(void *ctx, const char *bid);
	void *ctx;
	int64_t tick_ms;           /* between scans; 0: 5000 */
};

/* Starts the thread. *out is the caller's (namer__stop). 0 or -errno. */
int namer__start(struct namer **out, const struct namer_opts *o);
/* Stops it (a scan or write in hand finishes first) and frees n. */
void namer__stop(struct namer *n);

/* A mapped file the symbolizer's loader read: b (copied; b->path may be
 * NULL when the file is not the host's), whether it has a symbol table of
 * its own, and where its debug file was found (0 none, 1 the debug root,
 * 2 debuginfod's cache). Any thread; never blocks. */
void namer__file_read(struct namer *n, const struct store_binary *b, bool has_symtab, int debug);

/* A debug file of bid arrived (debuginfod): look again now. Any thread. */
void namer__ready(struct namer *n, const char *bid);

/* Scan now rather than at the next tick (a batch was stored). */
void namer__kick(struct namer *n);

struct namer_stats {
	uint64_t named;        /* stored frames named later */
	uint64_t resolved;     /* build ids whose symbols turned up later */
	uint64_t waiting;      /* build ids with unnamed frames and no symbols yet */
	uint64_t binaries;     /* files recorded for /binaries this run */
	uint64_t scans;        /* scans of the stored locations */
	uint64_t local;        /* files without a symbol table whose debug file was local */
	uint64_t errors;       /* store writes that failed */
};
void namer__stats(struct namer *n, struct namer_stats *st);

#endif
