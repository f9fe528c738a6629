/*
 * sample_pprof - runs the daemon's sampling pipeline (profiler: BPF ->
 * procinfo -> symbolize -> batch) for a while without store or mount and
 * writes the batch as one pprof file:
 *
 *   sample_pprof [--hz N] [--seconds S] [--pid P] OUT.pb
 *
 * Exit 77 when BPF cannot be loaded here.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/profile/pprof.h"
#include "sampler/profiler.h"
#include "store/util/util.h"

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hz", required_argument, NULL, 'h' },
		{ "seconds", required_argument, NULL, 's' },
		{ "pid", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	struct profiler_opts po = { .hz = 99 };
	struct profiler *pr;
	struct profile *p = NULL;
	double seconds = 5;
	struct timespec t0, t;
	struct minute_batch mb[MINUTES_SLOTS];
	size_t nmb = 0;
	uint8_t *pb;
	size_t len;
	FILE *f;
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h': po.hz = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'p': po.target_tgid = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: sample_pprof [--hz N] [--seconds S] [--pid P] OUT.pb\n");
		return 2;
	}
	err = profiler__open(&pr, &po);
	if (err) {
		printf("cannot load BPF here: %s\n", strerror(-err));
		return err == -EPERM || err == -ENOSYS || err == -EOPNOTSUPP ? 77 : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		profiler__poll(pr, 250);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	profiler__poll(pr, 0);
	/* The run may straddle a minute: one profile per minute, merged. */
	if (profiler__take(pr, now_ns(), true, mb, &nmb)) {
		fprintf(stderr, "sample_pprof: take failed\n");
		profiler__close(pr);
		return 1;
	}
	for (size_t i = 0; i < nmb; i++) {
		if (!p) {
			p = mb[i].p;
			continue;
		}
		if (profile__merge(p, mb[i].p, 1, NULL, 0)) {
			fprintf(stderr, "sample_pprof: merge failed\n");
			return 1;
		}
		profile__free(mb[i].p);
	}
	if (!p) {
		fprintf(stderr, "sample_pprof: no samples\n");
		profiler__close(pr);
		return 1;
	}
	err = pprof__encode(p, &pb, &len);
	if (err) {
		fprintf(stderr, "sample_pprof: encode: %s\n", strerror(-err));
		return 1;
	}
	f = fopen(argv[optind], "w");
	if (!f || fwrite(pb, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "sample_pprof: write %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	fprintf(stderr, "sample_pprof: %lld samples, %u locations, %u mappings\n",
		(long long)profile__total(p, 0), p->nlocations, p->nmappings);
	free(pb);
	profile__free(p);
	profiler__close(pr);
	return 0;
}
