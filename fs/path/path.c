/*
 * path.c - the /prof path grammar (see path.h). A path is split into
 * components, each component is classified by its shape (a matcher has an
 * '=', a range or minute is all digits and punctuation, the rest are fixed
 * words), and a small state machine per area (plain, merged, diff) decides
 * which shapes may follow which. Everything that does not fit is -ENOENT.
 *
 * The canonical form is rebuilt from the parsed query (matchers decoded,
 * sorted, deduplicated and re-encoded, ranges re-formatted), so two paths
 * meaning the same query get the same canon and the canon parses back to
 * itself.
 */
#include "fs/path/path.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db/store.h"
#include "store/util/buf.h"
#include "store/util/util.h"

const char *path__file_name(enum path_file f)
{
	switch (f) {
	case PF_PB: return "profile.pb";
	case PF_FOLDED: return "folded.txt";
	case PF_SVG: return "flamegraph.svg";
	case PF_TOP: return "top.txt";
	default: return NULL;
	}
}

/* ---- percent-encoding ---- */

static bool must_encode(unsigned char c, bool is_name, bool first)
{
	if (c < 0x20 || c >= 0x7f || c == '%' || c == '/')
		return true;
	/* These would make a component ambiguous: "a!=b", "a=~b". */
	if (is_name && (c == '=' || c == '!' || c == '~'))
		return true;
	if (!is_name && first && c == '~')
		return true;
	return false;
}

static void put_encoded(struct buf *b, const char *s, bool is_name)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (must_encode(c, is_name, i == 0)) {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			buf__put(b, e, 3);
		} else {
			buf__put(b, s + i, 1);
		}
	}
}

char *path__encode_pair(const char *name, const char *value)
{
	struct buf b = { 0 };

	put_encoded(&b, name, true);
	buf__put(&b, "=", 1);
	put_encoded(&b, value, false);
	if (b.err || !b.data) {
		free(b.data);
		errno = ENOMEM;
		return NULL;
	}
	return b.data;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes s[0..len) into a new C string. A '%' not followed by two hex
 * digits, or an escaped NUL, is -ENOENT. */
static int pct_decode(const char *s, size_t len, char **out)
{
	char *d = malloc(len + 1);
	size_t j = 0;

	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '%') {
			d[j++] = s[i];
			continue;
		}
		if (i + 2 >= len) {
			free(d);
			return -ENOENT;
		}
		int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			free(d);
			return -ENOENT;
		}
		d[j++] = (char)(hi << 4 | lo);
		i += 2;
	}
	d[j] = 0;
	*out = d;
	return 0;
}

/* ---- regular expressions ---- */

/*
 * Refuses patterns that could make matching slow or memory-hungry, before
 * regcomp ever sees them: back-references (exponential in glibc), a
 * quantifier applied to a group that already holds one ("(a+)+"), stacked
 * quantifiers ("a**"), repetition counts above 100, and nesting deeper
 * than 16. This is conservative: a few harmless patterns are refused too.
 */
static bool regex_is_tame(const char *re)
{
	bool grp_q[17] = { false }; /* per open group: holds a quantifier */
	int depth = 0;
	/* what the previous token was: 0 none/operator, 1 atom, 2 closed
	 * group holding a quantifier, 3 quantifier */
	int prev = 0;

	for (size_t i = 0; re[i]; i++) {
		char c = re[i];

		switch (c) {
		case '\\':
			if (!re[i + 1] || (re[i + 1] >= '0' && re[i + 1] <= '9'))
				return false;
			i++;
			prev = 1;
			break;
		case '[':
			/* A bracket expression is one atom; skip to its end. */
			i++;
			if (re[i] == '^')
				i++;
			if (re[i] == ']')
				i++;
			while (re[i] && re[i] != ']') {
				if (re[i] == '[' && (re[i + 1] == ':' || re[i + 1] == '.' || re[i + 1] == '=')) {
					char close = re[i + 1];

					i += 2;
					while (re[i] && !(re[i] == close && re[i + 1] == ']'))
						i++;
					if (!re[i])
						return false;
					i += 2;
					continue;
				}
				i++;
			}
			if (!re[i])
				return false;
			prev = 1;
			break;
		case '(':
			if (depth >= 16)
				return false;
			grp_q[++depth] = false;
			prev = 0;
			break;
		case ')':
			if (depth == 0)
				return false;
			prev = grp_q[depth] ? 2 : 1;
			depth--;
			if (prev == 2)
				grp_q[depth] = true;
			break;
		case '*': case '+': case '?': case '{':
			if (prev == 2 || prev == 3)
				return false;
			if (c == '{') {
				const char *p = re + i + 1;
				char *end;
				long a = strtol(p, &end, 10), b = a;

				if (end == p)
					return false;
				if (*end == ',') {
					p = end + 1;
					b = strtol(p, &end, 10);
					if (end == p)
						b = a; /* "{n,}" */
				}
				if (*end != '}' || a > 100 || b > 100 || a < 0 || b < 0)
					return false;
				i = (size_t)(end - re);
			}
			grp_q[depth] = true;
			prev = 3;
			break;
		case '|':
			prev = 0;
			break;
		default:
			prev = 1;
			break;
		}
	}
	return depth == 0;
}

