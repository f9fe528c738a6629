/*
 * symbolize.c - the symbolizer, the sampler thread's side: kallsyms and
 * our vDSO, the cache of mapped files and their symbol tables (a bound,
 * least recently used dropped), lookups, and perf map requests. The
 * reads themselves are loader.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/util/prom.h"
#include "sampler/symbols/dwline.h"
#include "sampler/symbols/goline.h"
#include "sampler/symbols/symbolize_int.h"
#include "store/util/util.h"

static int load_kallsyms(struct symbolizer *s)
{
	s->ksyms = kallsyms__load("/proc/kallsyms");
	if (!s->ksyms)
		return -errno;
	if (!kallsyms__count(s->ksyms))
		pr_warn("symbolize: no symbols in /proc/kallsyms (kptr_restrict?)");
	return 0;
}

/* Our own vDSO: its extent from /proc/self/maps, its image in memory. */
static void load_vdso(struct symbolizer *s)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t start, end;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) != 2)
			continue;
		s->has_vdso = !elfsym__read_mem((const void *)(uintptr_t)start, end - start, &s->vdso);
		break;
	}
	fclose(f);
}

const char *symbolizer__vdso(struct symbolizer *s, uint64_t off)
{
	uint64_t vaddr;
	const char *name = NULL;

	if (s->has_vdso && elfsym__off_to_vaddr(&s->vdso, off, &vaddr))
		name = elfsym__lookup(&s->vdso, vaddr);
	return name;
}

struct symbolizer *symbolizer__new(const char *debug_root)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	pthread_cond_init(&s->idle, NULL);
	s->debug_root = strdup(debug_root ? debug_root : "/usr/lib/debug");
	if (!s->debug_root) {
		err = -ENOMEM;
		goto err;
	}
	err = load_kallsyms(s);
	if (err)
		goto err;
	load_vdso(s);
	return s;
err:
	symbolizer__free(s);
	errno = -err;
	return NULL;
}

void symtab__free(struct symtab *t)
{
	if (!t)
		return;
	elfsym__fini(&t->elf);
	if (t->rt && t->rt_free)
		t->rt_free(t->rt);
	if (t->dw) {
		dwline__close(t->dw);
		close(t->dw_fd);
	}
	goline__close(t->go);
	free(t);
}

void symbolizer__uncount_free(struct symbolizer *s, struct symtab *t)
{
	s->nsymbols -= t->elf.nsyms;
	s->nsymtabs--;
	s->tab_bytes -= t->bytes;
	symtab__free(t);
}

void symbolizer__job_free(struct symbolizer *s, struct job *j)
{
	if (!j)
		return;
	if (j->r.m)
		symbolizer__perfmap_free(s, j->r.m);
	free(j->path);
	free(j);
}

/* hmap__drain's fn for the symtabs by build id. */
static void symtab_drop(void *ctx, void *t)
{
	(void)ctx;
	symtab__free(t);
}

void symbolizer__free(struct symbolizer *s)
{
	struct timespec ts;
	struct job *j;

	if (!s)
		return;
	/* Loaders finish the job in hand (their reads stop at its deadline);
	 * one stuck in a read that never returns keeps pointers into s, so s
	 * is then left to the process's exit rather than freed under it. */
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 500 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (s->nloaders > 0)
		if (pthread_cond_timedwait(&s->idle, &s->lock, &ts) == ETIMEDOUT)
			break;
	if (s->nloaders > 0) {
		pthread_mutex_unlock(&s->lock);
		pr_warn("symbolize: a file read still hangs; leaving it to exit");
		return;
	}
	pthread_mutex_unlock(&s->lock);
	while ((j = s->head)) {
		s->head = j->next;
		symbolizer__job_free(s, j);
	}
	while ((j = s->done)) {
		s->done = j->next;
		symbolizer__job_free(s, j);
	}
	for (size_t i = 0; i < s->dsos.cap; i++) {
		struct dso *d = s->dsos.vals[i];

		if (!s->dsos.keys[i])
			continue;
		/* A symtab without build id is owned by its dso. */
		if (d->tab && !d->tab->elf.build_id[0])
			symtab__free(d->tab);
		free(d->path);
		free(d);
	}
	hmap__fini(&s->dsos);
	hmap__drain(&s->symtabs, symtab_drop, NULL);
	elfsym__fini(&s->vdso);
	kallsyms__free(s->ksyms);
	free(s->debug_root);
	free(s->debug_cache);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr)
{
	return kallsyms__lookup(s->ksyms, addr);
}

static uint64_t dso_key(uint64_t dev, uint64_t ino, const char *path)
{
	uint64_t k[2] = { dev, ino };
	uint64_t h = hash64(k, sizeof(k), 0x5eed);

	/* Files without an inode (rare) are told apart by path. */
	if (!ino && path)
		h = hash64(path, strlen(path), h);
	return h ? h : 1;
}

