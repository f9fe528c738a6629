/*
 * maple_walk.h - the vma of an address in a task's mm, for BPF programs
 * (BPF only). The sampler's walk (bpf/unwind_walk.h) and the test
 * programs that stand in for it (tests/bpf/) look up mappings the same
 * way: a test that used bpf_find_vma() instead lost frames whenever
 * another thread held the mmap lock, which the sampler never does.
 */
#ifndef PROFFS_BPF_MAPLE_WALK_H
#define PROFFS_BPF_MAPLE_WALK_H

/*
 * The vma holding addr, looked up in the mm's maple tree the way the
 * kernel's mtree_lookup_walk() does, with probe reads. bpf_find_vma()
 * cannot serve a walk: from the hardirq a perf event fires in, it works
 * once per interrupt (its deferred unlock is busy after that), and a walk
 * needs a lookup per file it crosses; and from a task it fails while
 * another thread holds the mmap lock. The tree is RCU-safe and a BPF
 * program runs inside an RCU read-side section; a torn read at worst
 * yields a vma the caller's check of vm_start and vm_end refuses.
 * Returns NULL when nothing maps addr.
 */
static __always_inline struct vm_area_struct *mt_lookup(struct mm_struct *mm, __u64 addr)
{
	__u64 piv[15], e = (__u64)BPF_CORE_READ(mm, mm_mt.ma_root), max = ~0ull;

	for (int depth = 0; depth < 8; depth++) {
		__u64 node = e & ~255ull, slot = 0;
		int type = (e >> 3) & 15, npiv, end, off;
		__u8 meta_end = 0;

		/* The root is tagged as an internal entry (low bits 10); an
		 * empty or one-entry tree has no node. Below it, encoded
		 * nodes: address | type << 3 | 4. */
		if (e <= 4096 || (depth == 0 && (e & 3) != 2))
			return 0;
		/* Where the node's data ends, as ma_data_end() says: a full
		 * node's last pivot is implied; else its metadata knows. */
		if (type == 3) { /* maple_arange_64: pivots at 8, meta at 240 */
			npiv = 9;
			if (bpf_probe_read_kernel(piv, 9 * 8, (void *)(node + 8)) ||
			    bpf_probe_read_kernel(&meta_end, 1, (void *)(node + 240)))
				return 0;
			end = meta_end;
		} else if (type == 1 || type == 2) { /* leaf_64, range_64: meta at 248 */
			npiv = 15;
			if (bpf_probe_read_kernel(piv, 15 * 8, (void *)(node + 8)))
				return 0;
			if (piv[14] == 0) {
				if (bpf_probe_read_kernel(&meta_end, 1, (void *)(node + 248)))
					return 0;
				end = meta_end;
			} else {
				end = piv[14] == max ? 14 : 15;
			}
		} else {
			return 0;
		}
		if (end > npiv)
			return 0;
		off = end;
		for (int i = 0; i < 15; i++) {
			if (i >= end)
				break;
			if (piv[i] >= addr) {
				off = i;
				max = piv[i];
				break;
			}
		}
		if (bpf_probe_read_kernel(&slot, 8, (void *)(node + 8 + npiv * 8 + (off & 15) * 8)))
			return 0;
		if (type == 1)
			return (struct vm_area_struct *)slot;
		e = slot;
	}
	return 0;
}

#endif