/* The store anchors the pattern the same way: ^(re)$. */
static bool regex_is_valid(const char *re)
{
	size_t n = strlen(re);
	char *a;
	regex_t r;
	int err;

	if (n > PATH_MAX_REGEX || !regex_is_tame(re))
		return false;
	a = malloc(n + 5);
	if (!a)
		return false;
	snprintf(a, n + 5, "^(%s)$", re);
	err = regcomp(&r, a, REG_EXTENDED | REG_NOSUB);
	free(a);
	if (err)
		return false;
	regfree(&r);
	return true;
}

/* ---- times ---- */

static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool digits(const char *s, size_t n, int *v)
{
	int r = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		r = r * 10 + (s[i] - '0');
	}
	*v = r;
	return true;
}

/* Parses the first len (10, 13 or 16) characters' worth of
 * YYYY-MM-DD[THH[:MM]] strictly, validating the calendar. */
static int parse_time(const char *s, size_t len, int64_t *t)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h = 0, mi = 0, md;

	if (len != 10 && len != 13 && len != 16)
		return -EINVAL;
	if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d))
		return -EINVAL;
	if (len >= 13 && (s[10] != 'T' || !digits(s + 11, 2, &h)))
		return -EINVAL;
	if (len == 16 && (s[13] != ':' || !digits(s + 14, 2, &mi)))
		return -EINVAL;
	/* Years past 2261 do not fit pprof's int64 nanosecond times. */
	if (y < 1970 || y > 2261 || mo < 1 || mo > 12 || h > 23 || mi > 59)
		return -EINVAL;
	md = mdays[mo - 1];
	if (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		md = 29;
	if (d < 1 || d > md)
		return -EINVAL;
	*t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
	return 0;
}

int path__parse_minute(const char *s, size_t len, int64_t *t)
{
	if (len != 16)
		return -EINVAL;
	return parse_time(s, len, t);
}

/* A range component: minute, A..B, hour, day or last-N{m,h,d}. */
static int parse_range(const char *s, size_t len, struct path_range *r)
{
	int64_t a, b;

	memset(r, 0, sizeof(*r));
	if (len > 5 && !memcmp(s, "last-", 5)) {
		int64_t n = 0;
		size_t i = 5;

		if (s[i] == '0') /* one spelling per window */
			return -EINVAL;
		for (; i < len - 1; i++) {
			if (s[i] < '0' || s[i] > '9' || i - 5 >= 9)
				return -EINVAL;
			n = n * 10 + (s[i] - '0');
		}
		if (i == 5)
			return -EINVAL;
		switch (s[len - 1]) {
		case 'm': r->unit_s = 60; break;
		case 'h': r->unit_s = 3600; break;
		case 'd': r->unit_s = 86400; break;
		default: return -EINVAL;
		}
		if (n > PATH_MAX_LAST_S / r->unit_s)
			return -EINVAL;
		r->kind = RANGE_LAST;
		r->n = n;
		return 0;
	}
	if (len == 34 && s[16] == '.' && s[17] == '.') {
		if (parse_time(s, 16, &a) || parse_time(s + 18, 16, &b) || b <= a)
			return -EINVAL;
		r->kind = RANGE_SPAN;
		r->from = a;
		r->to = b;
		return 0;
	}
	if (parse_time(s, len, &a))
		return -EINVAL;
	r->from = a;
	switch (len) {
	case 16: r->kind = RANGE_MINUTE; r->to = a + 60; break;
	case 13: r->kind = RANGE_HOUR; r->to = a + 3600; break;
	default: r->kind = RANGE_DAY; r->to = a + 86400; break;
	}
	return 0;
}

