/*
 * render_int.h - what the renderers (render_*.c) share and nobody else
 * needs: a table of display frame names built once per profile.
 *
 * Every text renderer must name frames identically (folded.txt, top.txt and
 * the SVG are read side by side), so the names come from
 * profile__frame_name() through this one table. Names are sanitised for
 * line-oriented output: ';' is already ':' (profile__frame_name), and
 * control bytes (newlines would split a folded line) become '?'.
 */
#ifndef PROFFS_RENDER_INT_H
#define PROFFS_RENDER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/profile/profile.h"
#include "fs/render/render.h"
#include "store/util/hmap.h"

struct frametab {
	/* distinct names, NUL-terminated, in one pool */
	char *pool;
	size_t pool_len, pool_cap;
	uint32_t *off, *len; /* per name id */
	uint32_t nnames, cap_names;
	struct hidx idx; /* name -> id */
	/* per location (id - 1): its frames outermost first, as name ids,
	 * in loc_frames[loc_off[i] .. loc_off[i + 1]) */
	uint32_t *loc_off, *loc_frames;
};

/* Builds the table for p (kernel frames marked "_[k]"). Returns 0 or
 * -ENOMEM; release with frametab__free() either way. */
int frametab__build(struct frametab *ft, const struct profile *p);
void frametab__free(struct frametab *ft);
/* Interns a name (sanitised as above); returns its id or UINT32_MAX. */
uint32_t frametab__intern(struct frametab *ft, const char *s, size_t len);
static inline const char *frametab__name(const struct frametab *ft, uint32_t id)
{
	return ft->pool + ft->off[id];
}

/*
 * Expands sample s into its frames root first: the comm label first when
 * present (and withcomm), then every location outermost first, inlined
 * lines expanded. A sample with no frames at all gets "(no stack)" so
 * totals still add up. *ids grows as needed (the caller frees it).
 * Returns the number of frames or -ENOMEM.
 */
int frametab__stack(struct frametab *ft, const struct profile *p,
		    const struct prof_sample *s, bool withcomm, uint32_t **ids,
		    uint32_t *cap);

/*
 * The counting unit of folded.txt and the flame graph (SPEC §2 Files):
 * samples for cpu (a profile with a samples/count type: a cpu folded.txt
 * sums to that total, which flamegraph.pl titles "samples"), microseconds
 * for offcpu (its offcpu/nanoseconds type, divided), otherwise the display
 * type's value in its own unit. vi: the value index; div: divide summed
 * values by it (rounded); name: the unit as the SVG names it.
 */
struct count_unit {
	uint32_t vi;
	int64_t div;
	const char *name;
};
void render__count_unit(const struct profile *p, struct count_unit *u);
/* v in u's unit: v / u->div, rounded half away from zero. */
int64_t render__count(const struct count_unit *u, int64_t v);

/* True when the sample carries pprof::base=true (A's side of a diff). */
bool render__is_base(const struct profile *p, const struct prof_sample *s);

#endif
