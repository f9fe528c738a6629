/*
 * hsvm.h - one JVM process as sampler/java/ sees it: its layout (fields
 * by name from its own tables), its version, and the per-process set-up
 * of the BPF walk (struct hs_proc): the code cache and its heaps, the
 * interpreter's code, the call stub. Read once per process, when its
 * first sample runs in libjvm or its code cache; nothing here is read
 * per sample.
 */
#ifndef PROFFS_JAVA_HSVM_H
#define PROFFS_JAVA_HSVM_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/hotspot.h"
#include "sampler/java/hslayout.h"
#include "sampler/java/hsmem.h"
#include "sampler/java/jvmfile.h"

/* The JDK releases whose frames we name: their layouts were checked
 * against live JVMs (17 and 25 on these hosts); others keep their
 * native frames and are counted as unsupported. */
#define HSVM_MIN_MAJOR 17
#define HSVM_MAX_MAJOR 25

struct hsvm {
	struct hslayout l;
	struct hs_proc bpf;   /* the BPF walk's set-up (bpf/hotspot.h) */
	int major, minor, security, build;
	char release[80];     /* Abstract_VM_Version::_s_vm_release, e.g. "17.0.15+6-Debian-1deb12u1" */
	uint8_t u5x;	      /* UNSIGNED5's excluded bytes: 0 before JDK 20, 1 since */
	uint64_t bias;	      /* libjvm's load bias */
};

/*
 * Reads the JVM whose libjvm (jf) is loaded at bias in the process m
 * reads, into *vm (the caller's; nothing to free). Returns 0, or:
 * -EAGAIN: not started far enough yet (tables, code cache or interpreter
 * not set up): look again later; -EOPNOTSUPP: a release outside
 * HSVM_MIN_MAJOR..HSVM_MAX_MAJOR; -EPROTO: its tables lack a field we
 * need, or what they describe is out of bounds (layout check failed);
 * a read's -errno (-ESRCH: gone). why (if not NULL) says what, in at
 * most whylen bytes. PROFFS_HS_WITHHOLD=N in the environment makes JDK N
 * unsupported (tests of an unknown JDK).
 */
int hsvm__open(const struct hsmem *m, const struct jvmfile *jf, uint64_t bias, struct hsvm *vm,
	       char *why, size_t whylen);

/*
 * The JVM's unload epoch now (bpf/hotspot.h): what a Method's stamp is
 * made with (hs_stamp). 0 and *epoch, or a read's -errno.
 */
int hsvm__epoch(const struct hsmem *m, const struct hsvm *vm, uint32_t *epoch);

#endif
