/*
 * test_v8walk: the V8 walk's twin (sampler/v8/v8walk.c) and naming
 * (sampler/v8/v8name.c) against V8 itself, on node 20 (V8 11.3) and
 * Debian's node 18 (V8 10.2).
 *
 * tests/helpers/js/known.js, in its "stops" mode, prints the frames of
 * new Error().stack (function, file, line per frame) at known places and
 * blocks reading stdin on the same line: the main thread in a
 * recursion, in a JSON.parse reviver (JS called from C++), in a sort
 * comparator (JS called from a builtin), in a function made by new
 * Function; a worker thread in the same recursion. It allocates between
 * stops, so scavenges and mark-compacts move objects while we read them.
 * At each stop the test attaches to that thread, walks its stack with
 * the twin (native frames by the unwind tables, the V8 hook on frames in
 * builtins and JIT code) and names the JS frames: their functions and
 * lines must equal V8's, the walk must reach the root, and a frame is
 * either named right or stale ([js: moved]), never named wrong. Each
 * runtime runs twice: interpreted only (--no-opt --no-sparkplug, and
 * --no-maglev from V8 13, where --no-opt leaves Maglev on) and with V8's
 * default tiers (Sparkplug, Maglev in 13, TurboFan after the warm-up).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/unwind/table.h"
#include "sampler/unwind/twin.h"
#include "sampler/v8/v8dispatch.h"
#include "sampler/v8/v8layout.h"
#include "sampler/v8/v8name.h"
#include "sampler/v8/v8pos.h"
#include "sampler/v8/v8walk.h"
#include "gen/v8_test.skel.h"
#include "tests/bpf/v8_test.h"
#include "tests/test.h"
#include "tests/unit/test_v8.h"

#define STACK_MAX (256 << 10)
#define MAXMAPS 512
#define MAXV8 64 /* frames V8 reports per stop */

struct table_cache {
	char path[512];
	struct unw_table *t;
};

static struct table_cache tcache[64];
static int ntcache;

static struct unw_table *table_for(const char *path)
{
	for (int i = 0; i < ntcache; i++)
		if (!strcmp(tcache[i].path, path))
			return tcache[i].t;
	if (ntcache == 64)
		return NULL;
	struct table_cache *c = &tcache[ntcache++];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	snprintf(c->path, sizeof(c->path), "%s", path);
	c->t = NULL;
	if (fd >= 0) {
		if (unw_table__compile(fd, NULL, NULL, &c->t))
			c->t = NULL;
		close(fd);
	}
	return c->t;
}

static void tables_free(void)
{
	for (int i = 0; i < ntcache; i++)
		unw_table__free(tcache[i].t);
	ntcache = 0;
}

struct map {
	uint64_t start, end, pgoff, kdev, ino;
	char path[512];
	bool x;
	struct unw_table *t;
};

struct proc {
	pid_t pid;
	struct map m[MAXMAPS];
	int n;
};

static int read_maps(struct proc *p)
{
	char fn[64], line[1024];
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", p->pid);
	if (!(f = fopen(fn, "r")))
		return -1;
	p->n = 0;
	while (fgets(line, sizeof(line), f) && p->n < MAXMAPS) {
		struct map *m = &p->m[p->n];
		char perms[8];
		unsigned maj = 0, min = 0;

		m->path[0] = 0;
		m->ino = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %511s", &m->start, &m->end,
			   perms, &m->pgoff, &maj, &min, &m->ino, m->path) < 4)
			continue;
		m->kdev = (uint64_t)maj << 20 | min;
		m->x = perms[2] == 'x';
		m->t = m->x && m->path[0] == '/' ? table_for(m->path) : NULL;
		p->n++;
	}
	fclose(f);
	return 0;
}

static int map_fn(void *ctx, uint64_t addr, struct twin_map *tm)
{
	struct proc *p = ctx;

	for (int i = 0; i < p->n; i++) {
		struct map *m = &p->m[i];

		if (!m->x || addr < m->start || addr >= m->end)
			continue;
		*tm = (struct twin_map){ .start = m->start, .end = m->end, .pgoff = m->pgoff, .kind = TWIN_FP };
		if (m->path[0] == '/') {
			tm->kdev = m->kdev;
			tm->ino = m->ino;
		}
		if (m->t) {
			tm->kind = TWIN_TABLE;
			tm->rows = m->t->rows;
			tm->nrows = m->t->nrows;
			tm->rules = m->t->rules;
			tm->nrules = m->t->nrules;
		} else if (m->path[0] == '/') {
			tm->kind = TWIN_NOTABLE;
		} else if (m->path[0] == '[' && strcmp(m->path, "[anon]")) {
			tm->kind = TWIN_NOTABLE; /* vdso etc.: not in these stops */
		}
		return 0;
	}
	return -1;
}

/* p's walk set-up (layout l): the builtins by the engine file's offsets,
 * once the engine is mapped executable, and (13+) the dispatch table,
 * once V8 made it. 0 or -1. */