void path_range__window(const struct path_range *r, int64_t now,
			int64_t *from, int64_t *to)
{
	if (r->kind == RANGE_LAST) {
		int64_t f = now - (now % 60 + 60) % 60;

		*from = f - r->n * r->unit_s + 60;
		*to = f + 60;
		return;
	}
	*from = r->from;
	*to = r->to;
}

static void put_range(struct buf *b, const struct path_range *r)
{
	char m[17], m2[17], tmp[40];

	fmt_minute(r->from, m);
	switch (r->kind) {
	case RANGE_MINUTE:
		buf__puts(b, m);
		break;
	case RANGE_SPAN:
		fmt_minute(r->to, m2);
		buf__puts(b, m);
		buf__puts(b, "..");
		buf__puts(b, m2);
		break;
	case RANGE_HOUR:
		buf__put(b, m, 13);
		break;
	case RANGE_DAY:
		buf__put(b, m, 10);
		break;
	case RANGE_LAST:
		snprintf(tmp, sizeof(tmp), "last-%lld%c", (long long)r->n,
			 r->unit_s == 60 ? 'm' : r->unit_s == 3600 ? 'h' : 'd');
		buf__puts(b, tmp);
		break;
	}
}

/* ---- matchers ---- */

static int matcher_cmp(const void *x, const void *y)
{
	const struct path_matcher *a = x, *b = y;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	if (a->op != b->op)
		return (int)a->op - (int)b->op;
	return strcmp(a->value, b->value);
}

static void sel_fini(struct path_sel *s)
{
	for (size_t i = 0; i < s->nm; i++) {
		free(s->m[i].name);
		free(s->m[i].value);
	}
	free(s->m);
	s->m = NULL;
	s->nm = 0;
}

/* Sorts and drops exact duplicates (they AND to the same thing). */
static void sel_normalize(struct path_sel *s)
{
	size_t j = 0;

	if (s->nm < 2)
		return;
	qsort(s->m, s->nm, sizeof(*s->m), matcher_cmp);
	for (size_t i = 1; i < s->nm; i++) {
		if (!matcher_cmp(&s->m[j], &s->m[i])) {
			free(s->m[i].name);
			free(s->m[i].value);
			continue;
		}
		s->m[++j] = s->m[i];
	}
	s->nm = j + 1;
}

/* Parses "name=value", "name!=value" or "name=~regex" into s.
 * Returns 0, -ENOENT or -ENOMEM. */
static int sel_add(struct path_sel *s, const char *c, size_t len)
{
	const char *eq = memchr(c, '=', len);
	const char *name_end = eq, *val;
	enum store_match_op op = STORE_EQ;
	struct path_matcher m = { 0 };
	struct path_matcher *nm;
	int err;

	if (!eq)
		return -ENOENT;
	if (eq > c && eq[-1] == '!') {
		op = STORE_NEQ;
		name_end = eq - 1;
	}
	val = eq + 1;
	if (op == STORE_EQ && val < c + len && *val == '~') {
		op = STORE_RE;
		val++;
	}
	if (name_end == c || s->nm >= PATH_MAX_MATCHERS)
		return -ENOENT;
	err = pct_decode(c, (size_t)(name_end - c), &m.name);
	if (err)
		return err;
	err = pct_decode(val, (size_t)(c + len - val), &m.value);
	if (err)
		goto err_out;
	err = -ENOENT;
	if (op == STORE_RE && !regex_is_valid(m.value))
		goto err_out;
	nm = realloc(s->m, (s->nm + 1) * sizeof(*s->m));
	if (!nm) {
		err = -ENOMEM;
		goto err_out;
	}
	m.op = op;
	s->m = nm;
	s->m[s->nm++] = m;
	return 0;
err_out:
	free(m.name);
	free(m.value);
	return err;
}

static void put_sel(struct buf *b, const struct path_sel *s)
{
	for (size_t i = 0; i < s->nm; i++) {
		buf__put(b, "/", 1);
		put_encoded(b, s->m[i].name, true);
		buf__puts(b, s->m[i].op == STORE_NEQ ? "!=" : s->m[i].op == STORE_RE ? "=~" : "=");
		put_encoded(b, s->m[i].value, false);
	}
}

/* ---- the parser ---- */

struct comp {
	const char *s;
	size_t len;
};

static bool is_word(const struct comp *c, const char *w)
{
	return c->len == strlen(w) && !memcmp(c->s, w, c->len);
}

static enum path_file file_of(const struct comp *c)
{
	for (int f = PF_PB; f <= PF_TOP; f++)
		if (is_word(c, path__file_name(f)))
			return f;
	return PF_NONE;
}

