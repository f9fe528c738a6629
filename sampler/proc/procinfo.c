/*
 * procinfo.c - the pid -> struct proc cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "store/util/hmap.h"
#include "sampler/proc/procinfo.h"
#include "store/util/safefile.h"
#include "store/util/util.h"

#define SEC_NS 1000000000LL

/* The path of every anonymous mapping (JIT code): one string, not one
 * allocation per mapping. */
static char anon_path[] = "";

#define REREAD_QUEUE 256 /* execs per stage's delay; more are not re-read early */
/* The reads after the one at exec: a queue per delay (each in due order). */
static const int64_t reread_after_ns[PROCS_REREADS] = { PROCS_REREAD_NS, 100 * 1000000LL, SEC_NS };

struct procs {
	struct procs_opts o;
	struct hmap pids; /* pid -> struct proc * */
	/* execs waiting for their next maps read, by stage, oldest first */
	struct {
		pid_t pid[REREAD_QUEUE];
		size_t head, len;
	} rq[PROCS_REREADS];
	int64_t gc_ns;
	uint64_t pm_tokens; /* perf map requests so far */
};

struct procs *procs__new(const struct procs_opts *o)
{
	struct procs *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->o = *o;
	/* An exited process's samples all come before its exit event (one
	 * ring, in order); what can come later is a sample held back for its
	 * symbols (DEFER_NS, 1 s), one parked for its unwind tables (PARK_NS,
	 * 5 s) and an off-CPU block from the other ring. 10 s covers those;
	 * the 30 s it was kept 3x as many of a fork storm's processes. */
	if (!ps->o.grace_ns)
		ps->o.grace_ns = 10 * SEC_NS;
	return ps;
}

/* Empties m of its mappings (their array stays). */
static void maps__clear(struct maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].path != anon_path)
			free(m->v[i].path);
	m->n = 0;
	m->capped = false;
}

static void maps__put(struct maps *m)
{
	if (!m || --m->refs > 0)
		return;
	maps__clear(m);
	free(m->v);
	free(m);
}

static void proc__free_labels(struct proc *p)
{
	for (int i = 0; i < LBL_MAX; i++) {
		free(p->labels[i]);
		p->labels[i] = NULL;
	}
}

static void proc__drop_perfmap(struct procs *ps, struct proc *p)
{
	symbolizer__perfmap_free(ps->o.sym, p->perfmap);
	p->perfmap = NULL;
	p->pm_size = p->pm_mtime_ns = -1;
	p->pm_token = 0; /* a read in flight is for what went before */
	p->perfmap_ns = 0;
}

static void proc__free(struct procs *ps, struct proc *p)
{
	proc__free_labels(p);
	maps__put(p->maps);
	proc__drop_perfmap(ps, p);
	free(p);
}

/* hmap__drain's fn for ps's processes. */
static void proc_drop(void *ps, void *p)
{
	proc__free(ps, p);
}

void procs__free(struct procs *ps)
{
	if (!ps)
		return;
	hmap__drain(&ps->pids, proc_drop, ps);
	free(ps);
}

/* Lines of /proc/PID/maps read at most: a process may map ~65,000
 * regions (vm.max_map_count), each re-read costing the sampler thread
 * (this read is the kernel's text, bounded, never blocking, so it stays
 * on that thread). Real programs stay far below; past the cap the rest
 * of the address space is unmapped to us (its frames show as addresses)
 * and the refusal counted. */
#define MAPS_MAX_LINES 32768
/* The same bound where the kernel lists executable mappings alone
 * (PROCMAP_QUERY, below): on a typical process a third of the lines are
 * code, and 16,384 regions of code is still far above any real program. */
#define MAPS_MAX_EXEC (MAPS_MAX_LINES / 2)
/* ... and once it was hit, re-read no more often than this. */
#define MAPS_CAPPED_GAP_NS (10 * SEC_NS)