struct dso *symbolizer__dso(struct symbolizer *s, pid_t pid, uint64_t dev, uint64_t ino,
			    const char *path, uint64_t start, uint64_t end)
{
	uint64_t k = dso_key(dev, ino, path);
	struct dso *d = hmap__get(&s->dsos, k);
	struct job *j;

	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		d->dev = dev;
		d->ino = ino;
		d->path = strdup(path);
		if (!d->path || hmap__put(&s->dsos, k, d)) {
			free(d->path);
			free(d);
			return NULL;
		}
	}
	if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) != DSO_NEW)
		return d;
	j = calloc(1, sizeof(*j));
	if (!j)
		return d;
	j->pid = pid;
	j->d = d;
	j->path = strdup(path);
	j->start = start;
	j->end = end;
	__atomic_store_n(&d->state, DSO_QUEUED, __ATOMIC_RELEASE);
	if (!j->path || !symbolizer__enqueue(s, j)) {
		/* Asked again at its next sample. */
		__atomic_store_n(&d->state, DSO_NEW, __ATOMIC_RELEASE);
		symbolizer__job_free(NULL, j);
	}
	return d;
}

static int by_used(const void *a, const void *b)
{
	const struct symtab *x = *(struct symtab *const *)a, *y = *(struct symtab *const *)b;

	if (x->used != y->used)
		return (x->used > y->used) - (x->used < y->used);
	return (x > y) - (x < y); /* copies of one table side by side */
}

/* Drops table t: every dso holding it is read again at its next sample.
 * s->lock held; sampler thread (symbolizer__trim says why it is safe). */
static void drop_table(struct symbolizer *s, struct symtab *t)
{
	for (size_t k = 0; k < s->dsos.cap; k++) {
		struct dso *d = s->dsos.keys[k] ? s->dsos.vals[k] : NULL;

		if (d && d->tab == t) {
			__atomic_store_n(&d->tab, NULL, __ATOMIC_RELEASE);
			d->tries = 0;
			__atomic_store_n(&d->state, DSO_NEW, __ATOMIC_RELEASE);
		}
	}
	if (t->elf.build_id[0]) {
		uint64_t bk = hash64(t->elf.build_id, strlen(t->elf.build_id), 0xb1d);

		hmap__del(&s->symtabs, bk ? bk : 1);
	}
	s->tabgen++; /* lookups remembered may name from t */
	symbolizer__uncount_free(s, t);
}

/* Tables of build ids whose debug file arrived, read without a symbol
 * table: dropped (once their dsos are done loading), so their next
 * sample reads them again and load_debug finds the file. s->lock held. */
static void apply_changed(struct symbolizer *s)
{
	size_t keep = 0;

	for (size_t i = 0; i < s->nchanged; i++) {
		const char *b = s->changed[i];
		uint64_t bk = hash64(b, strlen(b), 0xb1d);
		struct symtab *t = hmap__get(&s->symtabs, bk ? bk : 1);
		bool busy = false;

		if (!t || t->elf.has_symtab)
			continue;
		for (size_t k = 0; k < s->dsos.cap && !busy; k++) {
			struct dso *d = s->dsos.keys[k] ? s->dsos.vals[k] : NULL;

			busy = d && d->tab == t && d->state != DSO_DONE;
		}
		if (busy) { /* a load holds it: next time */
			memmove(s->changed[keep++], b, sizeof(s->changed[0]));
			continue;
		}
		pr_debug("symbolize: %s: debug file arrived; its table is read again", b);
		drop_table(s, t);
	}
	s->nchanged = keep;
}

void symbolizer__symbols_changed(struct symbolizer *s, const char *bid)
{
	pthread_mutex_lock(&s->lock);
	if (s->nchanged < CHANGED_MAX && strlen(bid) < sizeof(s->changed[0]))
		snprintf(s->changed[s->nchanged++], sizeof(s->changed[0]), "%s", bid);
	pthread_mutex_unlock(&s->lock);
}

void symbolizer__set_detector(struct symbolizer *s, const struct symbolizer_detector *d)
{
	static const struct symbolizer_detector none;

	s->detector = d ? *d : none;
}

