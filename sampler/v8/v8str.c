/*
 * v8str.c - V8 strings read out of another process (sequential, cons,
 * sliced, thin and external, one or two bytes a unit) as UTF-8, and a JS
 * frame's display name (v8name.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/v8/v8heap.h"
#include "store/util/util.h"

/* Parts of a cons or sliced string followed at most. */
#define MAX_PARTS 32

int v8name__read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(intptr_t)ctx;
	struct iovec lo = { buf, len }, re = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &lo, 1, &re, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	return n < 0 && errno == ESRCH ? -ESRCH : -EFAULT;
}

long v8name__string(const struct v8layout *l, v8_read_fn rdf, void *rctx, uint64_t s, uint16_t *units,
		    size_t cap, struct v8str *st)
{
	struct v8ctx x = { .l = l, .rd = rdf, .rctx = rctx };
	/* parts still to read: (string, start, length in units) */
	struct {
		uint64_t s;
		uint32_t from, len;
	} todo[MAX_PARTS];
	int ntodo = 0, parts = 0;
	size_t n = 0;

	memset(st, 0, sizeof(*st));
	todo[ntodo++] = (typeof(todo[0])){ s, 0, UINT32_MAX };
	while (ntodo) {
		uint64_t str = todo[ntodo - 1].s, a, b;
		uint32_t from = todo[ntodo - 1].from, want = todo[ntodo - 1].len, len;
		int t = type_of(&x, str), rep;

		ntodo--;
		if (t < 0)
			return -EFAULT;
		if (t >= l->first_nonstring_type || ++parts > MAX_PARTS * 4)
			return -EBADMSG;
		if (rd(&x, str - 1 + l->string_length, &len, 4))
			return -EFAULT;
		if (from > len)
			return -EBADMSG;
		if (want > len - from)
			want = len - from;
		rep = t & l->string_rep_mask;
		if (rep == l->seq_tag) {
			bool one = (t & l->string_enc_mask) == l->one_byte_tag;
			size_t k = want, room = cap - n;
			uint8_t buf[512];

			st->two_byte |= !one;
			if (k > room) {
				k = room;
				st->cut = true;
			}
			for (size_t done = 0; done < k;) {
				size_t step = one ? sizeof(buf) : sizeof(buf) / 2;

				if (step > k - done)
					step = k - done;
				if (rd(&x, str - 1 + (uint64_t)(one ? l->seq_one_chars : l->seq_two_chars) +
						   (uint64_t)(from + done) * (one ? 1 : 2),
				       buf, step * (one ? 1 : 2)))
					return -EFAULT;
				for (size_t i = 0; i < step; i++)
					units[n + done + i] = one ? buf[i] : (uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8);
				done += step;
			}
			n += k;
			if (st->cut)
				break;
		} else if (rep == l->cons_tag) {
			uint32_t first_len;

			if (rd64(&x, str, l->cons_first, &a) || rd64(&x, str, l->cons_second, &b) ||
			    rd(&x, a - 1 + l->string_length, &first_len, 4))
				return -EFAULT;
			if (ntodo + 2 > MAX_PARTS)
				return -EBADMSG;
			/* second pushed first: the first part is read first */
			if (from + want > first_len)
				todo[ntodo++] = (typeof(todo[0])){ b, from > first_len ? from - first_len : 0,
								   from + want - (from > first_len ? from : first_len) };
			if (from < first_len)
				todo[ntodo++] = (typeof(todo[0])){ a, from, want < first_len - from ? want : first_len - from };
		} else if (rep == l->thin_tag) {
			if (rd64(&x, str, l->thin_actual, &a))
				return -EFAULT;
			todo[ntodo++] = (typeof(todo[0])){ a, from, want };
		} else if (rep == l->sliced_tag) {
			if (rd64(&x, str, l->sliced_parent, &a) || rd64(&x, str, l->sliced_offset, &b))
				return -EFAULT;
			if (!smi(b) || smi_val(b) < 0)
				return -EBADMSG;
			todo[ntodo++] = (typeof(todo[0])){ a, from + (uint32_t)smi_val(b), want };
		} else {
			return -EBADMSG; /* external: the bytes are the embedder's */
		}
	}
	return (long)n;
}

size_t v8name__utf8(const uint16_t *u, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	if (!cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = u[i];
		char b[4];
		size_t k;

		if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && u[i + 1] >= 0xdc00 && u[i + 1] < 0xe000)
			c = 0x10000 + ((c - 0xd800) << 10) + (u[++i] - 0xdc00);
		else if ((c >= 0xd800 && c < 0xe000) || c == 0)
			c = 0xfffd;
		k = utf8_put(c, b);
		if (o + k >= cap)
			break;
		memcpy(out + o, b, k);
		o += k;
	}
	out[o] = 0;
	return o;
}

void v8name__display(const char *name, const char *path, char *out, size_t cap)
{
	const char *file = path, *nm;

	if (!strncmp(file, "file://", 7))
		file += 7;
	if (!*file) {
		file = "<anonymous>";
	} else if (strncmp(file, "node:", 5)) {
		if ((nm = strstr(file, "/node_modules/")))
			for (const char *p = nm; (p = strstr(p, "/node_modules/")); p++)
				nm = p;
		if (nm)
			file = nm + strlen("/node_modules/");
		else if ((nm = strrchr(file, '/')) && nm[1])
			file = nm + 1;
	}
	snprintf(out, cap, "%s (%s)", name, file);
}
