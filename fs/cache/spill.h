/*
 * spill.h - rendered bytes kept in an unlinked file, not in the heap.
 *
 * The render cache holds bytes a reader will want again soon. Held in the
 * heap they are the daemon's resident memory, pinned until evicted, on
 * top of the copy the kernel keeps in its page cache for the mount. Held
 * in a file they are page cache: the kernel keeps them while memory is
 * plentiful, writes them out and drops them when it is not, and they never
 * count in the daemon's RSS. The file lives in the store's directory (a
 * disk, not /tmp, which may be tmpfs: memory again) and has no name.
 */
#ifndef PROFFS_SPILL_H
#define PROFFS_SPILL_H

#include <stddef.h>
#include <stdint.h>

struct spill;
struct spill_file;

/* Where one put's bytes are: fd at [off, off + len). */
struct spill_ext {
	struct spill_file *f;
	uint64_t off;
	size_t len;
};

/*
 * Opens a spill in directory dir (an O_TMPFILE there). Returns 0 or -errno
 * (EOPNOTSUPP: the file system has no O_TMPFILE; EROFS: a read-only store).
 * The caller then keeps its bytes in the heap.
 */
int spill__open(struct spill **out, const char *dir);
/* spill__open with files rotated past rotate bytes (tests: small ones). */
int spill__open_rotate(struct spill **out, const char *dir, uint64_t rotate);
/* Files open (the current one and retired ones with live extents). */
unsigned spill__files(struct spill *s);
/* Closes every file; extents still held are void after it. NULL: no-op. */
void spill__close(struct spill *s);
/* Writes len bytes of data to the spill; *ext says where. Thread-safe.
 * Returns 0 or -errno (ENOSPC: a full disk; the caller keeps the bytes). */
int spill__put(struct spill *s, const void *data, size_t len, struct spill_ext *ext);
/* Gives an extent's blocks back (hole punch). Thread-safe. */
void spill__free(struct spill *s, struct spill_ext *ext);
/* The descriptor to pread an extent's bytes from, at ext->off. */
int spill__fd(const struct spill_ext *ext);
/* Reads an extent's ext->len bytes into dst (the caller's, room for them).
 * Returns 0 or -errno (-EIO: the file ended short). */
int spill__read(const struct spill_ext *ext, void *dst);
/* What an extent of len bytes holds of the file and the page cache (its
 * whole pages: extents start on page boundaries). */
uint64_t spill__extent_bytes(size_t len);
/* Bytes of live extents (page-rounded: what the disk and page cache hold). */
uint64_t spill__bytes(struct spill *s);

#endif