static bool is_matcher(const struct comp *c)
{
	return memchr(c->s, '=', c->len) != NULL;
}

/* A type name: what the store accepts (so what `proffs import --type` and
 * the daemon may create), except the reserved root names. */
static bool type_ok(const struct comp *c)
{
	if (!store__type_ok(c->s, c->len))
		return false;
	return !is_word(c, "README") && !is_word(c, "metrics") &&
	       !is_word(c, "merged") && !is_word(c, "diff") && !is_word(c, "binaries");
}

static int build_canon(struct path_query *q)
{
	struct buf b = { 0 };

	switch (q->node) {
	case PN_ROOT:
		buf__puts(&b, "/");
		break;
	case PN_README:
		buf__puts(&b, "/README");
		break;
	case PN_METRICS:
		buf__puts(&b, "/metrics");
		break;
	case PN_BINS:
	case PN_BIN:
	case PN_BINFILE:
		buf__puts(&b, "/binaries");
		if (q->bid) {
			buf__puts(&b, "/");
			buf__puts(&b, q->bid);
		}
		if (q->bname) {
			buf__puts(&b, "/");
			buf__puts(&b, q->bname);
		}
		break;
	default:
		if (q->area == AREA_MERGED)
			buf__puts(&b, "/merged");
		else if (q->area == AREA_DIFF)
			buf__puts(&b, "/diff");
		if (!q->type)
			break;
		buf__puts(&b, "/");
		buf__puts(&b, q->type);
		put_sel(&b, &q->a);
		if (q->has_ra) {
			buf__puts(&b, "/");
			put_range(&b, &q->ra);
		}
		if (q->area == AREA_DIFF && (q->side_b || q->has_rb)) {
			buf__puts(&b, "/vs");
			put_sel(&b, &q->b);
			if (q->has_rb) {
				buf__puts(&b, "/");
				put_range(&b, &q->rb);
			}
		}
		if (q->node == PN_LATEST)
			buf__puts(&b, "/latest");
		if (q->node == PN_FILE) {
			buf__puts(&b, "/");
			buf__puts(&b, path__file_name(q->file));
		}
	}
	if (b.err || !b.data) {
		free(b.data);
		return -ENOMEM;
	}
	q->canon = b.data;
	return 0;
}

/* Why a path was refused, for the debug log. */
#define REFUSE(why)                                                        \
	do {                                                               \
		pr_debug("path %s: %s", path, why);                        \
		err = -ENOENT;                                             \
		goto out;                                                  \
	} while (0)

