/*
 * test_unwind: the table compiler and the user-space twin of the BPF
 * walk, held against libdw's own unwinder (dwfl_getthread_frames) on
 * stacks captured from real programs built without frame pointers:
 * registers and up to 32 KiB of raw stack, taken with ptrace while the
 * program runs, then unwound by both from the same bytes.
 * Also: bad ELF input gives an error, never a crash.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sampler/unwind/table.h"
#include "sampler/unwind/twin.h"
#include "tests/spawn.h"
#include "tests/test.h"
#include "tests/unit/test_v8.h"

#define STACK_MAX (32 << 10)
#define MAXF 128

struct map {
	uint64_t start, end, pgoff;
	char path[512];
	struct unw_table *t; /* NULL: no table (anonymous, unreadable) */
};

struct proc {
	pid_t pid;
	struct map maps[256];
	int n;
};

struct capture {
	struct user_regs_struct regs;
	uint64_t base;
	uint8_t stack[STACK_MAX];
	size_t len;
};

/* The executable mappings and the stack's end, from /proc/PID/maps. */
static int read_maps(struct proc *p, uint64_t *stack_end)
{
	char fn[64], line[1024];
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", p->pid);
	f = fopen(fn, "r");
	if (!f)
		return -1;
	p->n = 0;
	while (fgets(line, sizeof(line), f) && p->n < 256) {
		uint64_t s, e, off;
		char perms[8], path[512] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %511s", &s, &e, perms, &off,
			   path) < 4)
			continue;
		if (strstr(line, "[stack]"))
			*stack_end = e;
		if (perms[2] != 'x')
			continue;
		struct map *m = &p->maps[p->n++];
		m->start = s;
		m->end = e;
		m->pgoff = off;
		snprintf(m->path, sizeof(m->path), "%s", path);
		m->t = NULL;
	}
	fclose(f);
	return 0;
}

/* Our own vDSO: the same image as every process's on this kernel. */
static int own_vdso(uint64_t *start, uint64_t *end)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int err = -1;

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%" SCNx64 "-%" SCNx64, start, end) == 2) {
			err = 0;
			break;
		}
	if (f)
		fclose(f);
	return err;
}

static void load_tables(struct proc *p)
{
	uint64_t vs, ve;

	for (int i = 0; i < p->n; i++) {
		struct map *m = &p->maps[i];

		if (m->path[0] == '/') {
			int fd = open(m->path, O_RDONLY);

			if (fd >= 0) {
				if (unw_table__compile(fd, NULL, NULL, &m->t))
					m->t = NULL;
				close(fd);
			}
		} else if (!strcmp(m->path, "[vdso]")) {
			/* ours stands for it; its mapping's offsets count from 0 */
			if (own_vdso(&vs, &ve) ||
			    unw_table__compile_mem((void *)(uintptr_t)vs, ve - vs, &m->t))
				m->t = NULL;
		}
	}
}

static int map_fn(void *ctx, uint64_t addr, struct twin_map *tm)
{
	struct proc *p = ctx;

	for (int i = 0; i < p->n; i++) {
		struct map *m = &p->maps[i];

		if (addr < m->start || addr >= m->end)
			continue;
		tm->start = m->start;
		tm->end = m->end;
		tm->pgoff = m->pgoff;
		if (!m->t) {
			tm->kind = m->path[0] == '/' ? TWIN_NOTABLE : TWIN_FP;
			return 0;
		}
		tm->kind = TWIN_TABLE;
		tm->rows = m->t->rows;
		tm->nrows = m->t->nrows;
		tm->rules = m->t->rules;
		tm->nrules = m->t->nrules;
		return 0;
	}
	return -1;
}

static int capture(pid_t pid, uint64_t stack_end, struct capture *c)
{
	struct iovec local, remote;
	int st;

	if (ptrace(PTRACE_ATTACH, pid, 0, 0))
		return -1;
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
		return -1;
	if (ptrace(PTRACE_GETREGS, pid, 0, &c->regs)) {
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return -1;
	}
	c->base = c->regs.rsp;
	c->len = stack_end > c->base ? stack_end - c->base : 0;
	if (c->len > STACK_MAX)
		c->len = STACK_MAX;
	local = (struct iovec){ c->stack, c->len };
	remote = (struct iovec){ (void *)(uintptr_t)c->base, c->len };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)c->len)
		c->len = 0;
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return c->len ? 0 : -1;
}

/* --- libdw over the same capture --- */

