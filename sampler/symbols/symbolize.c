/*
 * symbolize.c - kallsyms, the dso/symtab cache and perf maps.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/util/hmap.h"
#include "sampler/symbols/symbolize.h"
#include "store/util/util.h"

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset into kstrs */
};

struct symbolizer {
	char *debug_root;
	struct ksym *ksyms;
	size_t nksyms;
	char *kstrs;
	struct elf_info vdso;
	bool has_vdso;
	struct hmap dsos;    /* hash(dev, ino) -> struct dso * */
	struct hmap symtabs; /* hash(build id) -> struct symtab * */
	/* symtabs without a build id belong to their dso alone */
	uint64_t hits, misses, nsymbols, nsymtabs;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

static int load_kallsyms(struct symbolizer *s)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	size_t cap = 0, scap = 0, slen = 0;
	char line[512];
	int err = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sp1, *sp2, *name, *end;
		uint64_t addr;
		size_t len;

		addr = strtoull(line, &sp1, 16);
		if (*sp1 != ' ' || !addr)
			continue;
		char t = sp1[1];
		if (t != 't' && t != 'T' && t != 'w' && t != 'W')
			continue;
		sp2 = sp1 + 2;
		if (*sp2 != ' ')
			continue;
		name = sp2 + 1;
		end = name + strcspn(name, " \t\n");
		len = end - name;
		if (s->nksyms == cap) {
			size_t nc = cap ? cap * 2 : 65536;
			struct ksym *n = realloc(s->ksyms, nc * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			s->ksyms = n;
			cap = nc;
		}
		if (slen + len + 1 > scap) {
			size_t nc = scap ? scap * 2 : 1 << 20;
			char *n = realloc(s->kstrs, nc);

			if (!n) {
				err = -ENOMEM;
				break;
			}
			s->kstrs = n;
			scap = nc;
		}
		memcpy(s->kstrs + slen, name, len);
		s->kstrs[slen + len] = 0;
		s->ksyms[s->nksyms].addr = addr;
		s->ksyms[s->nksyms].name = slen;
		s->nksyms++;
		slen += len + 1;
	}
	fclose(f);
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	else
		pr_warn("symbolize: no symbols in /proc/kallsyms (kptr_restrict?)");
	return err;
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

static void symtab__free(struct symtab *t)
{
	if (!t)
		return;
	elfsym__fini(&t->elf);
	free(t);
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
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
	for (size_t i = 0; i < s->symtabs.cap; i++)
		if (s->symtabs.keys[i])
			symtab__free(s->symtabs.vals[i]);
	hmap__fini(&s->dsos);
	hmap__fini(&s->symtabs);
	elfsym__fini(&s->vdso);
	free(s->ksyms);
	free(s->kstrs);
	free(s->debug_root);
	free(s);
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr)
{
	size_t lo = bsearch_u64_upper(s->ksyms, s->nksyms, sizeof(*s->ksyms),
				      offsetof(struct ksym, addr), addr);

	if (!lo)
		return NULL;
	return s->kstrs + s->ksyms[lo - 1].name;
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

/* Opens the file behind a mapping, preferring views that survive deletion
 * and see the process's own mount namespace. */
static int open_mapped(pid_t pid, const char *path, uint64_t start, uint64_t end)
{
	char p[4200];
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, start, end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (path[0] != '/')
		return -ENOENT;
	snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, path);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* Swaps in the symbols of a separate debug file found by build id. */
static void load_debug(struct symbolizer *s, struct symtab *t)
{
	const char *b = t->elf.build_id;
	char p[4200];
	int fd;

	if (t->elf.has_symtab || strlen(b) < 3)
		return;
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", s->debug_root, b, b + 2);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!elfsym__read_debug(fd, &t->elf))
		pr_debug("symbolize: symbols from %s", p);
	close(fd);
}

static void dso_load(struct symbolizer *s, struct dso *d, pid_t pid, uint64_t start,
		     uint64_t end)
{
	struct elf_info hdr;
	struct symtab *t;
	uint64_t bk = 0;
	int fd, err;

	d->tried = true;
	fd = open_mapped(pid, d->path, start, end);
	if (fd < 0) {
		pr_debug("symbolize: cannot open %s of pid %d: %s", d->path, (int)pid, strerror(-fd));
		return;
	}
	/* Headers first: a known build id means the symbols are cached. */
	err = elfsym__read(fd, false, &hdr);
	if (err)
		goto out;
	if (hdr.build_id[0]) {
		bk = hash64(hdr.build_id, strlen(hdr.build_id), 0xb1d);
		bk = bk ? bk : 1;
		t = hmap__get(&s->symtabs, bk);
		if (t) {
			d->tab = t;
			elfsym__fini(&hdr);
			goto out;
		}
	}
	elfsym__fini(&hdr);
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	if (elfsym__read(fd, true, &t->elf)) {
		free(t);
		goto out;
	}
	load_debug(s, t);
	t->has_syms = t->elf.nsyms > 0;
	s->nsymbols += t->elf.nsyms;
	s->nsymtabs++;
	if (bk && hmap__put(&s->symtabs, bk, t)) {
		symtab__free(t);
		goto out;
	}
	d->tab = t;
out:
	close(fd);
}

struct dso *symbolizer__dso(struct symbolizer *s, pid_t pid, uint64_t dev, uint64_t ino,
			    const char *path, uint64_t start, uint64_t end)
{
	uint64_t k = dso_key(dev, ino, path);
	struct dso *d = hmap__get(&s->dsos, k);

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
	if (!d->tried)
		dso_load(s, d, pid, start, end);
	return d;
}

const char *symbolizer__lookup(struct symbolizer *s, struct dso *d, uint64_t off)
{
	const char *name = NULL;
	uint64_t vaddr;

	if (d && d->tab && elfsym__off_to_vaddr(&d->tab->elf, off, &vaddr))
		name = elfsym__lookup(&d->tab->elf, vaddr);
	if (name)
		s->hits++;
	else
		s->misses++;
	return name;
}

void symbolizer__stats(struct symbolizer *s, struct symbolizer_stats *st)
{
	st->dsos = s->dsos.len;
	st->symtabs = s->nsymtabs;
	st->symbols = s->nsymbols;
	st->kernel_symbols = s->nksyms;
	st->hits = s->hits;
	st->misses = s->misses;
}

/* --- perf maps --- */

struct pm_sym {
	uint64_t start, size;
	char *name;
};

struct perfmap {
	struct pm_sym *syms;
	size_t n;
};

static int pm_cmp(const void *a, const void *b)
{
	const struct pm_sym *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* The pid as the process itself knows it (last NSpid field), since a
 * JIT in a container names its map after that. */
static pid_t ns_pid(pid_t pid)
{
	char p[64], line[256];
	pid_t r = pid;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *q = line + 6, *last = NULL;

			for (char *t = strtok(q, " \t\n"); t; t = strtok(NULL, " \t\n"))
				last = t;
			if (last)
				r = atoi(last);
			break;
		}
	}
	fclose(f);
	return r;
}

struct perfmap *perfmap__load(pid_t pid)
{
	char p[128], *line = NULL;
	size_t lcap = 0, cap = 0;
	struct perfmap *m;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/root/tmp/perf-%d.map", (int)pid, (int)ns_pid(pid));
	/* Any user can put a FIFO, a link or a sparse 100 GB file there: a
	 * blocking open or an endless read would stall sampling. Only a
	 * regular file of bounded size is read. */
	{
		struct stat st;
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);