static int proc_setup(const struct proc *p, const char *engine, const struct v8file *f,
		      const struct v8layout *l, struct v8_proc *vp)
{
	for (int i = 0; i < p->n; i++) {
		const struct map *m = &p->m[i];

		if (m->x && !strcmp(m->path, engine)) {
			uint64_t base = 0, at = f->isolate_group;

			for (int k = 0; f->pie && k < p->n; k++)
				if (!strcmp(p->m[k].path, engine) && !p->m[k].pgoff) {
					at += p->m[k].start;
					break;
				}
			if (l->jsf_dispatch && v8dispatch__find(p->pid, l, at, &base))
				return -1;
			if (v8layout__proc(l, f->code_off, f->code_hi - f->code_lo, (uint32_t)m->kdev, m->ino, vp))
				return -1;
			vp->dispatch_base = base;
			return 0;
		}
	}
	return -1;
}

/* A frame as V8 reported it, or as we name it. */
struct jsf {
	char name[256], file[512];
	int line;
	int type; /* ours: the record's V8_FT_* */
	bool outer; /* ours: the record's outermost function (optimized code: the
		     * functions inlined into it may be left out) */
};

static int parse_stop(char *s, char *tag, size_t tagcap, pid_t *tid, struct jsf *fr, int max)
{
	char *save, *tok;
	int n = 0, field = 0;

	tok = strtok_r(s, " ", &save); /* STOP */
	tok = strtok_r(NULL, " ", &save);
	if (!tok)
		return -1;
	snprintf(tag, tagcap, "%s", tok);
	tok = strtok_r(NULL, " ", &save);
	if (!tok)
		return -1;
	*tid = atoi(tok);
	tok = strtok_r(NULL, "\n", &save);
	if (!tok)
		return -1;
	/* name|file|line|name|file|line... (fields may be empty) */
	for (char *p = tok, *bar; n < max; p = bar + 1) {
		bar = strchr(p, '|');
		if (bar)
			*bar = 0;
		if (field == 0)
			snprintf(fr[n].name, sizeof(fr[n].name), "%s", p);
		else if (field == 1)
			snprintf(fr[n].file, sizeof(fr[n].file), "%s", p);
		else
			fr[n++].line = atoi(p);
		field = (field + 1) % 3;
		if (!bar)
			break;
	}
	return n;
}

struct tally {
	int stops, walked, root, matched, frames, lines_ok, wrong, stale, unread, jsframes, kinds[5];
	int runtime_names, inlined_left, no_line;
	int bpf_runs, bpf_same; /* stops the BPF hook walked; with the twin's records */
	int bpf_moved, bpf_moved_stale, bpf_moved_wrong; /* its cached SFIs the collector moved since */
	int old_same, old_stale, old_wrong; /* the previous stop's frames, named again */
	int cpp_between, cpp_stops; /* reviver stops with C++ frames kept between reviver and parseSite */
	char wrong_text[3][400]; /* the first frames named wrong: shown right under the failed check */
	int cache_diff; /* frames the name cache named other than a read afresh does */
	char diff_text[3][300];
};

/* V8's name of frame v as we write it. */
static const char *v8_name(const struct jsf *v)
{
	return v->name[0] ? v->name : V8NAME_ANONYMOUS;
}

/* Our JS frames of one stop, named, as (name, path, line), leaf first. */
struct ours {
	struct jsf f[128];
	int n;
};

static int compare(const char *tag, struct ours *o, struct jsf *v, int nv, struct tally *t)
{
	int i, k, bad = 0;

	/* ours has node's own frames above site (readSync): start at site,
	 * or at the optimized frame site and its callers were inlined into */
	k = 0;
	for (i = 0; i < o->n; i++) {
		if (!strcmp(o->f[i].name, "site"))
			break;
		if (o->f[i].type == V8_FT_OPT && o->f[i].outer) {
			for (k = 1; k < nv && k < 8 && strcmp(o->f[i].name, v8_name(&v[k])); k++)
				;
			if (k < nv && k < 8)
				break;
			k = 0;
		}
	}
	if (i == o->n) {
		printf("  %s: no frame named site among %d:", tag, o->n);
		for (int j = 0; j < o->n; j++)
			printf(" %s:%d", o->f[j].name, o->f[j].line);
		printf("\n");
		return -1;
	}
	t->inlined_left += k;
	for (; k < nv && i < o->n; k++) {
		const char *want = v[k].name[0] ? v[k].name : V8NAME_ANONYMOUS;

		if (!strncmp(o->f[i].name, "[js:", 4)) {
			i++; /* counted as stale or unreadable */
			continue;
		}
		if (!v[k].file[0] && strcmp(o->f[i].name, want))
			continue; /* a C++ builtin (JSON.parse): no JS frame of its own */
		t->frames++;
		/* A function named at run time by a Symbol key ([kHybridDispatch]()
		 * in node's event_target): V8 reads the function object's own
		 * name property, which a frame does not reach; ours is nameless. */
		if (want[0] == '[' && !strcmp(o->f[i].name, V8NAME_ANONYMOUS) && !strcmp(o->f[i].file, v[k].file)) {
			t->runtime_names++;
			want = V8NAME_ANONYMOUS;
		}
		/* Optimized code: functions inlined into it that we cannot
		 * place (TurboFan's positions are sparse) are left out; so are
		 * those of code the function no longer points to (a function
		 * frame: on-stack replacement code, named as its function
		 * alone here, where the daemon's refine() may find the code) */
		if (strcmp(o->f[i].name, want) && (o->f[i].type == V8_FT_OPT || o->f[i].type == V8_FT_FUNC) &&
		    o->f[i].outer) {
			int j = k + 1;

			while (j < nv && j < k + 8 && strcmp(o->f[i].name, v8_name(&v[j])))
				j++;
			if (j < nv && j < k + 8) {
				t->inlined_left += j - k;
				k = j;
				want = v8_name(&v[k]);
			}
		}
		if (strcmp(o->f[i].name, want) || (v[k].file[0] && strcmp(o->f[i].file, v[k].file))) {
			printf("  %s frame %d: ours %s (%s:%d), V8 %s (%s:%d)\n", tag, k, o->f[i].name, o->f[i].file,
			       o->f[i].line, want, v[k].file, v[k].line);
			if (t->wrong < 3)
				snprintf(t->wrong_text[t->wrong], sizeof(t->wrong_text[0]),
					 "stop %d (%.40s) frame %d: ours %.60s (%.60s:%d, type %d), V8 %.60s (%.40s:%d)", t->stops,
					 tag, k, o->f[i].name, o->f[i].file, o->f[i].line, o->f[i].type, want, v[k].file,
					 v[k].line);
			t->wrong++;
			bad = 1;
		} else if (o->f[i].line == v[k].line || !v[k].file[0]) {
			t->lines_ok++;
		} else if (!o->f[i].line && (o->f[i].type == V8_FT_OPT || o->f[i].type == V8_FT_FUNC)) {
			t->no_line++; /* code with no position for this pc */
		} else {
			printf("  %s frame %d %s: line %d, V8 %d\n", tag, k, want, o->f[i].line, v[k].line);
			bad = 1;
		}
		i++;
	}
	return bad;
}