/* Adds mapping [start, end) to m (path: " (deleted)" is cut off in
 * place). 0 or -ENOMEM. */
static int maps_add(struct maps *m, size_t *cap, uint64_t start, uint64_t end, uint64_t off,
		    dev_t dev, uint64_t ino, char *path)
{
	size_t pl = strlen(path);
	struct vma *v;

	if (pl > 10 && !strcmp(path + pl - 10, " (deleted)"))
		path[pl - 10] = 0;
	if (m->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 32;
		struct vma *nv = realloc(m->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		m->v = nv;
		*cap = nc;
	}
	v = &m->v[m->n];
	memset(v, 0, sizeof(*v));
	v->start = start;
	v->end = end;
	v->pgoff = off;
	v->dev = dev;
	v->ino = ino;
	v->file = path[0] == '/';
	v->path = path[0] ? strdup(path) : anon_path;
	if (!v->path)
		return -ENOMEM;
	m->n++;
	return 0;
}

/*
 * The kernel's PROCMAP_QUERY ioctl on the maps file (Linux 6.11; our
 * headers predate it, so its ABI is spelled out here): asked for the
 * executable mapping at or after an address, it answers that one alone,
 * its path formatted only for it. A text read formats every mapping, and
 * most are not code: on the busy host the maps reads at exec (and 10 ms
 * later) were a tenth of the daemon's CPU.
 */
struct pm_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PM_QUERY_IOCTL 0xc0686611UL /* _IOWR('f', 17, struct procmap_query) */
#define PM_EXECUTABLE 0x04
#define PM_COVERING_OR_NEXT 0x10
_Static_assert(sizeof(struct pm_query) == 104, "struct procmap_query is 104 bytes");

static bool pm_query_gone; /* the kernel has no PROCMAP_QUERY */
static bool pm_query_used; /* it answered a read */

bool procs__maps_by_query(void)
{
	return pm_query_used && !pm_query_gone;
}

/* Fills m through PROCMAP_QUERY. 0; -ENOTTY (or -EINVAL) when the kernel
 * lacks it; another -errno when the process could not be read. */
static int read_maps_query(int fd, struct maps *m, size_t *cap, const char *p)
{
	char name[PATH_MAX];
	uint64_t addr = 0;
	size_t n = 0;

	for (;;) {
		struct pm_query q = { .size = sizeof(q),
				      .query_flags = PM_EXECUTABLE | PM_COVERING_OR_NEXT,
				      .query_addr = addr,
				      .vma_name_size = sizeof(name),
				      .vma_name_addr = (uintptr_t)name };

		if (ioctl(fd, PM_QUERY_IOCTL, &q) < 0)
			return errno == ENOENT ? 0 : -errno; /* ENOENT: no mapping beyond addr */
		if (++n > MAPS_MAX_EXEC) {
			safefile__refuse(SF_R_TOO_BIG, p, 0, 0);
			m->capped = true;
			return 0;
		}
		if (!q.vma_name_size)
			name[0] = 0;
		name[sizeof(name) - 1] = 0;
		if (maps_add(m, cap, q.vma_start, q.vma_end, q.vma_offset,
			     makedev(q.dev_major, q.dev_minor), q.inode, name))
			return 0; /* keep what was read, as the text read does */
		if (q.vma_end <= addr)
			return 0;
		addr = q.vma_end;
	}
}

/* Reads /proc/PID/maps, keeping executable mappings. NULL if unreadable. */
static struct maps *read_maps(pid_t pid)
{
	char p[64], *line = NULL;
	size_t lcap = 0, cap = 0, nlines = 0;
	struct maps *m;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	m->refs = 1;
	if (!pm_query_gone) {
		int err = read_maps_query(fileno(f), m, &cap, p);

		if (err == -ENOTTY || err == -EINVAL) {
			pm_query_gone = true; /* an older kernel: text from now on */
		} else if (err) {
			/* the process mid-exec or going: what the text says */
			maps__clear(m);
		} else {
			pm_query_used = true;
			goto done;
		}
	}
	while (getline(&line, &lcap, f) > 0) {
		uint64_t start, end, off, ino;
		unsigned long maj, min;
		char *q = line, *e;
		int n;

		if (++nlines > MAPS_MAX_LINES) {
			safefile__refuse(SF_R_TOO_BIG, p, 0, 0);
			m->capped = true;
			break;
		}
		/* "start-end perms offset maj:min inode   path"; sscanf costs
		 * more than the rest of a fork-heavy host's bookkeeping. */
		start = strtoull(q, &e, 16);
		if (*e != '-')
			continue;
		end = strtoull(e + 1, &e, 16);
		if (*e != ' ' || strlen(e) < 6 || e[3] != 'x')
			continue;
		off = strtoull(e + 6, &e, 16);
		maj = strtoul(e, &e, 16);
		if (*e != ':')
			continue;
		min = strtoul(e + 1, &e, 16);
		ino = strtoull(e, &e, 10);
		while (*e == ' ')
			e++;
		n = e - line;
		char *path = n ? line + n : (char *)"";
		path[strcspn(path, "\n")] = 0;
		if (maps_add(m, &cap, start, end, off, makedev(maj, min), ino, path))
			break;
	}
done:
	/* Kept for as long as the process (and 10 s after it): at the size
	 * read, not the doubling's. A short-lived program maps ~5 files of
	 * the 32 the first step holds; 2 KB per process was most of what a
	 * burst of 4,000 execs (a `find -exec cat` of the tree) cost. */
	if (m && !m->n) {
		free(m->v);
		m->v = NULL;
	} else if (m && m->n < cap) {
		struct vma *nv = realloc(m->v, m->n * sizeof(*nv));

		if (nv)
			m->v = nv;
	}
out:
	free(line);
	fclose(f);
	return m;
}

static void read_comm(pid_t pid, char comm[16])
{
	char p[64];
	int fd;
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, comm, 15);
	close(fd);
	if (n <= 0)
		return;
	comm[n] = 0;
	comm[strcspn(comm, "\n")] = 0;
}

