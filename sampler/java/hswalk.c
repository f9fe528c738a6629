/*
 * hswalk.c - the HotSpot step in plain C (hswalk.h has the rules).
 */
#include <errno.h>
#include <string.h>

#include "sampler/java/hswalk.h"

/* What a blob is, as the step tells them apart. */
enum { B_NMETHOD, B_VTABLE, B_STUB };

enum {
	F_FULL = HSWALK_FULL,
	F_FULL_BP = HSWALK_FULL_BP,
	F_NOTHING = HSWALK_NOTHING,
	F_BP_PUSHED = HSWALK_BP_PUSHED,
	F_RBP_FRAME = HSWALK_RBP_FRAME,
};

static int rd(const struct hsmem *m, uint64_t addr, void *buf, size_t n)
{
	return hsmem__read(m, addr, buf, n) ? -1 : 0;
}

static uint64_t f64(const uint8_t *b, int off)
{
	uint64_t v = 0;

	if (off >= 0 && off <= HS_BLOB_READ - 8)
		memcpy(&v, b + off, 8);
	return v;
}

static uint32_t f32(const uint8_t *b, int off)
{
	uint32_t v = 0;

	if (off >= 0 && off <= HS_BLOB_READ - 4)
		memcpy(&v, b + off, 4);
	return v;
}

static uint16_t f16(const uint8_t *b, int off)
{
	uint16_t v = 0;

	if (off >= 0 && off <= HS_BLOB_READ - 2)
		memcpy(&v, b + off, 2);
	return v;
}

/* The CodeBlob holding pc (look: pc, or pc - 1 for a return address),
 * through its heap's segment map; 0 when none. */
static uint64_t find_blob(const struct hsmem *m, const struct hs_proc *c, uint64_t look)
{
	for (uint32_t i = 0; i < c->nheaps && i < HS_MAX_HEAPS; i++) {
		const struct hs_heap *h = &c->heaps[i];
		uint64_t seg;

		if (look < h->lo || look >= h->hi)
			continue;
		seg = (look - h->lo) >> c->seg_shift;
		for (int k = 0; k < HS_SEGMAP_HOPS; k++) {
			uint8_t tag;

			if (rd(m, h->segmap + seg, &tag, 1) || tag == 0xff || tag > seg)
				return 0;
			if (!tag)
				return h->lo + (seg << c->seg_shift) + c->block_hdr;
			seg -= tag;
		}
		return 0;
	}
	return 0;
}

static bool owns(const struct hs_proc *c, uint64_t a)
{
	return a >= c->code_lo && a < c->code_hi;
}

/* The unload epoch as BPF reads it (0 when unreadable). */
static uint32_t epoch_of(const struct hsmem *m, const struct hs_proc *c)
{
	uint32_t e;

	return c->epoch_addr && !rd(m, c->epoch_addr, &e, 4) ? e : 0;
}

/*
 * A leaf in a method entry of the interpreter, its frame not holding its
 * Method* yet (bpf/hotspot_walk.h's hs_entry: keep the two alike). The
 * entries (JDK 17 and 25, x86-64: generate_normal_entry and
 * generate_native_entry, then generate_fixed_frame) begin with the
 * callee's Method* in rbx, the caller's sp in r13 and the return address
 * at [rsp], and go:
 *
 *   (normal: the stack overflow check)
 *   pop rax                  the return address in rax only
 *   push 0 ...               the extra locals; native: 2 slots
 *   push rax                 at [rsp] again
 *   push rbp                 the caller's rbp at [rsp], ra at [rsp+8]
 *   mov rbp, rsp             rbp is the frame's from here
 *   push r13                 the sender sp at rbp-8
 *   push 0                   the last sp at rbp-16 (25: after 3 movs)
 *   (mov/lea r13: the bcp)
 *   push rbx                 the Method* at rbp-24: an interpreter frame
 *
 * Sampled in the last stretch, the frame had no Method* and the walk
 * ended (HS_E_INTERP: 1 stop in ~60 of a thread calling a native method
 * in a loop under -Xint); before `mov rbp, rsp` rbp is the caller's, and
 * a caller running in the interpreter was taken for the leaf, the
 * callee lost. How many zeros were pushed is not known at a pc, but the
 * return address is found without: it is [rsp] when that is in the code
 * cache (a pushed zero never is; rbp, pushed last, is told apart), else
 * rax. Every caller of the interpreter runs in the code cache (the
 * interpreter, the call stub, a c2i adapter for compiled code), so the
 * return address must lie there. r13 tells the state from a frame that
 * runs bytecodes: there it is the bcp, not a stack address just above
 * sp (but for the last instructions of an invoke, which set it to the
 * sender sp before jumping to the entry: the callee, rbx already, is
 * named a few instructions early). rax and rbx 0 (not known: user
 * space's pending walks) leave the rbp rules. Returns an enum hs_end,
 * or -1 when the leaf is not in an entry.
 */
