/* fuzz_v8file: ELF files that may carry V8 (sampler/v8/v8file.c) and the
 * layout built from what they say (sampler/v8/v8layout.c). Any bytes: an
 * error or a result, never a crash or a read past the image; a result's
 * builtins lie inside the file's code and a layout it accepts fits BPF's
 * reads or is refused with -ERANGE. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/v8/v8layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct v8file f;
	struct v8layout l;
	struct v8_proc p;
	char why[128];
	void *img = malloc(size ? size : 1);
	int err;

	if (!img)
		return 0;
	memcpy(img, data, size);
	err = v8file__read_mem(img, size, &f);
	if (!err) {
		if (f.code_hi < f.code_lo || f.nbytecodes > V8FILE_MAX_BYTECODES)
			abort();
		if (!v8layout__init(&f, &l, why, sizeof(why))) {
			err = v8layout__proc(&l, f.code_off, f.code_hi - f.code_lo, 1, 1, &p);
			if (err && err != -ERANGE)
				abort();
		}
	}
	free(img);
	return 0;
}
