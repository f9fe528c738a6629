/*
 * v8pos.h - V8's position tables, decoded by V8's own rules (10.x-11.x),
 * pure functions over bytes read from another process (so untrusted:
 * never read past the given length, refuse what V8 would not write).
 *
 * A source position table (a BytecodeArray's, or optimized code's) is a
 * sequence of entries (code offset delta, source position delta), each a
 * zigzag base-128 VLQ; a negative code delta d means delta -(d + 1) of a
 * non-statement. The running code offset starts at -1 (the function's
 * entry), the source position at 0. A source position is V8's 64-bit
 * SourcePosition: bit 0 external, bits 1-30 script offset + 1, bits
 * 31-46 inlining id + 1.
 *
 * Sparkplug (baseline) code keeps a table of unsigned VLQs: the machine
 * code size of the prologue, then of each bytecode in order; walking it
 * needs the bytecodes' lengths (Bytecodes::kBytecodeSizes).
 *
 * A position becomes a line through the script's line ends (offsets of
 * each line's terminator, V8's Script::line_ends, or computed from the
 * source as V8 does).
 */
#ifndef PROFFS_V8POS_H
#define PROFFS_V8POS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tables longer than this are refused (-EFBIG). */
#define V8POS_MAX_TABLE (4u << 20)

/*
 * The source position V8 gives code offset off in table tab[0..len):
 * the last entry whose code offset is <= off, external entries skipped
 * (V8's kJavaScriptOnly). Returns 0 with *raw set (and *at, if not NULL,
 * to that entry's code offset); -ENOENT: no such entry; -EINVAL: a
 * malformed table (a VLQ cut short or over 64 bits); -EFBIG.
 */
int v8pos__find(const uint8_t *tab, size_t len, int64_t off, uint64_t *raw, int64_t *at);

static inline bool v8pos__external(uint64_t raw)
{
	return raw & 1;
}

/* The script offset (-1: none) and inlining id (-1: the outer function). */
static inline int32_t v8pos__script_offset(uint64_t raw)
{
	return (int32_t)((raw >> 1) & 0x3fffffff) - 1;
}

static inline int32_t v8pos__inlining_id(uint64_t raw)
{
	return (int32_t)((raw >> 31) & 0xffff) - 1;
}

/*
 * The bytecode offset of pc offset pc_off in Sparkplug code, by V8's
 * BytecodeOffsetIterator (a pc maps to the bytecode whose code ends at or
 * after it; -1: the prologue). tab[0..tlen) is the code's table,
 * bc[0..bclen) the bytecodes, sizes[scale][opcode] their lengths without
 * prefix (scale 0 single, 1 Wide, 2 ExtraWide; opcodes 0-3 are the
 * prefixes Wide, ExtraWide, DebugBreakWide, DebugBreakExtraWide) for
 * nbc opcodes. Returns 0 with *bc_off; -ERANGE: pc_off past the table;
 * -EINVAL: malformed.
 */
int v8pos__baseline(const uint8_t *tab, size_t tlen, const uint8_t *bc, size_t bclen,
		    const uint8_t (*sizes)[256], unsigned nbc, uint32_t pc_off, int32_t *bc_off);

/*
 * Line ends of a source text as V8 computes them (String::CalculateLineEnds
 * with the ending line): the offset of every terminator ('\n', a '\r' not
 * before '\n', and for two-byte text U+2028, U+2029), then the length.
 * One-byte text s[0..n) or two-byte text w[0..n) (little-endian units).
 * Writes at most cap ends; returns how many there are (may exceed cap).
 */
size_t v8pos__line_ends1(const uint8_t *s, size_t n, uint32_t *ends, size_t cap);
size_t v8pos__line_ends2(const uint8_t *w, size_t n, uint32_t *ends, size_t cap);

/* The 0-based line of script offset pos: the first line end >= pos
 * (V8's Script::GetPositionInfo). -ERANGE when pos is past the last end. */
int v8pos__line(const uint32_t *ends, size_t n, uint32_t pos, uint32_t *line);

#endif