/* The cgroup path of pid: the unified (0::) line, or the first line that
 * names a container or unit (hybrid hosts keep those in v1 hierarchies). */
static char *read_cgroup(pid_t pid, bool *unified)
{
	char p[64], *line = NULL, *best = NULL, buf[128];
	size_t lcap = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return NULL;
	while (getline(&line, &lcap, f) > 0) {
		char *c = strchr(line, ':');

		c = c ? strchr(c + 1, ':') : NULL;
		if (!c)
			continue;
		c++;
		c[strcspn(c, "\n")] = 0;
		if (!strncmp(line, "0::", 3) && strcmp(c, "/")) {
			free(best);
			best = strdup(c);
			*unified = best != NULL;
			break;
		}
		if (!best && (!labels__container_id(c, buf, sizeof(buf)) ||
			      !labels__pod_uid(c, buf, sizeof(buf)) || !labels__unit(c, buf, sizeof(buf))))
			best = strdup(c);
	}
	free(line);
	fclose(f);
	return best;
}

/* (Re)computes the labels of p from /proc, with fallbacks for a process
 * already gone. */
static void proc__fill(struct procs *ps, struct proc *p, const char *comm, uint64_t cgroup_id)
{
	char path[64], exe[PATH_MAX], num[24];
	char *cg, *kept[LBL_MAX] = { 0 };
	bool unified = false;
	ssize_t n;

	/* An exec keeps its cgroup. When the labels came from the unified
	 * hierarchy's line and the process is still in that cgroup (the
	 * sample's id says so), /proc/PID/cgroup would name the same path:
	 * keep what it gave rather than read and parse it again for every
	 * exec of a busy host. A process moved since (systemd moves a
	 * unit's first process between fork and exec) has another id. */
	bool same_cg = cgroup_id && p->cg_id == cgroup_id;

	if (same_cg)
		for (int i = LBL_UNIT; i < LBL_MAX; i++) {
			kept[i] = p->labels[i];
			p->labels[i] = NULL;
		}
	proc__free_labels(p);
	if (comm && *comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	else
		read_comm(p->pid, p->comm);
	p->labels[LBL_COMM] = strdup(p->comm);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)p->pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
			exe[n - 10] = 0;
		p->labels[LBL_EXE] = strdup(exe);
	}
	snprintf(num, sizeof(num), "%d", (int)p->pid);
	p->labels[LBL_PID] = strdup(num);
	if (same_cg) {
		for (int i = LBL_UNIT; i < LBL_MAX; i++)
			p->labels[i] = kept[i];
	} else {
		cg = read_cgroup(p->pid, &unified);
		if (!cg)
			cg = labeler__cgroup_path(ps->o.lab, cgroup_id);
		labeler__from_cgroup(ps->o.lab, cg, p->labels);
		free(cg);
		p->cg_id = unified ? cgroup_id : 0;
	}
	p->gen++;
}

