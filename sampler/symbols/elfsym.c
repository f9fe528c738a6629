/*
 * elfsym.c - reading build ids, load segments and function symbols with
 * libelf. Symbols are copied out so the file can be closed at once: the
 * symbol cache outlives the processes (and their /proc/PID/map_files).
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/symbols/elfsym.h"
#include "sampler/symbols/gopclntab.h"
#include "store/util/util.h"

static void hex(const uint8_t *p, size_t n, char *out, size_t outsz)
{
	static const char d[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n && 2 * i + 2 < outsz; i++) {
		out[2 * i] = d[p[i] >> 4];
		out[2 * i + 1] = d[p[i] & 15];
	}
	out[2 * i] = 0;
}

static void read_build_id(Elf *elf, struct elf_info *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4)) {
				hex((uint8_t *)d->d_buf + doff, nh.n_descsz, e->build_id,
				    sizeof(e->build_id));
				return;
			}
		}
	}
}

static int read_loads(Elf *elf, struct elf_info *e)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	e->loads = calloc(n ? n : 1, sizeof(*e->loads));
	if (!e->loads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		e->loads[e->nloads].vaddr = ph.p_vaddr;
		e->loads[e->nloads].off = ph.p_offset;
		e->loads[e->nloads].filesz = ph.p_filesz;
		e->nloads++;
	}
	return 0;
}

/*
 * Aliases share an address; the one the sort puts first names it. A sized
 * symbol first (an unsized one may be a label that covers nothing), then
 * the name the library exports over its local aliases: glibc's debug file
 * has __libc_start_main_alias_2, _impl and two versioned
 * __libc_start_main at one address, and perf and gdb say
 * __libc_start_main. Then a default version (@@ or none) over an old one
 * (@), then the name itself, so the choice never depends on qsort.
 */
static int sym_rank(unsigned char bind, const char *name)
{
	const char *at = strchr(name, '@');
	int r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;

	return r * 2 + (at && at[1] != '@');
}

static int sym_cmp(const void *a, const void *b, void *strs)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp((const char *)strs + x->name, (const char *)strs + y->name);
}

/* Collects FUNC symbols of the section of type `type`. Returns the count
 * added (>= 0) or -errno. */
static long read_syms(Elf *elf, Elf64_Word type, struct elf_sym **syms, size_t *nsyms,
		      char **strs, size_t *strs_len, bool *corrupt)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t cap = 0, scap = 0, fsize = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			break;
	}
	if (!scn || sh.sh_entsize == 0)
		return 0;
	/* A table the file cannot hold (a header claiming more): skipped,
	 * never read past the file's end. */
	elf_rawfile(elf, &fsize);
	if (sh.sh_entsize < sizeof(Elf32_Sym) || sh.sh_offset > fsize ||
	    sh.sh_size > fsize - sh.sh_offset) {
		*corrupt = true;
		return 0;
	}

	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh.sh_size / sh.sh_entsize, i, added = 0;

	if (!d) {
		*corrupt = true;
		return 0;
	}
	if (n > ELFSYM_MAX_SYMS)
		return -EFBIG;
	for (i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		size_t len;

		if (!gelf_getsym(d, i, &s))
			continue;
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC)
			continue;
		if (s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		len = strnlen(name, 4096) + 1;
		/* A debug file's .symtab names versioned definitions
		 * "sym@@GLIBC_2.34": the version is not part of the name. */
		{
			const char *at = memchr(name, '@', len - 1);

			if (at && at > name)
				len = (size_t)(at - name) + 1;
		}
		if (*strs_len + len > ELFSYM_MAX_STRS)
			return -EFBIG;
		if (*nsyms == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct elf_sym *ns = realloc(*syms, nc * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			*syms = ns;
			cap = nc;
		}
		if (*strs_len + len > scap) {
			size_t nc = scap ? scap * 2 : 4096;
			char *ns;

			while (nc < *strs_len + len)
				nc *= 2;
			ns = realloc(*strs, nc);
			if (!ns)
				return -ENOMEM;
			*strs = ns;
			scap = nc;
		}
		memcpy(*strs + *strs_len, name, len - 1);
		(*strs)[*strs_len + len - 1] = 0;
		(*syms)[*nsyms].addr = s.st_value;
		(*syms)[*nsyms].size = s.st_size;
		(*syms)[*nsyms].name = *strs_len;
		(*syms)[*nsyms].rank = (uint8_t)sym_rank(GELF_ST_BIND(s.st_info), name);
		*strs_len += len;
		(*nsyms)++;
		added++;
	}
	return added;
}

