/*
 * stack.c - symbolizing the frames of one sample.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sampler/batch/stack.h"

int stack__symbolize(struct procs *ps, struct symbolizer *sym, struct proc *p,
		     const struct prof_sample_ev *ev, struct frame *out, int max)
{
	int n = 0;

	for (int i = 0; i < ev->nkern && n < max; i++, n++) {
		struct frame *f = &out[n];
		uint64_t a = ev->frames[i];

		memset(f, 0, sizeof(*f));
		f->addr = a;
		f->kernel = true;
		/* Return addresses point past the call; look up the call. */
		f->name = symbolizer__kernel(sym, i ? a - 1 : a);
	}
	/* A stack cut at the depth cap says so: a marker in place of the
	 * frames lost (the outermost ones). */
	if ((ev->flags & PROF_F_KTRUNC) && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].name = STACK_TRUNCATED;
		out[n].marker = true;
		out[n].kernel = true;
		n++;
	}
	/* Refresh first, then resolve: a refresh frees the old maps, which
	 * earlier frames of this sample would still point into. */
	if (p) {
		bool miss_maps = false, miss_jit = false;

		for (int i = 0; i < ev->nuser; i++) {
			uint64_t a = ev->frames[ev->nkern + i], look = i ? a - 1 : a;
			struct vma *v;

			if (a < 4096)
				break;
			v = procs__vma(ps, p, look);
			if (!v)
				miss_maps = true;
			else if (!v->file && v->path[0] != '[' && !procs__jit_symbol(ps, p, look))
				miss_jit = true;
		}
		if (miss_maps || miss_jit)
			procs__refresh(ps, p, miss_maps,
				       !miss_jit ? PROCS_PM_NO :
				       (RT_STEP_WALKS >> ev->rtkind & 1) &&
						       ev->rtend == RT_END_OK && ev->nrt
					       ? PROCS_PM_LAZY
					       : PROCS_PM_SOON);
	}
	for (int i = 0; i < ev->nuser && n < max; i++, n++) {
		struct frame *f = &out[n];
		uint64_t a = ev->frames[ev->nkern + i], look = i ? a - 1 : a;

		/* A frame-pointer walk that ran into a zeroed frame yields
		 * address 0 (or another in the never-mapped first page): not
		 * a frame, the walk's end. */
		if (a < 4096)
			break;
		memset(f, 0, sizeof(*f));
		f->addr = a;
		f->vma = p ? procs__vma(ps, p, look) : NULL;
		if (!f->vma)
			continue;
		f->off = a - f->vma->start + f->vma->pgoff;
		if (f->vma->file) {
			uint64_t lo = look - f->vma->start + f->vma->pgoff;

			f->name = symbolizer__lookup(sym, f->vma->dso, lo);
			if (f->name && !symbolizer__line(sym, f->vma->dso, lo, &f->file, &f->line))
				f->file = NULL, f->line = 0;
		}
		else if (!strcmp(f->vma->path, "[vdso]"))
			f->name = symbolizer__vdso(sym, look - f->vma->start + f->vma->pgoff);
		else
			f->jit = (f->name = procs__jit_symbol(ps, p, look)) != NULL;
	}
	if ((ev->flags & PROF_F_UTRUNC) && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].name = STACK_TRUNCATED;
		out[n].marker = true;
		n++;
	} else if (stack__uend_marker(ev->uend) && n < max) {
		memset(&out[n], 0, sizeof(out[n]));
		out[n].name = stack__uend_marker(ev->uend);
		out[n].marker = true;
		n++;
	}
	return n;
}

const char *stack__uend_marker(unsigned uend)
{
	switch (uend) {
	case PROF_UE_PENDING:
	case PROF_UE_NO_TABLE:
		return "[unwind: no table]";
	case PROF_UE_NO_RULE:
		return "[unwind: no rule]";
	case PROF_UE_BAD_FRAME:
		return "[unwind: bad frame]";
	case PROF_UE_BAD_PC:
		return "[unwind: outside mappings]";
	case PROF_UE_NO_VMA:
		return "[unwind: mappings busy]";
	default: /* a root, the end of a frame-pointer chain, or no user stack */
		return NULL;
	}
}
