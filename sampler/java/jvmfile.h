/*
 * jvmfile.h - is this ELF file a HotSpot JVM (libjvm.so), and where are
 * its introspection tables: the gHotSpotVM* symbols every HotSpot since
 * JDK 6 exports for the serviceability agent. Each is a variable holding
 * a table's address, an entry's size, or the offset of a member in an
 * entry; the values are set while the JVM starts (most live in .bss), so
 * they are read from the running process (sampler/java/vmtables.h), not
 * from the file. Addresses here are link-time: add the load bias.
 */
#ifndef PROFFS_JAVA_JVMFILE_H
#define PROFFS_JAVA_JVMFILE_H

#include <stdint.h>

/* The symbols we read, in the order jvmfile__names() lists them. */
enum jvmsym {
	JS_STRUCTS,	   /* gHotSpotVMStructs: VMStructEntry* */
	JS_STRUCT_STRIDE,  /* gHotSpotVMStructEntryArrayStride */
	JS_STRUCT_TYPE,	   /* ...TypeNameOffset */
	JS_STRUCT_FIELD,   /* ...FieldNameOffset */
	JS_STRUCT_TYPESTR, /* ...TypeStringOffset */
	JS_STRUCT_STATIC,  /* ...IsStaticOffset */
	JS_STRUCT_OFFSET,  /* ...OffsetOffset */
	JS_STRUCT_ADDRESS, /* ...AddressOffset */
	JS_TYPES,	   /* gHotSpotVMTypes: VMTypeEntry* */
	JS_TYPE_STRIDE,
	JS_TYPE_NAME,
	JS_TYPE_SUPER,
	JS_TYPE_SIZE,
	JS_INTS,	   /* gHotSpotVMIntConstants */
	JS_INT_STRIDE,
	JS_INT_NAME,
	JS_INT_VALUE,
	JS_LONGS,	   /* gHotSpotVMLongConstants */
	JS_LONG_STRIDE,
	JS_LONG_NAME,
	JS_LONG_VALUE,
	JS_N,
};

struct jvmfile {
	uint64_t sym[JS_N]; /* link-time addresses of the variables */
	char build_id[41];  /* lowercase hex, "" when none */
};

/* The symbol name of each enum jvmsym (static strings). */
extern const char *const jvmfile_names[JS_N];

/*
 * Reads the ELF file open at fd (only read; the caller keeps it). Returns
 * 0 and fills *jf when its .dynsym defines every symbol above as an
 * 8-byte object; -ENOENT: not a JVM (gHotSpotVMStructs missing);
 * -EPROTO: some of them missing or of another size (a JVM we cannot
 * read); -ENOEXEC: not a 64-bit little-endian x86-64 ELF file; -ENOMEM.
 */
int jvmfile__read(int fd, struct jvmfile *jf);

#endif
