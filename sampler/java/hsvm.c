/*
 * hsvm.c - setting up one JVM process (hsvm.h).
 *
 * The code cache's bounds, its heaps and the interpreter's buffer are
 * fixed once the JVM has started (reserved, not committed, ranges), so
 * one read at set-up serves the process's life. Everything read is
 * checked against everything else (heaps inside the cache's bounds,
 * segment maps sized for their heaps, the interpreter inside the cache)
 * before BPF trusts it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/java/hsperf.h"
#include "sampler/java/hsvm.h"
#include "sampler/java/vmtables.h"

static int say(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int rd(const struct hsmem *m, uint64_t addr, void *buf, size_t n)
{
	return hsmem__read(m, addr, buf, n);
}

/* The field f of the object at obj: read its bytes and widen. */
static int rd_f(const struct hsmem *m, uint64_t obj, const struct hsf *f, uint64_t *v)
{
	uint8_t b[8];

	if (f->off < 0 || !f->size || f->size > 8)
		return -ERANGE;
	if (rd(m, obj + (uint64_t)f->off, b, f->size))
		return -EFAULT;
	return hsf__get(&(struct hsf){ .off = 0, .size = f->size, .sign = f->sign }, b, f->size, v);
}

static bool fits16(const struct hsf *f)
{
	return f->off < 0 || f->off + f->size <= INT16_MAX;
}

/* The highest byte + 1 any of the BPF's blob fields needs. */
static uint32_t blob_need(const struct hslayout *l)
{
	const struct hsf *f[] = { &l->cb_name, &l->cb_kind, &l->cb_frame_size,
				  &l->cb_frame_complete, &l->cb_code_begin, &l->cb_code_end,
				  &l->nm_compile_id, &l->nm_orig_pc, &l->nm_deopt,
				  &l->nm_verified };
	uint32_t need = 0;

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i]->off >= 0 && (uint32_t)(f[i]->off + f[i]->size) > need)
			need = (uint32_t)(f[i]->off + f[i]->size);
	return need;
}

static int read_heaps(const struct hsmem *m, const struct hslayout *l, struct hs_proc *c,
		      char *why, size_t whylen)
{
	uint64_t arr, len, data, heaps[HS_MAX_HEAPS];
	int64_t shift = -1;

	if (rd(m, l->cc_heaps, &arr, 8))
		return say(why, whylen, -EFAULT, "CodeCache::_heaps unreadable");
	if (!arr)
		return say(why, whylen, -EAGAIN, "no code heaps yet");
	if (rd_f(m, arr, &l->ga_len, &len) || rd_f(m, arr, &l->ga_data, &data))
		return say(why, whylen, -EFAULT, "the code heap array unreadable");
	if (!len || len > HS_MAX_HEAPS || !data)
		return say(why, whylen, len ? -EPROTO : -EAGAIN, "%llu code heaps",
			   (unsigned long long)len);
	if (rd(m, data, heaps, len * 8))
		return say(why, whylen, -EFAULT, "the code heap pointers unreadable");
	c->nheaps = (uint32_t)len;
	for (uint64_t i = 0; i < len; i++) {
		struct hs_heap *h = &c->heaps[i];
		uint64_t lo, hi, seg, segh, s;

		if (rd_f(m, heaps[i] + l->heap_memory.off, &l->vs_low_boundary, &lo) ||
		    rd_f(m, heaps[i] + l->heap_memory.off, &l->vs_high_boundary, &hi) ||
		    rd_f(m, heaps[i] + l->heap_segmap.off, &l->vs_low_boundary, &seg) ||
		    rd_f(m, heaps[i] + l->heap_segmap.off, &l->vs_high_boundary, &segh) ||
		    rd_f(m, heaps[i], &l->heap_log2, &s))
			return say(why, whylen, -EFAULT, "code heap %llu unreadable",
				   (unsigned long long)i);
		if (lo >= hi || lo < c->code_lo || hi > c->code_hi || (int64_t)s < 4 || s > 16 ||
		    (shift >= 0 && (int64_t)s != shift) || segh < seg ||
		    segh - seg < (hi - lo) >> s)
			return say(why, whylen, -EPROTO,
				   "code heap %llu: [%#llx, %#llx) segmap [%#llx, %#llx) log2 %llu",
				   (unsigned long long)i, (unsigned long long)lo,
				   (unsigned long long)hi, (unsigned long long)seg,
				   (unsigned long long)segh, (unsigned long long)s);
		shift = (int64_t)s;
		h->lo = lo;
		h->hi = hi;
		h->segmap = seg;
	}
	c->seg_shift = (uint8_t)shift;
	return 0;
}

