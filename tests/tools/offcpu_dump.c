/*
 * offcpu_dump - runs sampler/offcpu/ alone and prints one line per joined
 * block: tid state ms nkern nuser. For debugging and the offcpu benchmark
 * (which needs the BPF side without a store or a mount).
 *
 *   offcpu_dump SECS [PID]    PID: only that process
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sampler/offcpu/offcpu.h"
#include "store/util/util.h"

static int quiet;
static uint64_t n, ns;

static void on_sample(void *ctx, const struct prof_sample_ev *ev)
{
	n++;
	ns += ev->period;
	if (!quiet)
		printf("%u %s %.3f %u %u\n", ev->tid, offcpu__state_name(ev->flags) ?: "?",
		       ev->period / 1e6, ev->nkern, ev->nuser);
}

int main(int argc, char **argv)
{
	struct offcpu_opts o = { .on_sample = on_sample };
	uint64_t c[OFFCPU_CNT_MAX];
	struct offcpu *oc;
	int64_t end;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: offcpu_dump SECS [PID]\n");
		return 2;
	}
	quiet = getenv("QUIET") != NULL;
	if (argc > 2)
		o.target_tgid = atoi(argv[2]);
	err = offcpu__open(&oc, &o);
	if (err)
		return 1;
	end = now_mono_ns() + (int64_t)(atof(argv[1]) * 1e9);
	while (now_mono_ns() < end)
		offcpu__poll(oc, 250);
	offcpu__poll(oc, 0);
	offcpu__counters(oc, c);
	fprintf(stderr, "blocks %" PRIu64 " (%.3f s); switches %" PRIu64 " short %" PRIu64
		" recorded %" PRIu64 " ringfull %" PRIu64 " no_rseq %" PRIu64 "\n",
		n, ns / 1e9, c[OFFCPU_CNT_SWITCHES], c[OFFCPU_CNT_SHORT], c[OFFCPU_CNT_RECORDED],
		c[OFFCPU_CNT_RINGFULL], c[OFFCPU_CNT_NO_RSEQ]);
	offcpu__close(oc);
	return 0;
}
