/*
 * rbproc.c - set-up, twin walk and merge (see rbproc.h).
 *
 * The twin follows bpf/ruby_walk.h line by line (same reads, same
 * order, same skips), so a test can hold the BPF walk's logic against
 * what Ruby itself prints, and against the BPF program's records.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sampler/ruby/rbproc.h"

static int rmem(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };
	ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EFAULT;
}

int rbproc__detect(int fd, const char *path, struct rbinfo *ri)
{
	const char *env = getenv("PROFFS_RB_WITHHOLD");
	char v[16];
	int err;

	memset(ri, 0, sizeof(*ri));
	err = rbfile__read(fd, &ri->rf);
	if (err)
		return err;
	snprintf(v, sizeof(v), "%d.%d", ri->rf.major, ri->rf.minor);
	if (env && !strcmp(env, v)) {
		ri->status = -EOPNOTSUPP;
		snprintf(ri->why, sizeof(ri->why), "%s: %s withheld (PROFFS_RB_WITHHOLD)", path, v);
	} else if (!(ri->l = rblayout__get(ri->rf.major, ri->rf.minor))) {
		ri->status = -EOPNOTSUPP;
		snprintf(ri->why, sizeof(ri->why), "%s: no layout for CRuby %s", path, v);
	} else if (rblayout__check(ri->l, &ri->rf, ri->why, sizeof(ri->why))) {
		ri->status = -EPROTO;
		ri->l = NULL;
	}
	return 0;
}

int rbproc__setup(pid_t pid, const struct rbfile *rf, const struct rblayout *l, uint64_t bias,
		  struct rb_proc *c, uint64_t *symbols)
{
	uint64_t got[2], vm = 0, os = 0, ids = 0;
	uint32_t last = 0;
	int err;

	memset(c, 0, sizeof(*c));
	*symbols = 0;
	if (!rf->tls_modid_got)
		return -EOPNOTSUPP;
	/* The walk reads the EC's 24 first bytes and RB_CFP_READ of a frame. */
	if (l->ec_vm_stack > 16 || l->ec_vm_stack_size > 16 || l->ec_cfp > 16 ||
	    l->cfp_pc + 8 > RB_CFP_READ || l->cfp_iseq + 8 > RB_CFP_READ ||
	    l->cfp_ep + 8 > RB_CFP_READ || l->cfp_size < RB_CFP_READ || !rf->global_symbols ||
	    rf->th_dtpoff < 0 || l->th_blocking < 0)
		return -EPROTO;
	err = rmem(pid, rf->tls_modid_got + bias, got, sizeof(got));
	if (err)
		return err;
	if (!got[0])
		return -EAGAIN; /* not relocated yet */
	if (got[1] != rf->tls_dtpoff)
		return -EPROTO;
	err = rmem(pid, rf->vm_ptr + bias, &vm, 8);
	if (!err && vm)
		err = rmem(pid, vm + (uint64_t)l->vm_objspace, &os, 8);
	if (!err)
		err = rmem(pid, rf->global_symbols + bias + (uint64_t)l->sym_last_id, &last, 4);
	if (!err)
		err = rmem(pid, rf->global_symbols + bias + (uint64_t)l->sym_ids, &ids, 8);
	if (err)
		return err;
	if (!rf->vm_ptr || !vm || !os || !last || !ids)
		return -EAGAIN; /* the VM is not up yet */
	if (ids & 7)
		return -EPROTO;
	c->modid = got[0];
	c->dtpoff = got[1];
	c->gc_flags = os + (uint64_t)l->objspace_flags;
	c->gc_mask = 1u << l->during_gc_bit;
	c->th_dtpoff = (uint64_t)rf->th_dtpoff;
	c->th_blocking = (uint16_t)l->th_blocking;
	c->ec_vm_stack = (uint16_t)l->ec_vm_stack;
	c->ec_vm_stack_size = (uint16_t)l->ec_vm_stack_size;
	c->ec_cfp = (uint16_t)l->ec_cfp;
	c->cfp_size = (uint16_t)l->cfp_size;
	c->cfp_pc = (uint16_t)l->cfp_pc;
	c->cfp_iseq = (uint16_t)l->cfp_iseq;
	c->cfp_ep = (uint16_t)l->cfp_ep;
	c->iseq_body = (uint16_t)l->iseq_body;
	c->me_def = (uint16_t)l->me_def;
	*symbols = rf->global_symbols + bias;
	return 0;
}

/* ---- the twin of bpf/ruby_walk.h ---- */

static int twin_ec(pid_t pid, uint64_t fsbase, struct rb_proc *c, uint64_t *ec, uint64_t *block)
{
	uint64_t dtv = 0, len = 0, ent[2];

	*ec = 0;
	if (!fsbase)
		return RB_END_READ;
	if (c->flags & RB_TLS_STATIC) {
		*block = fsbase + (uint64_t)c->tls_off - c->dtpoff;
		if (rmem(pid, fsbase + (uint64_t)c->tls_off, ec, 8))
			return RB_END_READ;
		return *ec ? RB_END_OK : RB_END_IDLE;
	}
	if (rmem(pid, fsbase + 8, &dtv, 8) || !dtv || rmem(pid, dtv - 16, &len, 8))
		return RB_END_READ;
	if (c->modid > len)
		return RB_END_IDLE;
	if (rmem(pid, dtv + 16 * c->modid, ent, 16))
		return RB_END_READ;
	if (!ent[0] || ent[0] == ~0ull)
		return RB_END_IDLE;
	*block = ent[0];
	if (rmem(pid, ent[0] + c->dtpoff, ec, 8))
		return RB_END_READ;
	if (!ent[1]) {
		c->tls_off = (int64_t)(ent[0] + c->dtpoff - fsbase);
		c->flags |= RB_TLS_STATIC;
	}
	return *ec ? RB_END_OK : RB_END_IDLE;
}

