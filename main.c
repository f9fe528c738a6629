/* main.c - dispatches `proffs SUBCOMMAND`; every subcommand lives in the
 * module it belongs to (see cmd.h). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>
#include <elfutils/libdwfl.h>
#include <fuse3/fuse_lowlevel.h>
#include <lmdb.h>
#include <protobuf-c/protobuf-c.h>
#include <zlib.h>
#include <zstd.h>

#include "cmd.h"
#include "gen/version.h"
#include "store/util/util.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proffs COMMAND [ARGS]\n"
		"\n"
		"  run      sample every process with eBPF, store, serve /prof\n"
		"  mount    serve an existing store read-only: mount --store DIR MOUNTPOINT\n"
		"  import   add pprof files to a store: import --store DIR FILE.pb[.gz]...\n"
		"  cat      print what the mount serves at PATH: cat --store DIR PATH\n"
		"  check    verify a store: check --store DIR\n"
		"  copy     copy a live store: copy --store DIR DEST\n"
		"  version  print versions\n"
		"\n"
		"`proffs COMMAND --help` describes each command.\n");
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: proffs version\n\nPrints the version of proffs and of the libraries it was built with.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "proffs version: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	int maj, min, patch;

	/* The libraries as loaded now (a distribution update changes them
	 * under the binary), each as its package numbers it. */
	mdb_version(&maj, &min, &patch);
	printf("proffs %s\n", PROFFS_VERSION);
	printf("libbpf %s\n", libbpf_version_string() + (libbpf_version_string()[0] == 'v'));
	printf("libfuse %s\n", fuse_pkgversion());
	printf("lmdb %d.%d.%d\n", maj, min, patch);
	printf("zstd %s\n", ZSTD_versionString());
	printf("zlib %s\n", zlibVersion());
	printf("protobuf-c %s\n", protobuf_c_version());
	printf("elfutils %s\n", dwfl_version(NULL));
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} cmds[] = {
	{ "run", cmd_run },	{ "mount", cmd_mount }, { "import", cmd_import },
	{ "cat", cmd_cat },	{ "check", cmd_check }, { "version", cmd_version },
	{ "copy", cmd_copy },
};

int main(int argc, char **argv)
{
	const char *dbg = getenv("PROFFS_DEBUG");

	if (dbg && *dbg && strcmp(dbg, "0"))
		log_level = LOG_DEBUG;
	/* Blocks over 256 KiB go back at free: the daemon's resident memory
	 * is what it uses, not a peak some thread once reached. While reads
	 * go on, the mount lets renders keep theirs up to 1 MiB (heap_keep,
	 * fs/fuse), and gives them back with one malloc_trim when reads
	 * stop. One arena, because that trim shrinks only the main arena's
	 * top: another arena's top shrinks on a later free in it, which at
	 * rest never comes (a mount kept 6 MB that way). Parallel renders
	 * ran as fast with one arena as with two (tcache takes the small
	 * blocks without the lock). */
	mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_BYTES);
	mallopt(M_TRIM_THRESHOLD, HEAP_TRIM_BYTES);
	mallopt(M_ARENA_MAX, 1);
	if (argc < 2) {
		fprintf(stderr, "proffs: no command given (run, mount, import, cat, check, version; try --help)\n");
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version"))
		return cmd_version(1, argv + 1);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "proffs: unknown command '%s' (try --help)\n", argv[1]);
	return 2;
}
