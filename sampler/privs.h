/*
 * privs.h - what `proffs run` keeps of root once it is up. The BPF
 * programs are loaded and attached and the tree is mounted with full
 * privileges; after that the daemon reads files that any local user
 * controls, so it keeps only the capabilities those reads need and sets
 * PR_SET_NO_NEW_PRIVS. The two later acts that need more, unmounting
 * the tree at exit (CAP_SYS_ADMIN) and creating a chunk of the unwind
 * tables' row space when the tables grow (CAP_BPF), are done by a helper
 * process forked before the drop that can do nothing else.
 */
#ifndef PROFFS_PRIVS_H
#define PROFFS_PRIVS_H

#include <sys/types.h>

struct unmounter;

/*
 * Forks the unmount helper for mountpoint. Call it while the process has
 * one thread and its signals are blocked (the helper inherits the mask:
 * a terminal's SIGINT is the daemon's to handle). The helper closes every
 * other descriptor and waits; it exits when the daemon does. Returns 0
 * (*out the caller's, privs__unmounter_free) or -errno.
 */
int privs__start_unmounter(const char *mountpoint, struct unmounter **out);

/* Asks the helper to detach the mount at its mountpoint (only a FUSE
 * mount there) and waits for it, up to 1 s. Returns 0 or -errno. */
int privs__unmount(struct unmounter *u);

/* Asks the helper (u, a struct unmounter *: the type of mount_opts'
 * abort_conn) to abort the FUSE connection of the mount it detached, or
 * else of the FUSE mount at its mountpoint (fusectl), and waits up to
 * 1 s. Returns 0 or -errno. */
int privs__abort(void *u);

/* Asks the helper (u, a struct unmounter *: the type of the unwinder's
 * chunk_fd hook) for a new row chunk (unwinder__chunk_create) and waits
 * for it, up to 1 s. Returns the map's fd, the caller's, or -errno.
 * Thread-safe. */
int privs__unwind_chunk(void *u);

/* Ends the helper and reaps it. */
void privs__unmounter_free(struct unmounter *u);

/* Drops every capability but the ones the sampler's reads need (from the
 * effective, permitted, inheritable, ambient and bounding sets) and sets
 * PR_SET_NO_NEW_PRIVS - for the calling thread: Linux keeps both per
 * thread, so every thread that exists already must call it itself, and
 * threads started later inherit it. Returns 0 or -errno. */
int privs__drop(void);

/* The capabilities kept, for the log: "cap_sys_ptrace,...". */
const char *privs__kept(void);

#endif