/*
 * Where the unload epoch (bpf/hotspot.h) is: the perf data's count of
 * classes unloaded when the JVM keeps perf data (its default), else the
 * heap's count of collections: classes are unloaded only by a
 * collection, so it moves with every unload (and with every other
 * collection: interpreted frames sampled across one show as freed).
 */
static int epoch_addr(const struct hsmem *m, const struct hslayout *l, uint64_t *out,
		      char *why, size_t whylen)
{
	uint8_t pro[HSPERF_PROLOGUE], *b;
	uint64_t start = 0, heap;
	uint32_t used = 0, off;
	int err = -ENOENT;

	*out = 0;
	if (l->perf_start && !rd(m, l->perf_start, &start, 8) && start && !rd(m, start, pro, sizeof(pro))) {
		err = hsperf__used(pro, sizeof(pro), &used);
		if (err == -EAGAIN)
			return say(why, whylen, -EAGAIN, "perf data not accessible yet");
	}
	if (start && !err) {
		b = malloc(used);
		if (!b)
			return -ENOMEM;
		err = rd(m, start, b, used);
		if (!err)
			err = hsperf__find(b, used, "java.cls.unloadedClasses", &off);
		free(b);
		if (!err) {
			*out = start + off;
			return 0;
		}
	}
	if (rd(m, l->heap, &heap, 8))
		return say(why, whylen, -EFAULT, "Universe::_collectedHeap unreadable");
	if (!heap)
		return say(why, whylen, -EAGAIN, "no heap yet");
	*out = heap + (uint64_t)l->heap_collections.off;
	return 0;
}

static int fill_bpf(const struct hsmem *m, struct hsvm *vm, char *why, size_t whylen)
{
	const struct hslayout *l = &vm->l;
	struct hs_proc *c = &vm->bpf;
	uint64_t q, buf, limit;
	uint32_t need;
	int err;

	memset(c, 0, sizeof(*c));
	if (rd(m, l->cc_low, &c->code_lo, 8) || rd(m, l->cc_high, &c->code_hi, 8))
		return say(why, whylen, -EFAULT, "the code cache bounds unreadable");
	if (!c->code_lo || c->code_hi <= c->code_lo)
		return say(why, whylen, -EAGAIN, "no code cache yet");
	if (c->code_hi >= 1ull << 47)
		return say(why, whylen, -EPROTO, "a code cache beyond user space");
	err = read_heaps(m, l, c, why, whylen);
	if (err)
		return err;
	if (rd(m, l->interp_code, &q, 8))
		return say(why, whylen, -EFAULT, "AbstractInterpreter::_code unreadable");
	if (!q)
		return say(why, whylen, -EAGAIN, "no interpreter yet");
	if (rd_f(m, q, &l->sq_stub_buffer, &buf) || rd_f(m, q, &l->sq_buffer_limit, &limit))
		return say(why, whylen, -EFAULT, "the interpreter's stub queue unreadable");
	if (buf < c->code_lo || (int64_t)limit <= 0 || limit > c->code_hi - buf)
		return say(why, whylen, -EPROTO, "the interpreter at [%#llx +%lld) not in the cache",
			   (unsigned long long)buf, (long long)limit);
	c->interp_lo = buf;
	c->interp_hi = buf + limit;
	if (rd(m, l->call_stub_ra, &c->call_stub_ra, 8))
		return say(why, whylen, -EFAULT, "the call stub's return address unreadable");
	if (!c->call_stub_ra)
		return say(why, whylen, -EAGAIN, "no call stub yet");
	if (c->call_stub_ra < c->code_lo || c->call_stub_ra >= c->code_hi)
		return say(why, whylen, -EPROTO, "the call stub outside the code cache");
	if (l->heapblock_sizeof > 64)
		return say(why, whylen, -EPROTO, "HeapBlock of %llu bytes",
			   (unsigned long long)l->heapblock_sizeof);
	c->block_hdr = (uint8_t)l->heapblock_sizeof;
	need = blob_need(l);
	if (need > HS_BLOB_READ || l->cm_sizeof > UINT16_MAX)
		return say(why, whylen, -EPROTO, "blob fields up to byte %u (we read %u)", need,
			   HS_BLOB_READ);
	c->blob_read = (uint16_t)need;
	c->cm_size = (uint16_t)l->cm_sizeof;
	if (!l->cb_code_begin.ptr)
		c->flags |= HS_P_CODE_OFFSETS;
	if (l->cb_kind.off >= 0) {
		c->flags |= HS_P_KIND;
		c->kind_nmethod = (uint8_t)l->kind_nmethod;
		c->kind_vtable = (uint8_t)l->kind_vtable;
	}
	if (l->cb_frame_complete.size == 2)
		c->flags |= HS_P_FC16;
	else if (l->cb_frame_complete.size != 4)
		return say(why, whylen, -EPROTO, "_frame_complete_offset of %u bytes",
			   l->cb_frame_complete.size);
	if (l->cb_frame_size.size != 4 || l->nm_compile_id.size != 4 || l->nm_orig_pc.size != 4 ||
	    (!l->nm_deopt.ptr && l->nm_deopt.size != 4) ||
	    (!l->nm_verified.ptr && l->nm_verified.size != 2) ||
	    (!l->cb_code_begin.ptr && (l->cb_code_begin.size != 4 || l->cb_code_end.size != 4)))
		return say(why, whylen, -EPROTO, "blob fields of widths the walk does not read");
	if (!fits16(&l->m_const_method))
		return say(why, whylen, -EPROTO, "Method::_constMethod at %d", l->m_const_method.off);
	c->cb_name = (int16_t)l->cb_name.off;
	c->cb_kind = (int16_t)l->cb_kind.off;
	c->cb_frame_size = (int16_t)l->cb_frame_size.off;
	c->cb_frame_complete = (int16_t)l->cb_frame_complete.off;
	c->cb_code_begin = (int16_t)l->cb_code_begin.off;
	c->cb_code_end = (int16_t)l->cb_code_end.off;
	c->nm_compile_id = (int16_t)l->nm_compile_id.off;
	c->nm_orig_pc = (int16_t)l->nm_orig_pc.off;
	c->nm_deopt = (int16_t)l->nm_deopt.off;
	c->nm_verified = (int16_t)l->nm_verified.off;
	c->m_const_method = (int16_t)l->m_const_method.off;
	c->if_method = (int8_t)l->if_method;
	c->if_bcp = (int8_t)l->if_bcp;
	c->if_sender_sp = (int8_t)l->if_sender_sp;
	err = epoch_addr(m, l, &q, why, whylen);
	c->epoch_addr = q;
	return err;
}