		if (fd < 0)
			return NULL;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (64 << 20) ||
		    !(f = fdopen(fd, "r"))) {
			close(fd);
			return NULL;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	while (getline(&line, &lcap, f) > 0) {
		uint64_t start, size;
		char *e1, *e2, *name;

		start = strtoull(line, &e1, 16);
		if (*e1 != ' ')
			continue;
		size = strtoull(e1 + 1, &e2, 16);
		if (*e2 != ' ')
			continue;
		name = e2 + 1;
		name[strcspn(name, "\n")] = 0;
		if (m->n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct pm_sym *ns = realloc(m->syms, nc * sizeof(*ns));

			if (!ns)
				break;
			m->syms = ns;
			cap = nc;
		}
		m->syms[m->n].start = start;
		m->syms[m->n].size = size;
		m->syms[m->n].name = strdup(name);
		if (!m->syms[m->n].name)
			break;
		m->n++;
	}
	if (m->n)
		qsort(m->syms, m->n, sizeof(*m->syms), pm_cmp);
out:
	free(line);
	fclose(f);
	return m;
}

const char *perfmap__lookup(const struct perfmap *m, uint64_t addr)
{
	size_t lo;

	if (!m)
		return NULL;
	lo = bsearch_u64_upper(m->syms, m->n, sizeof(*m->syms), offsetof(struct pm_sym, start),
			       addr);
	/* Later entries win (a JIT may reuse addresses): scan back briefly. */
	for (size_t i = lo; i > 0 && lo - i < 16; i--) {
		const struct pm_sym *s = &m->syms[i - 1];

		if (addr >= s->start && addr < s->start + s->size)
			return s->name;
	}
	return NULL;
}

void perfmap__free(struct perfmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->syms[i].name);
	free(m->syms);
	free(m);
}
