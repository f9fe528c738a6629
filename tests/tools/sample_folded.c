/*
 * sample_folded - samples with the real BPF sampler and prints folded
 * stacks ("comm;root;...;leaf COUNT") of what it saw, without the store:
 * lets the sampler and symbolizer be tested on their own.
 *
 *   sample_folded [--hz N] [--seconds S] [--pid P]... [--comm C]...
 *
 * With --pid/--comm only those processes' samples are printed (children
 * included for --comm, by name). Prints counters to stderr. Exit 77 when
 * BPF cannot be loaded here.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sampler/proc/labels.h"
#include "sampler/proc/procinfo.h"
#include "sampler/ring/sampler.h"
#include "sampler/batch/stack.h"
#include "sampler/symbols/symbolize.h"
#include "store/util/util.h"

struct line {
	char *stack;
	long count;
};

static struct {
	struct procs *ps;
	struct symbolizer *sym;
	int npids, ncomms;
	int pids[64];
	char *comms[64];
	struct line *lines;
	size_t nlines, cap;
	long total, kept;
} g;

static volatile sig_atomic_t stop;
static void on_sig(int sig) { (void)sig; stop = 1; }

static void add_line(const char *s)
{
	for (size_t i = 0; i < g.nlines; i++)
		if (!strcmp(g.lines[i].stack, s)) {
			g.lines[i].count++;
			return;
		}
	if (g.nlines == g.cap) {
		g.cap = g.cap ? g.cap * 2 : 256;
		g.lines = realloc(g.lines, g.cap * sizeof(*g.lines));
		if (!g.lines)
			exit(1);
	}
	g.lines[g.nlines].stack = strdup(s);
	g.lines[g.nlines].count = 1;
	g.nlines++;
}

static bool wanted(const struct prof_sample_ev *ev)
{
	if (!g.npids && !g.ncomms)
		return true;
	for (int i = 0; i < g.npids; i++)
		if ((int)ev->tgid == g.pids[i])
			return true;
	for (int i = 0; i < g.ncomms; i++)
		if (!strncmp(ev->comm, g.comms[i], 15))
			return true;
	return false;
}

static void on_sample(void *ctx, const struct prof_sample_ev *ev, size_t size)
{
	static struct frame fr[2 * PROF_MAX_FRAMES];
	static char out[65536];
	struct proc *p;
	size_t len;
	int n;

	g.total++;
	if (!wanted(ev))
		return;
	g.kept++;
	p = procs__get(g.ps, ev->tgid, ev->comm, ev->cgroup_id);
	n = stack__symbolize(g.ps, g.sym, p, ev, fr, 2 * PROF_MAX_FRAMES);
	len = snprintf(out, sizeof(out), "%s", ev->comm);
	for (int i = n - 1; i >= 0 && len < sizeof(out) - 600; i--) {
		char name[512];

		frame__name(&fr[i], true, name, sizeof(name));
		len += snprintf(out + len, sizeof(out) - len, ";%s", name);
	}
	add_line(out);
}

static void on_task(void *ctx, const struct prof_task_ev *ev)
{
	switch (ev->type) {
	case PROF_EV_EXEC:
		procs__exec(g.ps, ev->tgid, ev->comm, ev->cgroup_id);
		break;
	case PROF_EV_FORK:
		procs__fork(g.ps, ev->tgid, ev->ppid, ev->comm, ev->cgroup_id);
		break;
	case PROF_EV_EXIT:
		procs__exit(g.ps, ev->tgid);
		break;
	}
}

static int cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hz", required_argument, NULL, 'h' },
		{ "seconds", required_argument, NULL, 's' },
		{ "pid", required_argument, NULL, 'p' },
		{ "comm", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct sampler_opts so = { .hz = 99, .on_sample = on_sample, .on_task = on_task };
	struct sampler *s = NULL;
	struct labeler *lab;
	uint64_t cnt[PROF_CNT_MAX];
	double seconds = 10;
	struct timespec t0, t;
	int c, err;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h': so.hz = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'p': if (g.npids < 64) g.pids[g.npids++] = atoi(optarg); break;
		case 'c': if (g.ncomms < 64) g.comms[g.ncomms++] = optarg; break;
		default: return 2;
		}
	}
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	lab = labeler__new(NULL);
	g.sym = symbolizer__new(NULL);
	if (!lab || !g.sym) {
		fprintf(stderr, "sample_folded: init: %s\n", strerror(errno));
		return 1;
	}
	g.ps = procs__new(&(struct procs_opts){ .sym = g.sym, .lab = lab });
	err = sampler__open(&s, &so);
	if (err) {
		printf("cannot load BPF here: %s\n", strerror(-err));
		return err == -EPERM || err == -ENOSYS || err == -EOPNOTSUPP ? 77 : 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		sampler__poll(s, 250);
		procs__gc(g.ps);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
			break;
	}
	sampler__poll(s, 0);
	sampler__counters(s, cnt);
	qsort(g.lines, g.nlines, sizeof(*g.lines), cmp);
	for (size_t i = 0; i < g.nlines; i++)
		printf("%s %ld\n", g.lines[i].stack, g.lines[i].count);
	fprintf(stderr, "samples=%lu idle=%lu ringfull=%lu kstack_err=%lu ustack_err=%lu ktrunc=%lu utrunc=%lu events_lost=%lu seen=%ld kept=%ld procs=%zu\n",
		(unsigned long)cnt[PROF_CNT_SAMPLES], (unsigned long)cnt[PROF_CNT_IDLE],
		(unsigned long)cnt[PROF_CNT_RINGFULL], (unsigned long)cnt[PROF_CNT_KSTACK_ERR],
		(unsigned long)cnt[PROF_CNT_USTACK_ERR], (unsigned long)cnt[PROF_CNT_KTRUNC],
		(unsigned long)cnt[PROF_CNT_UTRUNC], (unsigned long)cnt[PROF_CNT_EVENTS_LOST],
		g.total, g.kept, procs__count(g.ps));
	sampler__close(s);
	procs__free(g.ps);
	symbolizer__free(g.sym);
	labeler__free(lab);
	for (size_t i = 0; i < g.nlines; i++)
		free(g.lines[i].stack);
	free(g.lines);
	return 0;
}