static int entry(const struct hsmem *m, const struct hs_proc *c, struct hs_regs *r,
		 uint32_t index, uint64_t rec[2])
{
	uint64_t ra, bp = r->bp, sender, cm = 0, w[3] = { 0 };
	uint64_t mslot = 8 * (uint64_t)(-(int64_t)c->if_method);

	if (r->bp >= r->sp && r->bp - r->sp < mslot) {
		/* rbp is the frame's, its Method* slot below sp: the sender
		 * sp at rbp-8 once pushed (before, r13 still holds it) */
		if (rd(m, r->bp, w + 1, 16) || (r->bp - 8 >= r->sp && rd(m, r->bp - 8, w, 8)))
			return HS_E_READ;
		ra = w[2];
		bp = w[1];
		sender = r->bp - 8 >= r->sp ? w[0] : r->r13;
		if (sender < r->bp + 16 || sender - (r->bp + 16) > HS_INTERP_MAX_FRAME)
			sender = r->bp + 16;
	} else if (r->r13 >= r->sp && r->r13 - r->sp <= HS_INTERP_MAX_FRAME) {
		/* before `mov rbp, rsp`: rbp and r13 are the caller's */
		ra = r->ax;
		if (r->r13 > r->sp) {
			if (rd(m, r->sp, w, 8))
				return HS_E_READ;
			if (w[0] != r->bp && owns(c, w[0]))
				ra = w[0];
		}
		sender = r->r13;
	} else {
		return -1;
	}
	if (!owns(c, ra) || !r->bx || (r->bx & 7) || rd(m, r->bx + (uint64_t)c->m_const_method, &cm, 8) ||
	    !cm || (cm & 7))
		return -1;
	rec[0] = hs_rec0(r->bx, HS_K_INTERP, HS_R_EXACT | HS_R_GUESSED, index);
	rec[1] = hs_rec1(HS_BCI_NONE, hs_stamp((uint32_t)(cm >> 3), epoch_of(m, c)));
	r->pc = ra;
	r->sp = sender;
	r->bp = bp;
	return HS_E_OK;
}

static int interp(const struct hsmem *m, const struct hs_proc *c, struct hs_regs *r, bool leaf,
		  uint32_t index, uint64_t rec[2])
{
	/* rbp-64 .. rbp+16: the slots from the bcp's up to the return address */
	uint64_t w[10], method, bcp, cm, sender, code, bci = HS_BCI_NONE;
	uint32_t epoch;
	int lo = c->if_bcp, skip;

	if (lo > -3 || lo < -10 || c->if_method < lo || c->if_method > -1 || c->if_sender_sp < lo ||
	    c->if_sender_sp > -1)
		return HS_E_INTERP;
	if (leaf) {
		int end = entry(m, c, r, index, rec);

		if (end >= 0)
			return end;
	}
	if (r->bp < r->sp || r->bp - r->sp > HS_INTERP_MAX_FRAME)
		return HS_E_INTERP;
	/* A leaf still building its frame (the entry's pushes) has slots
	 * below sp: not written yet, and outside a stack copied from sp. */
	skip = r->bp + 8 * (int64_t)lo < r->sp ? (int)((r->sp - (r->bp + 8 * (int64_t)lo) + 7) / 8) : 0;
	if (skip > -lo)
		return HS_E_INTERP;
	memset(w, 0, sizeof(w));
	if (rd(m, r->bp + 8 * (int64_t)(lo + skip), w + skip, 8 * (size_t)(2 - lo - skip)))
		return HS_E_READ;
	method = w[c->if_method - lo];
	bcp = leaf ? r->r13 : w[c->if_bcp - lo];
	sender = w[c->if_sender_sp - lo];
	if (!method || rd(m, method + (uint64_t)c->m_const_method, &cm, 8))
		return HS_E_INTERP;
	epoch = epoch_of(m, c);
	code = cm + c->cm_size;
	/* The leaf's r13 is the bcp only while the interpreter runs
	 * bytecodes; elsewhere its frame slot is. */
	if (leaf && !(bcp >= code && bcp - code < 0x10000))
		bcp = w[c->if_bcp - lo];
	if (bcp >= code && bcp - code < 0x10000)
		bci = bcp - code;
	if (!w[-lo + 1])
		return HS_E_BAD_FRAME;
	if (leaf && !owns(c, w[-lo + 1])) {
		/* Not built yet: rbp is the call stub's (bpf/hotspot_walk.h;
		 * entry() does this from rbx when rax and rbx are known). */
		sender = r->r13 > r->sp && r->r13 <= r->bp ? r->r13 : r->sp + 8;
		if (sender > r->bp)
			return HS_E_INTERP;
		rec[0] = hs_rec0(method, HS_K_INTERP, HS_R_EXACT, index);
		rec[1] = hs_rec1(HS_BCI_NONE, hs_stamp((uint32_t)(cm >> 3), epoch));
		r->pc = c->call_stub_ra;
		r->sp = sender;
		return HS_E_OK;
	}
	rec[0] = hs_rec0(method, HS_K_INTERP, leaf ? HS_R_EXACT : 0, index);
	rec[1] = hs_rec1((uint32_t)bci, hs_stamp((uint32_t)(cm >> 3), epoch));
	/* The caller's unextended sp: what a compiled caller's frame size
	 * counts from (a c2i adapter extended it for the arguments). */
	if (sender < r->bp + 16 || sender - (r->bp + 16) > HS_INTERP_MAX_FRAME)
		sender = r->bp + 16;
	r->pc = w[-lo + 1];
	r->bp = w[-lo];
	r->sp = sender;
	return HS_E_OK;
}

