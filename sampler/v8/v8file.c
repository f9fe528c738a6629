/*
 * v8file.c - V8's post-mortem metadata out of an ELF file (v8file.h).
 *
 * One pass over each symbol table picks the v8dbg_* objects by prefix
 * (their names carry the field's type, which V8 renames: code__CodeT,
 * code__Tagged_Code_), the version objects and kBytecodeSizes; their
 * bytes are read from the PT_LOAD that holds them. The builtins' range
 * needs the FDEs next to DefaultSnapshotBlob: .eh_frame_hdr's sorted
 * starts say where the next FDE begins, libdw's CFI where one ends.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/v8/v8file.h"

/* Symbol names without "v8dbg_"; a name ending in "__" is a prefix (the
 * field's type follows). */
static const char *const names[V8D_MAX] = {
	[V8D_FP_CONTEXT] = "off_fp_context",
	[V8D_FP_FUNCTION] = "off_fp_function",
	[V8D_FP_BYTECODE_ARRAY] = "off_fp_bytecode_array",
	[V8D_FP_BYTECODE_OFFSET] = "off_fp_bytecode_offset",
	[V8D_SMI_TAG] = "SmiTag",
	[V8D_SMI_TAG_MASK] = "SmiTagMask",
	[V8D_SMI_SHIFT_SIZE] = "SmiShiftSize",
	[V8D_HEAP_OBJECT_TAG] = "HeapObjectTag",
	[V8D_HEAP_OBJECT_TAG_MASK] = "HeapObjectTagMask",
	[V8D_FIRST_NONSTRING_TYPE] = "FirstNonstringType",
	[V8D_STRING_ENCODING_MASK] = "StringEncodingMask",
	[V8D_STRING_REP_MASK] = "StringRepresentationMask",
	[V8D_SEQ_STRING_TAG] = "SeqStringTag",
	[V8D_CONS_STRING_TAG] = "ConsStringTag",
	[V8D_SLICED_STRING_TAG] = "SlicedStringTag",
	[V8D_THIN_STRING_TAG] = "ThinStringTag",
	[V8D_ONE_BYTE_STRING_TAG] = "OneByteStringTag",
	[V8D_TWO_BYTE_STRING_TAG] = "TwoByteStringTag",
	[V8D_HEAP_OBJECT_MAP] = "class_HeapObject__map__",
	[V8D_MAP_INSTANCE_TYPE] = "class_Map__instance_type__",
	[V8D_JSF_SHARED] = "class_JSFunction__shared__",
	[V8D_JSF_CODE] = "class_JSFunction__code__",
	[V8D_SFI_FUNCTION_DATA] = "class_SharedFunctionInfo__function_data__",
	[V8D_SFI_NAME_OR_SCOPE_INFO] = "class_SharedFunctionInfo__name_or_scope_info__",
	[V8D_SFI_SCRIPT] = "class_SharedFunctionInfo__script_or_debug_info__",
	[V8D_SCRIPT_SOURCE] = "class_Script__source__",
	[V8D_SCRIPT_NAME] = "class_Script__name__",
	[V8D_SCRIPT_LINE_ENDS] = "class_Script__line_ends__",
	[V8D_STRING_LENGTH] = "class_String__length__",
	[V8D_SEQ_ONE_CHARS] = "class_SeqOneByteString__chars__",
	[V8D_SEQ_TWO_CHARS] = "class_SeqTwoByteString__chars__",
	[V8D_CONS_FIRST] = "class_ConsString__first__",
	[V8D_CONS_SECOND] = "class_ConsString__second__",
	[V8D_SLICED_PARENT] = "class_SlicedString__parent__",
	[V8D_SLICED_OFFSET] = "class_SlicedString__offset__",
	[V8D_THIN_ACTUAL] = "class_ThinString__actual__",
	[V8D_FIXED_ARRAY_LENGTH] = "class_FixedArrayBase__length__",
	[V8D_FIXED_ARRAY_DATA] = "class_FixedArray__data__",
	[V8D_BYTECODE_DATA] = "class_BytecodeArray__data__",
	[V8D_CODE_INSTR_START] = "class_Code__instruction_start__",
	[V8D_CODE_INSTR_SIZE] = "class_Code__instruction_size__",
	[V8D_CODE_FLAGS] = "class_Code__flags__",
	[V8D_CODE_POSITIONS] = "class_Code__source_position_table__",
	[V8D_CODE_DEOPT_DATA] = "class_Code__deoptimization_data__",
	[V8D_KIND_MASK] = "CodeKindFieldMask",
	[V8D_KIND_SHIFT] = "CodeKindFieldShift",
	[V8D_KIND_BASELINE] = "CodeKindBaseline",
	[V8D_T_SFI] = "type_SharedFunctionInfo__",
	[V8D_T_SCRIPT] = "type_Script__",
	[V8D_T_SCOPE_INFO] = "type_ScopeInfo__",
	[V8D_T_BYTECODE_ARRAY] = "type_BytecodeArray__",
	[V8D_T_BYTE_ARRAY] = "type_ByteArray__",
	[V8D_T_FIXED_ARRAY] = "type_FixedArray__",
	[V8D_T_CODE] = "type_Code__",
	[V8D_T_INTERPRETER_DATA] = "type_InterpreterData__",
	[V8D_T_ODDBALL] = "type_Oddball__",
	[V8D_SI_FIRST_VARS] = "scopeinfo_idx_first_vars",
	[V8D_SI_NCONTEXTLOCALS] = "scopeinfo_idx_ncontextlocals",
	[V8D_DD_INLINED_COUNT] = "DeoptimizationDataInlinedFunctionCountIndex",
	[V8D_DD_LITERALS] = "DeoptimizationDataLiteralArrayIndex",
	[V8D_DD_SFI] = "DeoptimizationDataSharedFunctionInfoIndex",
	[V8D_DD_INLINING_POSITIONS] = "DeoptimizationDataInliningPositionsIndex",
	[V8D_JSF_FEEDBACK_CELL] = "class_JSFunction__raw_feedback_cell__",
	[V8D_JSF_PROTOTYPE] = "class_JSFunction__prototype_or_initial_map__",
	[V8D_T_DEBUG_INFO] = "type_DebugInfo__",
	[V8D_T_TRUSTED_FIXED_ARRAY] = "type_TrustedFixedArray__",
	[V8D_T_PROTECTED_FIXED_ARRAY] = "type_ProtectedFixedArray__",
	[V8D_T_TRUSTED_BYTE_ARRAY] = "type_TrustedByteArray__",
	[V8D_DD_WRAPPED_SFI] = "DeoptimizationDataWrappedSharedFunctionInfoIndex",
	[V8D_SFI_WRAPPER_SHARED] = "class_SharedFunctionInfoWrapper__shared_info__",
};

