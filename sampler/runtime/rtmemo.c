/*
 * rtmemo.c - a runtime record's named frames, kept (rtmemo.h).
 *
 * Records are direct-mapped by their first hash and checked by the
 * second; their frames lie in one array in the order they were put, their
 * strings in one text area, each string once (an open-addressed set of
 * text offsets). Nothing is freed one by one: a record put in the slot of
 * another leaves the other's frames unused until the whole memo is
 * emptied, which rt_memo__trim does past three quarters of any part.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/runtime/rtmemo.h"
#include "store/util/util.h"

#define SLOTS 1024u
#define FRAMES 4096u
#define TEXT (96u << 10)
#define STRS 4096u /* string set: offsets + 1, 0 empty */

struct ent {
	uint64_t key, check;
	uint32_t first, n; /* frames [first, first + n); n == 0: empty */
};

struct mframe {
	uint64_t addr;
	uint32_t name, sysname, file; /* text offsets */
	int32_t line, start_line;
};

struct rt_memo {
	struct ent ent[SLOTS];
	struct mframe fr[FRAMES];
	uint32_t strs[STRS];
	uint32_t nfr, ntext, nstrs;
	char text[TEXT];
};

struct rt_memo *rt_memo__new(void)
{
	struct rt_memo *m = calloc(1, sizeof(*m));

	if (!m)
		errno = ENOMEM;
	return m;
}

void rt_memo__free(struct rt_memo *m)
{
	free(m);
}

static void empty(struct rt_memo *m)
{
	memset(m->ent, 0, sizeof(m->ent));
	memset(m->strs, 0, sizeof(m->strs));
	m->nfr = m->ntext = m->nstrs = 0;
}

void rt_memo__trim(struct rt_memo *m)
{
	if (m && (m->nfr > FRAMES / 4 * 3 || m->ntext > TEXT / 4 * 3 || m->nstrs > STRS / 4 * 3))
		empty(m);
}

/* s's offset in the text, put there if new; UINT32_MAX when full. */
static uint32_t intern(struct rt_memo *m, const char *s)
{
	size_t len = strlen(s) + 1;
	uint32_t i = (uint32_t)hash64(s, len - 1, 0x5e7) & (STRS - 1);

	for (; m->strs[i]; i = (i + 1) & (STRS - 1))
		if (!strcmp(m->text + m->strs[i] - 1, s))
			return m->strs[i] - 1;
	if (m->nstrs + 1 >= STRS || m->ntext + len > TEXT)
		return UINT32_MAX;
	memcpy(m->text + m->ntext, s, len);
	m->strs[i] = m->ntext + 1;
	m->nstrs++;
	m->ntext += (uint32_t)len;
	return m->strs[i] - 1;
}

int rt_memo__get(struct rt_memo *m, const uint64_t key[2], struct frame *out, int max)
{
	const struct ent *e = &m->ent[key[0] & (SLOTS - 1)];
	int n;

	if (!e->n || e->key != key[0] || e->check != key[1])
		return -1;
	n = (int)e->n < max ? (int)e->n : max;
	for (int i = 0; i < n; i++) {
		const struct mframe *f = &m->fr[e->first + (uint32_t)i];

		memset(&out[i], 0, sizeof(out[i]));
		out[i].addr = f->addr;
		out[i].name = m->text + f->name;
		out[i].sysname = m->text + f->sysname;
		out[i].file = m->text + f->file;
		out[i].line = f->line;
		out[i].start_line = f->start_line;
		out[i].rt = true;
	}
	return n;
}

bool rt_memo__put(struct rt_memo *m, const uint64_t key[2], const struct frame *fr, int n)
{
	struct ent *e = &m->ent[key[0] & (SLOTS - 1)];

	if (n <= 0 || (uint32_t)n > FRAMES - m->nfr)
		return false;
	for (int i = 0; i < n; i++) {
		struct mframe *f = &m->fr[m->nfr + (uint32_t)i];

		if (!fr[i].rt || fr[i].marker || !fr[i].name || !fr[i].sysname || !fr[i].file)
			return false;
		f->addr = fr[i].addr;
		f->name = intern(m, fr[i].name);
		f->sysname = intern(m, fr[i].sysname);
		f->file = intern(m, fr[i].file);
		if (f->name == UINT32_MAX || f->sysname == UINT32_MAX || f->file == UINT32_MAX)
			return false;
		f->line = fr[i].line;
		f->start_line = fr[i].start_line;
	}
	*e = (struct ent){ key[0], key[1], m->nfr, (uint32_t)n };
	m->nfr += (uint32_t)n;
	return true;
}
