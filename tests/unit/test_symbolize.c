/* test_symbolize: addresses of this very process resolve to their names
 * through procinfo (maps) + symbolizer (ELF, PIE bias); a libc function
 * through the shared library; kernel addresses through kallsyms; JIT
 * addresses through a perf map; unresolved frames print module+0xOFFSET;
 * and the sampler's hash map survives heavy insert/delete. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/util/hmap.h"
#include "sampler/proc/labels.h"
#include "sampler/proc/procinfo.h"
#include "sampler/batch/batch.h"
#include "sampler/batch/stack.h"
#include "sampler/symbols/symbolize.h"
#include "tests/test.h"

__attribute__((noinline)) int test_marker_function(int x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static void test_hmap(void)
{
	struct hmap h = { 0 };
	int bad = 0;

	for (uint64_t k = 1; k <= 20000; k++)
		hmap__put(&h, k * 7919, (void *)(uintptr_t)k);
	for (uint64_t k = 1; k <= 20000; k += 2)
		hmap__del(&h, k * 7919);
	for (uint64_t k = 1; k <= 20000; k++) {
		void *v = hmap__get(&h, k * 7919);

		if (k % 2 ? v != NULL : v != (void *)(uintptr_t)k)
			bad++;
	}
	CHECK(bad == 0 && h.len == 10000, "hmap: 20000 puts, 10000 deletes, %d wrong", bad);
	hmap__fini(&h);
}

/* Address of a kernel symbol from /proc/kallsyms. */
static uint64_t ksym_addr(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], n[256], t;
	uint64_t a, r = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 " %c %255s", &a, &t, n) == 3 && !strcmp(n, name)) {
			r = a;
			break;
		}
	fclose(f);
	return r;
}

/* A frame's name as the tree shows it: through a batch into a profile,
 * then the renderers' own namer (profile__frame_name). */
static void prod_name(const struct frame *f, char *buf, size_t size)
{
	struct batch *b = batch__new(1000000);
	struct profile *p = NULL;

	snprintf(buf, size, "(no profile)");
	if (!b)
		return;
	if (!batch__add(b, NULL, 1, "x", f, 1) && !batch__take(b, 0, 1, &p) && p && p->nsamples &&
	    p->samples[0].nlocs)
		profile__frame_name(p, p->samples[0].locs[0], 0, true, buf, size);
	profile__free(p);
	batch__free(b);
}

/* Two stacks of one process in one batch, each ending in its own user
 * marker: each keeps its text (the batch once keyed markers by address
 * alone, so the first marker met named every later one). */
static void test_markers(void)
{
	static const char *names[] = { "[unwind: outside mappings]", "[truncated]", "[unwind: no table]" };
	struct batch *b = batch__new(1000000);
	struct profile *p = NULL;
	char buf[128];
	int right = 0;

	if (!b) {
		CHECK(0, "batch__new");
		return;
	}
	for (int i = 0; i < 3; i++) {
		struct frame f[2] = { 0 };

		f[0].addr = 0x401000 + i; /* unresolved: [unknown]+0x... */
		f[1].name = names[i];
		f[1].marker = true;
		batch__add(b, NULL, 7, "m", f, 2);
	}
	if (!batch__take(b, 0, 1, &p) && p)
		for (size_t i = 0; i < p->nsamples && i < 3; i++) {
			const struct prof_sample *s = &p->samples[i];

			buf[0] = 0;
			if (s->nlocs == 2)
				profile__frame_name(p, s->locs[1], 0, false, buf, sizeof(buf));
			right += !strcmp(buf, names[i]);
			if (strcmp(buf, names[i]))
				printf("  sample %zu ends in '%s', want '%s'\n", i, buf, names[i]);
		}
	CHECK(p && p->nsamples == 3 && right == 3, "markers: %d of 3 stacks end in their own marker", right);
	profile__free(p);
	batch__free(b);
}

