/*
 * hslayout.h - the fields of a HotSpot JVM that sampler/java/ reads, each
 * taken by name from the JVM's own tables (vmtables.h), with the names
 * HotSpot gave the same thing across releases as alternatives (JDK 17:
 * CompiledMethod::_method, CodeBlob::_code_begin pointers; JDK 25:
 * nmethod::_method, CodeBlob::_code_offset ints). Each field's width and
 * meaning come from its C++ type string in the table, so a field that
 * changed from a pointer to an offset is read as what it now is. A
 * needed field missing, or lying outside its class's size, refuses the
 * JVM: we never guess an offset.
 */
#ifndef PROFFS_JAVA_HSLAYOUT_H
#define PROFFS_JAVA_HSLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/java/vmtables.h"

/* One field: off < 0 when the JVM has none. */
struct hsf {
	int32_t off;
	uint8_t size; /* bytes: 1, 2, 4 or 8 */
	bool sign;    /* a signed integer */
	bool ptr;     /* a pointer (size 8) */
};

/* Classes larger than this are refused (the largest we read, InstanceKlass,
 * is under 500 bytes). */
#define HSL_MAX_CLASS (64u << 10)

struct hslayout {
	/* CodeBlob */
	struct hsf cb_name, cb_size, cb_kind, cb_frame_size, cb_frame_complete;
	struct hsf cb_code_begin, cb_code_end; /* pointers, or int offsets from the blob */
	struct hsf cb_mutable_data, cb_relocation_size, cb_mutable_data_size; /* JDK 25+ */
	uint64_t cb_sizeof;
	int64_t kind_nmethod, kind_vtable; /* CodeBlobKind values; -1 without cb_kind */
	/* nmethod (with CompiledMethod's fields on JDK 17-22) */
	struct hsf nm_method, nm_compile_id, nm_orig_pc;
	struct hsf nm_verified;	     /* pointer, or a u16 offset from the code begin */
	struct hsf nm_deopt;	     /* pointer, or an int offset from the blob */
	struct hsf nm_scopes_data;   /* pointer (17-22), or an int offset into the immutable data */
	struct hsf nm_scopes_pcs;    /* int: from the blob (17-22), into the immutable data (23+) */
	struct hsf nm_dependencies;  /* int offset from the blob: the PcDescs end there (17-22) */
	struct hsf nm_metadata;	     /* int offset from the blob (17-22) */
	struct hsf nm_immutable, nm_immutable_size; /* JDK 23+ */
	uint64_t nm_sizeof;
	/* Method, ConstMethod, ConstantPool, Klass, Symbol, Array<u1> */
	struct hsf m_const_method;
	struct hsf cm_constants, cm_flags, cm_code_size, cm_name_index, cm_signature_index;
	uint64_t cm_sizeof;
	int64_t cm_has_linenumbers; /* the flag bit of cm_flags */
	struct hsf cp_holder, cp_source_file, cp_tags, cp_length;
	uint64_t cp_sizeof;
	int64_t utf8_tag;	    /* JVM_CONSTANT_Utf8 */
	struct hsf klass_name;
	struct hsf sym_length, sym_body;
	struct hsf u1_data;	    /* Array<u1>::_data (its int length is at 0) */
	/* PcDesc */
	struct hsf pc_pc_offset, pc_scope_offset;
	uint64_t pc_sizeof;
	/* The code cache: static addresses in the process (bias applied by
	 * the JVM: these come from the live tables) */
	uint64_t cc_heaps, cc_low, cc_high;
	struct hsf heap_memory, heap_segmap, heap_log2; /* CodeHeap */
	struct hsf vs_low_boundary, vs_high_boundary;	/* VirtualSpace */
	uint64_t heapblock_sizeof;
	struct hsf ga_len, ga_data; /* GrowableArrayBase::_len, GrowableArray<T>::_data */
	/* The interpreter and the call stub */
	uint64_t interp_code;	    /* AbstractInterpreter::_code (StubQueue*) */
	struct hsf sq_stub_buffer, sq_buffer_limit;
	uint64_t call_stub_ra;	    /* StubRoutines::_call_stub_return_address */
	/* Interpreter frame slots in words from rbp */
	int if_sender_sp, if_method, if_bcp;
	/* The version, static addresses of ints (and the release string's
	 * char*) */
	uint64_t v_major, v_minor, v_security, v_build, v_release;
	/* The unload epoch (bpf/hotspot.h): PerfMemory::_start's address
	 * (0: no such field), Universe::_collectedHeap's and the heap's
	 * count of collections (the epoch without perf data) */
	uint64_t perf_start, heap;
	struct hsf heap_collections;
};

/*
 * Fills *l from the tables t (pure: reads only t). Returns 0, or -EPROTO
 * when a needed field, type or constant is missing or out of bounds; why
 * (if not NULL) then names it, in at most whylen bytes.
 */
int hslayout__build(const struct vmtables *t, struct hslayout *l, char *why, size_t whylen);

/* Reads field f of the object whose first bytes are obj[0..len) as an
 * unsigned (sign-extended if f is signed) 64-bit value into *v: 0, or
 * -ERANGE when f is absent or not within len. */
int hsf__get(const struct hsf *f, const uint8_t *obj, size_t len, uint64_t *v);

#endif