/*
 * Reads p's executable mappings and asks the symbolizer for every file in
 * them now, while the process lives: the loader reads a file through the
 * process that maps it, and a short-lived one (a fork storm's child) is
 * often gone by its first sample's lookup. Files already known cost a
 * hash lookup.
 */
static void proc__read_maps(struct procs *ps, struct proc *p)
{
	struct maps *m = read_maps(p->pid);

	p->maps_ns = now_mono_ns();
	p->reread_ns = 0;
	if (!m)
		return; /* keep what we had (inherited or older) */
	maps__put(p->maps);
	p->maps = m;
	p->own_maps = true;
	for (size_t i = 0; i < m->n && ps->o.sym; i++) {
		struct vma *v = &m->v[i];

		if (v->file && !v->dso)
			v->dso = symbolizer__dso(ps->o.sym, p->pid, v->dev, v->ino, v->path, v->start,
						 v->end);
	}
	if (ps->o.maps_read)
		ps->o.maps_read(ps->o.maps_ctx, p);
}

static struct proc *proc__new(struct procs *ps, pid_t pid)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->pm_size = p->pm_mtime_ns = -1;
	if (hmap__put(&ps->pids, (uint64_t)pid + 1, p)) {
		free(p);
		return NULL;
	}
	return p;
}

struct proc *procs__get(struct procs *ps, pid_t pid, const char *comm, uint64_t cgroup_id)
{
	struct proc *p = hmap__get(&ps->pids, (uint64_t)pid + 1);

	if (p)
		return p;
	p = proc__new(ps, pid);
	if (!p)
		return NULL;
	proc__fill(ps, p, comm, cgroup_id);
	proc__read_maps(ps, p);
	return p;
}

struct proc *procs__find(struct procs *ps, pid_t pid)
{
	return hmap__get(&ps->pids, (uint64_t)pid + 1);
}

static void reread_queue(struct procs *ps, struct proc *p, int k);

void procs__exec(struct procs *ps, pid_t pid, const char *comm, uint64_t cgroup_id)
{
	struct proc *p = hmap__get(&ps->pids, (uint64_t)pid + 1);

	if (!p) {
		procs__get(ps, pid, comm, cgroup_id);
		return;
	}
	p->exit_ns = 0;
	memset(&p->rt, 0, sizeof(p->rt)); /* BPF forgot it too */
	proc__fill(ps, p, comm, cgroup_id);
	maps__put(p->maps);
	p->maps = NULL;
	p->own_maps = false;
	proc__drop_perfmap(ps, p);
	p->maps_gap_ns = 0;
	proc__read_maps(ps, p);
	reread_queue(ps, p, 0);
}

