/*
 * rbline.h - the line of a position in a CRuby iseq, by Ruby's own rule
 * (iseq.c, VM_INSN_INFO_TABLE_IMPL 2): the iseq's insns_info entries
 * (one per instruction that starts a new line or event) and the
 * "succinct index" that maps a position (in VALUEs from iseq_encoded) to
 * how many entries start at or before it; the entry before that count
 * is the position's. The caller applies calc_pos's "pc - 1" first
 * (rbline__pos). Pure: the bytes come from another process, copied in
 * by the caller; everything is bounded and checked here.
 */
#ifndef PROFFS_RBLINE_H
#define PROFFS_RBLINE_H

#include <stddef.h>
#include <stdint.h>

/* Refused beyond these (EFBIG): larger than any method Ruby compiles
 * (an iseq of 2^20 VALUEs is 8 MiB of code). */
#define RBLINE_MAX_ENTRIES (1u << 18)
#define RBLINE_MAX_ISEQ (1u << 20)

struct rbline {
	uint32_t iseq_size; /* VALUEs of code */
	uint32_t n;	    /* entries */
	size_t succ_len;    /* bytes at succ */
	const uint8_t *succ;
	int32_t line[];	    /* each entry's line; succ follows */
};

/* Bytes Ruby allocates for the succ index of an iseq of iseq_size
 * VALUEs (succ_index_table_create). */
size_t rbline__succ_bytes(uint32_t iseq_size);

/*
 * A table from n entries of entry_size bytes each at entries (the line
 * an int32 at line_off in each) and, when n > 1, the succ index bytes
 * succ[0..succ_len) (exactly rbline__succ_bytes(iseq_size) of them).
 * The result is the caller's (rbline__free); NULL with errno EINVAL
 * (sizes that do not agree), EFBIG (over the caps), ENOMEM.
 */
struct rbline *rbline__new(const uint8_t *entries, uint32_t n, size_t entry_size, size_t line_off,
			   const uint8_t *succ, size_t succ_len, uint32_t iseq_size);
void rbline__free(struct rbline *t);

/*
 * The line of the instruction holding position pos. Returns 0 and *line;
 * -ENOENT: the iseq has no entries; -ERANGE: pos is past the code;
 * -EBADMSG: the index names no entry (a table Ruby did not write).
 */
int rbline__at(const struct rbline *t, uint32_t pos, int32_t *line);

/* calc_pos: the position a frame's pc (as an offset in VALUEs from
 * iseq_encoded) runs at: the pc points past the running instruction's
 * opcode, so one less, except at 0. */
static inline uint32_t rbline__pos(uint32_t pc_index)
{
	return pc_index ? pc_index - 1 : 0;
}

#endif