static uint64_t word(const uint8_t *b, int off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return v;
}

static int put(struct rb_frame *out, int max, int *n, uint64_t addr, uint64_t pos)
{
	if (*n >= max)
		return 1;
	out[*n].addr = addr;
	out[*n].pc = (uint32_t)pos;
	out[*n].stamp = (uint32_t)(pos >> 32);
	(*n)++;
	return 0;
}

int rbproc__twin(pid_t pid, uint64_t fsbase, struct rb_proc *c, struct rb_frame *out, int max)
{
	uint8_t b[64];
	uint64_t ec = 0, block = 0, th = 0, brb = 1, cfp, end, gc = 0;
	int n = 0, stop;

	stop = twin_ec(pid, fsbase, c, &ec, &block);
	if (stop == RB_END_OK && c->gc_flags && !rmem(pid, c->gc_flags, &gc, 4) &&
	    ((uint32_t)gc & c->gc_mask) && !rmem(pid, block + c->th_dtpoff, &th, 8) && th &&
	    !rmem(pid, th + c->th_blocking, &brb, 8) && !brb)
		put(out, max, &n, RB_FRAME_GC, 0);
	if (stop != RB_END_OK)
		return n | stop << 16;
	if (rmem(pid, ec, b, 24))
		return n | RB_END_READ << 16;
	cfp = word(b, c->ec_cfp);
	end = word(b, c->ec_vm_stack) + 8 * (word(b, c->ec_vm_stack_size) & 0xfffffff) -
	      c->cfp_size;
	if (!word(b, c->ec_vm_stack) || !cfp || cfp >= end)
		return n | RB_END_IDLE << 16;
	for (int i = 0; i < RB_MAX_FRAMES; i++) {
		uint64_t pc, iseq, ep, env[3], w = 0, fl;
		uint32_t flags;

		if (cfp >= end)
			return n | RB_END_OK << 16;
		if (rmem(pid, cfp, b, RB_CFP_READ))
			return n | RB_END_READ << 16;
		pc = word(b, c->cfp_pc);
		iseq = word(b, c->cfp_iseq);
		ep = word(b, c->cfp_ep);
		cfp += c->cfp_size;
		if (rmem(pid, ep - 16, env, sizeof(env)))
			return n | RB_END_READ << 16;
		flags = (uint32_t)env[2];
		fl = flags & RB_ENV_FLAG_FINISH ? RB_FRAME_FINISH : 0;
		if ((flags & RB_ENV_MAGIC_MASK) == RB_MAGIC_CFUNC) {
			if (!env[0] || (env[0] & RB_FRAME_FLAGS) || rmem(pid, env[0] + c->me_def, &w, 8))
				return n | RB_END_READ << 16;
			if (put(out, max, &n, env[0] | RB_FRAME_CFUNC | fl, (uint64_t)rb_stamp(w) << 32))
				return n | RB_END_TRUNC << 16;
		} else if (iseq && pc && !(flags & RB_ENV_FLAG_CFRAME)) {
			if ((iseq & RB_FRAME_FLAGS) || rmem(pid, iseq + c->iseq_body, &w, 8))
				return n | RB_END_READ << 16;
			if (put(out, max, &n, iseq | fl,
				(uint32_t)pc | (uint64_t)rb_stamp(w) << 32))
				return n | RB_END_TRUNC << 16;
		}
	}
	return n | (cfp >= end ? RB_END_OK : RB_END_TRUNC) << 16;
}

/* ---- the merge ---- */

int rbmerge(const uint8_t *kind, int n, const struct rb_frame *rec, int m, struct rbm_item *out,
	    int max)
{
	int k = 0, o = 0;
	bool gc = m > 0 && (rec[0].addr & RB_FRAME_GC);

	if (gc)
		k = 1;
	for (int i = 0; i <= n && o < max; i++) {
		bool last = i == n, group = !last && kind[i] == RBM_ANCHOR,
		     rest = last || kind[i] == RBM_MARKER;

		if ((group || rest) && (k < m || gc)) {
			bool took = false;

			if (gc) {
				out[o++] = (struct rbm_item){ 2, 0 };
				gc = false;
			}
			/* One group for an anchor; all that is left otherwise. */
			while (o < max && k < m) {
				uint64_t a = rec[k].addr;

				out[o++] = (struct rbm_item){ 1, (int16_t)k++ };
				took = true;
				if (group && (a & RB_FRAME_FINISH))
					break;
			}
			if (group && took)
				continue;
		}
		if (!last && o < max)
			out[o++] = (struct rbm_item){ 0, (int16_t)i };
	}
	return o;
}
