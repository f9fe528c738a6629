/*
 * goline.c - Go lines from .gopclntab through a map (goline.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store/util/busguard.h"
#include "sampler/symbols/gopclntab.h"
#include "sampler/symbols/goline.h"
#include "store/util/hmap.h"

/* Distinct file names kept at most: a table naming more is damaged or
 * hostile (Go's own toolchain has ~3,000 files; a big service ~20,000). */
#define GOLINE_MAX_FILES 65536

struct goline {
	void *map;            /* from the page below the table's start */
	size_t map_len;
	const uint8_t *tab;   /* the table, inside map */
	size_t n;
	uint64_t text;
	struct hmap files;    /* table offset + 1 -> malloc'd path */
};

struct goline *goline__open(int fd, uint64_t off, uint64_t size, uint64_t text)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t lo = off & ~((uint64_t)pg - 1);
	struct goline *g;

	if (!size || size > SIZE_MAX - (off - lo)) {
		errno = EINVAL;
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->map_len = (size_t)(size + (off - lo));
	g->map = mmap(NULL, g->map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)lo);
	if (g->map == MAP_FAILED) {
		free(g);
		return NULL;
	}
	g->tab = (const uint8_t *)g->map + (off - lo);
	g->n = (size_t)size;
	g->text = text;
	return g;
}

struct look_ctx {
	struct goline *g;
	uint64_t pc;
	const char *file;
	int line;
};

/* Under busguard: every read of the map happens here. */
static int look_now(void *arg)
{
	struct look_ctx *c = arg;
	struct goline *g = c->g;
	uint32_t fo;
	int32_t ln;
	char *path;
	int err = gopclntab__line(g->tab, g->n, g->text, c->pc, &fo, &ln);

	if (err)
		return err;
	path = hmap__get(&g->files, (uint64_t)fo + 1);
	if (!path) {
		if (g->files.len >= GOLINE_MAX_FILES)
			return -ENOSPC;
		path = strdup((const char *)g->tab + fo); /* NUL-terminated in the table (checked) */
		if (!path)
			return -ENOMEM;
		if (hmap__put(&g->files, (uint64_t)fo + 1, path)) {
			free(path);
			return -ENOMEM;
		}
	}
	c->file = path;
	c->line = ln;
	return 0;
}

bool goline__lookup(struct goline *g, uint64_t vaddr, const char **file, int *line)
{
	struct look_ctx c = { g, vaddr, NULL, 0 };

	if (!g || busguard__run(look_now, &c))
		return false;
	*file = c.file;
	*line = c.line;
	return true;
}

void goline__unmap(struct goline *g)
{
	if (g)
		madvise(g->map, g->map_len, MADV_DONTNEED);
}

void goline__close(struct goline *g)
{
	if (!g)
		return;
	hmap__drain(&g->files, hmap__free_val, NULL);
	munmap(g->map, g->map_len);
	free(g);
}