/* Queues p's maps read of stage k (reread_after_ns[k] after its last). */
static void reread_queue(struct procs *ps, struct proc *p, int k)
{
	if (ps->rq[k].len == REREAD_QUEUE)
		return;
	ps->rq[k].pid[(ps->rq[k].head + ps->rq[k].len++) % REREAD_QUEUE] = p->pid;
	p->reread_ns = p->maps_ns + reread_after_ns[k];
	p->reread_stage = (uint8_t)k;
}

int procs__reread_due(struct procs *ps, int64_t now_ns)
{
	int wait = -1;

	for (int k = 0; k < PROCS_REREADS; k++) {
		while (ps->rq[k].len) {
			struct proc *p = hmap__get(&ps->pids, (uint64_t)ps->rq[k].pid[ps->rq[k].head] + 1);

			if (p && p->reread_ns && !p->exit_ns && p->reread_stage == k) {
				if (now_ns < p->reread_ns) {
					int ms = (int)((p->reread_ns - now_ns + 999999) / 1000000);

					wait = wait < 0 || ms < wait ? ms : wait;
					break;
				}
				proc__read_maps(ps, p);
				if (k + 1 < PROCS_REREADS)
					reread_queue(ps, p, k + 1);
			}
			ps->rq[k].head = (ps->rq[k].head + 1) % REREAD_QUEUE;
			ps->rq[k].len--;
		}
	}
	return wait;
}

void procs__fork(struct procs *ps, pid_t pid, pid_t ppid, const char *comm, uint64_t cgroup_id)
{
	struct proc *parent = hmap__get(&ps->pids, (uint64_t)ppid + 1);
	struct proc *p = hmap__get(&ps->pids, (uint64_t)pid + 1);

	if (p) { /* a recycled pid whose exit we have not aged out yet */
		hmap__del(&ps->pids, (uint64_t)pid + 1);
		proc__free(ps, p);
	}
	/* A parent we never saw is read now (once): its children are
	 * copies of it until they exec, so they need no /proc reads. */
	if (!parent)
		parent = procs__get(ps, ppid, NULL, cgroup_id);
	/* A parent still on the maps of its exec is past ld.so now (it
	 * runs code that forks): read them before the child borrows them. */
	if (parent && parent->reread_ns && !parent->exit_ns)
		proc__read_maps(ps, parent);
	p = proc__new(ps, pid);
	if (!p)
		return;
	if (parent) {
		char num[24];

		snprintf(p->comm, sizeof(p->comm), "%s", comm && *comm ? comm : parent->comm);
		for (int i = 0; i < LBL_MAX; i++)
			if (parent->labels[i] && i != LBL_PID && i != LBL_COMM)
				p->labels[i] = strdup(parent->labels[i]);
		/* the parent's cgroup, if the child is still in it */
		p->cg_id = cgroup_id && parent->cg_id == cgroup_id ? cgroup_id : 0;
		p->labels[LBL_COMM] = strdup(p->comm);
		snprintf(num, sizeof(num), "%d", (int)pid);
		p->labels[LBL_PID] = strdup(num);
		p->gen++;
	} else {
		proc__fill(ps, p, comm, cgroup_id);
	}
	/* Until it execs, a child maps what its parent mapped: borrow that
	 * in case the child is gone before we read its own. */
	if (parent)
		p->rt = parent->rt; /* and BPF copied its walk's entry */
	if (parent && parent->maps) {
		p->maps = parent->maps;
		p->maps->refs++;
		p->maps_ns = now_mono_ns();
	} else {
		proc__read_maps(ps, p);
	}
}

void procs__exit(struct procs *ps, pid_t pid)
{
	struct proc *p = hmap__get(&ps->pids, (uint64_t)pid + 1);

	if (p && !p->exit_ns)
		p->exit_ns = now_mono_ns();
}