/*
 * An interpreted frame the BPF hook named from its SFI cache at an address
 * the twin does not read (the collector moved the SFI since the entry was
 * read; bpf/v8_walk.h says why that is allowed): named by us, it must be
 * the function the twin's record names, or stale, never another one.
 * Returns whether it is; counts it.
 */
static bool bpf_moved_sfi(struct v8names *names, pid_t pid, const struct v8layout *l, const struct v8file *vf,
			  __u64 obj, __u64 pos, const struct v8_frame *twin, struct tally *t)
{
	struct v8_frame b = { obj, (__u32)pos, (__u32)(pos >> 32) };
	struct v8name_frame nb[8], nt[8];
	char bn[256];
	int n, m;

	if (V8_OBJ_TYPE(obj) != V8_FT_INTERP || V8_OBJ_TYPE(twin->obj) != V8_FT_INTERP || b.off != twin->off ||
	    b.stamp != twin->stamp)
		return false;
	t->bpf_moved++;
	m = v8names__frame(names, pid, l, vf, v8name__read_pid, (void *)(intptr_t)pid, twin, true, nt, 8);
	if (m <= 0)
		return true; /* the twin's own record is stale: nothing to hold it to */
	snprintf(bn, sizeof(bn), "%s (%s)", nt[0].name, nt[0].path);
	n = v8names__frame(names, pid, l, vf, v8name__read_pid, (void *)(intptr_t)pid, &b, true, nb, 8);
	if (n == -ESTALE || n == -EFAULT) {
		t->bpf_moved_stale++;
		return true;
	}
	if (n > 0 && !strcmp(nb[0].name, nt[0].name) && !strcmp(nb[0].path, nt[0].path))
		return true;
	printf("  BPF's cached SFI %#llx names %s, the twin's %#llx %s\n", (unsigned long long)V8_OBJ_ADDR(obj),
	       n > 0 ? nb[0].name : "(error)", (unsigned long long)V8_OBJ_ADDR(twin->obj), bn);
	t->bpf_moved_wrong++;
	return false;
}

/*
 * The BPF hook's records of this stop (tests/bpf/v8_test.bpf.c walked the
 * thread by rbp on its way into uv_fs_read()) against the twin's: the same JS
 * frames, objects, offsets and stamps (the native indexes differ: one walk
 * is by rbp, the other by the unwind tables), but for an interpreted
 * frame's SFI taken from the hook's cache after the collector moved it
 * (bpf_moved_sfi).
 */
static void bpf_compare(struct v8_test_bpf *skel, const char *tag, const struct v8walk_out *o, struct tally *t,
			struct v8names *names, pid_t pid, const struct v8layout *l, const struct v8file *vf)
{
	static struct v8_test_result res;
	__u32 zero = 0;
	bool same;

