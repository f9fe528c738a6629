/*
 * perfmap.c - parsing perf maps (see perfmap.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/safefile.h"
#include "sampler/symbols/perfmap.h"
#include "store/util/util.h"

struct pm_sym {
	uint64_t start, size;
	uint32_t name; /* offset into buf */
	uint32_t seq;  /* line order: the later of two equal starts wins */
};

struct perfmap {
	char *buf; /* the file's bytes; names are NUL-terminated in place */
	size_t len;
	struct pm_sym *syms;
	size_t n;
};

static int pm_cmp(const void *a, const void *b)
{
	const struct pm_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A hex number of at most 16 digits (optional 0x) ending at a space. */
static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	int nd = 0, d;

	if (end - q >= 2 && q[0] == '0' && (q[1] | 0x20) == 'x')
		q += 2;
	*v = 0;
	while (q < end && (d = hexval((unsigned char)*q)) >= 0) {
		if (++nd > 16)
			return false;
		*v = *v << 4 | (uint64_t)d;
		q++;
	}
	if (!nd || q == end || *q != ' ')
		return false;
	*p = q + 1;
	return true;
}

int perfmap__parse(char *buf, size_t len, int64_t deadline_ns, struct perfmap **out,
		   size_t *long_lines)
{
	struct perfmap *m = calloc(1, sizeof(*m));
	size_t cap = 0, nlong = 0, lines = 0;
	char *p = buf, *end = buf + len;
	int err = 0;

	if (!m) {
		free(buf);
		return -ENOMEM;
	}
	m->buf = buf;
	m->len = len;
	/* Offsets are 32-bit; the size cap keeps maps far below 4 GiB. */
	if (len > UINT32_MAX) {
		err = -EFBIG;
		goto out;
	}
	while (p < end) {
		char *nl = memchr(p, '\n', end - p), *le = nl ? nl : end;
		const char *q = p;
		uint64_t start, size;
		char *name;

		if ((++lines & 4095) == 0 && deadline_ns && now_mono_ns() > deadline_ns) {
			err = -ETIMEDOUT;
			break;
		}
		if (le - p > SF_PERFMAP_LINE_MAX) {
			nlong++;
			goto next;
		}
		if (!parse_hex(&q, le, &start) || !parse_hex(&q, le, &size) || q >= le)
			goto next;
		name = (char *)q;
		*le = 0; /* the '\n' (or the NUL past the end a reader leaves) */
		for (char *c = name; c < le; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		if (m->n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct pm_sym *ns;

			if (cap >= PERFMAP_MAX_SYMS) {
				err = -EFBIG;
				break;
			}
			ns = realloc(m->syms, nc * sizeof(*ns));
			if (!ns) {
				err = -ENOMEM;
				break;
			}
			m->syms = ns;
			cap = nc;
		}
		m->syms[m->n].start = start;
		m->syms[m->n].size = size;
		m->syms[m->n].name = name - buf;
		m->syms[m->n].seq = m->n;
		m->n++;
next:
		if (!nl)
			break;
		p = nl + 1;
	}
out:
	if (long_lines)
		*long_lines = nlong;
	if (err) {
		perfmap__free(m);
		return err;
	}
	if (m->n)
		qsort(m->syms, m->n, sizeof(*m->syms), pm_cmp);
	*out = m;
	return 0;
}

size_t perfmap__bytes(const struct perfmap *m)
{
	return m ? sizeof(*m) + m->len + m->n * sizeof(*m->syms) : 0;
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

		if (addr >= s->start && addr - s->start < s->size)
			return m->buf + s->name;
	}
	return NULL;
}

void perfmap__free(struct perfmap *m)
{
	if (!m)
		return;
	free(m->buf);
	free(m->syms);
	free(m);
}
