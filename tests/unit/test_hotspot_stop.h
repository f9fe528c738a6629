/*
 * test_hotspot_stop.h - stopping one thread of a JVM and walking its
 * whole stack in user space, for the tests of sampler/java/: native
 * frames with the unwind tables (sampler/unwind/twin.c, tables compiled
 * from each file's .eh_frame), Java frames with the HotSpot twin
 * (sampler/java/hswalk.c), handing over wherever a pc enters or leaves
 * the code cache, as the BPF walk does. Native pcs are named with the
 * files' symbols (sampler/symbols/elfsym.c) so a test can look for
 * libjvm's and libc's functions between the Java frames.
 */
#ifndef PROFFS_TEST_HOTSPOT_STOP_H
#define PROFFS_TEST_HOTSPOT_STOP_H

#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "sampler/java/hswalk.h"
#include "sampler/symbols/elfsym.h"
#include "sampler/unwind/table.h"
#include "sampler/unwind/twin.h"
#include "tests/unit/test_hotspot_jvm.h"

#define STOP_STACK (2u << 20)
#define STOP_MAXF 256

/* A file's unwind table and symbols, compiled once per test run. */
struct stopfile {
	char path[512];
	struct unw_table *t;
	struct elf_info e;
	bool have_e;
};

static struct stopfile stopfiles[64];
static int nstopfiles;

struct stopmap {
	uint64_t start, end, pgoff;
	struct stopfile *f; /* NULL: anonymous */
};

struct stopped {
	pid_t pid, tid;
	struct user_regs_struct regs;
	uint64_t base;
	uint8_t *stack;
	size_t len;
	struct stopmap maps[512];
	int nmaps;
	const struct hs_proc *c;
	/* the walk */
	__u64 pcs[STOP_MAXF];
	int n;
	uint64_t rec[STOP_MAXF][2];
	int nrec;
	int end, hs_end; /* how the native walk ended (enum prof_uend); the last hs step's */
	/* Runs of HotSpot frames: where each began (its registers, leaf or
	 * not, its first frame's index and record) and where it left the
	 * code cache (or stopped). */
	struct stopseg {
		struct hs_regs in, out;
		bool leaf;
		int index, rec0, nrec, end;
	} seg[32];
	int nseg;
	int sig;	 /* a signal stop_release hands back */
	bool held;	 /* still stopped (stop_take's keep) */
};

static inline struct stopfile *stopfile_get(const char *path)
{
	int fd;

	for (int i = 0; i < nstopfiles; i++)
		if (!strcmp(stopfiles[i].path, path))
			return &stopfiles[i];
	if (nstopfiles == 64)
		return NULL;
	struct stopfile *f = &stopfiles[nstopfiles++];

	snprintf(f->path, sizeof(f->path), "%s", path);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		if (unw_table__compile(fd, NULL, NULL, &f->t))
			f->t = NULL;
		f->have_e = !elfsym__read(fd, true, &f->e);
		close(fd);
	}
	return f;
}

static inline int stop_maps(struct stopped *s)
{
	char fn[64], line[1024];
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)s->pid);
	f = fopen(fn, "r");
	if (!f)
		return -errno;
	s->nmaps = 0;
	while (fgets(line, sizeof(line), f) && s->nmaps < 512) {
		uint64_t st, e, off;
		char perms[8], path[512] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %511s", &st, &e, perms,
			   &off, path) < 4 ||
		    perms[2] != 'x')
			continue;
		s->maps[s->nmaps] = (struct stopmap){ st, e, off, path[0] == '/' ? stopfile_get(path) : NULL };
		s->nmaps++;
	}
	fclose(f);
	return 0;
}

static inline const struct stopmap *stop_map_of(const struct stopped *s, uint64_t a)
{
	for (int i = 0; i < s->nmaps; i++)
		if (a >= s->maps[i].start && a < s->maps[i].end)
			return &s->maps[i];
	return NULL;
}

/* The name of native pc a (leaf: exact), or NULL. */
static inline const char *stop_sym(const struct stopped *s, uint64_t a, bool leaf)
{
	const struct stopmap *m = stop_map_of(s, leaf ? a : a - 1);
	uint64_t va;

	if (!m || !m->f || !m->f->have_e ||
	    !elfsym__off_to_vaddr(&m->f->e, (leaf ? a : a - 1) - m->start + m->pgoff, &va))
		return NULL;
	return elfsym__lookup(&m->f->e, va);
}

static inline int stop_map_fn(void *ctx, uint64_t addr, struct twin_map *tm)
{
	const struct stopped *s = ctx;
	const struct stopmap *m = stop_map_of(s, addr);

	if (!m || hswalk__owns(s->c, addr))
		return -1; /* the code cache: the HotSpot step's */
	tm->start = m->start;
	tm->end = m->end;
	tm->pgoff = m->pgoff;
	if (!m->f) {
		tm->kind = TWIN_FP;
		return 0;
	}
	if (!m->f->t) {
		tm->kind = TWIN_NOTABLE;
		return 0;
	}
	tm->kind = TWIN_TABLE;
	tm->rows = m->f->t->rows;
	tm->nrows = m->f->t->nrows;
	tm->rules = m->f->t->rules;
	tm->nrules = m->f->t->nrules;
	return 0;
}

/* Lets a thread stop_take kept stopped go. */
static inline void stop_release(struct stopped *s)
{
	if (s->held)
		ptrace(PTRACE_DETACH, s->tid, 0, s->sig);
	s->held = false;
}

/* Stops thread tid of pid (ptrace), takes its registers and stack, and
 * lets it go unless keep (then stop_release does). 0 or -errno. */
