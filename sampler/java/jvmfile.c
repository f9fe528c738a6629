/*
 * jvmfile.c - recognising libjvm.so by its exported tables (jvmfile.h).
 *
 * Only .dynsym is read: the gHotSpotVM* variables are JNIEXPORT in every
 * HotSpot build, stripped or not, and a file whose dynamic symbols lack
 * them is no JVM the serviceability agent could read either. The file
 * is untrusted: the section is bounded by the file and by a symbol cap.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>

#include "sampler/java/jvmfile.h"
#include "sampler/symbols/elfsym.h"

const char *const jvmfile_names[JS_N] = {
	[JS_STRUCTS] = "gHotSpotVMStructs",
	[JS_STRUCT_STRIDE] = "gHotSpotVMStructEntryArrayStride",
	[JS_STRUCT_TYPE] = "gHotSpotVMStructEntryTypeNameOffset",
	[JS_STRUCT_FIELD] = "gHotSpotVMStructEntryFieldNameOffset",
	[JS_STRUCT_TYPESTR] = "gHotSpotVMStructEntryTypeStringOffset",
	[JS_STRUCT_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
	[JS_STRUCT_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
	[JS_STRUCT_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
	[JS_TYPES] = "gHotSpotVMTypes",
	[JS_TYPE_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
	[JS_TYPE_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
	[JS_TYPE_SUPER] = "gHotSpotVMTypeEntrySuperclassNameOffset",
	[JS_TYPE_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
	[JS_INTS] = "gHotSpotVMIntConstants",
	[JS_INT_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
	[JS_INT_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
	[JS_INT_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
	[JS_LONGS] = "gHotSpotVMLongConstants",
	[JS_LONG_STRIDE] = "gHotSpotVMLongConstantEntryArrayStride",
	[JS_LONG_NAME] = "gHotSpotVMLongConstantEntryNameOffset",
	[JS_LONG_VALUE] = "gHotSpotVMLongConstantEntryValueOffset",
};

/* The gHotSpotVM* symbols of .dynsym: each an 8-byte object. */
static int scan(Elf *elf, uint64_t fsize, struct jvmfile *jf, uint32_t *found)
{
	struct elfsym_want w[JS_N];

	for (int k = 0; k < JS_N; k++)
		w[k] = (struct elfsym_want){ .name = jvmfile_names[k] };
	if (!elfsym__want(elf, fsize, SHT_DYNSYM, false, w, JS_N))
		return -ENOENT;
	for (int k = 0; k < JS_N; k++) {
		if (!w[k].found)
			continue;
		if (w[k].size != 8 || w[k].type != STT_OBJECT)
			return -EPROTO;
		jf->sym[k] = w[k].addr;
		*found |= 1u << k;
	}
	return 0;
}

int jvmfile__read(int fd, struct jvmfile *jf)
{
	uint32_t found = 0;
	struct elf_info e;
	struct stat st;
	GElf_Ehdr eh;
	Elf *elf;
	int err;

	memset(jf, 0, sizeof(*jf));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = -ENOEXEC;
		goto out;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64) {
		err = -ENOEXEC;
		goto out;
	}
	err = scan(elf, (uint64_t)st.st_size, jf, &found);
	if (err)
		goto out;
	if (!(found & 1u << JS_STRUCTS)) {
		err = -ENOENT;
		goto out;
	}
	if (found != (1u << JS_N) - 1) {
		err = -EPROTO;
		goto out;
	}
	/* The build id names the file in logs; none is fine. */
	if (!elfsym__read(fd, false, &e)) {
		memcpy(jf->build_id, e.build_id, sizeof(jf->build_id));
		elfsym__fini(&e);
	}
out:
	if (elf)
		elf_end(elf);
	return err;
}
