/*
 * render_svg.c - flamegraph.svg: a self-contained interactive flame graph.
 *
 * The samples are folded into a tree of (parent, frame name) nodes, root
 * at the bottom as flamegraph.pl draws it, children in name order so the
 * picture is deterministic. To stay light with tens of thousands of stacks,
 * frames narrower than 0.1% of the width are not drawn one by one: a run
 * of such siblings becomes one grey box "(N small frames)" when together
 * they are wide enough to see, and nothing otherwise; what lies above them
 * is not drawn.
 *
 * Inline JavaScript (no network) shows name, count and share on hover,
 * zooms into a frame on click and resets on a click on the background or
 * "Reset zoom". For a pprof diff (samples labelled pprof::base=true) widths
 * follow B and colours the change in share from A to B: red grew, blue
 * shrank.
 */
#include "fs/render/render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_int.h"
#include "store/util/hmap.h"
#include "store/util/util.h"

#define SVG_W 1200.0
#define SVG_PAD 10.0
#define FRAME_H 16.0
#define TOP_PAD 50.0
#define BOT_PAD 34.0
#define CHAR_W 6.6 /* monospace 11px */
#define MIN_FRAC 0.001

struct fg_node {
	uint32_t name;   /* frametab id; UINT32_MAX for the root */
	uint32_t parent; /* node index */
	uint32_t depth;
	int64_t v[2];    /* [0]: A (base), [1]: B / plain */
};

struct fg_tree {
	struct fg_node *n;
	uint32_t nn, cap;
	struct hidx idx; /* (parent, name) -> node, the root excepted */
	uint32_t *kids, *kid_off; /* children grouped by parent, name-sorted */
};

static uint64_t key_hash(uint32_t parent, uint32_t name)
{
	uint64_t k = (uint64_t)parent << 32 | name;

	return hash64(&k, sizeof(k), 0x5f1a);
}

struct node_key {
	uint32_t parent, name;
};

static bool node_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct fg_tree *t = ctx;
	const struct node_key *k = key;

	return t->n[i].parent == k->parent && t->n[i].name == k->name;
}

/* Finds or adds the child `name` of node `parent`; UINT32_MAX on ENOMEM. */
static uint32_t fg_tree__child(struct fg_tree *t, uint32_t parent, uint32_t name)
{
	struct node_key k = { parent, name };
	uint64_t h = key_hash(parent, name);
	uint32_t i = hidx__find(&t->idx, h, node_eq, t, &k);

	if (i != UINT32_MAX)
		return i;
	if (GROW(t->n, &t->cap, t->nn + 1) || hidx__insert(&t->idx, h, t->nn))
		return UINT32_MAX;
	i = t->nn++;
	t->n[i] = (struct fg_node){ .name = name, .parent = parent, .depth = t->n[parent].depth + 1 };
	return i;
}

static void fg_tree__free(struct fg_tree *t)
{
	free(t->n);
	hidx__free(&t->idx);
	free(t->kids);
	free(t->kid_off);
}

struct kid_ctx {
	const struct fg_tree *t;
	const struct frametab *ft;
};

