/*
 * pprof.h - perftools.profiles.Profile encode and decode (protobuf-c,
 * generated from store/profile/profile.proto).
 */
#ifndef PROFFS_PPROF_H
#define PROFFS_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "store/profile/profile.h"

/*
 * Decodes a pprof profile, raw or gzip-compressed (detected by magic), and
 * validates it the way pprof does: string_table[0] == "", every string
 * index in range, mapping/function/location ids non-zero and unique, every
 * referenced id resolvable, exactly one value per sample type per sample,
 * sane lengths (no more than 1 GiB decompressed). On success returns 0 and
 * a new profile in *out (the caller's). On failure returns -EINVAL (or
 * -ENOMEM) and writes a one-line reason, without the file name, into
 * err[errsz].
 */
int pprof__decode(const void *buf, size_t len, struct profile **out,
		  char *err, size_t errsz);
/* The same with a lower bound on the decompressed size (max bytes, at
 * most 1 GiB), for input from the network: a small gzip answer must not
 * make the daemon allocate a gigabyte. */
int pprof__decode_max(const void *buf, size_t len, uint64_t max, struct profile **out,
		      char *err, size_t errsz);

/*
 * Encodes p as one uncompressed perftools.profiles.Profile message.
 * *out is malloc'd with one spare byte past *outlen (the caller frees; a
 * struct buf can take it whole, buf__take). Deterministic: the
 * same profile gives the same bytes. Returns 0 or -errno.
 */
int pprof__encode(const struct profile *p, uint8_t **out, size_t *outlen);

/* How many strings, mappings, functions and locations an encoding of a
 * profile holds: what a part encoded to follow it must number past. */
struct pprof_ids {
	uint32_t nstrs, nmappings, nfunctions, nlocations;
};
void pprof__ids(const struct profile *p, struct pprof_ids *out);

/*
 * Encodes p as a part that follows the encoding of another profile whose
 * figures are base: the bytes of that encoding and then these parse as
 * one Profile holding both profiles' samples (protobuf merges concatenated
 * messages). p's strings, mappings, functions and locations are numbered
 * after base's (content both hold is there twice, which pprof allows), it
 * states no value types of its own (it must have the first part's), and
 * its duration replaces the first part's (its time is not written: the
 * first part's stands, and `go tool pprof` refuses a second one). *out as for
 * pprof__encode. Returns 0 or -errno.
 */
int pprof__encode_after(const struct profile *p, const struct pprof_ids *base, uint8_t **out,
			size_t *outlen);

#endif
