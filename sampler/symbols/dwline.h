/*
 * dwline.h - source file and line of a code address from a file's DWARF
 * (libdw: we parse no DWARF ourselves), for frames named from a debug
 * file, so that profile.pb carries what `go tool pprof -list` needs.
 */
#ifndef PROFFS_DWLINE_H
#define PROFFS_DWLINE_H

#include <stdbool.h>
#include <stdint.h>

struct dwline;

/*
 * DWARF a table holds at most, by default: libdw keeps a file's debug
 * sections decompressed in the heap (Debian's libc6-dbg: ~10 MB, plus
 * the line tables read), more than the daemon's whole symbol cache. A
 * file with more names its frames without lines.
 */
#define DWLINE_MAX_BYTES (4u << 20)

/* The DWARF of the ELF file open at fd (the fd stays the caller's and
 * must stay open until dwline__close), if its debug sections take at
 * most max bytes once decompressed (0: no bound); *bytes (may be NULL)
 * gets that size. NULL with errno set when the file has none (ENODATA),
 * has more (EFBIG) or libdw refuses it. */
struct dwline *dwline__open(int fd, uint64_t max, uint64_t *bytes);

/* The line-table row covering link-time address vaddr: *file (a path as
 * the compiler recorded it, in libdw's memory: valid until dwline__close)
 * and *line. False when no compilation unit or row covers it. */
bool dwline__lookup(struct dwline *d, uint64_t vaddr, const char **file, int *line);

/* Gives back the pages of the file that libdw read through its map: the
 * sections it inflated are in its heap, and the rest come back from the
 * page cache if read again. Cheap when none are mapped; for callers to
 * use after a round of lookups (a debug file's pages stayed in the
 * daemon's RSS as long as its table lived: 1.4-1.9 MB on a busy host). */
void dwline__unmap(struct dwline *d);

void dwline__close(struct dwline *d);

#endif
