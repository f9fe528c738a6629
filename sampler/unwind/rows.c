/*
 * rows.c - the unwinder's row space in BPF: free extents of rows (first
 * fit) and the chunks (arrays of rows, created while a table has rows in
 * them, mapped in place in the reserved space). u->lock held throughout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "sampler/unwind/unwinder_int.h"
#include "store/util/util.h"

/* Inserts the free extent (base, n) at position i. 0 or -ENOMEM. */
static int extent_insert(struct unwinder *u, size_t i, uint32_t base, uint32_t n)
{
	if (u->nfree == u->capfree) {
		size_t nc = u->capfree ? u->capfree * 2 : 64;
		struct extent *ne = realloc(u->free, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		u->free = ne;
		u->capfree = nc;
	}
	memmove(&u->free[i + 1], &u->free[i], (u->nfree - i) * sizeof(*u->free));
	u->free[i] = (struct extent){ base, n };
	u->nfree++;
	return 0;
}

/* First fit, lowest rows first (so tables pack into few chunks), where a
 * table of up to a chunk stays inside one and a bigger one starts a
 * chunk (the walk's search relies on both: bpf/unwind.h). */
int unw_extent_alloc(struct unwinder *u, uint32_t n, uint32_t *base)
{
	for (size_t i = 0; i < u->nfree; i++) {
		struct extent *f = &u->free[i];
		uint64_t s = f->base, end = (uint64_t)f->base + f->n;

		if (n <= UNW_CHUNK_ROWS) {
			if (s >> UNW_CHUNK_SHIFT != (s + n - 1) >> UNW_CHUNK_SHIFT)
				s = (s | (UNW_CHUNK_ROWS - 1)) + 1;
		} else {
			s = (s + UNW_CHUNK_ROWS - 1) & ~(uint64_t)(UNW_CHUNK_ROWS - 1);
		}
		if (s + n > end)
			continue;
		if (s + n < end && s > f->base) {
			/* the middle of the extent: its tail becomes another */
			if (extent_insert(u, i + 1, s + n, end - s - n))
				return -ENOMEM;
			f = &u->free[i];
			f->n = s - f->base;
		} else if (s > f->base) {
			f->n = s - f->base;
		} else {
			f->base += n;
			f->n -= n;
			if (!f->n) {
				memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
				u->nfree--;
			}
		}
		*base = s;
		return 0;
	}
	return -ENOSPC;
}

int unw_extent_free(struct unwinder *u, uint32_t base, uint32_t n)
{
	size_t i = 0;

	if (!n)
		return 0;
	while (i < u->nfree && u->free[i].base < base)
		i++;
	/* merge with the neighbours */
	if (i > 0 && u->free[i - 1].base + u->free[i - 1].n == base) {
		u->free[i - 1].n += n;
		if (i < u->nfree && base + n == u->free[i].base) {
			u->free[i - 1].n += u->free[i].n;
			memmove(&u->free[i], &u->free[i + 1], (u->nfree - i - 1) * sizeof(*u->free));
			u->nfree--;
		}
		return 0;
	}
	if (i < u->nfree && base + n == u->free[i].base) {
		u->free[i].base = base;
		u->free[i].n += n;
		return 0;
	}
	return extent_insert(u, i, base, n); /* -ENOMEM leaks the rows until restart */
}

/* --- row chunks (lock held) --- */

int unwinder__chunk_create(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unw_chunk", sizeof(__u32), sizeof(struct unw_row),
				UNW_CHUNK_ROWS, &o);

	return fd < 0 ? -errno : fd;
}

_Static_assert(sizeof(struct unw_row) == 8, "bpf/unwind_walk.h types a chunk's values as __u64");

/* Puts reserved address space back where chunk c was mapped. */
static void chunk_unmap(struct unwinder *u, uint32_t c)
{
	mmap((char *)u->rows + c * CHUNK_BYTES, CHUNK_BYTES, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* Creates chunk c, maps it at its place in the row space and hands it to
 * the walk. Creating a map takes CAP_BPF, which the daemon gives up once
 * it is up: then the helper that kept it makes one (o.chunk_fd). */
static int chunk_add(struct unwinder *u, uint32_t c)
{
	int fd = unwinder__chunk_create(), err;

	if ((fd == -EPERM || fd == -EACCES) && u->o.chunk_fd)
		fd = u->o.chunk_fd(u->o.chunk_ctx);
	if (fd < 0)
		return fd;
	if (mmap((char *)u->rows + c * CHUNK_BYTES, CHUNK_BYTES, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	if (bpf_map_update_elem(u->chunks_fd, &c, &fd, BPF_ANY)) {
		err = -errno;
		goto err_unmap;
	}
	u->chunk_fd[c] = fd;
	return 0;
err_unmap:
	chunk_unmap(u, c);
err_close:
	close(fd);
	return err;
}

/* Gives chunk c back. A walk that still holds it keeps it alive (the
 * kernel frees it after an RCU grace period); its file's entry in
 * unw_files is gone already, so no new walk looks for it. */
static void chunk_drop(struct unwinder *u, uint32_t c)
{
	bpf_map_delete_elem(u->chunks_fd, &c);
	chunk_unmap(u, c);
	close(u->chunk_fd[c]);
	u->chunk_fd[c] = -1;
}

/* Makes sure the chunks under rows [base, base + n) exist. 0 or -errno. */
int unw_chunks_cover(struct unwinder *u, uint32_t base, uint32_t n)
{
	for (uint32_t c = base >> UNW_CHUNK_SHIFT; c <= (base + n - 1) >> UNW_CHUNK_SHIFT; c++) {
		int err = u->chunk_fd[c] < 0 ? chunk_add(u, c) : 0;

		if (err)
			return err;
	}
	return 0;
}

/* Drops every chunk no table has a row in. */
void unw_chunks_trim(struct unwinder *u)
{
	for (size_t i = 0; i < u->nfree; i++) {
		uint64_t c = ((uint64_t)u->free[i].base + UNW_CHUNK_ROWS - 1) >> UNW_CHUNK_SHIFT;
		uint64_t end = ((uint64_t)u->free[i].base + u->free[i].n) >> UNW_CHUNK_SHIFT;

		for (; c < end; c++)
			if (u->chunk_fd[c] >= 0)
				chunk_drop(u, c);
	}
}