static inline int stop_take_kept(struct stopped *s, pid_t pid, pid_t tid, bool keep)
{
	int st, sig = 0, err = 0;
	uint64_t lo, hi;

	s->pid = pid;
	s->tid = tid;
	s->len = 0;
	if (!s->stack && !(s->stack = malloc(STOP_STACK)))
		return -ENOMEM;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno;
	for (;;) {
		if (waitpid(tid, &st, __WALL) != tid) {
			err = -errno;
			break;
		}
		if (!WIFSTOPPED(st)) {
			err = -ESRCH;
			break;
		}
		/* A signal on its way (the JVM's own: a safepoint poll, an
		 * implicit null check) stops it first: its registers are as
		 * good; the signal goes back when we let go. */
		if (st >> 16 != PTRACE_EVENT_STOP)
			sig = WSTOPSIG(st);
		break;
	}
	if (!err && ptrace(PTRACE_GETREGS, tid, 0, &s->regs))
		err = -errno;
	if (!err) {
		/* the stack: from sp to its mapping's end */
		char fn[64], line[1024];
		FILE *f;

		snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
		f = fopen(fn, "r");
		lo = hi = 0;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2 && s->regs.rsp >= lo &&
			    s->regs.rsp < hi)
				break;
		if (f)
			fclose(f);
		s->base = s->regs.rsp;
		s->len = hi > s->base ? hi - s->base : 0;
		if (s->len > STOP_STACK)
			s->len = STOP_STACK;
		struct iovec l = { s->stack, s->len }, r = { (void *)(uintptr_t)s->base, s->len };

		if (!s->len || process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)s->len)
			err = -EFAULT;
	}
	s->sig = sig;
	s->held = true;
	if (err || !keep)
		stop_release(s);
	return err;
}

static inline int stop_take(struct stopped *s, pid_t pid, pid_t tid)
{
	return stop_take_kept(s, pid, tid, false);
}

struct stopmem {
	const struct stopped *s;
	const struct hsmem *live;
};

/* The stack as stop_take copied it (the thread runs again since), the
 * rest of the process live. */
static inline int stopmem_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct stopmem *sm = ctx;
	const struct stopped *s = sm->s;

	if (addr >= s->base && addr - s->base <= s->len && n <= s->len - (addr - s->base)) {
		memcpy(buf, s->stack + (addr - s->base), n);
		return 0;
	}
	if (addr + n > s->base && addr < s->base + s->len)
		return -EFAULT; /* straddles the copy's edge */
	return hsmem__read(sm->live, addr, buf, n);
}

/* Walks what stop_take took: native and HotSpot frames into s->pcs,
 * the HotSpot records into s->rec. The stack comes from the copy, the
 * code cache and the JVM's structures are read live through live. */
static inline void stop_walk(struct stopped *s, const struct hsmem *live, const struct hs_proc *c)
{
	struct twin_mem mem = { s->base, s->stack, s->len, s->len == STOP_STACK };
	struct stopmem sm = { s, live };
	struct hsmem mm = { stopmem_read, &sm }, *m = &mm;
	struct hs_regs hr = { s->regs.rip, s->regs.rsp, s->regs.rbp, s->regs.r13, s->regs.rax,
			      s->regs.rbx };
	bool leaf = true, bp_ok = true;

	s->c = c;
	s->n = s->nrec = s->nseg = 0;
	s->end = PROF_UE_NONE;
	s->hs_end = HS_E_OK;
	if (stop_maps(s)) {
		s->end = PROF_UE_BAD_PC;
		return;
	}
	while (s->n < STOP_MAXF) {
		if (hswalk__owns(c, leaf ? hr.pc : hr.pc - 1)) {
			struct stopseg *g = NULL;
			int e;

			if (s->nseg < 32) {
				g = &s->seg[s->nseg++];
				*g = (struct stopseg){ .in = hr, .leaf = leaf, .index = s->n,
						       .rec0 = s->nrec };
			}
			do {
				s->pcs[s->n] = hr.pc;
				e = hswalk__step(m, c, &hr, leaf, (uint32_t)s->n, s->rec[s->nrec]);
				s->hs_end = e;
				s->n++;
				if (e)
					break;
				s->nrec++;
				leaf = false;
			} while (s->n < STOP_MAXF && hswalk__owns(c, hr.pc - 1));
			if (g) {
				g->out = hr;
				g->nrec = s->nrec - g->rec0;
				g->end = e;
			}
			if (e) {
				s->end = PROF_UE_BAD_FRAME;
				return;
			}
			bp_ok = true;
			continue;
		}
		struct twin_regs tr = { hr.pc, hr.sp, hr.bp, bp_ok, leaf, false };

		s->end = twin__walk(&tr, &mem, stop_map_fn, s, s->pcs, &s->n, STOP_MAXF);
		if (s->end == PROF_UE_BAD_PC && !tr.stored && hswalk__owns(c, tr.exact ? tr.pc : tr.pc - 1)) {
			hr.pc = tr.pc;
			hr.sp = tr.sp;
			hr.bp = tr.bp;
			bp_ok = tr.bp_ok;
			leaf = tr.exact && s->n == 0;
			continue;
		}
		return;
	}
	s->end = PROF_UE_TRUNC;
}

/* The tids of pid's threads whose comm is name, into tids (at most max):
 * the count. */
static inline int stop_tids(pid_t pid, const char *name, pid_t *tids, int max)
{
	char path[400], comm[64];
	int n = 0;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d)) && n < max) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, name))
				tids[n++] = (pid_t)atoi(de->d_name);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

#endif