int path__parse(const char *path, struct path_query *q)
{
	struct comp *c = NULL;
	size_t nc = 0, i, plen;
	int err = 0;

	memset(q, 0, sizeof(*q));
	if (!path || path[0] != '/')
		return -ENOENT;
	plen = strlen(path);
	if (plen > PATH_MAX_LEN)
		REFUSE("too long");
	if (plen == 1) {
		q->node = PN_ROOT;
		goto canon;
	}
	c = calloc(plen / 2 + 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (const char *p = path + 1;;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		c[nc].s = p;
		c[nc].len = len;
		if (len == 0)
			REFUSE("empty component");
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			REFUSE("dot component");
		nc++;
		if (!e)
			break;
		p = e + 1;
	}

	i = 0;
	if (nc == 1 && is_word(&c[0], "README")) {
		q->node = PN_README;
		goto canon;
	}
	if (nc == 1 && is_word(&c[0], "metrics")) {
		q->node = PN_METRICS;
		goto canon;
	}
	if (is_word(&c[0], "binaries")) {
		/* /binaries/<build id>/<name>: the name is the tree's to
		 * check (it depends on what was recorded); here only its
		 * shape: a plain name, no '%' (never encoded). */
		q->node = PN_BINS;
		if (nc == 1)
			goto canon;
		if (nc > 3)
			REFUSE("nothing lives under a binary");
		q->bid = strndup(c[1].s, c[1].len);
		if (!q->bid) {
			err = -ENOMEM;
			goto out;
		}
		if (!store__build_id_ok(q->bid))
			REFUSE("not a build id (lowercase hex)");
		q->node = PN_BIN;
		if (nc == 2)
			goto canon;
		if (c[2].len > 255 || memchr(c[2].s, '%', c[2].len))
			REFUSE("not a binary's name");
		q->bname = strndup(c[2].s, c[2].len);
		if (!q->bname) {
			err = -ENOMEM;
			goto out;
		}
		q->node = PN_BINFILE;
		goto canon;
	}
	if (is_word(&c[0], "merged") || is_word(&c[0], "diff")) {
		q->area = c[0].s[0] == 'm' ? AREA_MERGED : AREA_DIFF;
		q->node = PN_AREA;
		if (++i == nc)
			goto canon;
	} else {
		q->area = AREA_PLAIN;
	}
	if (!type_ok(&c[i]))
		REFUSE("not a type name");
	q->type = strndup(c[i].s, c[i].len);
	if (!q->type) {
		err = -ENOMEM;
		goto out;
	}
	i++;

	/* The selection (side A). */
	for (; i < nc && is_matcher(&c[i]); i++) {
		err = sel_add(&q->a, c[i].s, c[i].len);
		if (err == -ENOENT)
			REFUSE("bad matcher");
		if (err)
			goto out;
	}
	q->node = PN_SEL;
	if (i == nc)
		goto canon;

	if (q->area == AREA_PLAIN && is_word(&c[i], "latest")) {
		if (i + 1 != nc)
			REFUSE("latest is a symlink");
		q->node = PN_LATEST;
		goto canon;
	}
	if (parse_range(c[i].s, c[i].len, &q->ra))
		REFUSE("not a matcher, minute or range");
	if (q->area == AREA_PLAIN && q->ra.kind != RANGE_MINUTE)
		REFUSE("only minutes under a type (ranges live in merged/)");
	q->has_ra = true;
	i++;
	q->node = q->area == AREA_DIFF ? PN_DIFF_A : PN_WINDOW;
	if (i == nc)
		goto canon;

	if (q->area == AREA_DIFF) {
		if (!is_word(&c[i], "vs"))
			REFUSE("expected vs after range A");
		q->side_b = true;
		q->node = PN_SEL;
		for (i++; i < nc && is_matcher(&c[i]); i++) {
			err = sel_add(&q->b, c[i].s, c[i].len);
			if (err == -ENOENT)
				REFUSE("bad matcher");
			if (err)
				goto out;
		}
		if (i == nc)
			goto canon;
		if (parse_range(c[i].s, c[i].len, &q->rb))
			REFUSE("not a matcher or range (side B)");
		q->has_rb = true;
		q->side_b = false;
		q->node = PN_WINDOW;
		if (++i == nc)
			goto canon;
	}

	q->file = file_of(&c[i]);
	if (q->file == PF_NONE)
		REFUSE("unknown file");
	if (i + 1 != nc)
		REFUSE("nothing lives under a file");
	q->node = PN_FILE;

canon:
	sel_normalize(&q->a);
	sel_normalize(&q->b);
	err = build_canon(q);
out:
	free(c);
	if (err)
		path_query__fini(q);
	return err;
}

void path_query__fini(struct path_query *q)
{
	if (!q)
		return;
	free(q->type);
	free(q->bid);
	free(q->bname);
	sel_fini(&q->a);
	sel_fini(&q->b);
	free(q->canon);
	memset(q, 0, sizeof(*q));
}

static bool range_closed(const struct path_range *r, int64_t now)
{
	return r->kind != RANGE_LAST && now - r->to > 60;
}

bool path_query__immutable(const struct path_query *q, int64_t now)
{
	switch (q->node) {
	case PN_README:
	case PN_BINFILE: /* a file's bytes, checked to be the file recorded */
		return true;
	case PN_DIFF_A:
		/* It only ever lists "vs". */
		return true;
	case PN_WINDOW:
	case PN_FILE:
		if (!q->has_ra || !range_closed(&q->ra, now))
			return false;
		if (q->area == AREA_DIFF)
			return q->has_rb && range_closed(&q->rb, now);
		return true;
	default:
		return false;
	}
}

int path_query__sel_b(const struct path_query *q, struct path_matcher **out,
		      size_t *n)
{
	struct path_matcher *m = malloc((q->a.nm + q->b.nm + 1) * sizeof(*m));
	size_t k = 0;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < q->a.nm; i++) {
		bool replaced = false;

		for (size_t j = 0; j < q->b.nm && !replaced; j++)
			replaced = !strcmp(q->a.m[i].name, q->b.m[j].name);
		if (!replaced)
			m[k++] = q->a.m[i];
	}
	for (size_t j = 0; j < q->b.nm; j++)
		m[k++] = q->b.m[j];
	*out = m;
	*n = k;
	return 0;
}