/* Go's names (gopclntab.h) gathered into a table like read_syms's. */
struct go_syms {
	struct elf_sym *syms;
	char *strs;
	size_t nsyms, cap, strs_len, scap;
};

static int go_sym(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t n)
{
	struct go_syms *g = ctx;

	if (g->nsyms >= ELFSYM_MAX_SYMS || g->strs_len + n + 1 > ELFSYM_MAX_STRS)
		return -EFBIG;
	if (g->nsyms == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 1024;
		struct elf_sym *ns = realloc(g->syms, nc * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		g->syms = ns;
		g->cap = nc;
	}
	if (g->strs_len + n + 1 > g->scap) {
		size_t nc = g->scap ? g->scap * 2 : 65536;
		char *ns;

		while (nc < g->strs_len + n + 1)
			nc *= 2;
		ns = realloc(g->strs, nc);
		if (!ns)
			return -ENOMEM;
		g->strs = ns;
		g->scap = nc;
	}
	memcpy(g->strs + g->strs_len, name, n);
	g->strs[g->strs_len + n] = 0;
	g->syms[g->nsyms++] = (struct elf_sym){ .addr = entry, .size = end - entry, .name = (uint32_t)g->strs_len };
	g->strs_len += n + 1;
	return 0;
}

/* A Go binary without .symtab: its functions from .gopclntab. Returns
 * the count (0: not Go), or -errno (e->go_refused set for a table we do
 * not read: the file keeps what it had). */
static long read_go(Elf *elf, struct elf_info *e, struct go_syms *g)
{
	const uint8_t *tab;
	uint64_t text, off;
	size_t n;
	long r;

	if (gopclntab__section(elf, &tab, &n, &text, &off))
		return 0;
	e->go_layout = gopclntab__layout(tab, n);
	r = gopclntab__walk(tab, n, text, go_sym, g);
	if (r < 0) {
		e->go_layout = NULL;
		e->go_refused = true;
	} else if (r > 0) {
		e->go_off = off;
		e->go_size = n;
		e->go_text = text;
	}
	return r;
}

static int load_syms(Elf *elf, struct elf_info *e, bool require_symtab)
{
	struct elf_sym *syms = NULL;
	char *strs = NULL;
	size_t nsyms = 0, strs_len = 0;
	long n;
	bool symtab = true;

	n = read_syms(elf, SHT_SYMTAB, &syms, &nsyms, &strs, &strs_len, &e->corrupt);
	if (n == 0 && !require_symtab) {
		symtab = false;
		n = read_syms(elf, SHT_DYNSYM, &syms, &nsyms, &strs, &strs_len, &e->corrupt);
	}
	if (n < 0 || (require_symtab && n == 0)) {
		free(syms);
		free(strs);
		return n < 0 ? (int)n : -ENOENT;
	}
	/* A Go binary names itself, as Go's own tracebacks and profiles do
	 * (its .symtab, if any, says runtime.goexit.abi0 where Go says
	 * runtime.goexit; its .dynsym holds only what cgo exports). A table
	 * we cannot read leaves what the ELF tables gave. */
	if (!require_symtab) {
		struct go_syms g = { 0 };
		long ng = read_go(elf, e, &g);

		if (ng > 0) {
			free(syms);
			free(strs);
			syms = g.syms;
			strs = g.strs;
			nsyms = g.nsyms;
			strs_len = g.strs_len;
			n = ng;
			symtab = true; /* names as good as a .symtab's */
		} else {
			free(g.syms);
			free(g.strs);
		}
	}
	if (nsyms)
		qsort_r(syms, nsyms, sizeof(*syms), sym_cmp, strs);
	free(e->syms);
	free(e->strs);
	e->syms = syms;
	e->nsyms = nsyms;
	e->strs = strs;
	e->strs_len = strs_len;
	e->has_symtab = symtab && n > 0;
	return 0;
}

static int read_elf(Elf *elf, bool want_syms, struct elf_info *e)
{
	size_t shnum;
	int err;

	memset(e, 0, sizeof(*e));
	if (!elf)
		return -ENOEXEC;
	/* Every section is walked to find notes and tables: a header that
	 * claims millions is not an executable we can use. */
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrnum(elf, &shnum) || shnum > (1u << 16)) {
		err = -ENOEXEC;
		goto out;
	}
	read_build_id(elf, e);
	err = read_loads(elf, e);
	if (err)
		goto out;
	if (want_syms)
		err = load_syms(elf, e, false);
out:
	elf_end(elf);
	if (err)
		elfsym__fini(e);
	return err;
}

