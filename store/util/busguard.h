/*
 * busguard.h - a read of a mapped file a user controls that cannot kill
 * the daemon.
 *
 * libelf and libdw read the files they are given through a mapping. A
 * page of a mapping whose file shrank since (truncated by its owner), or
 * whose FUSE server went away (a hung read abandoned, then the server
 * killed), faults with SIGBUS, whose default action ends the process.
 * busguard__run runs fn on the calling thread with SIGBUS turned into a
 * return: the read ends with -EIO and what it had allocated is leaked
 * (rare, and never freed half-built). A SIGBUS elsewhere keeps its
 * default action.
 */
#ifndef PROFFS_BUSGUARD_H
#define PROFFS_BUSGUARD_H

/* Returns fn(ctx), or -EIO if a SIGBUS hit the thread meanwhile. Any
 * thread; calls may not nest. */
int busguard__run(int (*fn)(void *ctx), void *ctx);
/* SIGBUSes caught so far. */
unsigned long busguard__caught(void);

#endif
