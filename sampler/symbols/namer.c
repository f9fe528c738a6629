/*
 * namer.c - see namer.h.
 *
 * State per build id with unnamed frames (struct pend): waiting for
 * symbols, with a probe schedule (10 s doubling to 5 minutes: a stat of
 * two or three paths each, so cheap), or resolved, with its symbols in
 * memory while it is being named (struct res: at most RES_MAX at once,
 * the least recently used dropped and read again if more frames of it
 * turn up). The scan position (upto) only moves forward: a location is
 * looked at once when new, and again only when its build id resolves
 * (a rescan of the locations below upto for the build ids that resolved
 * in this round, one walk for all of them).
 *
 * Naming a frame needs three things: its file offset (the store has it:
 * address - mapping start + mapping offset), the binary's PT_LOADs to
 * turn it into a link-time address (recorded with the binary, since a
 * separate debug file's say nothing of file offsets) and the symbols.
 * The name is looked up at the address itself, the source line at the
 * byte before it unless that is another function: a caller's frame holds
 * a return address, which belongs to the line after the call, and the
 * store cannot say which frames were callers (it keeps the address as
 * sampled).
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/util/safefile.h"
#include "sampler/symbols/debugfile.h"
#include "sampler/symbols/debuginfod.h"
#include "sampler/symbols/dwline.h"
#include "sampler/symbols/namer.h"
#include "store/util/demangle.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

#define PEND_MAX 65536     /* build ids with unnamed frames tracked at most */
#define EVENTS_MAX 4096    /* file-read events queued at most */
#define RES_MAX 16         /* build ids whose symbols are held at once */
#define RES_IDLE_NS (120 * 1000000000LL)
#define PROBE_FIRST_S 10
#define PROBE_MAX_S 300
#define NAMES_PER_WRITE 4096
#define SCAN_CHUNK (1u << 20)
#define WRITTEN_MAX (1u << 20)

enum { P_WAIT, P_RESOLVED };

/* Symbols of one build id, loaded for naming. */
struct res {
	struct elf_info syms;
	struct store_binary bin; /* the binary's PT_LOADs (path freed) */
	struct dwline *dw;       /* NULL: no DWARF lines */
	int fd;                  /* the file dw reads, -1 */
};

struct pend {
	char bid[129];
	int state;
	unsigned tries;
	int64_t due_ns;
	struct res *res;
	int64_t used_ns;
	bool rescan; /* resolved this round: the locations below upto again */
};

struct event {
	struct store_binary b;
	bool has_symtab;
	int debug;
};

struct namer {
	struct namer_opts o;
	char *debug_root, *cache_dir;
	pthread_t thread;
	pthread_mutex_t lock; /* guards the queue, kick, stop and the figures */
	pthread_cond_t wake;
	struct event *ev;
	size_t nev, capev;
	struct hmap ready; /* hash(bid) -> 1: look now */
	bool kick, stop;
	struct namer_stats st;
	/* the thread's own */
	struct hmap pend;    /* hash(bid) -> struct pend * */
	struct hmap written; /* hash(bid) -> 1: recorded for /binaries */
	uint32_t upto;       /* locations below this were scanned */
	struct profile *p;   /* names to write */
	struct store_late *late;
	size_t nlate, caplate;
	size_t nres;
};

static uint64_t bid_key(const char *bid)
{
	uint64_t k = hash64(bid, strlen(bid), 0x4e41);

	return k ? k : 1;
}

/* ---- symbols of a build id ---- */

static void res_free(struct res *r)
{
	if (!r)
		return;
	elfsym__fini(&r->syms);
	dwline__close(r->dw);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

/* Tries the file open at fd (taken) as bid's symbols. */
static struct res *res_try(int fd, const char *bid, const struct store_binary *bin)
{
	struct res *r;

	if (fd < 0)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r || debugfile__read(fd, bid, &r->syms)) {
		free(r);
		close(fd);
		return NULL;
	}
	r->bin = *bin;
	r->bin.path = NULL;
	r->fd = fd;
	/* NULL: names without lines (none, or more DWARF than the
	 * sampler's tables may hold: lines the same either way) */
	r->dw = dwline__open(fd, DWLINE_MAX_BYTES, NULL);
	return r;
}