int elfsym__read(int fd, bool want_syms, struct elf_info *e)
{
	elf_version(EV_CURRENT);
	return read_elf(elf_begin(fd, ELF_C_READ_MMAP, NULL), want_syms, e);
}

int elfsym__read_mem(const void *image, size_t size, struct elf_info *e)
{
	elf_version(EV_CURRENT);
	return read_elf(elf_memory((char *)image, size), true, e);
}

int elfsym__read_debug(int fd, struct elf_info *e)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	err = elf_kind(elf) == ELF_K_ELF ? load_syms(elf, e, true) : -ENOEXEC;
	elf_end(elf);
	return err;
}

bool elfsym__off_to_vaddr(const struct elf_info *e, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < e->nloads; i++) {
		const struct elf_load *l = &e->loads[i];

		if (off >= l->off && off < l->off + l->filesz) {
			*vaddr = off - l->off + l->vaddr;
			return true;
		}
	}
	return false;
}

const char *elfsym__lookup(const struct elf_info *e, uint64_t vaddr)
{
	/* Last symbol with addr <= vaddr. */
	size_t lo = bsearch_u64_upper(e->syms, e->nsyms, sizeof(*e->syms),
				      offsetof(struct elf_sym, addr), vaddr);

	if (!lo)
		return NULL;
	/* Aliases share an address; sorting put the one to show first. */
	size_t i = lo - 1;
	while (i > 0 && e->syms[i - 1].addr == e->syms[i].addr)
		i--;
	const struct elf_sym *s = &e->syms[i];
	/* A sized symbol that ends before vaddr does not cover it (a gap,
	 * or code the table does not describe). */
	if (s->size && vaddr >= s->addr + s->size)
		return NULL;
	return e->strs + s->name;
}

const struct elf_sym *elfsym__find(const struct elf_info *e, const char *name)
{
	for (size_t i = 0; i < e->nsyms; i++)
		if (e->syms[i].name < e->strs_len && !strcmp(e->strs + e->syms[i].name, name))
			return &e->syms[i];
	return NULL;
}

void elfsym__fini(struct elf_info *e)
{
	free(e->loads);
	free(e->syms);
	free(e->strs);
	memset(e, 0, sizeof(*e));
}

size_t elfsym__want(Elf *elf, uint64_t fsize, unsigned type, bool zero_ok, struct elfsym_want *w, size_t nw)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t n;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			break;
	if (!scn || sh.sh_entsize < sizeof(Elf64_Sym) || sh.sh_offset > fsize || sh.sh_size > fsize - sh.sh_offset)
		return 0;
	d = elf_getdata(scn, NULL);
	n = sh.sh_size / sh.sh_entsize;
	if (!d || n > ELFSYM_MAX_SYMS)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || (!s.st_value && !zero_ok))
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		for (size_t k = 0; name && k < nw; k++)
			if (!w[k].found && !strcmp(name, w[k].name))
				w[k] = (struct elfsym_want){ w[k].name, s.st_value, s.st_size, i,
							     GELF_ST_TYPE(s.st_info), true };
	}
	return elf_ndxscn(scn);
}

int elf_img__open(int fd, struct elf_img *im)
{
	struct stat st;
	GElf_Ehdr eh;
	int err;

	memset(im, 0, sizeof(*im));
	im->fd = fd;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	im->fsize = (uint64_t)st.st_size;
	err = elfsym__read(fd, false, &im->e);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	im->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!im->elf || elf_kind(im->elf) != ELF_K_ELF || !gelf_getehdr(im->elf, &eh))
		err = -ENOEXEC;
	else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		err = -EOPNOTSUPP;
	if (err)
		elf_img__close(im);
	else
		im->machine = eh.e_machine;
	return err;
}

void elf_img__close(struct elf_img *im)
{
	if (im->elf)
		elf_end(im->elf);
	elfsym__fini(&im->e);
	memset(im, 0, sizeof(*im));
}

bool elf_img__off(const struct elf_img *im, uint64_t vaddr, uint64_t n, uint64_t *off)
{
	for (size_t i = 0; i < im->e.nloads; i++) {
		const struct elf_load *l = &im->e.loads[i];

		if (vaddr >= l->vaddr && vaddr - l->vaddr <= l->filesz && n <= l->filesz - (vaddr - l->vaddr)) {
			*off = l->off + (vaddr - l->vaddr);
			return *off <= im->fsize && n <= im->fsize - *off;
		}
	}
	return false;
}

int elf_img__read(const struct elf_img *im, uint64_t vaddr, void *buf, size_t n)
{
	uint64_t off;

	if (!elf_img__off(im, vaddr, n, &off))
		return -EINVAL;
	return pread(im->fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -EINVAL;
}
