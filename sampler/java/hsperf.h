/*
 * hsperf.h - finding a counter in a JVM's perf data: the memory HotSpot
 * keeps its jstat counters in (the hsperfdata file's bytes, or anonymous
 * memory under -XX:+PerfDisableSharedMem). We read one counter from it,
 * java.cls.unloadedClasses: the unload epoch of bpf/hotspot.h.
 *
 * The bytes are untrusted (another process's memory): every offset and
 * length is checked against the buffer, the entry count is bounded.
 */
#ifndef PROFFS_JAVA_HSPERF_H
#define PROFFS_JAVA_HSPERF_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of perf data read at most (HotSpot's default is 32 KiB,
 * -XX:PerfDataMemorySize raises it). */
#define HSPERF_MAX (1u << 20)
/* The prologue's size: what to read first to learn how much is used. */
#define HSPERF_PROLOGUE 32

/*
 * The bytes of the region in use, from its prologue b[0..n) (n >=
 * HSPERF_PROLOGUE): 0 and *used, or -EPROTO (not perf data: magic,
 * byte order, version) or -EAGAIN (not accessible yet).
 */
int hsperf__used(const uint8_t *b, size_t n, uint32_t *used);

/*
 * The offset in b[0..n) (the region from its start) of the 8-byte value
 * of the scalar long counter named name: 0 and *off; -ENOENT when no
 * entry has that name; -EPROTO when an entry breaks a bound (its length,
 * name or data outside the buffer, more entries than fit).
 */
int hsperf__find(const uint8_t *b, size_t n, const char *name, uint32_t *off);

#endif