	if (bpf_map__lookup_elem(skel->maps.result, &zero, sizeof(zero), &res, sizeof(res), 0) || !res.runs)
		return;
	t->bpf_runs++;
	same = (int)res.njs == o->njs;
	for (int i = 0; same && i < o->njs; i++)
		same = ((res.frames[2 * i] & ~(0xffull << 48)) == (o->js[i].obj & ~(0xffull << 48)) &&
			res.frames[2 * i + 1] == ((__u64)o->js[i].stamp << 32 | o->js[i].off)) ||
		       bpf_moved_sfi(names, pid, l, vf, res.frames[2 * i], res.frames[2 * i + 1], &o->js[i], t);
	t->bpf_same += same;
	if (!same) {
		printf("  %s: BPF %u JS frames (end %u, walk end %u after %u native:", tag, res.njs, res.end,
		       res.uend, res.npcs);
		for (unsigned k = 0; k < res.npcs && k < 8; k++)
			printf(" %#llx", (unsigned long long)res.pcs[k]);
		printf("), twin %d\n", o->njs);
		for (int i = 0; i < o->njs || i < (int)res.njs; i++)
			printf("    %2d bpf %#llx %#llx  twin %#llx %#llx\n", i,
			       i < (int)res.njs ? (unsigned long long)res.frames[2 * i] : 0,
			       i < (int)res.njs ? (unsigned long long)res.frames[2 * i + 1] : 0,
			       i < o->njs ? (unsigned long long)o->js[i].obj : 0,
			       i < o->njs ? (unsigned long long)((__u64)o->js[i].stamp << 32 | o->js[i].off) : 0);
	}
}

/* Loads the test program for process pid (layout l, its builtins found
 * in its maps) and attaches its uprobe to libuv's uv_fs_read() (in
 * libuv.so, or linked into node). NULL on error. */
static struct v8_test_bpf *bpf_setup(const struct node_rt *rt, const struct v8file *vf,
				     const struct v8layout *l, pid_t pid, struct v8_proc *vp, const char **why)
{
	static struct proc p;
	struct v8_test_bpf *skel = v8_test_bpf__open();
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "uv_fs_read");
	const char *uv = rt->exe;

	*why = "open";
	if (!skel)
		return NULL;
	skel->rodata->target_tgid = (__u32)pid;
	p.pid = pid;
	*why = "maps or builtins";
	if (read_maps(&p) || proc_setup(&p, rt->engine, vf, l, vp))
		goto fail;
	for (int i = 0; i < p.n; i++)
		if (strstr(p.m[i].path, "/libuv.so"))
			uv = p.m[i].path;
	*why = "load (the verifier refused it?)";
	if (v8_test_bpf__load(skel))
		goto fail;
	*why = "v8_procs or the uprobe";
	if (bpf_map__update_elem(skel->maps.v8_procs, &pid, sizeof(pid), vp, sizeof(*vp), 0) ||
	    !(skel->links.v8_test_read = bpf_program__attach_uprobe_opts(skel->progs.v8_test_read, pid, uv, 0, &uo)))
		goto fail;
	return skel;
fail:
	v8_test_bpf__destroy(skel);
	return NULL;
}

/* Debugging: the position table of optimized code around off. */
static void dump_positions(pid_t pid, const struct v8layout *l, uint64_t code, uint32_t off)
{
	uint64_t pt = 0, len = 0, last = ~0ull, raw;
	uint8_t *tab;
	void *ctx = (void *)(intptr_t)pid;

	if (v8name__read_pid(ctx, code - 1 + l->code_positions, &pt, 8) ||
	    v8name__read_pid(ctx, pt - 1 + l->array_length, &len, 8))
		return;
	len >>= 32;
	tab = malloc(len);
	if (!tab || v8name__read_pid(ctx, pt - 1 + l->array_data, tab, len)) {
		free(tab);
		return;
	}
	for (int64_t o = -1; o < (int64_t)off + 64; o++)
		if (!v8pos__find(tab, len, o, &raw, NULL) && raw != last) {
			printf("      code %" PRId64 ": script offset %d inlining %d%s\n", o, v8pos__script_offset(raw),
			       v8pos__inlining_id(raw), o <= off ? "" : " (after)");
			last = raw;
		}
	free(tab);
}

/* The previous stop's JS frames, what we named them, and their process. */
static struct {
	struct v8_frame js[V8_MAX_FRAMES];
	char name[V8_MAX_FRAMES][256];
	int n;
	pid_t pid;
} prev;

/*
 * The previous stop's frames named again, with a fresh cache, from memory
 * as it is now: the process has run, allocated and collected since. Each
 * must get its old name, or be stale; another name is a wrong name.
 */
static void rename_old(const struct v8layout *l, const struct v8file *vf, pid_t pid, struct tally *t)
{
	struct v8names *fresh = v8names__new(0);

	for (int i = 0; fresh && prev.pid == pid && i < prev.n; i++) {
		struct v8name_frame nf[8];
		int n = v8names__frame(fresh, pid, l, vf, v8name__read_pid, (void *)(intptr_t)pid, &prev.js[i],
				       V8_OBJ_INDEX(prev.js[i].obj) > 0, nf, 8);

		if (n < 0 || !prev.name[i][0]) {
			t->old_stale += n < 0;
		} else if (!strcmp(nf[n - 1].name, prev.name[i])) {
			t->old_same++;
		} else {
			printf("  a frame named %s at the last stop is now %s\n", prev.name[i], nf[n - 1].name);
			t->old_wrong++;
		}
	}
	v8names__free(fresh);
}

/* One stop of thread tid: walk, name, compare. */
static void at_stop(const struct node_rt *rt, const struct v8file *vf, const struct v8layout *l,
		    struct v8names *names, struct v8_test_bpf *skel, pid_t pid, pid_t tid, const char *tag,
		    struct jsf *v, int nv, struct tally *t)
{
	static uint8_t stack[STACK_MAX];
	static struct v8walk_out o;
	static struct proc p;
	static struct ours ours;
	struct user_regs_struct regs;
	struct v8_proc vp;
	uint64_t send = 0;
	struct iovec lv, rv;
	int st;
	size_t len;

