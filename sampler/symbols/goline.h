/*
 * goline.h - source file and line of a Go binary's code address, from
 * its own .gopclntab (gopclntab.h), for the frames named from it: a
 * stripped Go binary has no DWARF, yet `go tool pprof -list` and the
 * profile's Line entries want a file and line, and the table has them.
 *
 * The table is read through a read-only map of the file (its pages are
 * the page cache's: madvise gives them back after a round of lookups,
 * as dwline.h does for DWARF), each lookup under busguard (a file that
 * shrank since faults with SIGBUS there: the lookup fails, the daemon
 * lives). File names are copied out once each, so what a lookup returns
 * never points into the map.
 */
#ifndef PROFFS_GOLINE_H
#define PROFFS_GOLINE_H

#include <stdbool.h>
#include <stdint.h>

struct goline;

/* The table of the file open at fd (the fd stays the caller's; the map
 * keeps the file), size bytes at file offset off, whose offsets count
 * from text when it holds none (elf_info's go_off, go_size, go_text).
 * NULL with errno set when it cannot be mapped. */
struct goline *goline__open(int fd, uint64_t off, uint64_t size, uint64_t text);

/* The position of link-time address vaddr: *file (the table's path,
 * valid until goline__close) and *line. False when the table has none
 * there, or the read failed. */
bool goline__lookup(struct goline *g, uint64_t vaddr, const char **file, int *line);

/* Gives back the pages read through the map (they come back from the
 * page cache at the next lookup). NULL is ignored. */
void goline__unmap(struct goline *g);

void goline__close(struct goline *g);

#endif