/* `cmp qword [r15 + 8], 0`: a native wrapper, back from its native
 * method, asks whether it left an exception pending (Thread's
 * _pending_exception, at 8 on 17 and 25), after its `leave`:
 *   leave; cmp qword [r15+8],0; jne +1; ret; jmp forward_exception
 * (seen live on JDK 17: 1 stop in 60 of a thread calling JNI in a loop
 * stood there, and the frame size rule walked off into its caller's
 * C frame). */
static bool pending_check(const uint8_t *p)
{
	return p[0] == 0x49 && p[1] == 0x81 && p[2] == 0x7f && p[3] == 0x08 && !p[4] && !p[5] && !p[6] &&
	       !p[7];
}

/* JDK 25's wrapper, after its leave, polls for a safepoint and checks
 * for a pending exception in other encodings (seen in Temurin 25's
 * -XX:+PrintNativeNMethods; a sample there, 1 in ~1,800 of a thread
 * calling getThreadTotalCpuTime0 in a loop, walked off by the frame size
 * rule):
 *   leave; test byte [r15 + x], 1; je +n; (the poll's slow path)
 *   cmp qword [r15 + 8], 0 (imm8); jne +1; ret; jmp forward_exception */
static bool return_poll(const uint8_t *q)
{
	return q[0] == 0x41 && q[1] == 0xf6 && q[2] == 0x47 && q[4] == 0x01;
}

static bool pending_check8(const uint8_t *q)
{
	return q[0] == 0x49 && q[1] == 0x83 && q[2] == 0x7f && q[3] == 0x08 && !q[4];
}

