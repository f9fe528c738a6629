/*
 * debugfile.h - checking and reading a file that is to name the code of
 * one build id: a separate debug file (from the debug root, a debuginfod
 * server, or `objcopy --only-keep-debug`) or a binary with its symbol
 * table. A fetched file is whatever a server sent, so nothing of it is
 * trusted before this says it is an ELF file of that very build id.
 */
#ifndef PROFFS_DEBUGFILE_H
#define PROFFS_DEBUGFILE_H

#include "sampler/symbols/elfsym.h"

/*
 * Reads the ELF file open at fd (the caller's) as the symbols of build id
 * bid (lowercase hex): its build id must be bid and it must have a
 * .symtab with functions. On success *e owns them (elfsym__fini), with the
 * file's own PT_LOADs, which in a debug file locate nothing in the
 * binary: turn file offsets into addresses with the binary's. Returns 0,
 * -ENOEXEC (not ELF, or unreadable), -ESTALE (another build id), -ENODATA
 * (no function symbols in a .symtab), -EFBIG (over elfsym's caps) or
 * -ENOMEM; *e is then empty.
 */
int debugfile__read(int fd, const char *bid, struct elf_info *e);

/* The same for an image in memory (fuzzing; tests). */
int debugfile__read_mem(const void *image, size_t size, const char *bid, struct elf_info *e);

#endif