int symbolizer__set_hooks(struct symbolizer *s, const struct symbolizer_hooks *h)
{
	static const struct symbolizer_hooks none;
	char *dc = h && h->debug_cache ? strdup(h->debug_cache) : NULL;

	if (h && h->debug_cache && !dc)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	/* The cache path stays while a loader may be reading it: freed with
	 * s, or when replaced by another. */
	if (dc) {
		free(s->debug_cache);
		s->debug_cache = dc;
	}
	s->hooks = h ? *h : none;
	s->hooks.debug_cache = s->debug_cache;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/*
 * Why this is safe: lookups and dso states are the sampler thread's, and
 * so is this call; a table is dropped only from dsos the loader is done
 * with (DSO_DONE), and a load in flight that found the same build id
 * takes it again under the lock (dso_load), so no thread keeps a pointer
 * to a freed table. Frames' names do not outlive the sample they were
 * looked up for (the batch copies them).
 */
void symbolizer__trim(struct symbolizer *s, uint64_t budget)
{
	struct symtab **cand = NULL;
	size_t n = 0, cap = 0;
	uint64_t keep_from;

	s->clock++;
	budget = budget ? budget : SYM_CACHE_BYTES;
	keep_from = s->clock > SYM_KEEP_CALLS ? s->clock - SYM_KEEP_CALLS : 0;
	pthread_mutex_lock(&s->lock);
	if (s->tab_bytes <= budget)
		goto out;
	/* Distinct tables of finished dsos, not used lately. */
	for (size_t i = 0; i < s->dsos.cap; i++) {
		struct dso *d = s->dsos.keys[i] ? s->dsos.vals[i] : NULL;
		struct symtab *t = d ? d->tab : NULL;

		if (!t || t->used >= keep_from || d->state != DSO_DONE || t->bytes == 0)
			continue;
		if (n == cap) {
			struct symtab **g = realloc(cand, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				goto out;
			cand = g;
		}
		cand[n++] = t; /* a table of several dsos comes more than once */
	}
	if (n)
		qsort(cand, n, sizeof(*cand), by_used);
	for (size_t i = 0; i < n && s->tab_bytes > budget / 4 * 3; i++) {
		struct symtab *t = cand[i];

		if (i && cand[i - 1] == t)
			continue;
		drop_table(s, t);
		s->evicted++;
	}
out:
	/* Lines are read on this thread only: none is being read now. */
	for (size_t i = 0; s->dw_used && i < s->dsos.cap; i++) {
		struct dso *d = s->dsos.keys[i] ? s->dsos.vals[i] : NULL;
		struct symtab *t = d ? d->tab : NULL;

		if (t && t->dw_used) {
			t->dw_used = false;
			dwline__unmap(t->dw);
			goline__unmap(t->go);
		}
	}
	s->dw_used = false;
	apply_changed(s);
	pthread_mutex_unlock(&s->lock);
	free(cand);
}

/* The remembered lookup of (d, off) in t, fresh or not. */
static struct look *look_slot(struct symbolizer *s, const struct dso *d, uint64_t off)
{
	return &s->look[hash_pair64((uint64_t)(uintptr_t)d, off) & (LOOK_SLOTS - 1)];
}

static bool look_holds(const struct symbolizer *s, const struct look *e, const struct dso *d,
		       const struct symtab *t, uint64_t off)
{
	return e->d == d && e->t == t && e->off == off && e->gen == s->tabgen;
}

const char *symbolizer__lookup(struct symbolizer *s, struct dso *d, uint64_t off)
{
	struct symtab *t = dso__tab(d);
	const char *name = NULL;
	struct look *e;
	uint64_t vaddr;

	if (!t) {
		s->misses++;
		return NULL;
	}
	t->used = s->clock;
	e = look_slot(s, d, off);
	if (look_holds(s, e, d, t, off)) {
		name = e->name;
	} else {
		if (elfsym__off_to_vaddr(&t->elf, off, &vaddr))
			name = elfsym__lookup(&t->elf, vaddr);
		*e = (struct look){ .d = d, .t = t, .off = off, .gen = s->tabgen, .name = name };
	}
	if (name)
		s->hits++;
	else
		s->misses++;
	return name;
}

bool symbolizer__line(struct symbolizer *s, struct dso *d, uint64_t off, const char **file,
		      int *line)
{
	struct symtab *t = dso__tab(d);
	struct look *e;
	uint64_t vaddr;
	bool ok;

	if (!t || (!t->dw && !t->go))
		return false;
	e = look_slot(s, d, off);
	if (look_holds(s, e, d, t, off) && e->line_done) {
		*file = e->file;
		*line = e->line;
		return e->has_line;
	}
	ok = elfsym__off_to_vaddr(&t->elf, off, &vaddr) &&
	     (t->dw ? dwline__lookup(t->dw, vaddr, file, line) : goline__lookup(t->go, vaddr, file, line));
	t->dw_used = s->dw_used = true;
	if (look_holds(s, e, d, t, off)) {
		e->line_done = true;
		e->has_line = ok;
		e->file = ok ? *file : NULL;
		e->line = ok ? *line : 0;
	}
	return ok;
}

void symbolizer__stats(struct symbolizer *s, struct symbolizer_stats *st)
{
	st->dsos = s->dsos.len;
	st->kernel_symbols = kallsyms__count(s->ksyms);
	st->hits = s->hits;
	st->misses = s->misses;
	pthread_mutex_lock(&s->lock);
	st->symtabs = s->nsymtabs;
	st->symbols = s->nsymbols;
	st->queued = s->nqueued;
	st->loads = s->loads;
	st->abandoned = s->abandoned;
	st->perfmap_bytes = s->perfmap_bytes;
	st->perfmap_reads = s->perfmap_reads;
	st->symtab_bytes = s->tab_bytes;
	st->evicted = s->evicted;
	pthread_mutex_unlock(&s->lock);
}

int symbolizer__perfmap_request(struct symbolizer *s, pid_t pid, uint64_t token, int64_t size,
				int64_t mtime_ns)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->perfmap = true;
	j->pid = pid;
	j->r.pid = pid;
	j->r.token = token;
	j->r.size = size;
	j->r.mtime_ns = mtime_ns;
	if (!symbolizer__enqueue(s, j)) {
		free(j);
		return -EBUSY;
	}
	return 0;
}

bool symbolizer__perfmap_take(struct symbolizer *s, struct perfmap_result *r)
{
	struct job *j;

	pthread_mutex_lock(&s->lock);
	j = s->done;
	if (j)
		s->done = j->next;
	pthread_mutex_unlock(&s->lock);
	if (!j)
		return false;
	*r = j->r;
	j->r.m = NULL;
	symbolizer__job_free(s, j);
	return true;
}

void symbolizer__perfmap_free(struct symbolizer *s, struct perfmap *m)
{
	if (!m)
		return;
	if (s) {
		pthread_mutex_lock(&s->lock);
		s->perfmap_bytes -= perfmap__bytes(m);
		pthread_mutex_unlock(&s->lock);
	}
	perfmap__free(m);
}

void symbolizer__go_metrics(struct symbolizer *s, struct buf *out)
{
	static const char *const layouts[3] = { "1.16", "1.18", "1.20" };
	uint64_t r[3], bad;

	pthread_mutex_lock(&s->lock);
	memcpy(r, s->go_read, sizeof(r));
	bad = s->go_refused;
	pthread_mutex_unlock(&s->lock);
	prom__family(out, "proffs_go_binaries_total", PROM_COUNTER,
		     "Go binaries whose functions were named from their own table (.gopclntab), by the "
		     "table's layout (the first Go version that writes it); unknown: a layout not read, or a "
		     "damaged table (their frames stay module+0x).");
	for (int k = 0; k < 3; k++)
		prom__u64_by(out, "proffs_go_binaries_total", "layout", layouts[k], r[k]);
	prom__u64_by(out, "proffs_go_binaries_total", "layout", "unknown", bad);
}

void symbolizer__metrics(const struct symbolizer_stats *st, struct buf *out)
{
	prom__gauge(out, "proffs_symbol_cache_files", "Mapped files known to the symbol cache.", st->dsos);
	prom__gauge(out, "proffs_symbol_cache_tables", "Symbol tables loaded (one per build id).", st->symtabs);
	prom__gauge(out, "proffs_symbol_cache_symbols", "User-space symbols held.", st->symbols);
	prom__gauge(out, "proffs_symbol_cache_bytes", "Memory held by symbol tables (bounded; least recently used dropped).",
		    st->symtab_bytes);
	prom__counter(out, "proffs_symbol_cache_evictions_total", "Symbol tables dropped to stay within the bound.",
		      st->evicted);
	prom__gauge(out, "proffs_kernel_symbols", "Kernel symbols held (kallsyms).", st->kernel_symbols);
	prom__family(out, "proffs_symbol_cache_lookups_total", PROM_COUNTER, "User frame lookups, by result.");
	prom__u64_by(out, "proffs_symbol_cache_lookups_total", "result", "hit", st->hits);
	prom__u64_by(out, "proffs_symbol_cache_lookups_total", "result", "miss", st->misses);
	prom__counter(out, "proffs_symbol_loads_total",
		      "Files (symbol tables, perf maps) the loader thread read.", st->loads);
	prom__gauge(out, "proffs_symbol_loads_queued", "Files waiting for the loader thread.",
		    st->queued);
	prom__counter(out, "proffs_symbol_loads_abandoned_total", "Loads abandoned because a read hung.",
		      st->abandoned);
	prom__gauge(out, "proffs_perfmap_bytes", "Memory held by loaded perf maps.", st->perfmap_bytes);
	prom__counter(out, "proffs_perfmap_reads_total",
		      "Perf maps read (only when changed, at most once a second each).", st->perfmap_reads);
}
