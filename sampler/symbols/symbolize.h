/*
 * symbolize.h - addresses to function names. Kernel addresses through
 * /proc/kallsyms (modules included); user addresses through the ELF file
 * backing the mapping (struct dso), cached by dev+inode and shared by
 * build id, so the cache outlives the processes that used a file; JIT code
 * through a process's perf map (/tmp/perf-PID.map inside its root).
 * Not thread-safe: the sampler thread owns the symbolizer.
 */
#ifndef PROFFS_SYMBOLIZE_H
#define PROFFS_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampler/symbols/elfsym.h"

/* Symbols of one ELF image, shared by every dso with its build id. */
struct symtab {
	struct elf_info elf;
	bool has_syms;
};

/* One file as seen through some mapping: identity and its symbols. */
struct dso {
	uint64_t dev, ino;
	char *path;         /* path from /proc/PID/maps (may end " (deleted)") */
	struct symtab *tab; /* NULL until loaded or when it could not be read */
	bool tried;         /* a load was attempted (do not retry every sample) */
};

struct symbolizer;

struct symbolizer_stats {
	uint64_t dsos, symtabs, symbols, kernel_symbols;
	uint64_t hits, misses;
};

/* Returns a new symbolizer (kallsyms read now), or NULL with errno set.
 * debug_root: where separate debug files live (NULL = /usr/lib/debug). */
struct symbolizer *symbolizer__new(const char *debug_root);
void symbolizer__free(struct symbolizer *s);

/* Function name for a kernel address, or NULL. The string is the
 * symbolizer's and lives until symbolizer__free(). */
const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr);

/*
 * The dso for the file mapped at [start, end) in pid with this dev/inode,
 * loading its symbols on first use: through /proc/PID/map_files (works
 * for deleted and replaced binaries), else /proc/PID/root/PATH (the
 * process's mount namespace), else PATH. Returns NULL only on allocation
 * failure; a dso whose file cannot be read has tab == NULL. Owned by the
 * symbolizer.
 */
struct dso *symbolizer__dso(struct symbolizer *s, pid_t pid, uint64_t dev,
			    uint64_t ino, const char *path, uint64_t start,
			    uint64_t end);

/* Function name at file offset off of d, or NULL; counts hits/misses. */
const char *symbolizer__lookup(struct symbolizer *s, struct dso *d, uint64_t off);

/* Function name at offset off of the vDSO (the same image in every
 * process of this kernel, so read once from our own), or NULL. */
const char *symbolizer__vdso(struct symbolizer *s, uint64_t off);

void symbolizer__stats(struct symbolizer *s, struct symbolizer_stats *st);

/* A process's perf map (JIT symbols). */
struct perfmap;
/* Loads /tmp/perf-NSPID.map as seen from pid's root; NULL (errno set) if
 * absent. Owned by the caller: perfmap__free(). */
struct perfmap *perfmap__load(pid_t pid);
const char *perfmap__lookup(const struct perfmap *m, uint64_t addr);
void perfmap__free(struct perfmap *m);

#endif
