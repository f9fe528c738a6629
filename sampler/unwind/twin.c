/*
 * twin.c - bpf/unwind_walk.h's steps in plain C. Keep the two in step:
 * tests/unit/test_unwind.c holds this one against libdw.
 */
#include <string.h>

#include "sampler/unwind/table.h"
#include "sampler/unwind/twin.h"

static int rd(const struct twin_mem *m, uint64_t addr, uint64_t *v)
{
	if (addr < m->base || addr - m->base > m->len || m->len - (addr - m->base) < 8)
		return -1;
	memcpy(v, m->buf + (addr - m->base), 8);
	return 0;
}

/* The end for a read that failed: past a copy cut at its size cap, the
 * stack goes on (deeper than we copied): truncated, not a bad frame. */
static int rd_end(const struct twin_mem *m, uint64_t addr)
{
	return m->capped && addr >= m->base + m->len ? PROF_UE_TRUNC : PROF_UE_BAD_FRAME;
}

static int fp_step(struct twin_regs *r, const struct twin_mem *mem)
{
	uint64_t ra, nbp;

	if (!r->bp_ok || r->bp == 0)
		return PROF_UE_FP_END;
	if (r->bp < r->sp)
		return PROF_UE_BAD_FRAME;
	if (rd(mem, r->bp + 8, &ra) || rd(mem, r->bp, &nbp))
		return rd_end(mem, r->bp + 8);
	if (ra == 0)
		return PROF_UE_FP_END;
	r->sp = r->bp + 16;
	r->bp = nbp;
	r->pc = ra;
	r->exact = false;
	return 0;
}

static int table_step(struct twin_regs *r, const struct twin_map *m, uint64_t look, int n,
		      const struct twin_mem *mem)
{
	uint64_t off = look - m->start + m->pgoff, cfa = 0, ra = 0, v;
	const struct unw_rule *u;
	long i;

	if (off > 0xffffffffull)
		return PROF_UE_NO_RULE;
	i = unw_table__find(m->rows, m->nrows, off);
	if (i < 0)
		return PROF_UE_NO_RULE;
	if (m->rows[i].rule >= m->nrules)
		return PROF_UE_BAD_FRAME;
	u = &m->rules[m->rows[i].rule];
	switch (u->cfa) {
	case UNW_CFA_SP:
		cfa = r->sp + (int64_t)u->cfa_off;
		break;
	case UNW_CFA_BP:
		if (!r->bp_ok)
			return PROF_UE_BAD_FRAME;
		cfa = r->bp + (int64_t)u->cfa_off;
		break;
	case UNW_CFA_PLT:
		cfa = r->sp + (int64_t)u->cfa_off + ((r->pc & 15) >= u->arg ? 8 : 0);
		break;
	case UNW_CFA_DEREF_SP:
		if (rd(mem, r->sp + (int64_t)u->cfa_off, &cfa))
			return rd_end(mem, r->sp + (int64_t)u->cfa_off);
		break;
	case UNW_CFA_NONE:
		return PROF_UE_NO_RULE;
	default:
		return PROF_UE_BAD_FRAME;
	}
	switch (u->ra) {
	case UNW_RA_UNDEF:
		return PROF_UE_ROOT;
	case UNW_RA_CFA:
		if (rd(mem, cfa + (int64_t)u->ra_off, &ra))
			return rd_end(mem, cfa + (int64_t)u->ra_off);
		break;
	case UNW_RA_SP:
		if (rd(mem, r->sp + (int64_t)u->ra_off, &ra))
			return rd_end(mem, r->sp + (int64_t)u->ra_off);
		break;
	default: /* UNW_RA_REG: only a live leaf has the registers */
		(void)n;
		return PROF_UE_BAD_FRAME;
	}
	switch (u->bp) {
	/* In an epilogue past its pops the rule still points at the slot
	 * rbp was saved in, now below sp (outside a copy of the stack taken
	 * from sp): the pop put that value in rbp, which is kept. Leaving
	 * rbp unknown there ended the caller's walk when its CFA is rbp's
	 * (JDK 17's JavaCalls::call_helper under a tail-called leaf stopped
	 * on its ret: test_hotspot_walk, 1 stop in 60). A saved rbp that
	 * cannot be read otherwise leaves rbp unknown, not the walk ended. */
	case UNW_BP_CFA:
	case UNW_BP_SP:
		v = (u->bp == UNW_BP_CFA ? cfa : r->sp) + (int64_t)u->bp_off;
		if (v < r->sp)
			break;
		r->bp_ok = !rd(mem, v, &v);
		r->bp = r->bp_ok ? v : 0;
		break;
	case UNW_BP_UNDEF:
		r->bp_ok = false;
		break;
	}
	if (!(u->flags & UNW_R_SIGNAL) && cfa < r->sp)
		return PROF_UE_BAD_FRAME;
	if (ra == 0)
		return PROF_UE_FP_END;
	r->sp = cfa;
	r->pc = ra;
	r->exact = u->flags & UNW_R_SIGNAL;
	return 0;
}

int twin__walk(struct twin_regs *r, const struct twin_mem *mem, twin_map_fn map, void *ctx,
	       __u64 *out, int *n, int max)
{
	return twin__walk_hooked(r, mem, map, ctx, NULL, NULL, out, n, max);
}

int twin__walk_hooked(struct twin_regs *r, const struct twin_mem *mem, twin_map_fn map, void *ctx,
		      twin_hook_fn hook, void *hctx, __u64 *out, int *n, int max)
{
	for (int guard = 0; guard <= PROF_MAX_FRAMES; guard++) {
		struct twin_map m;
		uint64_t look = r->pc - (r->exact ? 0 : 1);
		int end;

		/* The budget first: past it, where the next pc lies is moot
		 * (the BPF walk's loop bound says the same). */
		if (!r->stored && *n >= max)
			return PROF_UE_TRUNC;
		if (map(ctx, look, &m))
			return PROF_UE_BAD_PC;
		if (m.kind == TWIN_WAIT)
			return PROF_UE_PENDING;
		if (!r->stored) {
			if (*n >= max)
				return PROF_UE_TRUNC;
			out[(*n)++] = r->pc;
			r->stored = true;
		}
		end = hook ? hook(hctx, r, mem, &m, *n - 1) : 0;
		if (end < 0)
			return -end;
		if (end == TWIN_HOOK_STEPPED) {
			r->stored = false;
			continue;
		}
		switch (m.kind) {
		case TWIN_TABLE:
			end = table_step(r, &m, look, *n, mem);
			break;
		case TWIN_FP:
			end = fp_step(r, mem);
			break;
		default:
			end = PROF_UE_NO_TABLE;
			break;
		}
		if (end)
			return end;
		r->stored = false;
	}
	return PROF_UE_TRUNC;
}
