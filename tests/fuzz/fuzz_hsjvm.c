/* fuzz_hsjvm: a forged JVM's memory read by sampler/java/: its
 * introspection tables (vmtables.c), the layout taken from them
 * (hslayout.c), the per-process set-up (hsvm.c), and the naming of
 * records (hsname.c) through Methods, ConstantPools, Symbols, nmethods,
 * PcDescs and scopes. Nothing crashes, leaks or loops however the
 * memory lies.
 *
 * Input: two records (4 x u64: s0, s1, s0, s1), then the memory image,
 * mapped at 0x10000000 by whole pages, whose first 21 words are the
 * gHotSpotVM* variables (tests/unit/test_hotspot.c's forged scenarios
 * write seeds in this format: PROFFS_HS_SEED, PROFFS_HS_SEED_NAMES). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/java/hslayout.h"
#include "sampler/java/hsname.h"
#include "sampler/java/hsvm.h"
#include "sampler/java/hswalk.h"
#include "sampler/java/vmtables.h"
#include "tests/fuzz/fake_mem.h"

#define BASE 0x10000000ull

static struct hsnames *names;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fake_mem im;
	struct hsmem m = { fake_mem_read, &im };
	struct jvmfile jf = { 0 };
	struct vmtables t;
	struct hsvm vm, vm2;
	struct hsjframe fr[HSNAME_MAX_INLINE];
	uint64_t ctl[4];
	char why[128];

	if (size < sizeof(ctl))
		return 0;
	memcpy(ctl, data, sizeof(ctl));
	/* bytes past the input, up to the page's end, read as 0 */
	im = (struct fake_mem){ data + sizeof(ctl), size - sizeof(ctl), BASE, 4096 };
	for (int k = 0; k < JS_N; k++)
		jf.sym[k] = BASE + 8 * (uint64_t)k;
	if (!names)
		names = hsnames__new(64 << 10);
	if (vmtables__read(&m, &jf, 0, &t))
		return 0;
	memset(&vm, 0, sizeof(vm));
	if (!hslayout__build(&t, &vm.l, why, sizeof(why))) {
		vm.u5x = ctl[1] & 1;
		for (int r = 0; r < 2; r++) {
			int n = hsnames__frames(names, 7, &m, &vm, ctl[2 * r], ctl[2 * r + 1], fr,
						HSNAME_MAX_INLINE);

			for (int i = 0; i < n; i++)
				if (!fr[i].name || !fr[i].sysname || !fr[i].file || strlen(fr[i].name) > 8192)
					abort();
		}
		hsnames__forget(names, 7);
	}
	vmtables__free(&t);
	if (!hsvm__open(&m, &jf, 0, &vm2, why, sizeof(why))) {
		/* a set-up the walk would trust: step from pcs in the input */
		/* (rax and rbx from the same words: a method entry's rules
		 * are reached too) */
		struct hs_regs r = { ctl[0], ctl[1], ctl[2], ctl[3], ctl[0], ctl[2] };
		uint64_t rec[2];

		for (int i = 0; i < 8 && hswalk__owns(&vm2.bpf, r.pc); i++)
			if (hswalk__step(&m, &vm2.bpf, &r, i == 0, (uint32_t)i, rec))
				break;
	}
	return 0;
}