	t->stops++;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0) ||
	    waitpid(tid, &st, __WALL) != tid) {
		printf("  %s: attach to %d: %s\n", tag, tid, strerror(errno));
		return;
	}
	p.pid = pid;
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) || read_maps(&p) ||
	    proc_setup(&p, rt->engine, vf, l, &vp)) {
		printf("  %s: registers, maps or builtins of %d\n", tag, tid);
		goto out;
	}
	for (int i = 0; i < p.n; i++)
		if (regs.rsp >= p.m[i].start && regs.rsp < p.m[i].end)
			send = p.m[i].end;
	len = send > regs.rsp ? send - regs.rsp : 0;
	if (len > STACK_MAX)
		len = STACK_MAX;
	lv = (struct iovec){ stack, len };
	rv = (struct iovec){ (void *)(uintptr_t)regs.rsp, len };
	if (process_vm_readv(pid, &lv, 1, &rv, 1, 0) != (ssize_t)len) {
		printf("  %s: stack of %d\n", tag, tid);
		goto out;
	}
	struct twin_regs r = { .pc = regs.rip, .sp = regs.rsp, .bp = regs.rbp, .bp_ok = true, .exact = true };
	struct twin_mem mem = { regs.rsp, stack, len, len == STACK_MAX };

	v8walk__walk(&vp, &r, &mem, map_fn, &p, v8name__read_pid, (void *)(intptr_t)pid, &o);
	t->walked++;
	if (skel)
		bpf_compare(skel, tag, &o, t, names, pid, l, vf);
	t->root += o.uend == PROF_UE_ROOT;
	if (o.uend != PROF_UE_ROOT)
		printf("  %s: the walk ended %d after %d frames\n", tag, o.uend, o.npcs);
	rename_old(l, vf, pid, t);
	/* The merged stack of the reviver stop keeps JSON.parse's C++ frames
	 * (native frames in the engine outside the builtins) between the
	 * reviver and its caller's JS frame. */
	if (!strcmp(tag, "reviver")) {
		int m[PROF_MAX_FRAMES + V8_MAX_FRAMES], nm = v8walk__merge(o.npcs, o.js, o.njs, m, PROF_MAX_FRAMES + V8_MAX_FRAMES);
		int state = 0, cpp = 0;

		for (int k = 0; k < nm && state < 2; k++) {
			if (m[k] < 0) {
				struct v8name_frame nf[8];
				int nn = v8names__frame(names, pid, l, vf, v8name__read_pid, (void *)(intptr_t)pid,
							&o.js[-1 - m[k]], true, nf, 8);

				/* the next JS frame: parseSite, or the function it
				 * was inlined into */
				for (int q = 0; nn > 0 && q < nn; q++) {
					if (!strcmp(nf[q].name, "reviver"))
						state = 1;
					else if (state == 1)
						state = 2;
				}
			} else if (state == 1) {
				struct twin_map tm;
				uint64_t pc = o.pcs[m[k]] - 1;

				cpp += !map_fn(&p, pc, &tm) && tm.kind == TWIN_TABLE && !v8walk__builtins(&vp, &tm, pc);
			}
		}
		t->cpp_stops++;
		t->cpp_between += state == 2 && cpp > 0;
		if (state != 2 || !cpp) {
			printf("  reviver: merged (state %d, %d C++ frames):", state, cpp);
			for (int k = 0; k < nm; k++)
				if (m[k] < 0)
					printf(" js%d(type %u)", -1 - m[k], V8_OBJ_TYPE(o.js[-1 - m[k]].obj));
				else
					printf(" %#llx", (unsigned long long)o.pcs[m[k]]);
			printf("\n");
		}
	}
	prev.pid = pid;
	prev.n = o.njs;
	memcpy(prev.js, o.js, sizeof(prev.js));
	memset(prev.name, 0, sizeof(prev.name));
	ours.n = 0;
	/* Each frame named again by a cache of its own: a cached entry a
	 * later object at the same address (another isolate's, a recompiled
	 * function's) passed for would name it otherwise. */
	struct v8names *fresh = v8names__new(0);
	for (int i = 0; i < o.njs && ours.n < 120; i++) {
		struct v8name_frame nf[8], ff[8];
		int n = v8names__frame(names, pid, l, vf, v8name__read_pid, (void *)(intptr_t)pid, &o.js[i],
				       V8_OBJ_INDEX(o.js[i].obj) > 0, nf, 8);
		int fn = fresh ? v8names__frame(fresh, pid, l, vf, v8name__read_pid, (void *)(intptr_t)pid, &o.js[i],
						V8_OBJ_INDEX(o.js[i].obj) > 0, ff, 8) : n;

		if (fresh && n > 0 && fn > 0 &&
		    (fn != n || strcmp(ff[n - 1].name, nf[n - 1].name) || ff[n - 1].line != nf[n - 1].line)) {
			if (t->cache_diff < 3)
				snprintf(t->diff_text[t->cache_diff], sizeof(t->diff_text[0]),
					 "stop %d (%.40s) js %d type %u obj %#llx: cached %.60s:%d, afresh %.60s:%d", t->stops,
					 tag, i, V8_OBJ_TYPE(o.js[i].obj), (unsigned long long)V8_OBJ_ADDR(o.js[i].obj),
					 nf[n - 1].name, nf[n - 1].line, ff[fn - 1].name, ff[fn - 1].line);
			t->cache_diff++;
		}

		if (getenv("V8WALK_DEBUG"))
			printf("    js %d: native %u type %u obj %#llx off %u stamp %#x -> %d %s line %d\n", i,
			       V8_OBJ_INDEX(o.js[i].obj), V8_OBJ_TYPE(o.js[i].obj),
			       (unsigned long long)V8_OBJ_ADDR(o.js[i].obj), o.js[i].off, o.js[i].stamp, n,
			       n > 0 ? nf[0].name : "", n > 0 ? nf[0].line : 0);
		if (getenv("V8WALK_DEBUG") && V8_OBJ_TYPE(o.js[i].obj) == V8_FT_OPT)
			dump_positions(pid, l, V8_OBJ_ADDR(o.js[i].obj) | 1, o.js[i].off);
		t->jsframes++;
		t->kinds[V8_OBJ_TYPE(o.js[i].obj) & 3 ? V8_OBJ_TYPE(o.js[i].obj) : 4]++;
		if (n < 0) {
			t->stale += n == -ESTALE;
			t->unread += n != -ESTALE;
			snprintf(ours.f[ours.n].name, sizeof(ours.f[0].name), "[js: %s]",
				 n == -ESTALE ? "moved" : "unreadable");
			ours.f[ours.n].file[0] = 0;
			ours.f[ours.n].type = 0;
			ours.f[ours.n++].line = 0;
			continue;
		}
		snprintf(prev.name[i], sizeof(prev.name[i]), "%s", nf[n - 1].name);
		for (int k = 0; k < n && ours.n < 120; k++) {
			snprintf(ours.f[ours.n].name, sizeof(ours.f[0].name), "%s", nf[k].name);
			snprintf(ours.f[ours.n].file, sizeof(ours.f[0].file), "%s", nf[k].path);
			ours.f[ours.n].type = (int)V8_OBJ_TYPE(o.js[i].obj);
			ours.f[ours.n].outer = k == n - 1;
			ours.f[ours.n++].line = nf[k].line;
		}
	}
	v8names__free(fresh);
	if (!compare(tag, &ours, v, nv, t)) {
		t->matched++;
	} else {
		for (int i = 0; i < ours.n; i++)
			printf("    ours %s (%s:%d)\n", ours.f[i].name, ours.f[i].file, ours.f[i].line);
		for (int k = 0; k < nv; k++)
			printf("    V8   %s (%s:%d)\n", v[k].name, v[k].file, v[k].line);
	}