/* The symbols of bid, where they are now: a debug file in the debug root
 * (root's: links followed), one debuginfod fetched (ours, checked), or the
 * binary itself when it has a symbol table, read as the user whose
 * process mapped it, and only if it is still the file that was read. */
static struct res *res_load(struct namer *n, const char *bid)
{
	struct store_binary bin;
	struct sf_cred c;
	struct stat st;
	struct res *r = NULL;
	char p[4200];
	int fd;

	if (store__binary_get(n->o.store, bid, &bin))
		return NULL; /* its loads are unknown: cannot place an offset */
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", n->debug_root, bid, bid + 2);
	r = res_try(safefile__open(AT_FDCWD, p, false, false, SF_DEBUG, NULL, NULL), bid, &bin);
	if (!r && n->cache_dir && !dbgd__cache_path(n->cache_dir, bid, p, sizeof(p)))
		r = res_try(safefile__open(AT_FDCWD, p, true, false, SF_DEBUG, NULL, NULL), bid,
			    &bin);
	if (!r && (bin.flags & STORE_BIN_HOST) && bin.path[0] == '/') {
		c.uid = bin.uid;
		c.gid = bin.gid;
		fd = safefile__open(AT_FDCWD, bin.path, true, false, SF_ELF, &c, &st);
		if (fd >= 0 && (st.st_dev != bin.dev || st.st_ino != bin.ino ||
				(uint64_t)st.st_size != bin.size)) {
			close(fd);
			fd = -1;
		}
		r = res_try(fd, bid, &bin);
	}
	free(bin.path);
	return r;
}

/* Drops the least recently used symbols while more than RES_MAX (or idle
 * long) are held. */
static void res_trim(struct namer *n, bool all_idle)
{
	int64_t now = now_mono_ns();

	for (;;) {
		struct pend *old = NULL;

		for (size_t i = 0; i < n->pend.cap; i++) {
			struct pend *e = n->pend.keys[i] ? n->pend.vals[i] : NULL;

			if (e && e->res && (!old || e->used_ns < old->used_ns))
				old = e;
		}
		if (!old || (n->nres <= RES_MAX && !(all_idle && now - old->used_ns > RES_IDLE_NS)))
			return;
		res_free(old->res);
		old->res = NULL;
		n->nres--;
	}
}

/* ---- naming ---- */

static int flush_names(struct namer *n)
{
	size_t named = 0;
	int err = 0;

	if (n->nlate) {
		pthread_mutex_lock(n->o.store_mu);
		err = store__name_late(n->o.store, n->p, n->late, n->nlate, &named);
		pthread_mutex_unlock(n->o.store_mu);
		if (err)
			pr_warn("namer: storing names failed: %s", strerror(-err));
	}
	pthread_mutex_lock(&n->lock);
	n->st.named += named;
	n->st.errors += err != 0;
	pthread_mutex_unlock(&n->lock);
	profile__free(n->p);
	n->p = NULL;
	n->nlate = 0;
	return err;
}

