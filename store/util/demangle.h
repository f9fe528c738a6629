/*
 * demangle.h - C++ and Rust symbol names as people read them, through
 * binutils' libiberty (cplus_demangle: Itanium C++, Rust legacy and v0).
 *
 * Two forms, because the two kinds of reader expect different ones:
 * - full: what perf prints, parameters and templates kept
 *   ("Threads::create_vm(JavaVMInitArgs*, bool*)"): folded.txt and the
 *   flame graph;
 * - short: what `go tool pprof` shows by default (its demangler drops
 *   parameters and template arguments: "Threads::create_vm"). A stored
 *   function's name is the short form and its system name the mangled
 *   one, so pprof, which demangles only names equal to their system
 *   name, shows exactly what top.txt shows.
 */
#ifndef PROFFS_DEMANGLE_H
#define PROFFS_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* Does name look like a mangled C++ (_Z) or Rust v0 (_R) symbol? */
bool demangle__looks_mangled(const char *name);

/*
 * Demangles name into out (cap bytes, NUL-terminated, cut to fit), full
 * or short. Returns the length written, or 0 when name is not a symbol
 * libiberty can demangle (out is then untouched). Thread-safe; allocates
 * only inside libiberty, freed before returning.
 */
size_t demangle__name(const char *name, bool full, char *out, size_t cap);

#endif
