/*
 * kfeature.h - what the running kernel let us load, and why not.
 *
 * Every BPF object is loaded through libbpf, whose messages come here
 * (kfeature__install): each line of a message is logged as its own line,
 * and the verifier's log of a refused program is kept, not printed (it
 * can run to megabytes). A loader that gives up a feature, or steps down
 * to less of it, calls kfeature__refused: one line at error level naming
 * the feature, the kernel and what is missing, then the last
 * KFEATURE_LOG_LINES lines of that log, whole: the verifier's last lines
 * are its reason. /prof/metrics shows proffs_kernel_feature{feature} = 1
 * for each feature on and 0 for each refused (kfeature__metrics).
 *
 * PROFFS_REFUSE=name[,name...] (tests, README) makes the named features'
 * programs ones the verifier refuses, so the daemon's path on a kernel
 * that cannot load them runs here: see kfeature__test_refuse.
 *
 * All functions are for the daemon's main thread while it starts, but
 * kfeature__metrics, which any thread may call once the start is over.
 */
#ifndef PROFFS_KFEATURE_H
#define PROFFS_KFEATURE_H

#include <stdbool.h>

struct buf;

#define KFEATURE_LOG_LINES 20

/* Routes libbpf's messages through log_msg. Idempotent. */
void kfeature__install(void);
/* Feature `name` (a static string) is on. */
void kfeature__on(const char *name);
/* Feature `name` (static) could not be loaded (err: -errno of the load);
 * `missing` says what the kernel lacks or what is lost. Logs as above and
 * forgets the kept verifier log. */
void kfeature__refused(const char *name, const char *missing, int err);
/* Was `name` named in PROFFS_REFUSE? */
bool kfeature__test_refuse(const char *name);
/* The proffs_kernel_feature family, one line per feature decided. */
void kfeature__metrics(struct buf *out);

#endif
