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

#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "sampler/java/hsname.h"
#include "sampler/java/hsvm.h"
#include "sampler/java/hswalk.h"
#include "sampler/java/vmtables.h"
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

/* The registers and stack (from sp to its mapping's end) of s->tid,
 * stopped by us. 0 or -errno. */
static inline int stop_snap(struct stopped *s)
{
	char fn[64], line[1024];
	uint64_t lo = 0, hi = 0;
	FILE *f;

	s->len = 0;
	if (ptrace(PTRACE_GETREGS, s->tid, 0, &s->regs))
		return -errno;
	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)s->pid);
	f = fopen(fn, "r");
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

	if (!s->len || process_vm_readv(s->pid, &l, 1, &r, 1, 0) != (ssize_t)s->len)
		return -EFAULT;
	return 0;
}

/* Waits for the next stop of s->tid: 0 with *sig the signal that stopped
 * it (0: our PTRACE_INTERRUPT), or -errno. */
static inline int stop_wait(struct stopped *s, int *sig)
{
	int st;

	if (waitpid(s->tid, &st, __WALL) != s->tid)
		return -errno;
	if (!WIFSTOPPED(st))
		return -ESRCH;
	*sig = st >> 16 == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
	return 0;
}

/* Stops thread tid of pid (ptrace), takes its registers and stack, and
 * lets it go unless keep (then stop_release does). 0 or -errno. */