/* Queues a name for location loc from r, if r has one for off. */
static int name_one(struct namer *n, struct res *r, uint32_t loc, uint64_t off)
{
	struct prof_function fn = { 0 };
	struct prof_line ln = { 0 };
	uint64_t vaddr = 0, plid;
	const char *name = NULL, *file = NULL;
	char shown[512];
	int line = 0;
	bool found = false;

	for (uint32_t i = 0; i < r->bin.nloads && !found; i++)
		if (off >= r->bin.loads[i].off && off < r->bin.loads[i].off + r->bin.loads[i].filesz) {
			vaddr = off - r->bin.loads[i].off + r->bin.loads[i].vaddr;
			found = true;
		}
	if (!found || !(name = elfsym__lookup(&r->syms, vaddr)))
		return 0; /* no symbol covers it: stays module+0xOFFSET */
	if (r->dw) {
		uint64_t at = vaddr && elfsym__lookup(&r->syms, vaddr - 1) == name ? vaddr - 1 : vaddr;

		if (!dwline__lookup(r->dw, at, &file, &line))
			file = NULL, line = 0;
	}
	if (!n->p && !(n->p = profile__new()))
		return -ENOMEM;
	/* As the batch names frames (sampler/batch/batch.c): pprof's short
	 * demangled name, the symbol itself as the system name. */
	fn.system_name = profile__intern_str(n->p, name);
	fn.name = demangle__name(name, false, shown, sizeof(shown)) ?
			  profile__intern_str(n->p, shown) : fn.system_name;
	fn.filename = profile__intern_str(n->p, file ? file : "");
	if (fn.name == UINT32_MAX || fn.system_name == UINT32_MAX || fn.filename == UINT32_MAX)
		return -ENOMEM;
	ln.function_id = profile__add_function(n->p, &fn);
	ln.line = line;
	if (!ln.function_id ||
	    !(plid = profile__add_location(n->p, &(struct prof_location){ 0, 0, 1, &ln })) ||
	    GROW(n->late, &n->caplate, n->nlate + 1))
		return -ENOMEM;
	n->late[n->nlate++] = (struct store_late){ .loc = loc, .plid = plid };
	if (n->nlate >= NAMES_PER_WRITE)
		return flush_names(n);
	return 0;
}

/* ---- scans ---- */

struct scan {
	struct namer *n;
	bool rescan; /* only build ids resolved this round */
};

static struct pend *pend_add(struct namer *n, const char *bid)
{
	struct pend *e;

	if (n->pend.len >= PEND_MAX || !(e = calloc(1, sizeof(*e))))
		return NULL;
	snprintf(e->bid, sizeof(e->bid), "%s", bid);
	e->state = P_WAIT;
	e->due_ns = 0; /* look now */
	if (hmap__put(&n->pend, bid_key(bid), e)) {
		free(e);
		return NULL;
	}
	return e;
}

static int on_unnamed(void *ctx, const struct store_unnamed *u)
{
	struct scan *sc = ctx;
	struct namer *n = sc->n;
	struct pend *e = hmap__get(&n->pend, bid_key(u->build_id));

	if (sc->rescan) {
		if (!e || !e->rescan || !e->res)
			return 0;
	} else if (!e) {
		/* Frames of a build id nothing named: look for its symbols,
		 * and ask debuginfod (it remembers what it asked). */
		if (pend_add(n, u->build_id))
			dbgd__request(n->o.dbgd, u->build_id);
		return 0;
	}
	if (e->state != P_RESOLVED)
		return 0;
	if (!e->res) {
		/* Dropped for room: read again. */
		if (!(e->res = res_load(n, e->bid)))
			return 0;
		n->nres++;
	}
	e->used_ns = now_mono_ns();
	return name_one(n, e->res, u->loc, u->off);
}

static int scan(struct namer *n, uint32_t from, uint32_t to, bool rescan, uint32_t *end)
{
	struct scan sc = { .n = n, .rescan = rescan };
	uint32_t next = from;
	int err = 0;

	do {
		from = next;
		uint32_t max = to && to - from < SCAN_CHUNK ? to - from : SCAN_CHUNK;

		if (!max)
			break;
		err = store__unnamed(n->o.store, from, max, &next, on_unnamed, &sc);
	} while (!err && next > from && (!to || next < to));
	if (end)
		*end = next;
	pthread_mutex_lock(&n->lock);
	n->st.scans++;
	pthread_mutex_unlock(&n->lock);
	return err;
}

/* ---- events ---- */