static int kid_cmp(const void *a, const void *b, void *ctx)
{
	const struct kid_ctx *c = ctx;
	const struct fg_node *x = &c->t->n[*(const uint32_t *)a], *y = &c->t->n[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(frametab__name(c->ft, x->name), frametab__name(c->ft, y->name));
}

/* Groups children by parent, each group sorted by name. */
static int fg_tree__index(struct fg_tree *t, const struct frametab *ft)
{
	struct kid_ctx c = { t, ft };
	uint32_t k = 0;

	t->kids = calloc(t->nn, sizeof(*t->kids));
	t->kid_off = calloc((size_t)t->nn + 1, sizeof(*t->kid_off));
	if (!t->kids || !t->kid_off)
		return -ENOMEM;
	for (uint32_t i = 1; i < t->nn; i++)
		t->kids[k++] = i;
	qsort_r(t->kids, k, sizeof(*t->kids), kid_cmp, &c);
	/* kid_off[p] = first position of p's children; filled backwards so
	 * nodes without children get the position of the next group. */
	for (uint32_t p = 0, pos = 0; p <= t->nn; p++) {
		while (pos < k && t->n[t->kids[pos]].parent < p)
			pos++;
		t->kid_off[p] = pos;
	}
	return 0;
}

/* Writes s as XML character data: escapes markup, replaces control bytes
 * and invalid UTF-8 with '?', so xmllint and browsers accept any symbol. */
static void xml_put(struct buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned char c = *p;
		size_t n = 0;

		if (c < 0x80) {
			switch (c) {
			case '&': buf__puts(b, "&amp;"); break;
			case '<': buf__puts(b, "&lt;"); break;
			case '>': buf__puts(b, "&gt;"); break;
			case '"': buf__puts(b, "&quot;"); break;
			case '\'': buf__puts(b, "&apos;"); break;
			default:
				if (c < 0x20 || c == 0x7f)
					c = '?';
				buf__put(b, &c, 1);
			}
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3;
		{
			bool ok = n > 0;
			uint32_t cp = c & (0x3f >> n);

			for (size_t i = 1; ok && i <= n; i++) {
				if ((p[i] & 0xc0) != 0x80)
					ok = false;
				else
					cp = cp << 6 | (p[i] & 0x3f);
			}
			/* overlongs, surrogates, > U+10FFFF, and XML's
			 * forbidden U+FFFE/U+FFFF */
			if (ok && ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
				   (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff))
				ok = false;
			if (ok) {
				buf__put(b, p, n + 1);
				p += n + 1;
			} else {
				buf__put(b, "?", 1);
				p++;
			}
		}
	}
}

/* A name cut to fit w pixels, as the JS does on zoom; "" when too narrow. */
static void put_label(struct buf *b, const char *name, double w)
{
	int fit = (int)((w - 6) / CHAR_W);
	size_t len = strlen(name);
	char tmp[512];

	if (fit < 3)
		return;
	if (len <= (size_t)fit) {
		xml_put(b, name);
		return;
	}
	if ((size_t)fit > sizeof(tmp) - 1)
		fit = sizeof(tmp) - 1;
	memcpy(tmp, name, (size_t)fit - 2);
	/* do not cut a UTF-8 sequence in half */
	while (fit > 2 && ((unsigned char)tmp[fit - 3] & 0xc0) == 0x80)
		fit--;
	if (fit > 2 && (unsigned char)tmp[fit - 3] >= 0xc0)
		fit--;
	memcpy(tmp + fit - 2, "..", 3);
	xml_put(b, tmp);
}

static uint32_t fnv(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

struct svgctx {
	struct buf *out;
	const struct fg_tree *t;
	const struct frametab *ft;
	bool diff;
	struct count_unit cu;  /* what hover text counts in (folded.txt's unit) */
	int64_t total, tot[2]; /* width total; per-side totals */
	double scale;          /* pixels per unit */
	double maxdelta;       /* diff colour scale */
	uint32_t maxdepth;
	double height;
};

static double share_delta(const struct svgctx *c, const struct fg_node *n)
{
	double a = c->tot[0] ? (double)n->v[0] / (double)c->tot[0] : 0;
	double b = c->tot[1] ? (double)n->v[1] / (double)c->tot[1] : 0;

	return b - a;
}

static void fill(const struct svgctx *c, const struct fg_node *n, const char *name,
		 char *col, size_t sz)
{
	if (c->diff) {
		double d = share_delta(c, n), t = c->maxdelta > 0 ? d / c->maxdelta : 0;
		int k;

		if (t > 1)
			t = 1;
		if (t < -1)
			t = -1;
		k = (int)(205 * (1 - (t < 0 ? -t : t))) + 50;
		if (d > 0)
			snprintf(col, sz, "rgb(255,%d,%d)", k, k);
		else if (d < 0)
			snprintf(col, sz, "rgb(%d,%d,255)", k, k);
		else
			snprintf(col, sz, "rgb(250,250,250)");
		return;
	}
	{
		uint32_t h = fnv(name);
		double h1 = (h & 0xff) / 255.0, h2 = ((h >> 8) & 0xff) / 255.0;
		size_t len = strlen(name);

		if (len > 4 && !strcmp(name + len - 4, "_[k]"))
			snprintf(col, sz, "rgb(%d,%d,%d)", 200 + (int)(55 * h1), 120 + (int)(60 * h2), 40);
		else
			snprintf(col, sz, "rgb(%d,%d,%d)", 205 + (int)(50 * h1), (int)(230 * h2), (int)(55 * h1));
	}
}

static int64_t width_of(const struct svgctx *c, const struct fg_node *n)
{
	return c->diff && !c->tot[1] ? n->v[0] : n->v[1];
}

static void emit_frame(struct svgctx *c, const char *name, const struct fg_node *n,
		       uint32_t depth, double x, double w, int64_t v, bool coalesced)
{
	struct buf *b = c->out;
	double y = c->height - BOT_PAD - (depth + 1) * FRAME_H;
	double share = c->total ? 100.0 * (double)v / (double)c->total : 0;
	char col[40];

	buf__puts(b, "<g class=\"f\" data-n=\"");
	xml_put(b, name);
	buf__puts(b, "\"><title>");
	xml_put(b, name);
	if (c->diff && !coalesced)
		buf__printf(b, " (A %" PRId64 ", B %" PRId64 " %s, share %+.2f pp)",
			    render__count(&c->cu, n->v[0]), render__count(&c->cu, n->v[1]), c->cu.name,
			    100.0 * share_delta(c, n));
	else
		buf__printf(b, " (%" PRId64 " %s, %.2f%%)", render__count(&c->cu, v), c->cu.name, share);
	if (coalesced)
		snprintf(col, sizeof(col), "rgb(200,200,200)");
	else
		fill(c, n, name, col, sizeof(col));
	buf__printf(b, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" rx=\"2\"/>"
		       "<text x=\"%.2f\" y=\"%.1f\">",
		    x, y, w, FRAME_H - 1, col, x + 3, y + FRAME_H - 4.5);
	put_label(b, name, w);
	buf__puts(b, "</text></g>\n");
}

/* Draws node i at x, then its children; iterative so deep stacks cannot
 * overflow the C stack. */
static int draw(struct svgctx *c)
{
	struct item {
		uint32_t node;
		double x;
	} *st = NULL;
	size_t nst = 0, cap = 0;
	const struct fg_tree *t = c->t;
	double minw = MIN_FRAC * (SVG_W - 2 * SVG_PAD);
	int rc = 0;

#define PUSH(nd, xx)                                                        \
	do {                                                                \
		if (nst == cap) {                                           \
			if (GROW(st, &cap, nst + 1)) {                      \
				rc = -ENOMEM;                               \
				goto out;                                   \
			}                                                   \
		}                                                           \
		st[nst++] = (struct item){ (nd), (xx) };                    \
	} while (0)

	PUSH(0, SVG_PAD);
	while (nst) {
		struct item it = st[--nst];
		const struct fg_node *n = &t->n[it.node];
		double w = width_of(c, n) * c->scale, x = it.x;
		uint32_t small = 0;
		int64_t small_v = 0;
		double small_x = 0;
		size_t first = nst;

		emit_frame(c, it.node ? frametab__name(c->ft, n->name) : "all", n, n->depth,
			   it.x, w, width_of(c, n), false);
		for (uint32_t k = t->kid_off[it.node]; k < t->kid_off[it.node + 1]; k++) {
			const struct fg_node *ch = &t->n[t->kids[k]];
			double cw = width_of(c, ch) * c->scale;

			if (cw >= minw) {
				if (small && small_v * c->scale >= minw) {
					char nm[48];

					snprintf(nm, sizeof(nm), "(%u small frames)", small);
					emit_frame(c, nm, ch, ch->depth, small_x, small_v * c->scale, small_v, true);
				}
				small = 0;
				small_v = 0;
				PUSH(t->kids[k], x);
			} else if (cw > 0) {
				if (!small)
					small_x = x;
				small++;
				small_v += width_of(c, ch);
			}
			x += cw;
		}
		if (small && small_v * c->scale >= minw) {
			char nm[48];

			snprintf(nm, sizeof(nm), "(%u small frames)", small);
			emit_frame(c, nm, n, n->depth + 1, small_x, small_v * c->scale, small_v, true);
		}
		/* Children were pushed in name order; reverse them so they pop
		 * (and are written) in name order too. */
		for (size_t i = first, j = nst; i + 1 < j; i++, j--) {
			struct item tmp = st[i];

			st[i] = st[j - 1];
			st[j - 1] = tmp;
		}
	}
#undef PUSH
out:
	free(st);
	return rc;
}

static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"(function () {\n"
	"  var PAD = 10, FW = 1200 - 2 * PAD, CW = 6.6;\n"
	"  var frames = Array.prototype.slice.call(document.getElementsByTagName('g')).filter(function (g) { return g.getAttribute('class') === 'f'; });\n"
	"  var det = document.getElementById('details'), reset = document.getElementById('reset');\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.getElementsByTagName('rect')[0];\n"
	"    g._r = r; g._t = g.getElementsByTagName('text')[0];\n"
	"    g._x = +r.getAttribute('x'); g._w = +r.getAttribute('width'); g._y = +r.getAttribute('y');\n"
	"    g._n = g.getAttribute('data-n'); g._d = g.getElementsByTagName('title')[0].textContent;\n"
	"  });\n"
	"  function label(g, x, w) {\n"
	"    var m = Math.floor((w - 6) / CW), n = g._n;\n"
	"    g._t.setAttribute('x', (x + 3).toFixed(2));\n"
	"    g._t.textContent = m < 3 ? '' : (n.length <= m ? n : n.substring(0, m - 2) + '..');\n"
	"  }\n"
	"  function place(g, x, w, anc) {\n"
	"    g._r.setAttribute('x', x.toFixed(2)); g._r.setAttribute('width', w.toFixed(2));\n"
	"    g.style.opacity = anc ? 0.5 : ''; g.style.display = ''; label(g, x, w);\n"
	"  }\n"
	"  function unzoom() {\n"
	"    frames.forEach(function (g) { place(g, g._x, g._w, false); });\n"
	"    reset.style.opacity = 0.3;\n"
	"  }\n"
	"  function zoom(z) {\n"
	"    var e = 1e-6 * FW, s = FW / z._w;\n"
	"    frames.forEach(function (g) {\n"
	"      if (g._y > z._y) {\n"
	"        if (g._x <= z._x + e && g._x + g._w >= z._x + z._w - e) place(g, PAD, FW, true);\n"
	"        else g.style.display = 'none';\n"
	"      } else if (g._x >= z._x - e && g._x + g._w <= z._x + z._w + e && (g._y < z._y || g === z)) {\n"
	"        place(g, PAD + (g._x - z._x) * s, g._w * s, false);\n"
	"      } else g.style.display = 'none';\n"
	"    });\n"
	"    reset.style.opacity = 1;\n"
	"  }\n"
	"  function frameOf(el) {\n"
	"    while (el && el.getAttribute) { if (el.getAttribute('class') === 'f') return el; el = el.parentNode; }\n"
	"    return null;\n"
	"  }\n"
	"  document.documentElement.addEventListener('click', function (ev) {\n"
	"    var g = frameOf(ev.target);\n"
	"    if (g) zoom(g); else unzoom();\n"
	"  });\n"
	"  document.documentElement.addEventListener('mouseover', function (ev) {\n"
	"    var g = frameOf(ev.target);\n"
	"    det.textContent = g ? g._d : ' ';\n"
	"  });\n"
	"  unzoom();\n"
	"})();\n"
	"]]></script>\n";

int render__svg(const struct profile *p, const char *title, struct buf *out)
{
	struct frametab ft;
	struct fg_tree t = { 0 };
	struct svgctx c = { .out = out, .t = &t, .ft = &ft };
	uint32_t *ids = NULL, cap = 0;
	uint32_t vi;
	int rc;

	render__count_unit(p, &c.cu);
	vi = c.cu.vi;
	rc = frametab__build(&ft, p);
	if (rc)
		goto out;
	t.cap = 1024;
	t.n = calloc(t.cap, sizeof(*t.n));
	if (!t.n) {
		rc = -ENOMEM;
		goto out;
	}
	t.n[0] = (struct fg_node){ .name = UINT32_MAX };
	t.nn = 1;
	for (uint32_t i = 0; i < p->nsamples; i++)
		if (render__is_base(p, &p->samples[i]))
			c.diff = true;

	for (uint32_t i = 0; i < p->nsamples && p->nvalues; i++) {
		const struct prof_sample *s = &p->samples[i];
		int64_t v = s->values[vi];
		int side = c.diff && render__is_base(p, s) ? 0 : 1;
		uint32_t cur = 0;
		int n;

		if (side == 0)
			v = -v; /* the base side is stored negated */
		if (v <= 0)
			continue;
		n = frametab__stack(&ft, p, s, true, &ids, &cap);
		if (n < 0) {
			rc = n;
			goto out;
		}
		t.n[0].v[side] += v;
		for (int k = 0; k < n; k++) {
			cur = fg_tree__child(&t, cur, ids[k]);
			if (cur == UINT32_MAX) {
				rc = -ENOMEM;
				goto out;
			}
			t.n[cur].v[side] += v;
			if (t.n[cur].depth > c.maxdepth)
				c.maxdepth = t.n[cur].depth;
		}
	}
	rc = fg_tree__index(&t, &ft);
	if (rc)
		goto out;
	c.tot[0] = t.n[0].v[0];
	c.tot[1] = t.n[0].v[1];
	c.total = width_of(&c, &t.n[0]);
	c.scale = c.total ? (SVG_W - 2 * SVG_PAD) / (double)c.total : 0;
	if (c.diff)
		for (uint32_t i = 0; i < t.nn; i++) {
			double d = share_delta(&c, &t.n[i]);

			if (d < 0)
				d = -d;
			if (d > c.maxdelta)
				c.maxdelta = d;
		}
	c.height = TOP_PAD + BOT_PAD + (c.maxdepth + 1) * FRAME_H;

	buf__printf(out,
		    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		    "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		    "viewBox=\"0 0 %.0f %.0f\">\n"
		    "<style type=\"text/css\">\n"
		    "text { font-family: monospace; font-size: 11px; fill: #000; }\n"
		    "g.f { cursor: pointer; } g.f text { pointer-events: none; }\n"
		    "g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		    "#title { font-size: 16px; } #reset { cursor: pointer; }\n"
		    "</style>\n"
		    "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		    "<text id=\"title\" x=\"%.0f\" y=\"24\" text-anchor=\"middle\">",
		    SVG_W, c.height, SVG_W, c.height, SVG_W / 2);
	xml_put(out, title && *title ? title : "Flame graph");
	buf__puts(out, "</text>\n");
	if (p->nvalues) {
		buf__puts(out, "<text x=\"10\" y=\"42\">");
		xml_put(out, p->strs[p->sample_types[vi].type]);
		buf__puts(out, "/");
		xml_put(out, p->strs[p->sample_types[vi].unit]);
		if (c.diff)
			buf__printf(out, ", A total %" PRId64 ", B total %" PRId64 " %s"
				    ": width is B, red grew, blue shrank (share of total)",
				    render__count(&c.cu, c.tot[0]), render__count(&c.cu, c.tot[1]), c.cu.name);
		else
			buf__printf(out, ", total %" PRId64 " %s", render__count(&c.cu, c.total), c.cu.name);
		buf__puts(out, "</text>\n");
	}
	buf__printf(out, "<text id=\"reset\" x=\"%.0f\" y=\"42\" text-anchor=\"end\">Reset zoom</text>\n",
		    SVG_W - SVG_PAD);
	buf__printf(out, "<text id=\"details\" x=\"10\" y=\"%.0f\"> </text>\n", c.height - 12);
	if (c.total > 0) {
		rc = draw(&c);
		if (rc)
			goto out;
	} else {
		buf__printf(out, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">No samples</text>\n",
			    SVG_W / 2, c.height / 2);
	}
	buf__puts(out, svg_script);
	buf__puts(out, "</svg>\n");
	rc = out->err;
out:
	free(ids);
	fg_tree__free(&t);
	frametab__free(&ft);
	return rc;
}