out:
	ptrace(PTRACE_DETACH, tid, 0, 0);
}

/* Waits (up to 10 s) until thread tid of pid blocks in read(0, ...). */
static bool stopped(pid_t pid, pid_t tid)
{
	char fn[64], buf[256];

	snprintf(fn, sizeof(fn), "/proc/%d/task/%d/syscall", pid, tid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(fn, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = 0;
		if (!strncmp(buf, "0 0x0 ", 6))
			return true;
		usleep(5000);
	}
	return false;
}

static void run(const struct node_rt *rt, bool interp, int rounds)
{
	char *argv[12] = { "node", NULL };
	int a = 1, fd = -1, in = -1;
	struct v8file vf;
	struct v8layout l;
	char why[200] = "", mode[32];
	struct tally t = { 0 };
	struct v8names *names;
	struct v8_test_bpf *skel = NULL;
	struct v8_proc vp;
	const char *bwhy = "no READY line";
	FILE *out;
	pid_t pid;
	char line[16384];
	int efd;

	snprintf(mode, sizeof(mode), "%s %s", rt->name, interp ? "interpreted" : "default tiers");
	if (!node_present(rt)) {
		CHECK(0, "%s: %s missing (scripts/deps.sh)", mode, rt->exe);
		return;
	}
	efd = open(rt->engine, O_RDONLY | O_CLOEXEC);
	if (efd < 0 || v8file__read(efd, &vf) || v8layout__init(&vf, &l, why, sizeof(why))) {
		CHECK(0, "%s: V8 layout of %s: %s", mode, rt->engine, why);
		if (efd >= 0)
			close(efd);
		return;
	}
	close(efd);
	argv[a++] = "--expose-gc";
	if (interp) {
		argv[a++] = "--no-opt";
		argv[a++] = "--no-sparkplug";
		if (rt->v8_major >= 13)
			argv[a++] = "--no-maglev";
	}
	argv[a++] = (char *)js_helper("known.js");
	argv[a++] = "stops";
	char rs[16];
	snprintf(rs, sizeof(rs), "%d", rounds);
	argv[a++] = rs;
	argv[a] = NULL;
	names = v8names__new(0);
	pid = node_spawn2(rt, argv, &fd, &in);
	out = pid > 0 ? fdopen(fd, "r") : NULL;
	if (!out || !names) {
		CHECK(0, "%s: start node", mode);
		node_kill(pid);
		v8names__free(names);
		return;
	}
	while (fgets(line, sizeof(line), out)) {
		struct jsf v[MAXV8];
		char tag[64];
		pid_t tid;
		int nv;

		if (!strncmp(line, "DONE", 4))
			break;
		if (!strncmp(line, "READY", 5)) {
			skel = bpf_setup(rt, &vf, &l, pid, &vp, &bwhy);
			if (write(in, "x", 1) != 1)
				break;
		}
		if (strncmp(line, "STOP ", 5) || (nv = parse_stop(line, tag, sizeof(tag), &tid, v, MAXV8)) < 1)
			continue;
		if (!stopped(pid, tid)) {
			printf("  %s: node did not stop\n", tag);
			break;
		}
		at_stop(rt, &vf, &l, names, skel, pid, tid, tag, v, nv, &t);
		if (write(in, "x", 1) != 1)
			break;
	}
	fclose(out);
	close(in);
	node_kill(pid);
	v8_test_bpf__destroy(skel);
	struct v8names_stats ns;
	v8names__stats(names, &ns);
	v8names__free(names);
	printf("  %s: %d stops, %d JS frames (interp %d, baseline %d, optimized %d, function %d), cache %" PRIu64
	       " hits %" PRIu64 " misses, %" PRIu64 " stale; %d frames compared, %d named at run time by a Symbol, %d inlined left out, %d without a line\n",
	       mode, t.stops, t.jsframes, t.kinds[V8_FT_INTERP], t.kinds[V8_FT_BASELINE], t.kinds[V8_FT_OPT],
	       t.kinds[4], ns.hits, ns.misses, ns.stale, t.frames, t.runtime_names, t.inlined_left, t.no_line);
	CHECK(t.stops == rounds * 5, "%s: %d of %d stops seen", mode, t.stops, rounds * 5);
	CHECK(t.walked == t.stops && t.root == t.walked, "%s: %d of %d walks reach the root", mode, t.root,
	      t.stops);
	CHECK(t.wrong == 0, "%s: no frame named wrong (%d of %d compared)", mode, t.wrong, t.frames);
	for (int i = 0; i < t.wrong && i < 3; i++)
		printf("    %s\n", t.wrong_text[i]);
	CHECK(t.cache_diff == 0, "%s: the name cache names every frame as a read afresh does (%d differ)", mode,
	      t.cache_diff);
	for (int i = 0; i < t.cache_diff && i < 3; i++)
		printf("    %s\n", t.diff_text[i]);
	CHECK(t.matched == t.stops, "%s: %d of %d stops name every frame and line as V8 does", mode, t.matched,
	      t.stops);
	CHECK(t.stale + t.unread <= t.jsframes / 20, "%s: %d stale and %d unreadable of %d JS frames", mode,
	      t.stale, t.unread, t.jsframes);
	CHECK(t.old_wrong == 0 && t.old_same + t.old_stale > 0,
	      "%s: the last stop's frames named again after a full GC: %d the same, %d stale, %d wrong", mode,
	      t.old_same, t.old_stale, t.old_wrong);
	CHECK(t.cpp_stops > 0 && t.cpp_between == t.cpp_stops,
	      "%s: merged stacks keep JSON.parse's C++ frames between reviver and its caller (%d of %d)", mode,
	      t.cpp_between, t.cpp_stops);
	CHECK(skel != NULL, "%s: the BPF hook loads (verifier) and attaches: %s", mode, skel ? "yes" : bwhy);
	CHECK(t.bpf_runs == t.stops && t.bpf_same == t.stops,
	      "%s: the BPF hook's JS frames equal the twin's at %d of %d stops (%d walked; %d interpreted "
	      "frames from its cache at a moved SFI's old address: %d stale, %d named wrong)",
	      mode, t.bpf_same, t.stops, t.bpf_runs, t.bpf_moved, t.bpf_moved_stale, t.bpf_moved_wrong);
	if (!interp)
		CHECK(t.kinds[V8_FT_OPT] + t.kinds[V8_FT_BASELINE] > 0, "%s: compiled frames seen (%d optimized, %d baseline)",
		      mode, t.kinds[V8_FT_OPT], t.kinds[V8_FT_BASELINE]);
}

static int prog_stats(int fd, uint64_t *ns, uint64_t *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
	return 0;
}

/*
 * BPF's time per sample: the test program's perf_event walk of known.js
 * (default tiers) at 999 Hz, with the hook (the process in v8_procs) and
 * then without (plain rbp steps over the same frames), from bpf_stats.
 */
static void bpf_time(const struct node_rt *rt)
{
	/* Long enough for a slow BPF load on a busy host (node had exited by
	 * perf_event_open: ESRCH); killed once measured. */
	char *argv[] = { "node", (char *)js_helper("known.js"), "run", "120", NULL };
	struct perf_event_attr pa = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(pa),
				      .config = PERF_COUNT_SW_CPU_CLOCK, .freq = 1, .sample_freq = 999 };
	static struct proc p;
	struct v8_test_bpf *skel = NULL;
	struct v8_test_result res;
	struct v8file vf;
	struct v8layout l;
	struct v8_proc vp;
	bool set = false;
	uint64_t ns[3] = { 0 }, cnt[3] = { 0 }, smp[3] = { 0 }, js[3] = { 0 };
	int fd = -1, efd, pfd = -1, sfd = -1, out = -1;
	__u32 zero = 0;
	pid_t pid;
	bool ok = false;
	/* The step that failed, and its error: the check names both. */
	const char *step = "node";
	int err = 0;
#define STEP(name, failed)                                   \
	do {                                                 \
		step = (name);                               \
		if (failed) {                                \
			err = errno;                         \
			goto out;                            \
		}                                            \
	} while (0)

	efd = open(rt->engine, O_RDONLY | O_CLOEXEC);
	if (efd < 0 || v8file__read(efd, &vf) || v8layout__init(&vf, &l, NULL, 0)) {
		CHECK(0, "%s: V8 layout of %s", rt->name, rt->engine);
		if (efd >= 0)
			close(efd);
		return;
	}
	close(efd);
	pid = node_spawn(rt, argv, &out);
	p.pid = pid;
	for (int i = 0; i < 100 && pid > 0; i++) { /* until node runs JS */
		usleep(20000);
		set = !read_maps(&p) && !proc_setup(&p, rt->engine, &vf, &l, &vp);
		if (set && i > 10)
			break;
	}
	STEP("node (spawn)", pid < 0);
	STEP("maps (node's engine in /proc/PID/maps) or the V8 layout of the process", !set && (errno = EINVAL));
	STEP("BPF open", !(skel = v8_test_bpf__open()));
	skel->rodata->target_tgid = (__u32)pid;
	STEP("BPF load", (errno = -v8_test_bpf__load(skel)));
	STEP("BPF map update (v8_procs)",
	     (errno = -bpf_map__update_elem(skel->maps.v8_procs, &pid, sizeof(pid), &vp, sizeof(vp), 0)));
	pfd = (int)syscall(SYS_perf_event_open, &pa, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	STEP("perf event (perf_event_open on node)", pfd < 0);
	sfd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	STEP("bpf_stats (BPF_ENABLE_STATS)", sfd < 0);
	STEP("perf event (attach)",
	     !(skel->links.v8_test_sample = bpf_program__attach_perf_event(skel->progs.v8_test_sample, pfd)));
	fd = bpf_program__fd(skel->progs.v8_test_sample);
	for (int phase = 0; phase < 3; phase++) {
		if (phase)
			sleep(3);
		STEP("bpf_stats (prog info)", prog_stats(fd, &ns[phase], &cnt[phase]));
		STEP("BPF map lookup (result)",
		     (errno = -bpf_map__lookup_elem(skel->maps.result, &zero, sizeof(zero), &res, sizeof(res), 0)));
		smp[phase] = res.samples;
		js[phase] = res.js_total;
		if (phase == 1) /* the hook off: plain rbp steps */
			bpf_map__delete_elem(skel->maps.v8_procs, &pid, sizeof(pid), 0);
	}
	ok = true;
out:
	if (ok) {
		double with = (double)(ns[1] - ns[0]) / (double)(cnt[1] - cnt[0] + !(cnt[1] - cnt[0]));
		double without = (double)(ns[2] - ns[1]) / (double)(cnt[2] - cnt[1] + !(cnt[2] - cnt[1]));
		double jsps = (double)(js[1] - js[0]) / (double)(smp[1] - smp[0] + !(smp[1] - smp[0]));

		printf("  %s: %" PRIu64 " samples with the hook: %.0f ns each, %.1f JS frames per sample; %" PRIu64
		       " without: %.0f ns; %.0f ns per JS frame\n",
		       rt->name, smp[1] - smp[0], with, jsps, smp[2] - smp[1], without,
		       jsps > 0 ? (with - without) / jsps : 0.0);
		CHECK(smp[1] - smp[0] > 200 && jsps >= 2, "%s: the perf_event hook walked %" PRIu64
		      " samples, %.1f JS frames each", rt->name, smp[1] - smp[0], jsps);
		CHECK(jsps > 0 && (with - without) / jsps < 1000, "%s: BPF time per JS frame %.0f ns (< 1 us)",
		      rt->name, jsps > 0 ? (with - without) / jsps : 0.0);
	} else {
		CHECK(0, "%s: the timing run failed at its step '%s': %s", rt->name, step,
		      err ? strerror(err) : "no error code");
	}
#undef STEP
	if (sfd >= 0)
		close(sfd);
	v8_test_bpf__destroy(skel);
	if (pfd >= 0)
		close(pfd);
	if (out >= 0)
		close(out);
	node_kill(pid);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: needs root (ptrace)\n");
		return 77;
	}
	for (size_t i = 0; i < NODE_RTS; i++) {
		const char *only = getenv("V8WALK_ONLY"); /* "node20 1": one runtime, one mode */

		for (int interp = 1; interp >= 0; interp--) {
			char me[32];

			snprintf(me, sizeof(me), "%s %d", node_rts[i].name, interp);
			if (!only || !strcmp(only, me))
				run(&node_rts[i], interp, 3);
		}
	}
	for (size_t i = 0; i < NODE_RTS; i++)
		if ((!getenv("V8WALK_ONLY") || !strcmp(getenv("V8WALK_ONLY"), "time")) && node_present(&node_rts[i]))
			bpf_time(&node_rts[i]);
	tables_free();
	return test_done();
}