static void take_events(struct namer *n)
{
	struct event *ev;
	struct hmap ready;
	size_t nev;

	pthread_mutex_lock(&n->lock);
	ev = n->ev;
	nev = n->nev;
	ready = n->ready;
	n->ev = NULL;
	n->nev = n->capev = 0;
	memset(&n->ready, 0, sizeof(n->ready));
	n->kick = false;
	pthread_mutex_unlock(&n->lock);

	for (size_t i = 0; i < nev; i++) {
		struct event *e = &ev[i];
		uint64_t k = bid_key(e->b.build_id);
		struct pend *pe = hmap__get(&n->pend, k);

		if (e->b.path && !hmap__get(&n->written, k) && n->written.len < WRITTEN_MAX) {
			int err;

			pthread_mutex_lock(n->o.store_mu);
			err = store__binary_put(n->o.store, &e->b);
			pthread_mutex_unlock(n->o.store_mu);
			if (!err && !hmap__put(&n->written, k, (void *)1)) {
				pthread_mutex_lock(&n->lock);
				n->st.binaries++;
				pthread_mutex_unlock(&n->lock);
			} else if (err) {
				pr_debug("namer: recording %s: %s", e->b.build_id, strerror(-err));
			}
		}
		if (!e->has_symtab && !e->debug)
			dbgd__request(n->o.dbgd, e->b.build_id);
		/* Symbols of it can be read now: frames stored without
		 * them get theirs at this round's probe. */
		if ((e->has_symtab || e->debug) && pe && pe->state == P_WAIT)
			pe->due_ns = 0;
		free(e->b.path);
	}
	free(ev);
	for (size_t i = 0; i < ready.cap; i++) {
		struct pend *pe = ready.keys[i] ? hmap__get(&n->pend, ready.keys[i]) : NULL;

		if (pe && pe->state == P_WAIT)
			pe->due_ns = 0;
	}
	hmap__fini(&ready);
}

/* Looks for the symbols of the waiting build ids that are due; marks
 * the ones found for the rescan. Returns how many resolved. */
static size_t probe(struct namer *n)
{
	int64_t now = now_mono_ns();
	size_t found = 0;

	for (size_t i = 0; i < n->pend.cap; i++) {
		struct pend *e = n->pend.keys[i] ? n->pend.vals[i] : NULL;
		int64_t d;

		if (!e || e->state != P_WAIT || e->due_ns > now)
			continue;
		if ((e->res = res_load(n, e->bid))) {
			e->state = P_RESOLVED;
			e->rescan = true;
			e->used_ns = now;
			n->nres++;
			found++;
			pr_debug("namer: symbols for %s found; naming its stored frames", e->bid);
			continue;
		}
		d = PROBE_FIRST_S;
		for (unsigned t = 0; t < e->tries && d < PROBE_MAX_S; t++)
			d *= 2;
		e->tries++;
		e->due_ns = now + (d < PROBE_MAX_S ? d : PROBE_MAX_S) * 1000000000LL;
	}
	return found;
}

static void round_(struct namer *n)
{
	size_t found;
	uint32_t end;

	take_events(n);
	/* New locations first: they may bring build ids to look for. */
	if (!scan(n, n->upto, 0, false, &end))
		n->upto = end;
	found = probe(n);
	if (found) {
		/* The build ids that resolved: every location below upto (the
		 * ones above are the incremental scan's next time). */
		scan(n, 1, n->upto, true, NULL);
		for (size_t i = 0; i < n->pend.cap; i++) {
			struct pend *e = n->pend.keys[i] ? n->pend.vals[i] : NULL;

			if (!e || !e->rescan)
				continue;
			e->rescan = false;
			if (n->o.symbols_changed)
				n->o.symbols_changed(n->o.ctx, e->bid);
		}
		pthread_mutex_lock(&n->lock);
		n->st.resolved += found;
		pthread_mutex_unlock(&n->lock);
	}
	flush_names(n);
	res_trim(n, true);
	{
		uint64_t w = 0;

		/* Build ids still waiting; and the held debug files' pages this
		 * round read go back (dwline.h). */
		for (size_t i = 0; i < n->pend.cap; i++) {
			struct pend *e = n->pend.keys[i] ? n->pend.vals[i] : NULL;

			w += e && e->state == P_WAIT;
			if (e && e->res)
				dwline__unmap(e->res->dw);
		}
		pthread_mutex_lock(&n->lock);
		n->st.waiting = w;
		pthread_mutex_unlock(&n->lock);
	}
}

