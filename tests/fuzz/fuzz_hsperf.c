/* fuzz_hsperf: a JVM's perf data (another process's memory) searched for
 * its class-unload counter by sampler/java/hsperf.c. Nothing reads past
 * the buffer or loops, however the prologue and entries lie; a counter
 * found lies inside the buffer.
 *
 * Input: the region's bytes (a real hsperfdata file is a seed). */
#include <stdint.h>
#include <stdlib.h>

#include "sampler/java/hsperf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t used = 0, off = 0;

	if (size >= HSPERF_PROLOGUE)
		(void)hsperf__used(data, size, &used);
	if (!hsperf__find(data, size, "java.cls.unloadedClasses", &off) && (off > size || size - off < 8))
		abort();
	return 0;
}