/* The same value under the name a later V8 gave it (12.4 split the
 * script slot's "script_or_debug_info" into script and debug info). */
static const char *const renamed[V8D_MAX] = {
	[V8D_SFI_SCRIPT] = "class_SharedFunctionInfo__script__",
};

#define VERSION_SYM "_ZN2v88internal7Version"
#define SNAPSHOT_SYM "_ZN2v88internal8Snapshot19DefaultSnapshotBlobEv"
#define SIZES_SYM "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE"
#define GROUP_SYM "_ZN2v88internal12IsolateGroup22default_isolate_group_E"
#define V8_GAP_MIN (64u << 10)

const char *v8file__name(enum v8d d)
{
	return (unsigned)d < V8D_MAX ? names[d] : "?";
}

struct rd {
	Elf *e;
	GElf_Phdr loads[32];
	int nloads;
	struct v8file *f;
	bool fp_function, version[4];
	uint64_t snap, snap_size, sizes, sizes_size, bl_lo, bl_hi;
	unsigned ndbg; /* in the table being read */
	int err;
};

/* Copies n bytes at link-time address va: from the file bytes of the
 * PT_LOAD holding it, zeros past its file size (.bss). */
static int read_va(struct rd *r, uint64_t va, void *out, size_t n)
{
	for (int i = 0; i < r->nloads; i++) {
		const GElf_Phdr *ph = &r->loads[i];
		Elf_Data *d;
		uint64_t off;

		if (va < ph->p_vaddr || va - ph->p_vaddr > ph->p_memsz || ph->p_memsz - (va - ph->p_vaddr) < n)
			continue;
		off = va - ph->p_vaddr;
		memset(out, 0, n);
		if (off >= ph->p_filesz)
			return 0;
		if (n > ph->p_filesz - off)
			n = ph->p_filesz - off;
		d = elf_getdata_rawchunk(r->e, ph->p_offset + off, n, ELF_T_BYTE);
		if (!d || d->d_size != n)
			return -EINVAL;
		memcpy(out, d->d_buf, n);
		return 0;
	}
	return -EINVAL;
}

