/*
 * profile.h - the in-memory aggregated profile.
 *
 * This is the common currency of proffs: pprof decode produces one, the
 * store's merge produces one, diff combines two, and every renderer
 * (profile.pb, folded.txt, top.txt, flamegraph.svg) consumes one. It is
 * shaped like perftools.profiles.Profile so that encoding is a straight
 * walk, but it aggregates: adding a sample whose (locations, labels) are
 * already present adds the values instead of appending a row.
 *
 * Ids: mappings, functions and locations are numbered 1..n in the order
 * they were added (id == index + 1), so a lookup is an array index. Adding
 * an entity whose content equals an existing one returns the existing id,
 * so merging many profiles keeps one copy of each symbol.
 *
 * Strings are interned in the profile's table; index 0 is always "".
 * Every char* handed out points into the profile and is valid until
 * profile__free(). Nothing here is thread-safe; one profile belongs to one
 * thread at a time.
 *
 * Failures: int functions return 0 or -errno; functions that return a
 * pointer return NULL, and those that return a string index or an id
 * return the value that cannot be one (UINT32_MAX, 0), all with errno set.
 */
#ifndef PROFFS_PROFILE_H
#define PROFFS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROF_MAX_VALUES 8

struct prof_mapping {
	uint64_t start, limit, offset;
	uint32_t file;     /* string index: path, or "[kernel.kallsyms]" */
	uint32_t build_id; /* string index, hex; 0 when unknown */
	bool has_functions;
};

struct prof_function {
	uint32_t name;        /* string index */
	uint32_t system_name; /* string index */
	uint32_t filename;    /* string index */
	int64_t start_line;
};

struct prof_line {
	uint64_t function_id; /* 1-based, into profile.functions */
	int64_t line;
};

/* lines[0] is the innermost frame (pprof order): inlined callees first. */
struct prof_location {
	uint64_t mapping_id; /* 0 = none */
	uint64_t address;
	uint32_t nlines;
	struct prof_line *lines; /* owned by the profile */
};

/* A sample label: either str (string index, non-zero) or num. */
struct prof_label {
	uint32_t key; /* string index */
	uint32_t str; /* string index; 0 for a numeric label */
	int64_t num;
	uint32_t num_unit; /* string index, may be 0 */
};

/* (32 bytes: a busy host's 15 minutes are ~50k of them in a render) */
struct prof_sample {
	uint32_t nlocs, nlabels;
	uint64_t *locs; /* location ids, leaf first (pprof order) */
	struct prof_label *labels; /* sorted by (key, str, num) */
	int64_t *values;           /* nvalues entries */
};

struct prof_value_type {
	uint32_t type, unit; /* string indexes */
};

struct profile {
	/* string table; strs[0] == "" */
	char **strs;
	uint32_t *str_lens;
	uint32_t nstrs, cap_strs;

	struct prof_value_type sample_types[PROF_MAX_VALUES];
	uint32_t nvalues;
	uint32_t default_sample_type; /* string index, 0 = unset */
	struct prof_value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;

	struct prof_mapping *mappings;
	uint32_t nmappings, cap_mappings;
	struct prof_function *functions;
	uint32_t nfunctions, cap_functions;
	struct prof_location *locations;
	uint32_t nlocations, cap_locations;
	struct prof_sample *samples;
	uint32_t nsamples, cap_samples;

	/* Index: opaque to users; see profile.c. */
	struct prof_index *idx;
};

/* Returns a new empty profile (strs[0] == ""), or NULL with errno set.
 * Free with profile__free(). */
struct profile *profile__new(void);
void profile__free(struct profile *p);

/* Interns a byte string (need not be NUL-terminated) and returns its
 * index; the stored copy is NUL-terminated. Returns 0 for the empty
 * string, UINT32_MAX with errno set (ENOMEM, EOVERFLOW) on failure. */
uint32_t profile__intern(struct profile *p, const char *s, size_t len);
uint32_t profile__intern_str(struct profile *p, const char *s);

/* Sets the value types. types/units are C strings copied into the table.
 * Must be called before the first sample; returns 0 or -EINVAL (n == 0 or
 * n > PROF_MAX_VALUES or samples already present). */
int profile__set_value_types(struct profile *p, uint32_t n,
			     const char *const *types,
			     const char *const *units);

/* Room for this many more strings, mappings, functions, locations and
 * samples (a caller that knows its counts saves the copies of growing
 * the arrays). Returns 0 or -ENOMEM. */
int profile__reserve(struct profile *p, size_t strs, size_t maps, size_t funcs, size_t locs,
		     size_t samples);

/* on: the caller promises that the strings, mappings, functions and
 * locations it adds until off are not in p yet (a merge of a store, whose
 * symbols have distinct ids): adds append without a lookup.
 * Lookups after off see every row. An empty string is always index 0. */
