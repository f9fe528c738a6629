/*
 * kallsyms.h - the kernel's function symbols (/proc/kallsyms), compressed
 * (kallsyms.c says how and why).
 */
#ifndef PROFFS_KALLSYMS_H
#define PROFFS_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct kallsyms;

/* Reads the text symbols (t, T, w, W) of a kallsyms listing from f (the
 * caller's, left open) or from the file at path. The table is the
 * caller's until kallsyms__free. NULL with errno set on failure; an
 * empty listing (kptr_restrict) is a table of no symbols. */
struct kallsyms *kallsyms__read(FILE *f);
struct kallsyms *kallsyms__load(const char *path);

/* Name of the symbol at or below addr, or NULL (below the first, or no
 * memory). The string is the table's and lives until kallsyms__free.
 * Not thread-safe: a lookup may fill the table's name cache. */
const char *kallsyms__lookup(struct kallsyms *k, uint64_t addr);

/* Symbols held. */
size_t kallsyms__count(const struct kallsyms *k);

void kallsyms__free(struct kallsyms *k);

#endif
