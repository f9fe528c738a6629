/*
 * batch.c - aggregating symbolized samples into a profile.
 *
 * Interning every frame of every sample into the profile costs a few hash
 * lookups each; two per-batch caches keep the common case to one: labels
 * per (pid, proc generation, comm) and location ids per (pid, address) -
 * per (address) for kernel frames, which every process shares.
 *
 * A third, the memo, skips even those: a busy process repeats its raw
 * stacks (a hot loop's few leaf addresses under the same callers), and the
 * sampler thread's cost per sample was the symbolizing, the naming of
 * runtime frames and these lookups, all redone for a record seen seconds
 * before (issues 28, 29: 4 busy JVMs, 10 busy nodes). The caller hashes
 * what decides a record's stack and labels (profiler.c: record_key) and,
 * once a record's result is final (nothing waited for a load or failed
 * to read), remembers which sample it went to; an equal record later in
 * the batch adds its values there. Per batch, as the locations are.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/batch/batch.h"
#include "store/util/demangle.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

struct label_set {
	uint64_t gen;
	char comm[16];
	uint32_t n;
	struct prof_label l[LBL_MAX];
};

/* vma -> mapping id slots per batch. A process's frames miss the batch's
 * location cache on their first use (it is keyed by process), and each
 * miss interned the mapping's path and build id again: a twentieth of
 * the daemon's CPU on the busy host, where new processes are many. */
#define VMAP_SLOTS 512u

struct batch {
	int64_t period_ns;
	const char *const *types, *const *units; /* two sample types; the period's is the last */
	struct profile *p;
	uint64_t count;
	uint64_t kmap; /* mapping id of [kernel.kallsyms] in p, 0 = not yet */
	uint64_t umap; /* mapping id of [unknown] (frames of no known mapping) */
	struct hmap labels; /* pid + 1 -> struct label_set * */
	struct hmap locs;   /* hash(pid, gen, addr) / hash(addr) -> loc id */
	struct hmap bare;   /* hash(mapping id, addr) -> id of a line-less location */
	uint64_t *stack;    /* scratch: location ids of one sample */
	/* the memo: open addressing, h == 0 empty */
	struct memo_ent { uint64_t h, check; uint32_t at, tag; } *memo;
	size_t mcap, mn;
	uint32_t last_at;   /* the sample the last add went to */
	bool last_ok;
	/* The mapping id of a vma, by the vma's address: direct-mapped, its
	 * content checked on a hit (a freed vma's memory may hold another) */
	struct vmap_ent {
		const struct vma *v;
		uint64_t start, end, pgoff, ino, dev, id;
		uint8_t fl;
	} vmap[VMAP_SLOTS];
};

/* Records remembered per batch at most (24 bytes each, twice for room). */
#define MEMO_MAX 16384u
#define MEMO_FIRST 256u

static void batch__reset_caches(struct batch *b)
{
	hmap__drain(&b->labels, hmap__free_val, NULL);
	hmap__fini(&b->locs);
	hmap__fini(&b->bare);
	if (b->memo)
		memset(b->memo, 0, b->mcap * sizeof(*b->memo));
	b->mn = 0;
	b->last_ok = false;
	memset(b->vmap, 0, sizeof(b->vmap));
	b->kmap = 0;
	b->umap = 0;
}

static struct profile *new_profile(const struct batch *b)
{
	struct profile *p = profile__new();

	if (!p)
		return NULL;
	if (profile__set_value_types(p, 2, b->types, b->units)) {
		profile__free(p);
		errno = EINVAL;
		return NULL;
	}
	p->period_type.type = profile__intern_str(p, b->types[1]);
	p->period_type.unit = profile__intern_str(p, b->units[1]);
	p->period = b->period_ns;
	return p;
}

struct batch *batch__new(int64_t period_ns)
{
	static const char *const types[] = { "samples", "cpu" };
	static const char *const units[] = { "count", "nanoseconds" };

	return batch__new_typed(period_ns, types, units);
}

struct batch *batch__new_typed(int64_t period_ns, const char *const types[2],
			       const char *const units[2])
{
	struct batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->period_ns = period_ns;
	b->types = types;
	b->units = units;
	b->p = new_profile(b);
	b->stack = malloc(STACK_MAX_FRAMES * sizeof(*b->stack));
	if (!b->p || !b->stack) {
		batch__free(b);
		errno = ENOMEM;
		return NULL;
	}
	return b;
}

void batch__free(struct batch *b)
{
	if (!b)
		return;
	batch__reset_caches(b);
	profile__free(b->p);
	free(b->stack);
	free(b->memo);
	free(b);
}

int64_t batch__period(const struct batch *b)
{
	return b->period_ns;
}

uint64_t batch__count(const struct batch *b)
{
	return b->count;
}