struct dw_state {
	pid_t pid;
	struct capture *c;
	uint64_t pcs[MAXF];
	int n;
	bool done_thread;
};

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct dw_state *s = arg;

	if (s->done_thread)
		return 0;
	s->done_thread = true;
	*thread_argp = s;
	return s->pid;
}

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct dw_state *s = arg;
	struct capture *c = s->c;

	if (addr < c->base || addr + 8 > c->base + c->len)
		return false;
	memcpy(result, c->stack + (addr - c->base), 8);
	return true;
}

static bool dw_set_regs(Dwfl_Thread *thread, void *arg)
{
	struct dw_state *s = arg;
	struct user_regs_struct *r = &s->c->regs;
	/* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
	Dwarf_Word regs[17] = { r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
				r->r8,  r->r9,  r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip };

	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks dw_cb = {
	.next_thread = dw_next_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_regs,
};

static int dw_frame(Dwfl_Frame *f, void *arg)
{
	struct dw_state *s = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(f, &pc, &act) || s->n >= MAXF)
		return DWARF_CB_ABORT;
	s->pcs[s->n++] = pc;
	return DWARF_CB_OK;
}

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static int libdw_unwind(pid_t pid, struct capture *c, uint64_t *pcs)
{
	struct dw_state s = { .pid = pid, .c = c };
	Dwfl *d = dwfl_begin(&dwfl_cbs);

	if (!d)
		return -1;
	if (dwfl_linux_proc_report(d, pid) || dwfl_report_end(d, NULL, NULL) ||
	    !dwfl_attach_state(d, NULL, pid, &dw_cb, &s)) {
		dwfl_end(d);
		return -1;
	}
	dwfl_getthread_frames(d, pid, dw_frame, &s);
	dwfl_end(d);
	memcpy(pcs, s.pcs, s.n * sizeof(*pcs));
	return s.n;
}

static const char *helper_dir(void)
{
	static char dir[4096];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);

	if (n < 0)
		return ".";
	dir[n] = 0;
	return dirname(dir);
}

/* Whether a frame of pcs[0..n) other than the leaf lies in a stretch of
 * at least 64 KiB ruled by the frame-pointer rule: V8's builtins, which
 * have no FDE (table.c's V8_GAP_MIN). */
static int through_v8_gap(struct proc *p, const __u64 *pcs, int n)
{
	for (int k = 1; k < n; k++) {
		struct twin_map m;
		uint64_t off;
		long i;

		if (map_fn(p, pcs[k] - 1, &m) || m.kind != TWIN_TABLE)
			continue;
		off = pcs[k] - 1 - m.start + m.pgoff;
		i = unw_table__find(m.rows, m.nrows, off);
		if (i >= 0 && (size_t)i + 1 < m.nrows && m.rules[m.rows[i].rule].cfa == UNW_CFA_BP &&
		    m.rules[m.rows[i].rule].cfa_off == 16 && m.rows[i + 1].off - m.rows[i].off >= (64u << 10))
			return 1;
	}
	return 0;
}

/* Captures stacks of a running program (prog: a helper's name, or an
 * absolute path run with envp) and compares both unwinders. */
static void oracle_env(const char *prog, char *const argv[], char *const envp[], int shots)
{
	static struct capture c;
	static struct proc p;
	uint64_t dw[MAXF], stack_end = 0;
	__u64 tw[MAXF];
	int same = 0, taken = 0, deep = 0, root = 0, v8 = 0;
	char path[4200];
	pid_t pid;

	if (prog[0] == '/')
		snprintf(path, sizeof(path), "%s", prog);
	else
		snprintf(path, sizeof(path), "%s/%s", helper_dir(), prog);
	if (test_spawn(path, argv, envp, &pid, NULL, NULL)) {
		CHECK(0, "%s: start it", prog);
		return;
	}
	/* Until the loader has mapped libc (a busy host takes its time). */
	p.pid = pid;
	for (int w = 0; w < 100; w++) {
		bool libc = false;

		usleep(100000);
		if (read_maps(&p, &stack_end))
			break;
		for (int i = 0; i < p.n; i++)
			libc |= strstr(p.maps[i].path, "/libc.so") != NULL;
		if (libc && w >= 2)
			break;
	}
	if (read_maps(&p, &stack_end) || !stack_end) {
		CHECK(0, "%s: maps of pid %d", prog, pid);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return;
	}
	load_tables(&p);
	for (int i = 0; i < shots; i++) {
		struct twin_regs r;
		int ndw, ntw = 0, end;

		usleep(7000 + (i * 3137) % 9000);
		if (capture(pid, stack_end, &c))
			continue;
		taken++;
		r = (struct twin_regs){ .pc = c.regs.rip, .sp = c.regs.rsp, .bp = c.regs.rbp,
					.bp_ok = true, .exact = true };
		end = twin__walk(&r, &(struct twin_mem){ c.base, c.stack, c.len }, map_fn, &p, tw, &ntw,
				 MAXF);
		if (end == PROF_UE_BAD_PC && ntw == 0) {
			/* The first pc outside this harness's snapshot of the maps
			 * (seen once in CI under load): the snapshot is ours, not
			 * the walker's, so take a fresh one and walk again. */
			printf("  %s shot %d: pc %#llx outside the maps read at start; re-read\n", prog, i,
			       (unsigned long long)c.regs.rip);
			for (int k = 0; k < p.n; k++)
				unw_table__free(p.maps[k].t);
			if (read_maps(&p, &stack_end))
				p.n = 0;
			load_tables(&p);
			r = (struct twin_regs){ .pc = c.regs.rip, .sp = c.regs.rsp, .bp = c.regs.rbp,
						.bp_ok = true, .exact = true };
			end = twin__walk(&r, &(struct twin_mem){ c.base, c.stack, c.len }, map_fn, &p, tw,
					 &ntw, MAXF);
		}
		ndw = libdw_unwind(pid, &c, dw);
		bool eq = ndw == ntw;

		for (int k = 0; eq && k < ntw; k++)
			eq = dw[k] == tw[k];
		same += eq;
		v8 += through_v8_gap(&p, tw, ntw);
		deep += ntw >= 5;
		root += end == PROF_UE_ROOT;
		if (!eq) {
			printf("  %s shot %d: twin %d frames (end %d), libdw %d, pc %#llx\n", prog, i, ntw, end,
			       ndw, (unsigned long long)c.regs.rip);
			for (int k = 0; k < p.n; k++)
				printf("    map %#" PRIx64 "-%#" PRIx64 " %s%s\n", p.maps[k].start, p.maps[k].end,
				       p.maps[k].path, p.maps[k].t ? "" : " (no table)");
			for (int k = 0; k < ntw || k < ndw; k++)
				printf("    %2d twin %#" PRIx64 "  libdw %#" PRIx64 "\n", k,
				       k < ntw ? (uint64_t)tw[k] : 0, k < ndw ? dw[k] : 0);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < p.n; i++)
		unw_table__free(p.maps[i].t);
	CHECK(taken >= shots / 2, "%s: %d of %d captures taken", prog, taken, shots);
	CHECK(same == taken, "%s: twin == libdw on %d of %d captured stacks", prog, same, taken);
	CHECK(root * 100 >= taken * 95, "%s: %d of %d twin walks end at the root (_start)", prog, root, taken);
	CHECK(deep * 100 >= taken * 95, "%s: %d of %d stacks have >= 5 frames", prog, deep, taken);
	if (envp || strstr(prog, "node"))
		CHECK(v8 * 100 >= taken * 80, "%s: %d of %d stacks pass through V8's builtins", prog, v8,
		      taken);
}

#define oracle(prog, argv, shots) oracle_env(prog, argv, NULL, shots)

/* Hostile ELF input: every truncation and some flipped bytes of a real
 * binary compile to a table or an error, never a crash (ASan watches). */
static void bad_input(void)
{
	const char *bin = "/proc/self/exe";
	int fd = open(bin, O_RDONLY), ok = 0, errs = 0;
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : 0;
	unsigned char *img = size > 0 ? malloc(size) : NULL;
	struct unw_table *t;

	if (!img || pread(fd, img, size, 0) != size) {
		CHECK(0, "read %s", bin);
		free(img);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	CHECK(unw_table__compile_mem(img, 10, &t) == -ENOEXEC, "a 10-byte ELF is refused");
	for (int i = 0; i < 300; i++) {
		size_t len = (size_t)((uint64_t)size * (i + 1) / 301);
		unsigned char *cp = malloc(size);
		int err;

		memcpy(cp, img, size);
		/* flip some bytes in the second half of the shots */
		if (i >= 150)
			for (int k = 0; k < 64; k++)
				cp[(size_t)(k * 7919 + i * 104729) % size] ^= 0xa5;
		err = unw_table__compile_mem(cp, i >= 150 ? (size_t)size : len, &t);
		if (!err) {
			ok++;
			for (size_t r = 1; r < t->nrows; r++)
				if (t->rows[r].off <= t->rows[r - 1].off || t->rows[r].rule >= t->nrules) {
					errs++;
					break;
				}
			unw_table__free(t);
		}
		free(cp);
	}
	CHECK(errs == 0, "tables from damaged input stay sorted with valid rules (%d built)", ok);
	free(img);
	struct unw_table *tt;
	CHECK(unw_table__compile_mem("\177ELF", 4, &tt) == -ENOEXEC, "a 4-byte ELF header is refused");
}

/* One mapping [0x1000, 0x2000) whose table is the two rows of epilogue_map. */
static int epilogue_map(void *ctx, uint64_t addr, struct twin_map *m)
{
	static const struct unw_rule rules[] = {
		{ .cfa = UNW_CFA_NONE },
		/* after the pops, before ret: rbp's rule still says CFA-48 */
		{ .cfa = UNW_CFA_SP, .cfa_off = 8, .ra = UNW_RA_CFA, .ra_off = -8, .bp = UNW_BP_CFA,
		  .bp_off = -48 },
		{ .cfa = UNW_CFA_SP, .cfa_off = 8, .ra = UNW_RA_UNDEF },
	};
	static const struct unw_row rows[] = { { 0, 1 }, { 0x100, 2 } };

	(void)ctx;
	if (addr < 0x1000 || addr >= 0x2000)
		return -1;
	*m = (struct twin_map){ 0x1000, 0x2000, 0, TWIN_TABLE, rows, 2, rules, 3 };
	return 0;
}

/* At a `ret` past the epilogue's pops, a copy of the stack taken from sp
 * cannot hold the saved rbp the (stale) rule points at: the walk goes on
 * with rbp unknown, as libdw's does (CI caught the twin ending there). */
static void epilogue(void)
{
	uint64_t stack[4] = { 0x1101, 0, 0, 0 };
	struct twin_regs r = { .pc = 0x1010, .sp = 0x7000, .bp = 0x1234, .bp_ok = true, .exact = true };
	struct twin_mem mem = { 0x7000, (const uint8_t *)stack, sizeof(stack) };
	__u64 out[8];
	int n = 0, end = twin__walk(&r, &mem, epilogue_map, NULL, out, &n, 8);

	CHECK(end == PROF_UE_ROOT && n == 2 && out[1] == 0x1101,
	      "epilogue: an unreadable saved rbp does not end the walk (end %d, %d frames)", end, n);

	/* A return address past the copy: the stack goes on if the copy
	 * was cut at its cap ([truncated]), else the frame is bad. */
	for (int capped = 0; capped < 2; capped++) {
		struct twin_mem none = { 0x7000, (const uint8_t *)stack, 0, capped };

		r = (struct twin_regs){ .pc = 0x1010, .sp = 0x7000, .bp_ok = false, .exact = true };
		n = 0;
		end = twin__walk(&r, &none, epilogue_map, NULL, out, &n, 8);
		CHECK(end == (capped ? PROF_UE_TRUNC : PROF_UE_BAD_FRAME) && n == 1,
		      "a read past a %s stack copy ends the walk as %s (end %d)", capped ? "capped" : "whole",
		      capped ? "truncated" : "a bad frame", end);
	}
}

int main(void)
{
	char *truth[] = { "truth_nofp", "30", NULL };
	char *qs[] = { "qsortcb", "30", NULL };
	char *qsig[] = { "qsortcb", "30", "signal", NULL };

	if (geteuid() != 0) {
		printf("SKIP: needs root (ptrace of a child, /proc/PID/mem)\n");
		return 77;
	}
	epilogue();
	oracle("truth_nofp", truth, 60);
	oracle("qsortcb", qs, 60);
	oracle("qsortcb", qsig, 60);
	/* Node: JS runs in V8's builtins (no FDE) and JIT code; the walk
	 * goes through both by rbp and reaches _start. */
	for (size_t i = 0; i < NODE_RTS; i++) {
		const struct node_rt *rt = &node_rts[i];
		char env[512], *envp[] = { env, NULL };
		/* long enough for a sanitized build to compile the tables; killed after the shots */
		char *av[] = { (char *)rt->exe, (char *)js_helper("known.js"), "run", "300", NULL };

		snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s", rt->libdir ? rt->libdir : "");
		if (!node_present(rt)) {
			CHECK(0, "%s: %s missing (scripts/deps.sh)", rt->name, rt->exe);
			continue;
		}
		oracle_env(rt->exe, av, envp, 40);
	}
	bad_input();
	return test_done();
}