int main(void)
{
	struct symbolizer *sym = symbolizer__new(NULL);
	struct labeler *lab = labeler__new(NULL);
	struct procs *ps;
	struct proc *p;
	struct vma *v;
	const char *name;
	char buf[256];

	test_hmap();
	test_markers();
	CHECK(sym && lab, "symbolizer and labeler");
	if (!sym || !lab)
		return test_done();
	ps = procs__new(&(struct procs_opts){ .sym = sym, .lab = lab });
	p = procs__get(ps, getpid(), NULL, 0);
	CHECK(p && p->labels[LBL_PID] && atoi(p->labels[LBL_PID]) == getpid(), "our own process, pid label");
	CHECK(p && p->labels[LBL_EXE] && strstr(p->labels[LBL_EXE], "test_symbolize"), "exe label %s",
	      p && p->labels[LBL_EXE] ? p->labels[LBL_EXE] : "none");

	/* A function of this PIE, inside (not at) its start. */
	uint64_t a = (uintptr_t)test_marker_function + 2;
	v = procs__vma(ps, p, a);
	/* Files are read by the loader thread: wait for it. */
	CHECK(!symbolizer__drain(sym, 5000), "the loader finishes in time");
	CHECK(v && v->file && v->dso && v->dso->tab, "our text is mapped from a file with symbols");
	name = v ? symbolizer__lookup(sym, v->dso, a - v->start + v->pgoff) : NULL;
	CHECK(name && !strcmp(name, "test_marker_function"), "PIE: %#" PRIx64 " -> %s", a, name ? name : "none");
	CHECK(v && v->dso && v->dso->tab && v->dso->tab->elf.build_id[0], "build id of our binary: %s",
	      v && v->dso && v->dso->tab ? v->dso->tab->elf.build_id : "none");

	/* A libc function: a shared library at a random base. */
	a = (uintptr_t)&getppid + 1;
	v = procs__vma(ps, p, a);
	symbolizer__drain(sym, 5000);
	name = v ? symbolizer__lookup(sym, v->dso, a - v->start + v->pgoff) : NULL;
	CHECK(name && strstr(name, "getppid"), "libc: getppid+1 -> %s (in %s)", name ? name : "none",
	      v ? v->path : "no mapping");

	/* glibc's debug file (libc6-dbg) names __libc_start_main's address
	 * five times: three local aliases and two versions of the export.
	 * The export's plain name wins, as perf and gdb show it. */
	{
		const char *dbg = NULL;
		struct elf_info di;
		char dpath[160];
		int fd;

		if (v && v->dso && v->dso->tab && v->dso->tab->elf.build_id[0]) {
			const char *bid = v->dso->tab->elf.build_id;

			snprintf(dpath, sizeof(dpath), "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
			dbg = dpath;
		}
		fd = dbg ? open(dbg, O_RDONLY) : -1;
		CHECK(fd >= 0, "libc6-dbg's debug file for libc: %s", dbg ? dbg : "(no build id)");
		if (fd >= 0 && !elfsym__read(fd, true, &di)) {
			const struct elf_sym *s = elfsym__find(&di, "__libc_start_main_impl");
			const char *n = s ? elfsym__lookup(&di, s->addr + 1) : NULL;

			CHECK(n && !strcmp(n, "__libc_start_main"), "an exported name beats local aliases at its address: %s",
			      n ? n : "none");
			elfsym__fini(&di);
		}
		if (fd >= 0)
			close(fd);
	}

	/* The symbol cache's bound: tables unused for SYM_KEEP_CALLS ticks go
	 * when over budget, and come back at their next use. */
	{
		struct symbolizer_stats st0, st1, st2;

		symbolizer__stats(sym, &st0);
		for (int i = 0; i < SYM_KEEP_CALLS + 1; i++)
			symbolizer__trim(sym, 1);
		symbolizer__stats(sym, &st1);
		name = v ? symbolizer__lookup(sym, v->dso, a - v->start + v->pgoff) : NULL;
		CHECK(st1.evicted >= 2 && st1.symtab_bytes < st0.symtab_bytes && !name,
		      "trim: %llu tables dropped, %llu -> %llu bytes, libc unnamed meanwhile",
		      (unsigned long long)st1.evicted, (unsigned long long)st0.symtab_bytes,
		      (unsigned long long)st1.symtab_bytes);
		v = procs__vma(ps, p, a);
		symbolizer__drain(sym, 5000);
		name = v ? symbolizer__lookup(sym, v->dso, a - v->start + v->pgoff) : NULL;
		symbolizer__stats(sym, &st2);
		CHECK(name && strstr(name, "getppid") && st2.symtab_bytes > st1.symtab_bytes,
		      "trim: libc read again at its next use -> %s (%llu bytes)", name ? name : "none",
		      (unsigned long long)st2.symtab_bytes);
	}

	/* Unresolved: an address before any symbol prints module+0xOFFSET. */
	struct frame fr = { .addr = v ? v->start : 0, .vma = v, .off = v ? v->pgoff : 0 };
	prod_name(&fr, buf, sizeof(buf));
	CHECK(v && strstr(buf, "libc") && strstr(buf, "+0x"), "unresolved frame -> %s", buf);
	fr = (struct frame){ .addr = 0x1234 };
	prod_name(&fr, buf, sizeof(buf));
	CHECK(!strcmp(buf, "[unknown]+0x1234"), "a frame of no known mapping -> %s (never a bare address)",
	      buf);

	/* Kernel. */
	uint64_t k = ksym_addr("do_sys_openat2");
	if (!k)
		k = ksym_addr("schedule");
	name = k ? symbolizer__kernel(sym, k + 1) : NULL;
	CHECK(k && name && (!strcmp(name, "do_sys_openat2") || !strcmp(name, "schedule")),
	      "kernel: %#" PRIx64 "+1 -> %s", k, name ? name : "none");
	fr = (struct frame){ .addr = k, .name = name, .kernel = true };
	prod_name(&fr, buf, sizeof(buf));
	CHECK(strstr(buf, "_[k]") != NULL, "kernel frame marked: %s", buf);

	/* Perf map: written for our pid, honoured, outside ranges not. */
	char path[64];
	FILE *f;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "7f0000001000 100 jit_alpha\n7f0000002000 80 jit_beta;with;semis\nbogus line\n");
		fclose(f);
	}
	struct perfmap *pm = perfmap__load(getpid());
	CHECK(pm != NULL, "perf map loaded");
	name = perfmap__lookup(pm, 0x7f0000001080);
	CHECK(name && !strcmp(name, "jit_alpha"), "perf map: inside jit_alpha -> %s", name ? name : "none");
	name = perfmap__lookup(pm, 0x7f0000001100);
	CHECK(!name, "perf map: just past jit_alpha -> none");
	name = perfmap__lookup(pm, 0x7f0000002000);
	fr = (struct frame){ .addr = 0x7f0000002000, .name = name };
	fr.jit = true;
	prod_name(&fr, buf, sizeof(buf));
	CHECK(!strcmp(buf, "jit_beta:with:semis_[j]"), "';' in a name becomes ':', a JIT frame ends _[j] -> %s", buf);
	perfmap__free(pm);
	unlink(path);

	/* Separate debug files: a stripped copy of this binary has no
	 * .symtab; its symbols come from <debug_root>/.build-id/xx/rest.debug. */
	{
		char dir[] = "/tmp/test_symbolize.XXXXXX", cmd[4096], stripped[300], dbg[600];
		const char *bid = v && v->dso && v->dso->tab ? v->dso->tab->elf.build_id : "";
		struct vma *me;

		a = (uintptr_t)test_marker_function + 2;
		me = procs__vma(ps, p, a);
		symbolizer__drain(sym, 5000); /* read again after the trim above */
		if (mkdtemp(dir) && me && me->dso && me->dso->tab && strlen(bid) > 2) {
			bid = me->dso->tab->elf.build_id;
			snprintf(stripped, sizeof(stripped), "%s/stripped", dir);
			snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s", dir, bid);
			snprintf(cmd, sizeof(cmd),
				 "objcopy --strip-all /proc/%d/exe %s && mkdir -p %s && "
				 "objcopy --only-keep-debug /proc/%d/exe %s/%s.debug",
				 (int)getpid(), stripped, dbg, (int)getpid(), dbg, bid + 2);
			if (system(cmd) == 0) {
				struct symbolizer *s2 = symbolizer__new("/nonexistent");
				struct symbolizer *s3 = symbolizer__new(dir);
				struct dso *d2 = s2 ? symbolizer__dso(s2, getpid(), 1, 1, stripped, 0, 0) : NULL;
				struct dso *d3 = s3 ? symbolizer__dso(s3, getpid(), 1, 1, stripped, 0, 0) : NULL;
				uint64_t off = a - me->start + me->pgoff;

				if (s2)
					symbolizer__drain(s2, 5000);
				if (s3)
					symbolizer__drain(s3, 5000);
				const char *n2 = d2 ? symbolizer__lookup(s2, d2, off) : NULL;
				const char *n3 = d3 ? symbolizer__lookup(s3, d3, off) : NULL;

				CHECK(!n2 || strcmp(n2, "test_marker_function"), "stripped, no debug file: %s",
				      n2 ? n2 : "unresolved");
				CHECK(n3 && !strcmp(n3, "test_marker_function"), "stripped + .build-id debug file: %s",
				      n3 ? n3 : "unresolved");
				symbolizer__free(s2);
				symbolizer__free(s3);
			} else {
				printf("skip: objcopy not available, debug-file check not run\n");
			}
			snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
			if (system(cmd))
				CHECK(0, "cleanup %s", dir);
		}
	}

	struct symbolizer_stats st;
	symbolizer__stats(sym, &st);
	CHECK(st.hits >= 2 && st.kernel_symbols > 1000, "stats: %" PRIu64 " hits, %" PRIu64 " kernel symbols",
	      st.hits, st.kernel_symbols);
	procs__free(ps);
	labeler__free(lab);
	symbolizer__free(sym);
	return test_done();
}