static struct label_set *labels_for(struct batch *b, struct proc *p, pid_t pid, const char *comm)
{
	struct label_set *ls = hmap__get(&b->labels, (uint64_t)pid + 1);
	uint64_t gen = p ? p->gen : 0;
	char num[24];

	if (ls && ls->gen == gen && !strncmp(ls->comm, comm, sizeof(ls->comm)))
		return ls;
	if (!ls) {
		ls = calloc(1, sizeof(*ls));
		if (!ls || hmap__put(&b->labels, (uint64_t)pid + 1, ls)) {
			free(ls);
			return NULL;
		}
	}
	ls->gen = gen;
	snprintf(ls->comm, sizeof(ls->comm), "%s", comm);
	ls->n = 0;
	for (int i = 0; i < LBL_MAX; i++) {
		const char *v = p ? p->labels[i] : NULL;

		/* comm is the leader's name now, not when we first saw it
		 * (a forked child renames itself after the fork). */
		if (i == LBL_COMM)
			v = comm;
		if (i == LBL_PID && !v) {
			snprintf(num, sizeof(num), "%d", (int)pid);
			v = num;
		}
		if (!v || !*v)
			continue;
		ls->l[ls->n].key = profile__intern_str(b->p, label_names[i]);
		ls->l[ls->n].str = profile__intern_str(b->p, v);
		if (ls->l[ls->n].key == UINT32_MAX || ls->l[ls->n].str == UINT32_MAX)
			return NULL;
		ls->n++;
	}
	return ls;
}

static uint64_t kernel_mapping(struct batch *b)
{
	struct prof_mapping m = { .start = 0, .limit = UINT64_MAX, .offset = 0 };

	if (b->kmap)
		return b->kmap;
	m.file = profile__intern_str(b->p, "[kernel.kallsyms]");
	m.has_functions = true;
	if (m.file == UINT32_MAX)
		return 0;
	b->kmap = profile__add_mapping(b->p, &m);
	return b->kmap;
}

/* A user frame whose mapping we never saw (the process exited before its
 * maps were re-read): "[unknown]", so the frame reads [unknown]+0xADDR,
 * never a bare address (SPEC §2 Files). */
static uint64_t unknown_mapping(struct batch *b)
{
	struct prof_mapping m = { .start = 0, .limit = UINT64_MAX, .offset = 0 };

	if (b->umap)
		return b->umap;
	m.file = profile__intern_str(b->p, "[unknown]");
	if (m.file == UINT32_MAX)
		return 0;
	b->umap = profile__add_mapping(b->p, &m);
	return b->umap;
}

/*
 * A file's code is stored at its file offsets, not where this process
 * mapped it: mapping [pgoff, pgoff + size) at offset pgoff, a frame at
 * addr - start + pgoff. ASLR puts every exec of a binary (and every
 * library in it) elsewhere, so runtime addresses made each short-lived
 * process's frames new mappings, locations and stacks for the store:
 * on the busy host a sha256sum loop alone added ~100 locations a second,
 * and the writer's maps, the store and every render of a range carried
 * them. pprof reads the same file offset from either form
 * (address - memory_start + file_offset), and merges by it too; so do
 * the module+0xOFFSET names and late symbols. Anonymous memory (JIT code,
 * [vdso]) keeps its runtime addresses: it has no file to be offsets in.
 */
static uint64_t frame_address(const struct frame *f)
{
	const struct vma *v = f->vma;

	return v && v->file && !f->kernel ? f->addr - v->start + v->pgoff : f->addr;
}

static uint64_t user_mapping(struct batch *b, const struct vma *v)
{
	struct prof_mapping m = { .start = v->start, .limit = v->end, .offset = v->pgoff };
	const struct symtab *t = v->dso ? v->dso->tab : NULL;
	uint8_t fl = (uint8_t)(1 | (t && t->elf.build_id[0]) << 1 | (t && t->has_syms) << 2);
	struct vmap_ent *c = &b->vmap[(hash_mix64((uintptr_t)v) >> 7) & (VMAP_SLOTS - 1)];
	uint64_t id;

	if (c->v == v && c->fl == fl && c->start == v->start && c->end == v->end &&
	    c->pgoff == v->pgoff && c->ino == v->ino && c->dev == v->dev)
		return c->id;
	if (v->file) {
		m.start = v->pgoff;
		m.limit = v->pgoff + (v->end - v->start);
	}
	m.file = profile__intern_str(b->p, v->path[0] ? v->path : "[jit]");
	if (t && t->elf.build_id[0])
		m.build_id = profile__intern_str(b->p, t->elf.build_id);
	m.has_functions = t && t->has_syms;
	if (m.file == UINT32_MAX || m.build_id == UINT32_MAX)
		return 0;
	id = profile__add_mapping(b->p, &m);
	if (id)
		*c = (struct vmap_ent){ v, v->start, v->end, v->pgoff, v->ino, v->dev, id, fl };
	return id;
}

