/*
 * spill.c - rendered bytes in an unlinked file (see spill.h).
 *
 * Appends only: each put takes the next page-aligned extent of the current
 * file under the lock and writes it outside the lock, so puts of several
 * FUSE threads run side by side. A freed extent's blocks go back to the
 * file system at once (FALLOC_FL_PUNCH_HOLE), so the disk holds only live
 * extents; what grows is the logical size, and past SPILL_ROTATE a fresh
 * file takes the appends. A retired file is closed when its last extent is
 * freed (an entry pinned by a file a client keeps open may hold one for a
 * while: its holes cost nothing).
 */
#include "fs/cache/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPILL_PAGE 4096u
#define SPILL_ROTATE (256ull << 20)

struct spill_file {
	int fd;
	uint64_t end;  /* next free offset */
	unsigned live; /* extents not yet freed */
	bool retired;  /* no more appends */
	struct spill_file *next;
};

struct spill {
	pthread_mutex_t lock;
	int dirfd;
	struct spill_file *cur, *files;
	uint64_t bytes, rotate;
};

uint64_t spill__extent_bytes(size_t len)
{
	return ((uint64_t)len + SPILL_PAGE - 1) / SPILL_PAGE * SPILL_PAGE;
}

static struct spill_file *file__new(struct spill *s)
{
	struct spill_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = openat(s->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (f->fd < 0) {
		int err = errno;

		free(f);
		errno = err;
		return NULL;
	}
	f->next = s->files;
	s->files = f;
	return f;
}

/* s->lock held. */
static void file__free(struct spill *s, struct spill_file *f)
{
	struct spill_file **p = &s->files;

	while (*p && *p != f)
		p = &(*p)->next;
	if (*p)
		*p = f->next;
	close(f->fd);
	free(f);
}

int spill__open(struct spill **out, const char *dir)
{
	return spill__open_rotate(out, dir, SPILL_ROTATE);
}

int spill__open_rotate(struct spill **out, const char *dir, uint64_t rotate)
{
	struct spill *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->rotate = rotate;
	pthread_mutex_init(&s->lock, NULL);
	s->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		err = -errno;
		goto err_free;
	}
	/* A first file now: a store on a file system without O_TMPFILE, or
	 * read-only, is told at start, not at the first render. */
	s->cur = file__new(s);
	if (!s->cur) {
		err = -errno;
		goto err_close;
	}
	*out = s;
	return 0;

err_close:
	close(s->dirfd);
err_free:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}

void spill__close(struct spill *s)
{
	if (!s)
		return;
	while (s->files)
		file__free(s, s->files);
	close(s->dirfd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* s->lock held. */
static void release(struct spill *s, struct spill_ext *ext)
{
	struct spill_file *f = ext->f;

	if (!f)
		return;
	/* Without hole punching (a file system that lacks it) the blocks
	 * stay until the file is closed: rotation bounds that. */
	(void)fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)ext->off,
			(off_t)spill__extent_bytes(ext->len));
	s->bytes -= spill__extent_bytes(ext->len);
	if (--f->live == 0 && f->retired)
		file__free(s, f);
	ext->f = NULL;
}

int spill__put(struct spill *s, const void *data, size_t len, struct spill_ext *ext)
{
	const char *p = data;
	size_t done = 0;
	int err = 0;

	memset(ext, 0, sizeof(*ext));
	pthread_mutex_lock(&s->lock);
	if (!s->cur || (s->cur->end && s->cur->end + spill__extent_bytes(len) > s->rotate)) {
		struct spill_file *f = file__new(s);

		if (!f) {
			err = -errno;
			pthread_mutex_unlock(&s->lock);
			return err;
		}
		if (s->cur) {
			s->cur->retired = true;
			if (!s->cur->live)
				file__free(s, s->cur);
		}
		s->cur = f;
	}
	ext->f = s->cur;
	ext->off = s->cur->end;
	ext->len = len;
	s->cur->end += spill__extent_bytes(len);
	s->cur->live++;
	s->bytes += spill__extent_bytes(len);
	pthread_mutex_unlock(&s->lock);

	while (done < len) {
		ssize_t n = pwrite(ext->f->fd, p + done, len - done, (off_t)(ext->off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (err) {
		pthread_mutex_lock(&s->lock);
		release(s, ext);
		pthread_mutex_unlock(&s->lock);
	}
	return err;
}

void spill__free(struct spill *s, struct spill_ext *ext)
{
	if (!s || !ext->f)
		return;
	pthread_mutex_lock(&s->lock);
	release(s, ext);
	pthread_mutex_unlock(&s->lock);
}

int spill__fd(const struct spill_ext *ext)
{
	return ext->f ? ext->f->fd : -1;
}

int spill__read(const struct spill_ext *ext, void *dst)
{
	char *d = dst;
	size_t done = 0;

	while (done < ext->len) {
		ssize_t n = pread(ext->f->fd, d + done, ext->len - done, (off_t)(ext->off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

unsigned spill__files(struct spill *s)
{
	unsigned n = 0;

	pthread_mutex_lock(&s->lock);
	for (struct spill_file *f = s->files; f; f = f->next)
		n++;
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t spill__bytes(struct spill *s)
{
	uint64_t b;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	b = s->bytes;
	pthread_mutex_unlock(&s->lock);
	return b;
}
