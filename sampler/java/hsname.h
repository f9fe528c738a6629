/*
 * hsname.h - names of the Java frames a HotSpot record (bpf/hotspot.h)
 * stands for, read from the JVM's memory once and kept in a bounded
 * cache keyed by (pid, address) and checked by the record's stamp.
 *
 * One record is one physical frame; a compiled one may stand for several
 * Java frames (methods inlined into it), so a record names 1..n frames,
 * innermost first: HotSpot's own view (what jstack prints), with each
 * frame's line from the method's line table at the scope's bci.
 *
 * Not thread-safe: one cache per thread (the sampler's reader).
 */
#ifndef PROFFS_JAVA_HSNAME_H
#define PROFFS_JAVA_HSNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/java/hsdecode.h"
#include "sampler/java/hsmem.h"
#include "sampler/java/hsvm.h"
#include "sampler/runtime/rtcache.h"

/* Bytes kept of a class, method or file name (longer ones are cut). */
#define HSNAME_MAX 1024
/* Inlined frames one compiled frame expands to at most (C2's default
 * MaxInlineLevel is 15). */
#define HSNAME_MAX_INLINE 64

/* The marker a record becomes when the object it names is gone: the
 * nmethod freed (or its memory another's now), the Method unloaded. */
#define HSNAME_FREED "[java: code freed]"

struct hsjframe {
	const char *name;    /* "java.lang.String.hashCode (String.java)"; a stub's
			      * blob name ("call_stub", "StubRoutines (1)") */
	const char *sysname; /* "java.lang.String.hashCode"; a stub's blob name */
	const char *file;    /* "java/lang/String.java"; "" when unknown */
	int32_t line;	     /* 0 when unknown */
	int32_t bci;	     /* -1 when unknown */
	uint8_t kind;	     /* enum hs_kind of the record */
	bool inlined;	     /* inlined into the next frame (same record) */
};

struct hsnames_stats {
	uint64_t hits, misses;
	uint64_t stale;	      /* the object is not the one sampled (-ESTALE) */
	uint64_t err_read;    /* the process or an object could not be read */
	uint64_t err_bad;     /* an object that is not what HotSpot writes (-EBADMSG) */
	uint64_t no_pcdesc;   /* a return address without its exact PcDesc (near one taken) */
	struct rtcache_stats cache; /* its share of the cache */
};

struct hsnames;

/* A view of a cache of objects read, its entries RT_HOTSPOT's (rtcache.h's
 * RTVIEW_DECLARE); of its own, by default this big. */
#define HSNAMES_DEFAULT_BYTES (4u << 20)
RTVIEW_DECLARE(hsnames);

/*
 * The Java frames of record (s0, s1) of process pid, a JVM vm (from
 * hsvm__open) that m reads, into out[0..max), innermost first; the
 * record's HS_R_EXACT flag picks the PcDesc rule. Returns the count
 * (>= 1), or: -ESTALE: the object at that address is not the sampled one
 * any more (HSNAME_FREED); -EBADMSG: it is not what HotSpot writes;
 * -ESRCH, -EPERM, -EFAULT: unreadable; -EINVAL: a record of no known
 * kind. Strings in out stay valid until the next call on c or
 * on its shared cache.
 */
int hsnames__frames(struct hsnames *c, pid_t pid, const struct hsmem *m, const struct hsvm *vm,
		    uint64_t s0, uint64_t s1, struct hsjframe *out, int max);

/*
 * The Method at address method of pid as the cache holds it, its
 * ConstMethod read now (no sample's stamp to hold it against): its
 * "pkg.Class.method" name, code size and line table (NULL when it has
 * none). For tests and tools; 0 or -errno as hsnames__frames. The
 * pointers stay valid until the next call on c or on its
 * shared cache.
 */
int hsnames__method(struct hsnames *c, pid_t pid, const struct hsmem *m, const struct hsvm *vm,
		    uint64_t method, const char **sysname, const struct hsline **lines,
		    uint32_t *code_size);

#endif