static void take(struct rd *r, const char *nm, const GElf_Sym *s)
{
	struct v8file *f = r->f;
	int32_t v;

	if (!strncmp(nm, "v8dbg_", 6)) {
		nm += 6;
		r->ndbg++;
		if (!strcmp(nm, "off_fp_function"))
			r->fp_function = true;
		for (int d = 0; d < V8D_MAX; d++) {
			const char *want = names[d];
			size_t k = strlen(want);

			if (v8file__has(f, d))
				continue;
			if ((strncmp(nm, want, k) || (want[k - 1] != '_' && nm[k])) && renamed[d]) {
				want = renamed[d];
				k = strlen(want);
			}
			if (strncmp(nm, want, k) || (want[k - 1] != '_' && nm[k]))
				continue;
			if (s->st_size != 4 || read_va(r, s->st_value, &v, 4)) {
				r->err = -EINVAL;
				return;
			}
			f->dbg[d] = v == V8D_NONE ? V8D_NONE + 1 : v;
			if (d == V8D_CODE_INSTR_START)
				f->code_start_is_ptr = !strcmp(nm + k, "Address");
			return;
		}
	} else if (!strncmp(nm, VERSION_SYM, sizeof(VERSION_SYM) - 1)) {
		static const char *const part[4] = { "6major_E", "6minor_E", "6build_E", "6patch_E" };
		int *dst[4] = { &f->major, &f->minor, &f->build, &f->patch };

		nm += sizeof(VERSION_SYM) - 1;
		for (int i = 0; i < 4; i++)
			if (!strcmp(nm, part[i]) && !r->version[i]) {
				if (s->st_size != 4 || read_va(r, s->st_value, dst[i], 4))
					r->err = -EINVAL;
				r->version[i] = true;
			}
	} else if (!strcmp(nm, SNAPSHOT_SYM) && !r->snap) {
		r->snap = s->st_value;
		r->snap_size = s->st_size;
	} else if (!strcmp(nm, GROUP_SYM) && !f->isolate_group && s->st_size == 8) {
		f->isolate_group = s->st_value;
	} else if (!strcmp(nm, SIZES_SYM) && !r->sizes) {
		r->sizes = s->st_value;
		r->sizes_size = s->st_size;
	} else if (!strncmp(nm, "Builtins_", 9) && GELF_ST_TYPE(s->st_info) == STT_FUNC) {
		if (!r->bl_lo || s->st_value < r->bl_lo)
			r->bl_lo = s->st_value;
		if (s->st_value + s->st_size > r->bl_hi)
			r->bl_hi = s->st_value + s->st_size;
	}
}

static void symbols(struct rd *r, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n;

	if (!d || !sh->sh_entsize)
		return;
	n = d->d_size / sh->sh_entsize;
	for (size_t i = 0; i < n && !r->err; i++) {
		GElf_Sym s;
		const char *nm;

		if (!gelf_getsym(d, i, &s) || !s.st_name || s.st_shndx == SHN_UNDEF)
			continue;
		nm = elf_strptr(r->e, sh->sh_link, s.st_name);
		if (nm && (nm[0] == 'v' || nm[0] == '_' || nm[0] == 'B'))
			take(r, nm, &s);
	}
}

/* The end of the FDE holding pc (its last row's end), or pc if none. */
static uint64_t fde_end(Dwarf_CFI *cfi, uint64_t pc)
{
	for (int i = 0; i < 100000; i++) {
		Dwarf_Frame *fr;
		Dwarf_Addr s, e;

		if (dwarf_cfi_addrframe(cfi, pc, &fr))
			break;
		if (dwarf_frame_info(fr, &s, &e, NULL) < 0 || e <= pc) {
			free(fr);
			break;
		}
		free(fr);
		pc = e;
	}
	return pc;
}

/*
 * The builtins: after DefaultSnapshotBlob, the first two FDE starts (of
 * the next 16) at least V8_GAP_MIN apart whose gap no FDE covers.
 */