static void *namer_main(void *arg)
{
	struct namer *n = arg;

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-namer");

	pthread_mutex_lock(&n->lock);
	while (!n->stop) {
		struct timespec ts;

		pthread_mutex_unlock(&n->lock);
		round_(n);
		pthread_mutex_lock(&n->lock);
		if (n->stop || n->kick || n->nev)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += n->o.tick_ms / 1000;
		ts.tv_nsec += (n->o.tick_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!n->stop && !n->kick && !n->nev && !n->ready.len &&
		       pthread_cond_timedwait(&n->wake, &n->lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

int namer__start(struct namer **out, const struct namer_opts *o)
{
	struct namer *n = calloc(1, sizeof(*n));
	pthread_condattr_t ca;
	int err;

	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->o = *o;
	if (!n->o.tick_ms)
		n->o.tick_ms = 5000;
	n->debug_root = strdup(o->debug_root ? o->debug_root : "/usr/lib/debug");
	n->cache_dir = o->cache_dir ? strdup(o->cache_dir) : NULL;
	if (!n->debug_root || (o->cache_dir && !n->cache_dir)) {
		free(n->debug_root);
		free(n->cache_dir);
		free(n);
		return -ENOMEM;
	}
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&n->thread, NULL, namer_main, n);
	if (err) {
		pthread_cond_destroy(&n->wake);
		pthread_mutex_destroy(&n->lock);
		free(n->debug_root);
		free(n->cache_dir);
		free(n);
		return err;
	}
	*out = n;
	return 0;
}

void namer__stop(struct namer *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = true;
	pthread_cond_broadcast(&n->wake);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	for (size_t i = 0; i < n->nev; i++)
		free(n->ev[i].b.path);
	free(n->ev);
	for (size_t i = 0; i < n->pend.cap; i++)
		if (n->pend.keys[i]) {
			struct pend *e = n->pend.vals[i];

			res_free(e->res);
			free(e);
		}
	hmap__fini(&n->pend);
	hmap__fini(&n->written);
	hmap__fini(&n->ready);
	profile__free(n->p);
	free(n->late);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n->debug_root);
	free(n->cache_dir);
	free(n);
}

void namer__file_read(struct namer *n, const struct store_binary *b, bool has_symtab, int debug)
{
	struct event *e;

	if (!n || !store__build_id_ok(b->build_id))
		return;
	pthread_mutex_lock(&n->lock);
	if (!has_symtab && debug)
		n->st.local++;
	if (n->nev < EVENTS_MAX && !GROW(n->ev, &n->capev, n->nev + 1)) {
		e = &n->ev[n->nev];
		e->b = *b;
		e->b.path = b->path ? strdup(b->path) : NULL;
		e->has_symtab = has_symtab;
		e->debug = debug;
		if (!b->path || e->b.path)
			n->nev++;
		pthread_cond_signal(&n->wake);
	}
	pthread_mutex_unlock(&n->lock);
}

void namer__ready(struct namer *n, const char *bid)
{
	if (!n || !store__build_id_ok(bid))
		return;
	pthread_mutex_lock(&n->lock);
	if (!hmap__put(&n->ready, bid_key(bid), (void *)1))
		pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

void namer__kick(struct namer *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->kick = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

void namer__stats(struct namer *n, struct namer_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	*st = n->st;
	pthread_mutex_unlock(&n->lock);
}
