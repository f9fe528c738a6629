/*
 * vmtables.h - a running HotSpot JVM's description of itself: the
 * VMStructs (fields: class, name, C++ type, offset or static address),
 * VMTypes (classes and their sizes) and the int and long constants the
 * serviceability agent reads, copied out of the process once, so that
 * every offset we use is taken by name from the JVM that runs, never
 * assumed from a version number.
 *
 * The tables are untrusted input (another process's memory, forgeable by
 * its owner): entry sizes, member offsets, counts and string lengths are
 * bounded and a table that breaks a bound is refused whole.
 */
#ifndef PROFFS_JAVA_VMTABLES_H
#define PROFFS_JAVA_VMTABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/java/hsmem.h"
#include "sampler/java/jvmfile.h"

/* Bounds on what we copy (JDK 17 has 788 fields, 768 types, 398 int
 * and 86 long constants; names are C++ identifiers and type strings). */
#define VMT_MAX_ENTRIES (1u << 14)
#define VMT_MAX_STRIDE 512u
#define VMT_MAX_STR 512u
#define VMT_MAX_STRS (4u << 20)

struct vmt_field {
	const char *type, *name; /* "CodeBlob", "_frame_size" */
	const char *type_string; /* "int", "address", "Method*"; "" if none */
	uint64_t offset;	 /* an instance field's byte offset */
	uint64_t address;	 /* a static field's address in the process */
	bool is_static;
};

struct vmt_type {
	const char *name, *super; /* super: "" if none */
	uint64_t size;
};

struct vmt_const {
	const char *name;
	int64_t value;
};

struct vmtables {
	struct vmt_field *fields;
	size_t nfields;
	struct vmt_type *types;
	size_t ntypes;
	struct vmt_const *ints, *longs;
	size_t nints, nlongs;
	char *strs; /* every string above, NUL-separated */
	size_t strs_len;
};

/*
 * Copies the four tables of the JVM whose libjvm (jf) is loaded at bias
 * in the process m reads. On 0, *t owns its arrays until vmtables__free.
 * Errors: -EAGAIN: the tables are not set up yet (a JVM still starting:
 * a table pointer or entry size is 0); -EPROTO: a table breaks a bound
 * (an entry size, a member offset, a string without its NUL, more
 * entries than VMT_MAX_ENTRIES, a NULL name mid-table); the reads'
 * -errno (-EFAULT, -ESRCH, -EPERM); -ENOMEM. *t is empty on error.
 */
int vmtables__read(const struct hsmem *m, const struct jvmfile *jf, uint64_t bias,
		   struct vmtables *t);

void vmtables__free(struct vmtables *t);

/* The field type.name (the first entry of that name), or NULL. */
const struct vmt_field *vmtables__field(const struct vmtables *t, const char *type,
					const char *name);

/* The type named name, or NULL. */
const struct vmt_type *vmtables__type(const struct vmtables *t, const char *name);

/* The int constant named name (then the long one) into *v: 0 or -ENOENT. */
int vmtables__const(const struct vmtables *t, const char *name, int64_t *v);

#endif