static void builtins_by_fdes(struct rd *r)
{
	GElf_Phdr ph = { 0 };
	size_t nph;
	Elf_Data *d;
	const uint8_t *p;
	uint32_t count;
	Dwarf_CFI *cfi;
	long first = -1;

	if (!r->snap || elf_getphdrnum(r->e, &nph))
		return;
	for (size_t i = 0; i < nph; i++)
		if (gelf_getphdr(r->e, i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	if (ph.p_type != PT_GNU_EH_FRAME || ph.p_filesz < 12 ||
	    !(d = elf_getdata_rawchunk(r->e, ph.p_offset, ph.p_filesz, ELF_T_BYTE)) || d->d_size < 12)
		return;
	p = d->d_buf;
	/* GNU ld's encodings: table of (datarel sdata4 start, fde) pairs */
	if (p[0] != 1 || p[2] != 0x03 || p[3] != 0x3b)
		return;
	memcpy(&count, p + 8, 4);
	if (count > (d->d_size - 12) / 8 || !(cfi = dwarf_getcfi_elf(r->e)))
		return;
	for (uint32_t lo = 0, hi = count; lo < hi;) { /* the first start > snap */
		uint32_t mid = lo + (hi - lo) / 2;
		int32_t v;

		memcpy(&v, p + 12 + 8 * mid, 4);
		if (ph.p_vaddr + (int64_t)v > r->snap) {
			first = mid;
			hi = mid;
		} else {
			lo = mid + 1;
		}
	}
	for (long i = first > 0 ? first - 1 : 0; first >= 0 && i + 1 < (long)count && i < first + 16; i++) {
		int32_t a, b;
		uint64_t start, next, end;

		memcpy(&a, p + 12 + 8 * i, 4);
		memcpy(&b, p + 12 + 8 * (i + 1), 4);
		start = ph.p_vaddr + (int64_t)a;
		next = ph.p_vaddr + (int64_t)b;
		end = fde_end(cfi, start);
		if (next > end && next - end >= V8_GAP_MIN) {
			r->f->code_lo = end;
			r->f->code_hi = next;
			break;
		}
	}
	dwarf_cfi_end(cfi);
}

static int read_elf(Elf *e, struct v8file *f)
{
	struct rd r = { .e = e, .f = f };
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t nph;
	const void *id;
	ssize_t nid;

	memset(f, 0, sizeof(*f));
	for (int d = 0; d < V8D_MAX; d++)
		f->dbg[d] = V8D_NONE;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || elf_getphdrnum(e, &nph))
		return -ENOEXEC;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD && r.nloads < 32)
			r.loads[r.nloads++] = ph;
	}
	f->pie = eh.e_type == ET_DYN;
	/* .dynsym first: its values win when both tables hold a symbol */
	for (int pass = 0; pass < 2; pass++) {
		r.ndbg = 0;
		while ((scn = elf_nextscn(e, scn)))
			if (gelf_getshdr(scn, &sh) && sh.sh_type == (pass ? SHT_SYMTAB : SHT_DYNSYM))
				symbols(&r, scn, &sh);
		if (r.ndbg > f->ndbg)
			f->ndbg = r.ndbg;
	}
	if (r.err)
		return r.err;
	if (!r.fp_function)
		return -ENOENT;
	if (!r.version[0] || !r.version[1] || f->major <= 0 || f->major > 99 || f->minor < 0 ||
	    f->minor > 99 || f->build < 0 || f->patch < 0)
		return -EINVAL;
	if (r.sizes && r.sizes_size % 3 == 0 && r.sizes_size / 3 <= V8FILE_MAX_BYTECODES &&
	    r.sizes_size >= 3 * 4) {
		unsigned n = r.sizes_size / 3;
		bool ok = true;

		for (int s = 0; s < 3 && ok; s++)
			ok = !read_va(&r, r.sizes + (uint64_t)s * n, f->bc_sizes[s], n);
		for (int s = 0; s < 3 && ok; s++)
			for (unsigned k = 0; k < n && ok; k++)
				ok = f->bc_sizes[s][k] > 0 && f->bc_sizes[s][k] < 32;
		f->nbytecodes = ok ? n : 0;
	}
	builtins_by_fdes(&r);
	if (!f->code_lo && r.bl_hi > r.bl_lo) {
		f->code_lo = r.bl_lo;
		f->code_hi = r.bl_hi;
	}
	for (int i = 0; i < r.nloads && f->code_lo; i++)
		if (f->code_lo >= r.loads[i].p_vaddr && f->code_hi <= r.loads[i].p_vaddr + r.loads[i].p_filesz &&
		    (r.loads[i].p_flags & PF_X))
			f->code_off = f->code_lo - r.loads[i].p_vaddr + r.loads[i].p_offset;
	if (!f->code_off)
		f->code_lo = f->code_hi = 0; /* not in the file's code */
	nid = dwelf_elf_gnu_build_id(e, &id);
	for (ssize_t i = 0; nid > 0 && nid <= 20 && i < nid; i++)
		snprintf(f->build_id + 2 * i, 3, "%02x", ((const uint8_t *)id)[i]);
	return 0;
}

int v8file__read(int fd, struct v8file *f)
{
	Elf *e;
	int err;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	err = read_elf(e, f);
	elf_end(e);
	return err;
}

int v8file__read_mem(const void *img, size_t size, struct v8file *f)
{
	Elf *e;
	int err;

	elf_version(EV_CURRENT);
	e = elf_memory((char *)img, size);
	if (!e)
		return -ENOEXEC;
	err = read_elf(e, f);
	elf_end(e);
	return err;
}