void profile__distinct(struct profile *p, bool on);

/* Adds (or finds an equal) mapping/function/location and returns its id
 * (>= 1), or 0 with errno ENOMEM. String indexes and ids inside the
 * argument must already belong to p. The argument is copied. */
uint64_t profile__add_mapping(struct profile *p, const struct prof_mapping *m);
uint64_t profile__add_function(struct profile *p, const struct prof_function *f);
uint64_t profile__add_location(struct profile *p, const struct prof_location *l);

/* Adds values to the sample with these locations and labels, creating it
 * if absent. locs are leaf first; labels need not be sorted (they are
 * copied and sorted). values has p->nvalues entries. Returns 0 or
 * -ENOMEM. */
int profile__add_sample(struct profile *p, const uint64_t *locs, uint32_t nlocs,
			const struct prof_label *labels, uint32_t nlabels,
			const int64_t *values);
/* profile__add_sample that also gives the sample's index in p->samples
 * (*at; valid while p lives: samples are never removed or reordered), so
 * a caller may add to its values again without the lookup. */
int profile__add_sample_at(struct profile *p, const uint64_t *locs, uint32_t nlocs,
			   const struct prof_label *labels, uint32_t nlabels,
			   const int64_t *values, uint32_t *at);

/* Appends a sample the caller knows p lacks (no sample with equal
 * locations and labels; a merge of distinct store rows), without the
 * lookup profile__add_sample pays. locs and labels are not copied: they
 * must be memory of p (profile__alloc, profile__labels) and stay
 * unchanged; values are copied. Later lookups see the sample. Returns 0
 * or -ENOMEM. */
int profile__append_sample(struct profile *p, const uint64_t *locs, uint32_t nlocs,
			   const struct prof_label *labels, uint32_t nlabels,
			   const int64_t *values);

/* A sorted copy of labels[n] owned by p, for profile__append_sample
 * (samples may share it), or NULL with errno ENOMEM. */
struct prof_label *profile__labels(struct profile *p, const struct prof_label *labels,
				   uint32_t n);

/* size bytes owned by p (8-byte aligned), valid until profile__free; NULL
 * with errno ENOMEM. */
void *profile__alloc(struct profile *p, size_t size);

/* Adds every sample of src into dst, translating strings, mappings,
 * functions and locations, with values multiplied by scale. Value types are
 * matched by (type, unit); if dst has no value types yet it takes src's.
 * When extra is non-NULL its nextra labels (string indexes of *src*) are
 * appended to each sample's labels. Sample types of src that dst lacks are
 * an error (-EINVAL, nothing added); dst types src lacks get 0.
 * period/period_type are taken from src if dst has none; the time window of
 * dst is widened to cover src's. Returns 0 or -errno. */
int profile__merge(struct profile *dst, const struct profile *src,
		   int64_t scale, const struct prof_label *extra,
		   uint32_t nextra);

/* Builds the pprof-style diff: B's samples plus A's scaled by -1 and
 * labelled pprof::base=true. Either side may be empty. Returns a new
 * profile or NULL with errno set. */
struct profile *profile__diff(const struct profile *a, const struct profile *b);

/* Index (0-based) of the value type named type/unit, or -1: absent. */
int profile__value_index(const struct profile *p, const char *type, const char *unit);

/* Sum of value vi over all samples. */
int64_t profile__total(const struct profile *p, uint32_t vi);

/* The string label value of a sample for key (a C string), or NULL. */
const char *profile__sample_label(const struct profile *p,
				  const struct prof_sample *s, const char *key);

/* Index of the value rendered by folded/top/svg: the default sample type
 * if set, else the last one (what `go tool pprof` shows by default). */
uint32_t profile__display_value(const struct profile *p);

/*
 * Frame names, shared by every text renderer so that folded.txt, top.txt
 * and the SVG agree. Writes the name of line li of location id loc into
 * buf (NUL-terminated, truncated to size): the function name; for a
 * location without lines, "module+0xOFFSET" (module = basename of the
 * mapping file, offset = file offset of the address) or "0xADDR" with no
 * mapping. kmark true is the folded.txt/flame-graph style: kernel frames
 * (mapping file "[kernel.kallsyms]" or starting with "[" and flagged
 * kernel) get the suffix "_[k]", and a function whose system name is a
 * mangled C++/Rust symbol is shown demangled in full, as perf shows it.
 * ';' in a name is written ':' so folded lines stay parseable.
 * Returns the length written.
 */
size_t profile__frame_name(const struct profile *p, uint64_t loc, uint32_t li,
			   bool kmark, char *buf, size_t size);

#endif