/* A runtime's frame (Python, Ruby, Java, JavaScript): one location per
 * (object, line, name) of a process, its function the display name
 * ("qualname (file)") with the file's full path and first line, so
 * pprof's -lines and -list work. The name is part of the key: a freed
 * object's address comes back as another function's (a class unloaded
 * and its successor's code at the same address, in one batch). No
 * mapping: the code is not in a file's text. */
static uint64_t rt_location(struct batch *b, struct proc *p, pid_t pid, const struct frame *f)
{
	uint64_t key[5] = { (uint64_t)pid + 1, p ? p->gen : 0, f->addr, (uint32_t)f->line,
			    f->name ? hash64(f->name, strlen(f->name), 0x6e7) : 0 };
	uint64_t k = hash64(key, sizeof(key), 0x9e7), id;
	struct prof_function fn = { 0 };
	struct prof_location loc = { 0 };
	struct prof_line line = { 0 };

	k = k ? k : 1;
	id = (uintptr_t)hmap__get(&b->locs, k);
	if (id)
		return id;
	fn.name = profile__intern_str(b->p, f->name);
	fn.system_name = profile__intern_str(b->p, f->sysname ? f->sysname : f->name);
	fn.filename = profile__intern_str(b->p, f->file ? f->file : "");
	fn.start_line = f->start_line;
	if (fn.name == UINT32_MAX || fn.system_name == UINT32_MAX || fn.filename == UINT32_MAX)
		return 0;
	line.function_id = profile__add_function(b->p, &fn);
	line.line = f->line;
	if (!line.function_id)
		return 0;
	loc.nlines = 1;
	loc.lines = &line;
	id = profile__add_location(b->p, &loc);
	if (id && hmap__put(&b->locs, k, (void *)(uintptr_t)id))
		return 0;
	return id;
}

static uint64_t location_for(struct batch *b, struct proc *p, pid_t pid, const struct frame *f)
{
	if (f->rt)
		return rt_location(b, p, pid, f);

	/* Kernel frames are the same in every process; a marker frame (no
	 * address) gets a key no real frame has, told apart by its text (by
	 * address alone, the first marker of a batch named every other:
	 * [truncated] stacks read [unwind: outside mappings]). */
	uint64_t key[3] = { f->kernel ? 0 : (uint64_t)pid + 1, f->kernel || !p ? 0 : p->gen, f->addr };

	if (f->marker) {
		key[0] = key[1] = UINT64_MAX;
		key[2] = f->name ? hash64(f->name, strlen(f->name), 0x3a4) : 0;
	}
	uint64_t k = hash64(key, sizeof(key), f->kernel), id;
	struct prof_location loc = { .address = frame_address(f) };
	struct prof_line line = { 0 };

	k = k ? k : 1;
	id = (uintptr_t)hmap__get(&b->locs, k);
	if (id)
		return id;
	if (f->kernel)
		loc.mapping_id = kernel_mapping(b);
	else if (f->vma)
		loc.mapping_id = user_mapping(b, f->vma);
	else if (!f->marker)
		loc.mapping_id = unknown_mapping(b);
	if (f->name) {
		struct prof_function fn = { 0 };
		char shown[512];

		/* The stored name is what pprof shows (SPEC §2): a perf-map
		 * JIT frame marked "_[j]", a C++/Rust symbol demangled to
		 * pprof's short form; the system name keeps the symbol. */
		fn.system_name = profile__intern_str(b->p, f->name);
		if (f->jit) {
			snprintf(shown, sizeof(shown), "%s_[j]", f->name);
			fn.name = profile__intern_str(b->p, shown);
		} else if (demangle__name(f->name, false, shown, sizeof(shown))) {
			fn.name = profile__intern_str(b->p, shown);
		} else {
			fn.name = fn.system_name;
		}
		/* Named from a debug file with DWARF: its file and line, for
		 * pprof -list (else none, as the symbol tables say none). */
		fn.filename = profile__intern_str(b->p, f->file ? f->file : "");
		if (fn.name == UINT32_MAX || fn.system_name == UINT32_MAX || fn.filename == UINT32_MAX)
			return 0;
		line.function_id = profile__add_function(b->p, &fn);
		line.line = f->file ? f->line : 0;
		if (!line.function_id)
			return 0;
		loc.nlines = 1;
		loc.lines = &line;
	}
	if (!loc.nlines) {
		/* Unresolved frames of different processes (forked children,
		 * shared libraries) meet here; find them ourselves rather than
		 * ask profile__add_location to compare two line-less locations
		 * (memcmp of a NULL lines array: undefined, and UBSan aborts). */
		uint64_t w[2] = { loc.mapping_id, loc.address };
		uint64_t k2 = hash64(w, sizeof(w), 0x11e);

		k2 = k2 ? k2 : 1;
		id = (uintptr_t)hmap__get(&b->bare, k2);
		if (!id) {
			id = profile__add_location(b->p, &loc);
			if (id && hmap__put(&b->bare, k2, (void *)(uintptr_t)id))
				return 0;
		}
		/* Not remembered per (pid, address): an unresolved user frame
		 * may resolve later in this batch (a JIT writes its perf map
		 * after exec, and the map is reloaded at most once a second). */
		if (!f->kernel)
			return id;
	} else {
		id = profile__add_location(b->p, &loc);
	}
	if (id && hmap__put(&b->locs, k, (void *)(uintptr_t)id))
		return 0;
	return id;
}

