/*
 * path.h - the /prof path grammar as a pure parser: a path string becomes
 * a struct path_query, with no FUSE and no store behind it (so it can be
 * unit-tested and fuzzed alone). tree.c gives the query its meaning.
 *
 * Grammar (SPEC section 2; all times UTC):
 *   /                                  README metrics merged diff <type>...
 *   /<type>/<m>.../                    selection directory
 *   /<type>/<m>.../<minute>/<file>     one minute, window [m, m+60)
 *   /<type>/<m>.../latest              symlink to the newest closed minute
 *   /merged/<type>/<m>.../<range>/<file>
 *   /diff/<type>/<m>.../<range>/vs/<m>.../<range>/<file>
 *   /binaries/                         one directory per build id
 *   /binaries/<build id>/<name>        a file seen, or its debug file
 * where <m> is name=value, name!=value or name=~regex (percent-encoded),
 * <minute> is YYYY-MM-DDTHH:MM, <range> is a minute, A..B (minutes, A
 * inclusive, B exclusive), YYYY-MM-DDTHH, YYYY-MM-DD or last-N{m,h,d},
 * and <file> is profile.pb, folded.txt, flamegraph.svg or top.txt.
 */
#ifndef PROFFS_PATH_H
#define PROFFS_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/db/store.h" /* enum store_match_op only */

#define PATH_MAX_MATCHERS 32  /* per side of a query */
#define PATH_MAX_REGEX 256    /* bytes of a decoded =~ pattern */
#define PATH_MAX_LEN 16384    /* whole path */
#define PATH_MAX_LAST_S (10LL * 366 * 86400) /* longest last-N window */

/* What the path names. */
enum path_node {
	PN_ROOT,    /* "/" */
	PN_README,  /* "/README" (file) */
	PN_METRICS, /* "/metrics" (file) */
	PN_AREA,    /* "/merged" or "/diff": lists types */
	PN_SEL,     /* a selection directory (plain, merged, diff side A or B) */
	PN_DIFF_A,  /* "/diff/<type>/<sel A>/<range A>": lists "vs" */
	PN_WINDOW,  /* a leaf directory: minute, merged range, diff range B */
	PN_LATEST,  /* "/<type>/<sel>/latest" (symlink) */
	PN_FILE,    /* one of the four files of a leaf directory */
	PN_BINS,    /* "/binaries": one directory per build id (issue 30) */
	PN_BIN,     /* "/binaries/<build id>" */
	PN_BINFILE, /* "/binaries/<build id>/<name>": the tree says which names exist */
};

enum path_area { AREA_NONE, AREA_PLAIN, AREA_MERGED, AREA_DIFF };

enum path_file { PF_NONE, PF_PB, PF_FOLDED, PF_SVG, PF_TOP };

enum path_range_kind { RANGE_MINUTE, RANGE_SPAN, RANGE_HOUR, RANGE_DAY, RANGE_LAST };

/* A time range. For every kind but RANGE_LAST, [from, to) is fixed at
 * parse time; RANGE_LAST keeps n and unit_s and is placed against "now"
 * by path_range__window(). */
struct path_range {
	enum path_range_kind kind;
	int64_t from, to;  /* Unix seconds */
	int64_t n, unit_s; /* last-N: N and the unit in seconds (60/3600/86400) */
};

/* A decoded matcher; name and value are malloc'd, owned by the query. */
struct path_matcher {
	char *name, *value;
	enum store_match_op op;
};

struct path_sel {
	struct path_matcher *m; /* sorted by (name, op, value), no duplicates */
	size_t nm;
};

/* A parsed path. Every pointer is owned by the query; release with
 * path_query__fini(). */
struct path_query {
	enum path_node node;
	enum path_area area;
	char *type;           /* NULL above type level */
	struct path_sel a;    /* the selection (diff: side A) */
	struct path_sel b;    /* diff side B's own components (not inherited) */
	bool side_b;          /* PN_SEL in a diff: this is the B side ("vs/...") */
	bool has_ra, has_rb;  /* range A / range B (diff) present */
	struct path_range ra; /* plain: the minute; merged: the range; diff: A */
	struct path_range rb; /* diff: range B */
	enum path_file file;  /* PN_FILE */
	char *bid;            /* PN_BIN, PN_BINFILE: the build id (lowercase hex) */
	char *bname;          /* PN_BINFILE: the file's name as given */
	char *canon;          /* canonical path: itself a valid path */
};

/*
 * Parses an absolute path ("/" or "/a/b", no trailing or doubled '/').
 * Fills *q (which the caller then owns and releases with
 * path_query__fini(), also on error - fini of a failed parse is a no-op).
 * Returns 0, -ENOENT for a path outside the grammar (the reason is logged
 * at debug level), or -ENOMEM. Type names are not checked against a store
 * here. Thread-safe, no global state.
 */
int path__parse(const char *path, struct path_query *q);
void path_query__fini(struct path_query *q);

/* The window [*from, *to) of r at time now (Unix seconds). RANGE_LAST:
 * [floor_minute(now) - N*unit + 60, floor_minute(now) + 60), i.e. the
 * last N units ending with the current (incomplete) minute. */
void path_range__window(const struct path_range *r, int64_t now,
			int64_t *from, int64_t *to);

/* True when nothing can be added to the query's window(s) any more: every
 * window ends more than 60 s before now. last-N never is; nodes without a
 * window (selection directories) are not either. */
bool path_query__immutable(const struct path_query *q, int64_t now);

/* The B side's effective matchers: A's, except those whose label name B
 * names, plus B's own. *out is a malloc'd array whose strings point into q
 * (valid while q lives); free(*out) only. Returns 0 or -ENOMEM. */
int path_query__sel_b(const struct path_query *q, struct path_matcher **out,
		      size_t *n);

/* Percent-encodes a label name or value for a path component (the inverse
 * of the parser's decoding): '%', '/', bytes outside printable ASCII, and
 * in names '=', '!', '~', in values a leading '~', become %XX (upper hex).
 * Returns a malloc'd "name=value" or NULL (errno ENOMEM). */
char *path__encode_pair(const char *name, const char *value);

/* Parses YYYY-MM-DDTHH:MM (exactly, valid date) into Unix seconds.
 * Returns 0 or -EINVAL. */
int path__parse_minute(const char *s, size_t len, int64_t *t);

/* Name of a leaf file ("profile.pb"...) or NULL for PF_NONE. */
const char *path__file_name(enum path_file f);

#endif