static struct vma *maps__find(struct maps *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!m)
		return NULL;
	hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].end <= addr)
			lo = mid + 1;
		else if (m->v[mid].start > addr)
			hi = mid;
		else
			return &m->v[mid];
	}
	return NULL;
}

struct vma *procs__vma(struct procs *ps, struct proc *p, uint64_t addr)
{
	struct vma *v = maps__find(p->maps, addr);

	/* DSO_NEW again: a load that found nothing (retried a few times),
	 * or a table the symbol cache dropped (symbolizer__trim). */
	if (v && v->file &&
	    (!v->dso || __atomic_load_n(&v->dso->state, __ATOMIC_ACQUIRE) == DSO_NEW))
		v->dso = symbolizer__dso(ps->o.sym, p->pid, v->dev, v->ino, v->path, v->start, v->end);
	return v;
}

const char *procs__jit_symbol(struct procs *ps, struct proc *p, uint64_t addr)
{
	return perfmap__lookup(p->perfmap, addr);
}

void procs__refresh(struct procs *ps, struct proc *p, bool maps, enum procs_pm pm)
{
	int64_t now = now_mono_ns();

	if (p->exit_ns)
		return;
	if (maps && now - p->maps_ns > p->maps_gap_ns) {
		proc__read_maps(ps, p);
		/* A new process is still loading libraries; one with garbage
		 * frame pointers misses forever: back off from 10 ms to 1 s. */
		p->maps_gap_ns = p->maps_gap_ns ? p->maps_gap_ns * 2 : 10000000LL;
		if (p->maps_gap_ns > SEC_NS)
			p->maps_gap_ns = SEC_NS;
		if (p->maps && p->maps->capped)
			p->maps_gap_ns = MAPS_CAPPED_GAP_NS;
	}
	if (pm != PROCS_PM_NO && !p->pm_token &&
	    now - p->perfmap_ns > (pm == PROCS_PM_LAZY && !p->perfmap ? 30 * SEC_NS : SEC_NS)) {
		uint64_t t = ++ps->pm_tokens;

		if (!symbolizer__perfmap_request(ps->o.sym, p->pid, t, p->perfmap ? p->pm_size : -1,
						 p->perfmap ? p->pm_mtime_ns : -1))
			p->pm_token = t;
		p->perfmap_ns = now;
	}
}

void procs__collect(struct procs *ps)
{
	struct perfmap_result r;

	while (symbolizer__perfmap_take(ps->o.sym, &r)) {
		struct proc *p = hmap__get(&ps->pids, (uint64_t)r.pid + 1);

		if (!p || p->pm_token != r.token) { /* exec'd or gone meanwhile */
			symbolizer__perfmap_free(ps->o.sym, r.m);
			continue;
		}
		p->pm_token = 0;
		if (r.unchanged)
			continue;
		/* Absent or refused now: the symbols go with the file. */
		symbolizer__perfmap_free(ps->o.sym, p->perfmap);
		p->perfmap = r.m;
		p->pm_size = r.m ? r.size : -1;
		p->pm_mtime_ns = r.m ? r.mtime_ns : -1;
	}
}

void procs__gc(struct procs *ps)
{
	int64_t now = now_mono_ns();

	if (now - ps->gc_ns < SEC_NS)
		return;
	ps->gc_ns = now;
	for (size_t i = 0; i < ps->pids.cap;) {
		struct proc *p = ps->pids.vals[i];

		if (ps->pids.keys[i] && p->exit_ns && now - p->exit_ns > ps->o.grace_ns) {
			pr_debug("procs: pid %d forgotten %lld ms after its exit", (int)p->pid,
				 (long long)((now - p->exit_ns) / 1000000));
			/* deletion shifts entries into slot i: look at it again */
			hmap__del(&ps->pids, ps->pids.keys[i]);
			proc__free(ps, p);
			continue;
		}
		i++;
	}
}

size_t procs__count(struct procs *ps)
{
	return ps->pids.len;
}