int batch__add(struct batch *b, struct proc *p, pid_t pid, const char *comm,
	       const struct frame *fr, int n)
{
	const int64_t vals[2] = { 1, b->period_ns };

	return batch__add_values(b, p, pid, comm, fr, n, vals, NULL, NULL);
}

int batch__add_values(struct batch *b, struct proc *p, pid_t pid, const char *comm,
		      const struct frame *fr, int n, const int64_t vals[2], const char *key,
		      const char *value)
{
	struct prof_label l[LBL_MAX + 1];
	struct label_set *ls;
	uint32_t nl;
	int k = 0;

	ls = labels_for(b, p, pid, comm);
	if (!ls)
		return -ENOMEM;
	memcpy(l, ls->l, ls->n * sizeof(*l));
	nl = ls->n;
	if (key) {
		l[nl] = (struct prof_label){ .key = profile__intern_str(b->p, key),
					     .str = profile__intern_str(b->p, value) };
		if (l[nl].key == UINT32_MAX || l[nl].str == UINT32_MAX)
			return -ENOMEM;
		nl++;
	}
	b->last_ok = false;
	for (int i = 0; i < n && k < STACK_MAX_FRAMES; i++) {
		uint64_t id = location_for(b, p, pid, &fr[i]);

		if (!id)
			return -ENOMEM;
		b->stack[k++] = id;
	}
	if (profile__add_sample_at(b->p, b->stack, k, l, nl, vals, &b->last_at))
		return -ENOMEM;
	b->last_ok = true;
	b->count++;
	return 0;
}

static struct memo_ent *memo_slot(struct memo_ent *m, size_t cap, uint64_t h)
{
	size_t i = h & (cap - 1);

	while (m[i].h && m[i].h != h)
		i = (i + 1) & (cap - 1);
	return &m[i];
}

void batch__memo_put(struct batch *b, const uint64_t key[2], uint32_t tag)
{
	uint64_t h = key[0] ? key[0] : 1;
	struct memo_ent *e;

	if (!b->last_ok || b->mn >= MEMO_MAX)
		return;
	if (2 * (b->mn + 1) > b->mcap) {
		size_t cap = b->mcap ? 2 * b->mcap : MEMO_FIRST;
		struct memo_ent *m = calloc(cap, sizeof(*m));

		if (!m)
			return;
		for (size_t i = 0; i < b->mcap; i++)
			if (b->memo[i].h)
				*memo_slot(m, cap, b->memo[i].h) = b->memo[i];
		free(b->memo);
		b->memo = m;
		b->mcap = cap;
	}
	e = memo_slot(b->memo, b->mcap, h);
	if (e->h)
		return; /* a record of another check with this hash: the first keeps it */
	*e = (struct memo_ent){ h, key[1], b->last_at, tag };
	b->mn++;
}

bool batch__memo_hit(struct batch *b, const uint64_t key[2], const int64_t vals[2], uint32_t *tag)
{
	struct memo_ent *e;

	if (!b->mn)
		return false;
	e = memo_slot(b->memo, b->mcap, key[0] ? key[0] : 1);
	if (!e->h || e->check != key[1])
		return false;
	for (uint32_t v = 0; v < b->p->nvalues && v < 2; v++)
		b->p->samples[e->at].values[v] += vals[v];
	b->count++;
	*tag = e->tag;
	return true;
}

int batch__take(struct batch *b, int64_t start_ns, int64_t duration_ns, struct profile **out)
{
	struct profile *next = new_profile(b);

	if (!next)
		return -ENOMEM;
	b->p->time_nanos = start_ns;
	b->p->duration_nanos = duration_ns;
	if (b->count) {
		*out = b->p;
	} else {
		*out = NULL;
		profile__free(b->p);
	}
	b->p = next;
	b->count = 0;
	batch__reset_caches(b);
	return 0;
}