static inline int stop_take_kept(struct stopped *s, pid_t pid, pid_t tid, bool keep)
{
	int sig = 0, err;

	s->pid = pid;
	s->tid = tid;
	s->len = 0;
	if (!s->stack && !(s->stack = malloc(STOP_STACK)))
		return -ENOMEM;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno;
	/* A signal on its way (the JVM's own: a safepoint poll, an
	 * implicit null check) stops it first: its registers are as good;
	 * the signal goes back when we let go. */
	err = stop_wait(s, &sig);
	if (!err)
		err = stop_snap(s);
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

/*
 * The interpreter's entry (Method::_i2i_entry) of the method named name
 * ("Known.down") among the interpreted frames of the walk s: the code
 * every interpreted call of a method of its kind runs first. 0 if none.
 */
static inline uint64_t stop_i2i(const struct stopped *s, struct jvm *j, const struct hsmem *m,
				const struct hsvm *vm, const char *name)
{
	struct hsnames *names = hsnames__new(0);
	const struct vmt_field *f;
	struct vmtables t;
	int64_t off = -1;
	uint64_t e = 0;

	if (!vmtables__read(m, &j->jf, j->bias, &t)) {
		f = vmtables__field(&t, "Method", "_i2i_entry");
		off = f ? (int64_t)f->offset : -1;
		vmtables__free(&t);
	}
	for (int i = 0; names && off >= 0 && !e && i < s->nrec; i++) {
		uint64_t a = hs_rec_addr(s->rec[i][0]);
		const struct hsline *lt;
		const char *sys;
		uint32_t cs;

		if (hs_rec_kind(s->rec[i][0]) == HS_K_INTERP &&
		    !hsnames__method(names, j->pid, m, vm, a, &sys, &lt, &cs) && !strcmp(sys, name) &&
		    hsmem__read(m, a + (uint64_t)off, &e, 8))
			e = 0;
	}
	hsnames__free(names);
	return e;
}

/* The interpreter's entries of Known.down (native) and Known.up (normal),
 * from one walk of k-deep (both are on its stack), each 0 if not found;
 * then the JVM spins again. */
static inline void stop_entries(struct jvm *j, const struct hsmem *m, const struct hsvm *vm,
				uint64_t *native, uint64_t *normal)
{
	static struct stopped sd;
	pid_t deep = 0;

	*native = *normal = 0;
	if (stop_tids(j->pid, "k-deep", &deep, 1) == 1 && !stop_take(&sd, j->pid, deep)) {
		stop_walk(&sd, m, &vm->bpf);
		*native = stop_i2i(&sd, j, m, vm, "Known.down");
		*normal = stop_i2i(&sd, j, m, vm, "Known.up");
	}
	jvm_cmd(j, "spin 3000", NULL, NULL);
}

/* Sets or clears (pc 0) a hardware breakpoint on executing pc in the
 * stopped s->tid (DR0: that thread's only). */
static inline int stop_break(struct stopped *s, uint64_t pc)
{
	if (ptrace(PTRACE_POKEUSER, s->tid, offsetof(struct user, u_debugreg[7]), 0) ||
	    ptrace(PTRACE_POKEUSER, s->tid, offsetof(struct user, u_debugreg[0]), pc) ||
	    (pc && ptrace(PTRACE_POKEUSER, s->tid, offsetof(struct user, u_debugreg[7]), 1)))
		return -errno;
	return 0;
}

/* The end of a stop that kept its thread (stop_at, stop_step): when err
 * is 0, the registers and stack taken again; on an error, the thread let
 * go. Returns err, or stop_snap's. */
static inline int stop_end(struct stopped *s, int err)
{
	if (!err)
		err = stop_snap(s);
	if (err)
		stop_release(s);
	return err;
}

/*
 * Stops thread tid of pid when it next runs pc (within ms), and keeps it
 * stopped there with its registers and stack taken. 0 or -errno
 * (-ETIMEDOUT: it did not get there; let go).
 */
static inline int stop_at(struct stopped *s, pid_t pid, pid_t tid, uint64_t pc, int ms)
{
	int64_t until = now_ms() + ms;
	int err = stop_take_kept(s, pid, tid, true), sig = 0, st;

	if (err)
		return err;
	err = stop_break(s, pc);
	while (!err) {
		pid_t w;

		if (ptrace(PTRACE_CONT, s->tid, 0, s->sig)) {
			err = -errno;
			break;
		}
		s->sig = 0;
		while (!(w = waitpid(s->tid, &st, __WALL | WNOHANG)) && now_ms() < until)
			usleep(1000);
		if (!w) {
			/* not there in time: stop it to let it go */
			ptrace(PTRACE_INTERRUPT, s->tid, 0, 0);
			err = stop_wait(s, &sig);
			s->sig = sig;
			err = err ? err : -ETIMEDOUT;
			break;
		}
		if (w != s->tid || !WIFSTOPPED(st)) {
			err = w < 0 ? -errno : -ESRCH;
			s->held = false;
			return err;
		}
		sig = st >> 16 == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
		if (sig == SIGTRAP)
			break;
		s->sig = sig; /* the JVM's own: handed on */
	}
	if (stop_break(s, 0) && !err)
		err = -errno;
	return stop_end(s, err);
}

/* One instruction further (the thread kept by stop_at), registers and
 * stack taken again. A signal that comes instead is kept for the release
 * (as stop_take_kept's) and the step tried again. 0, or -errno (the
 * thread is let go then). */
static inline int stop_step(struct stopped *s)
{
	int sig = 0, err = -EINTR;

	for (int i = 0; i < 8 && err == -EINTR; i++) {
		if (ptrace(PTRACE_SINGLESTEP, s->tid, 0, 0))
			err = -errno;
		else if (!(err = stop_wait(s, &sig)) && sig != SIGTRAP) {
			s->sig = sig;
			err = -EINTR;
		}
	}
	return stop_end(s, err);
}

/*
 * Stops thread tid at the interpreter entry `entry` and steps it through
 * the entry until its interpreter frame is built (its rbp below the sp
 * it entered with, the fixed slots pushed: rsp <= rbp - 72 on JDK 17 and
 * 25), walking every stop (stop_walk) and calling fn on it with the
 * registers it entered with; the last call is the built frame's (last:
 * true). Lets the thread go. Steps taken, or -errno.
 */
static inline int stop_entry(struct stopped *s, pid_t pid, pid_t tid, uint64_t entry,
			     const struct hsmem *live, const struct hs_proc *c,
			     void (*fn)(void *ctx, struct stopped *s, const struct user_regs_struct *in,
					bool last),
			     void *ctx)
{
	struct user_regs_struct in;
	int err = stop_at(s, pid, tid, entry, 5000), n = 0;

	if (err)
		return err;
	in = s->regs;
	for (; n < 400; n++) {
		bool built = s->regs.rbp < in.rsp && s->regs.rsp <= s->regs.rbp - 72;

		stop_walk(s, live, c);
		fn(ctx, s, &in, built);
		if (built)
			break;
		err = stop_step(s);
		if (err)
			return err;
	}
	stop_release(s);
	return n < 400 ? n + 1 : -E2BIG;
}

#endif