int hswalk__leaf_state(const uint8_t *b, bool prologue)
{
	const uint8_t *p = b + 8;

	if (prologue) {
		if (p[0] == 0x55 || (p[0] == 0x89 && p[1] == 0x84 && p[2] == 0x24))
			return F_NOTHING; /* push rbp; the stack bang */
		if (p[0] == 0x48 && (p[1] == 0x83 || p[1] == 0x81) && p[2] == 0xec)
			/* sub rsp: after push rbp (and mov rbp, rsp, in either
			 * encoding: C1 writes 48 8b ec), or first */
			return b[7] == 0x55 || (b[5] == 0x48 && ((b[6] == 0x89 && b[7] == 0xe5) ||
							       (b[6] == 0x8b && b[7] == 0xec)))
				       ? F_BP_PUSHED : F_NOTHING;
		if (p[0] == 0x48 && ((p[1] == 0x89 && p[2] == 0xe5) || (p[1] == 0x8b && p[2] == 0xec)))
			return F_BP_PUSHED; /* mov rbp, rsp */
		if (p[0] == 0x48 && p[1] == 0x89 && (p[2] == 0x6c || p[2] == 0xac) && p[3] == 0x24)
			return F_FULL_BP; /* mov [rsp + x], rbp: saving it now */
		return F_FULL;
	}
	if (p[0] == 0xc3)
		return F_NOTHING; /* ret */
	if (p[0] == 0x5d)
		return F_BP_PUSHED; /* pop rbp */
	if (p[0] == 0xc9)
		return F_RBP_FRAME; /* leave */
	if (p[0] == 0x49 && p[1] == 0x3b && (p[2] == 0x67 || p[2] == 0xa7))
		return F_NOTHING; /* cmp rsp, [r15 + x]: the return poll, after pop rbp */
	if (p[0] == 0x0f && p[1] == 0x87 &&
	    ((b[1] == 0x49 && b[2] == 0x3b && b[3] == 0xa7) ||
	     (b[4] == 0x49 && b[5] == 0x3b && b[6] == 0x67)))
		return F_NOTHING; /* ja: the poll's branch */
	if (b[7] == 0xc9 && pending_check(p))
		return F_NOTHING; /* the pending exception check, after leave */
	if (p[0] == 0x0f && p[1] == 0x85 && pending_check(b))
		return F_NOTHING; /* ... and its jne */
	if (b[7] == 0xc9 && return_poll(p))
		return F_NOTHING; /* JDK 25: the return poll, after leave */
	if (p[0] == 0x74 && b[2] == 0xc9 && return_poll(b + 3))
		return F_NOTHING; /* ... its je */
	if (pending_check8(p) && p[5] == 0x0f && p[6] == 0x85 && p[7] == 0x01)
		return F_NOTHING; /* ... the pending exception check */
	if (p[0] == 0x0f && p[1] == 0x85 && p[2] == 0x01 && pending_check8(b + 3))
		return F_NOTHING; /* ... and its jne */
	return F_FULL;
}

/* Steps r out of a frame of fs bytes by the frame size rule. nm: the
 * return address must be in the code cache (else searched for). */
static int full_frame(const struct hsmem *m, const struct hs_proc *c, struct hs_regs *r,
		      uint64_t fs, bool keep_bp, bool nm, uint32_t *flags)
{
	uint64_t w[HS_RA_SEARCH + 1], sender = r->sp + fs;

	if (rd(m, sender - 16, w, sizeof(w)))
		return HS_E_READ;
	for (int k = 0; k < HS_RA_SEARCH; k++) {
		if (!owns(c, w[k + 1]) && (nm || k))
			continue;
		if (k)
			*flags |= HS_R_GUESSED;
		r->pc = w[k + 1];
		if (!keep_bp)
			r->bp = w[k];
		r->sp = sender + 8 * (uint64_t)k;
		return HS_E_OK;
	}
	return HS_E_BAD_FRAME;
}

/* Steps r out of a frame whose return address is at sp + 8 * pushed. */
static int pushed(const struct hsmem *m, const struct hs_proc *c, struct hs_regs *r, int pushed,
		  bool check)
{
	uint64_t w[2];

	if (rd(m, r->sp, w, sizeof(w)))
		return HS_E_READ;
	if (!w[pushed] || (check && !owns(c, w[pushed])))
		return HS_E_BAD_FRAME;
	r->pc = w[pushed];
	if (pushed)
		r->bp = w[0];
	r->sp += 8 * (uint64_t)(pushed + 1);
	return HS_E_OK;
}

static int rbp_frame(const struct hsmem *m, struct hs_regs *r)
{
	uint64_t w[2];

	if (r->bp < r->sp || r->bp - r->sp > HS_INTERP_MAX_FRAME)
		return HS_E_BAD_FRAME;
	if (rd(m, r->bp, w, sizeof(w)))
		return HS_E_READ;
	if (!w[1])
		return HS_E_BAD_FRAME;
	r->pc = w[1];
	r->sp = r->bp + 16;
	r->bp = w[0];
	return HS_E_OK;
}