int hsvm__epoch(const struct hsmem *m, const struct hsvm *vm, uint32_t *epoch)
{
	*epoch = 0;
	return vm->bpf.epoch_addr ? rd(m, vm->bpf.epoch_addr, epoch, 4) : 0;
}

int hsvm__open(const struct hsmem *m, const struct jvmfile *jf, uint64_t bias, struct hsvm *vm,
	       char *why, size_t whylen)
{
	struct vmtables t;
	const char *withhold;
	int32_t v[4];
	uint64_t rel;
	int err;

	memset(vm, 0, sizeof(*vm));
	if (why && whylen)
		why[0] = 0;
	vm->bias = bias;
	err = vmtables__read(m, jf, bias, &t);
	if (err)
		return say(why, whylen, err, "the tables: %s", strerror(-err));
	err = hslayout__build(&t, &vm->l, why, whylen);
	vmtables__free(&t);
	if (err)
		return err;
	if (rd(m, vm->l.v_major, &v[0], 4) || rd(m, vm->l.v_minor, &v[1], 4) ||
	    rd(m, vm->l.v_security, &v[2], 4) || rd(m, vm->l.v_build, &v[3], 4))
		return say(why, whylen, -EFAULT, "the version unreadable");
	vm->major = v[0];
	vm->minor = v[1];
	vm->security = v[2];
	vm->build = v[3];
	if (!rd(m, vm->l.v_release, &rel, 8) && rel)
		hsmem__str(m, rel, vm->release, sizeof(vm->release));
	if (!vm->major) /* set as the VM starts, after the tables */
		return say(why, whylen, -EAGAIN, "no version yet");
	if (vm->major < HSVM_MIN_MAJOR || vm->major > HSVM_MAX_MAJOR)
		return say(why, whylen, -EOPNOTSUPP, "JDK %d (%s): not a release we name",
			   vm->major, vm->release);
	withhold = getenv("PROFFS_HS_WITHHOLD");
	if (withhold && atoi(withhold) == vm->major)
		return say(why, whylen, -EOPNOTSUPP, "JDK %d withheld (PROFFS_HS_WITHHOLD)",
			   vm->major);
	/* UNSIGNED5 excludes the 0 byte since JDK 20 build 15 (JDK-8292758;
	 * OpenTelemetry's profiler keys it on the same version). */
	vm->u5x = vm->major > 20 || (vm->major == 20 && vm->build >= 15);
	return fill_bpf(m, vm, why, whylen);
}
