/*
 * v8walk.c - bpf/v8_walk.h's hook in plain C (v8walk.h). Keep the two in
 * step: tests/unit/test_v8walk.c holds this one against V8's own stack
 * traces, and tests/bpf/v8_test.bpf.c's records against this one.
 */
#include <errno.h>
#include <string.h>

#include "sampler/v8/v8walk.h"

static uint64_t slot(const uint64_t *w, int off)
{
	int i = (off + V8_FRAME_BELOW) / 8;

	return i >= 0 && i < V8_FRAME_READ / 8 ? w[i] : 0;
}

static uint64_t u64_at(const uint8_t *b, unsigned off, unsigned size)
{
	uint64_t v = 0;

	if (off + 8 <= size)
		memcpy(&v, b + off, 8);
	return v;
}

static uint32_t u32_at(const uint8_t *b, unsigned off, unsigned size)
{
	uint32_t v = 0;

	if (off + 4 <= size)
		memcpy(&v, b + off, 4);
	return v;
}

static int heap_object(uint64_t v)
{
	return (v & 3) == 1 && v > 4096;
}

int v8walk__frame(const struct v8_proc *p, uint64_t pc, bool builtins, uint64_t fp, unsigned index,
		  v8_read_fn rd, void *ctx, struct v8_frame *out, uint64_t *next_fp, uint64_t *ra)
{
	uint64_t w[V8_FRAME_READ / 8], jsf, sfi, code, start, ba, bo, w1 = 0;
	uint8_t j[V8_JSF_READ], c[V8_CODE_READ], s[V8_SFI_READ];
	uint32_t size, kind;

	*next_fp = *ra = 0;
	if (fp < V8_FRAME_BELOW || rd(ctx, fp - V8_FRAME_BELOW, w, sizeof(w)))
		return -EFAULT;
	*next_fp = w[V8_FRAME_BELOW / 8];
	*ra = w[V8_FRAME_BELOW / 8 + 1];
	/* A SMI there is a frame-type marker: entry, exit, stub frames. */
	jsf = slot(w, p->fp_function);
	if (!heap_object(slot(w, p->fp_context)) || !heap_object(jsf))
		return 0;
	if (rd(ctx, jsf - 1 + p->jsf_read_off, j, sizeof(j)))
		return -EFAULT;
	sfi = u64_at(j, p->jsf_shared, sizeof(j));
	code = u64_at(j, p->jsf_code, sizeof(j));
	if (!heap_object(sfi))
		return 0;
	memset(out, 0, sizeof(*out));
	if (!builtins && p->dispatch_base) {
		/* 13+: the Code through the function's dispatch entry */
		if (rd(ctx, V8_DISPATCH_ENTRY(p->dispatch_base, code) + 8, &w1, 8))
			return -EFAULT;
		code = V8_DISPATCH_CODE(w1);
	}
	if (builtins) {
		/* In a builtin: interpreted when the bytecode slots hold a
		 * BytecodeArray and a SMI. */
		ba = slot(w, p->fp_bytecode_array);
		bo = slot(w, p->fp_bytecode_offset);
		if (heap_object(ba) && !(bo & 1)) {
			out->obj = V8_OBJ(sfi, V8_FT_INTERP, index);
			out->off = (uint32_t)(bo >> 32);
			out->stamp = v8_stamp(ba, 0);
			return 1;
		}
	} else if (heap_object(code) && !rd(ctx, code - 1 + p->code_read_off, c, sizeof(c))) {
		start = p->code_start >= 0 ? u64_at(c, (unsigned)p->code_start, sizeof(c))
					   : code - 1 + p->code_start_inline;
		size = u32_at(c, p->code_size, sizeof(c));
		kind = (u32_at(c, p->code_flags, sizeof(c)) >> p->kind_shift) & p->kind_mask;
		if (pc >= start && pc - start < size) {
			bool base = kind == p->kind_baseline;

			out->obj = V8_OBJ(base ? sfi : code, base ? V8_FT_BASELINE : V8_FT_OPT, index);
			out->off = (uint32_t)(pc - start);
			out->stamp = v8_stamp(base ? code : sfi, (uint64_t)size << 8 | kind);
			return 1;
		}
	} else if (heap_object(code)) {
		return -EFAULT;
	}
	/* A JS builtin, or code the function no longer points to: the
	 * function only, stamped by its script and name. */
	if (rd(ctx, sfi - 1 + p->sfi_read_off, s, sizeof(s)))
		return -EFAULT;
	out->obj = V8_OBJ(sfi, V8_FT_FUNC, index);
	out->stamp = v8_stamp(u64_at(s, p->sfi_script, sizeof(s)), u64_at(s, p->sfi_name, sizeof(s)));
	return 1;
}

void v8walk__walk(const struct v8_proc *p, struct twin_regs *r, const struct twin_mem *mem,
		  twin_map_fn map, void *mctx, v8_read_fn rd, void *rctx, struct v8walk_out *o)
{
	memset(o, 0, sizeof(*o));
	o->v8end = V8_END_OK;
	for (;;) {
		uint64_t look = r->pc - (r->exact ? 0 : 1), nfp, ra;
		struct twin_map m;
		int n = o->npcs, k;
		bool blt;

		memset(&m, 0, sizeof(m));
		blt = !map(mctx, look, &m) && v8walk__builtins(p, &m, look);
		if (r->bp_ok && o->npcs < PROF_MAX_FRAMES && (m.kind == TWIN_FP || blt)) {
			if (o->njs >= V8_MAX_FRAMES) {
				o->v8end = V8_END_TRUNC;
			} else {
				k = v8walk__frame(p, r->pc, blt, r->bp, (unsigned)o->npcs, rd, rctx,
						  &o->js[o->njs], &nfp, &ra);
				if (k < 0)
					o->v8end = V8_END_READ;
				o->njs += k > 0;
			}
		}
		/* one native frame */
		o->uend = twin__walk(r, mem, map, mctx, o->pcs, &o->npcs, n + 1);
		if (o->uend != PROF_UE_TRUNC || o->npcs >= PROF_MAX_FRAMES || o->npcs == n)
			break;
	}
}

int v8walk__merge(int npcs, const struct v8_frame *js, int njs, int *out, int max)
{
	int n = 0, j = 0;

	for (int i = 0; i < npcs && n < max; i++) {
		int tied = 0;

		/* records come in walk order: their indexes never go down */
		while (j < njs && (int)V8_OBJ_INDEX(js[j].obj) <= i && n < max) {
			if ((int)V8_OBJ_INDEX(js[j].obj) == i) {
				out[n++] = -1 - j;
				tied = 1;
			}
			j++;
		}
		if (!tied && n < max)
			out[n++] = i;
	}
	for (; j < njs && n < max; j++)
		out[n++] = -1 - j;
	return n;
}