int hswalk__step(const struct hsmem *m, const struct hs_proc *c, struct hs_regs *r, bool leaf,
		 uint32_t index, uint64_t rec[2])
{
	uint8_t blob[HS_BLOB_READ], code[16];
	uint64_t look = leaf ? r->pc : r->pc - 1, addr, begin, end, deopt, fs, name = 0, pc = r->pc;
	uint32_t flags = leaf ? HS_R_EXACT : 0, stamp, kind;
	struct hs_regs o = *r;
	int type, err, st = F_FULL;
	int64_t fc;

	if (!owns(c, look))
		return HS_E_NOT_JAVA;
	if (look >= c->interp_lo && look < c->interp_hi)
		return interp(m, c, r, leaf, index, rec);
	addr = find_blob(m, c, look);
	if (!addr)
		return HS_E_NO_BLOB;
	if (c->blob_read > HS_BLOB_READ || rd(m, addr, blob, c->blob_read))
		return HS_E_READ;
	begin = f64(blob, c->cb_code_begin);
	end = f64(blob, c->cb_code_end);
	if (c->flags & HS_P_CODE_OFFSETS) {
		begin = addr + (uint32_t)begin;
		end = addr + (uint32_t)end;
	}
	if (look < begin || look >= end)
		return HS_E_BAD_BLOB;
	fs = 8ull * (int32_t)f32(blob, c->cb_frame_size);
	fc = c->flags & HS_P_FC16 ? (int16_t)f16(blob, c->cb_frame_complete)
				  : (int32_t)f32(blob, c->cb_frame_complete);
	if (fs > HS_MAX_FRAME_SIZE)
		return HS_E_BAD_BLOB;
	if (c->flags & HS_P_KIND) {
		uint8_t k = blob[c->cb_kind >= 0 && c->cb_kind < HS_BLOB_READ ? c->cb_kind : 0];

		type = k == c->kind_nmethod ? B_NMETHOD : k == c->kind_vtable ? B_VTABLE : B_STUB;
		name = f64(blob, c->cb_name);
	} else {
		char n[8];

		name = f64(blob, c->cb_name);
		if (rd(m, name, n, 8))
			return HS_E_READ;
		type = !memcmp(n, "nmethod", 8) || !memcmp(n, "native n", 8) ? B_NMETHOD
		       : !memcmp(n, "vtable c", 8)			       ? B_VTABLE
										       : B_STUB;
	}
	if (type == B_NMETHOD) {
		kind = HS_K_COMPILED;
		stamp = hs_stamp(f32(blob, c->nm_compile_id), epoch_of(m, c));
		deopt = c->flags & HS_P_CODE_OFFSETS ? addr + (int32_t)f32(blob, c->nm_deopt)
						     : f64(blob, c->nm_deopt);
		if (!leaf && pc == deopt) {
			uint64_t orig;

			if (!rd(m, r->sp + (int64_t)(int32_t)f32(blob, c->nm_orig_pc), &orig, 8) &&
			    orig >= begin && orig < end) {
				pc = orig;
				flags |= HS_R_DEOPT;
			}
		}
		if (fs < 16)
			return HS_E_BAD_BLOB;
	} else {
		kind = HS_K_STUB;
		stamp = (uint32_t)name;
	}
	if (leaf && (type == B_VTABLE || fs || fc > 0)) {
		uint64_t verified = c->flags & HS_P_CODE_OFFSETS
					    ? begin + f16(blob, c->nm_verified)
					    : f64(blob, c->nm_verified);

		if (rd(m, r->pc - 8, code, sizeof(code)))
			return HS_E_READ;
		if (type == B_VTABLE)
			st = F_NOTHING;
		else if (type == B_NMETHOD && r->pc < verified)
			st = F_NOTHING; /* the inline cache check */
		else
			st = hswalk__leaf_state(code, fc > 0 && r->pc < begin + (uint64_t)fc);
		if (st != F_FULL)
			flags |= HS_R_GUESSED;
	}
	if (!fs && st == F_FULL) {
		/* No frame size: the call stub and StubRoutines frame by rbp.
		 * A leaf that did not: nothing pushed. */
		if (leaf && !(r->bp >= r->sp && r->bp - r->sp < 4096)) {
			st = F_NOTHING;
			flags |= HS_R_GUESSED;
		} else {
			st = F_RBP_FRAME;
		}
	}
	switch (st) {
	case F_NOTHING:
		err = pushed(m, c, r, 0, type == B_NMETHOD);
		break;
	case F_BP_PUSHED:
		err = pushed(m, c, r, 1, type == B_NMETHOD);
		break;
	case F_RBP_FRAME:
		err = rbp_frame(m, r);
		break;
	default:
		err = full_frame(m, c, r, fs, st == F_FULL_BP, type == B_NMETHOD, &flags);
		break;
	}
	if (err) {
		*r = o;
		return err;
	}
	if (r->sp <= o.sp || !r->pc) {
		*r = o;
		return HS_E_BAD_FRAME;
	}
	rec[0] = hs_rec0(addr, kind, flags, index);
	rec[1] = hs_rec1((uint32_t)(pc - begin), stamp);
	return HS_E_OK;
}
