/* test_hotspot: a HotSpot JVM's own tables, read by name
 * (sampler/java/jvmfile.c, vmtables.c, hslayout.c, hsvm.c).
 *
 * For Debian's JDK 17 and Temurin 25 (tests/unit/test_hotspot_jvm.h says
 * how they are found): libjvm is recognised by its exported symbols and
 * other files are not; the four tables copied out of a running JVM hold
 * the entries every HotSpot has; the layout taken from them is complete;
 * the process's set-up for BPF agrees with what the kernel and the JVM
 * say independently (the code cache and the interpreter lie in one
 * executable anonymous mapping, as many code heaps as the JVM's
 * -XX:+PrintCodeCache reports... the release string is `java -version`'s).
 * Then forged tables in our own memory: every bound refuses its table,
 * and a real table with a field renamed or moved out of its class is
 * refused naming the field. */
#include <ctype.h>
#include <sys/mman.h>

#include "sampler/java/hslayout.h"
#include "sampler/java/hsname.h"
#include "sampler/java/hsmem.h"
#include "sampler/java/hsvm.h"
#include "sampler/java/hswalk.h"
#include "sampler/java/jvmfile.h"
#include "sampler/java/vmtables.h"
#include "tests/test.h"
#include "tests/unit/test_hotspot_jvm.h"

static void t_detect(const char *dir)
{
	int majors[] = { 17, 25 };
	char path[600];
	struct jvmfile jf;
	int fd, err;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/lib/server/libjvm.so", jdk_home(majors[i]));
		fd = open(path, O_RDONLY);
		CHECK(fd >= 0, "JDK %d: %s exists", majors[i], path);
		if (fd < 0)
			continue;
		err = jvmfile__read(fd, &jf);
		close(fd);
		CHECK(!err && jf.sym[JS_STRUCTS] && jf.sym[JS_LONG_VALUE] && strlen(jf.build_id) == 40,
		      "JDK %d: libjvm recognised, gHotSpotVMStructs at %#" PRIx64 ", build id %s",
		      majors[i], jf.sym[JS_STRUCTS], jf.build_id);
	}
	fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY);
	err = fd >= 0 ? jvmfile__read(fd, &jf) : -errno;
	if (fd >= 0)
		close(fd);
	CHECK(err == -ENOENT, "libc is not a JVM: %d", err);
	snprintf(path, sizeof(path), "%s/notelf", dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0 && write(fd, "hello, world", 12) == 12, "a text file");
	err = jvmfile__read(fd, &jf);
	close(fd);
	CHECK(err == -ENOEXEC, "a text file is no ELF: %d", err);
}

/* The mapping of pid holding addr: its range and permissions. */
static bool mapping_of(pid_t pid, uint64_t addr, uint64_t *s, uint64_t *e, char *perms,
		       char *file, size_t flen)
{
	char path[64], line[1024];
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char p[8], fl[512] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %511s", s, e, p, fl) >= 3 &&
		    addr >= *s && addr < *e) {
			memcpy(perms, p, 5);
			snprintf(file, flen, "%s", fl);
			found = true;
			break;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* What `java -version` says its build is ("build 17.0.15+6-Debian-1deb12u1"). */
static void java_build(int major, char *out, size_t cap)
{
	char cmd[700], line[512];
	FILE *p;

	out[0] = 0;
	snprintf(cmd, sizeof(cmd), "%s/bin/java -version 2>&1", jdk_home(major));
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "(build ");

		if (b && strstr(line, " VM ")) {
			char *e = strchr(b + 7, ',');

			if (e)
				*e = 0;
			snprintf(out, cap, "%s", b + 7);
		}
	}
	if (p)
		pclose(p);
}

static void tables(int major)
{
	char why[256], build[256], perms[8], file[512];
	struct jvm j;
	struct vmtables t;
	struct hslayout l;
	struct hsvm vm;
	struct hsmem m;
	uint64_t s, e, s2, e2;
	int err;

	if (jvm_start(&j, major, NULL, why, sizeof(why))) {
		CHECK(0, "%s", why);
		return;
	}
	m = (struct hsmem){ hsmem__pid_read, &j.pid };
	err = vmtables__read(&m, &j.jf, j.bias, &t);
	CHECK(!err && t.nfields > 300 && t.ntypes > 200 && t.nints > 100 && t.nlongs > 20,
	      "JDK %d: tables copied: %zu fields, %zu types, %zu int and %zu long constants (%d)",
	      major, t.nfields, t.ntypes, t.nints, t.nlongs, err);
	if (!err) {
		const struct vmt_field *f = vmtables__field(&t, "CodeBlob", "_name");
		const struct vmt_type *ty = vmtables__type(&t, "CodeBlob");
		int64_t v = 0;

		CHECK(f && !f->is_static && !strcmp(f->type_string, "const char*") && ty &&
			      f->offset + 8 <= ty->size,
		      "JDK %d: CodeBlob::_name is a const char* at %" PRIu64 " of %" PRIu64 " bytes",
		      major, f ? f->offset : 0, ty ? ty->size : 0);
		CHECK(!vmtables__const(&t, "oopSize", &v) && v == 8, "JDK %d: oopSize is 8", major);
		CHECK(!vmtables__const(&t, "frame::interpreter_frame_sender_sp_offset", &v) && v == -1,
		      "JDK %d: a negative int constant reads negative", major);
		err = hslayout__build(&t, &l, why, sizeof(why));
		CHECK(!err, "JDK %d: every field we need is there (%s)", major, why);
		CHECK(l.cb_code_begin.ptr == (major < 23) && (l.cb_kind.off >= 0) == (major >= 23) &&
			      (l.nm_immutable.off >= 0) == (major >= 23),
		      "JDK %d: code begin is %s, kind %s, immutable data %s", major,
		      l.cb_code_begin.ptr ? "a pointer" : "an offset", l.cb_kind.off >= 0 ? "yes" : "no",
		      l.nm_immutable.off >= 0 ? "yes" : "no");
		vmtables__free(&t);
	}
	err = hsvm__open(&m, &j.jf, j.bias, &vm, why, sizeof(why));
	CHECK(!err && vm.major == major, "JDK %d: set up: %s (%s)", major, vm.release, why);
	java_build(major, build, sizeof(build));
	CHECK(build[0] && !strcmp(build, vm.release), "JDK %d: release '%s' is java -version's '%s'",
	      major, vm.release, build);
	CHECK(vm.u5x == (major >= 20), "JDK %d: UNSIGNED5 excludes %u bytes", major, vm.u5x);
	if (err) {
		jvm_stop(&j);
		return;
	}
	/* The code cache: one executable anonymous mapping holds the start,
	 * and all of it is one reserved range (the kernel's view). */
	CHECK(mapping_of(j.pid, vm.bpf.code_lo, &s, &e, perms, file, sizeof(file)) &&
		      perms[2] == 'x' && !file[0],
	      "JDK %d: code cache [%#llx, %#llx) starts in an anonymous executable mapping (%s)",
	      major, (unsigned long long)vm.bpf.code_lo, (unsigned long long)vm.bpf.code_hi, perms);
	CHECK(mapping_of(j.pid, vm.bpf.interp_lo, &s, &e, perms, file, sizeof(file)) &&
		      perms[2] == 'x' && !file[0] && vm.bpf.interp_hi <= e &&
		      mapping_of(j.pid, vm.bpf.call_stub_ra, &s2, &e2, perms, file, sizeof(file)) &&
		      perms[2] == 'x',
	      "JDK %d: interpreter [%#llx, %#llx) and call stub %#llx in executable memory", major,
	      (unsigned long long)vm.bpf.interp_lo, (unsigned long long)vm.bpf.interp_hi,
	      (unsigned long long)vm.bpf.call_stub_ra);
	CHECK(vm.bpf.nheaps == 3 && vm.bpf.seg_shift == 7,
	      "JDK %d: 3 code heaps (segmented, the default), 128-byte segments: %u, %u", major,
	      vm.bpf.nheaps, 1u << vm.bpf.seg_shift);
	for (uint32_t i = 0; i < vm.bpf.nheaps; i++) {
		const struct hs_heap *h = &vm.bpf.heaps[i];

		CHECK(mapping_of(j.pid, h->segmap, &s, &e, perms, file, sizeof(file)) &&
			      perms[0] == 'r',
		      "JDK %d: heap %u [%#llx, %#llx): its segment map %#llx is readable", major, i,
		      (unsigned long long)h->lo, (unsigned long long)h->hi,
		      (unsigned long long)h->segmap);
	}
	CHECK(vm.bpf.blob_read <= HS_BLOB_READ && vm.bpf.blob_read >= 64,
	      "JDK %d: a blob read is %u bytes", major, vm.bpf.blob_read);
	/* A JDK we do not know: refused, not guessed. */
	snprintf(build, sizeof(build), "%d", major);
	setenv("PROFFS_HS_WITHHOLD", build, 1);
	err = hsvm__open(&m, &j.jf, j.bias, &vm, why, sizeof(why));
	unsetenv("PROFFS_HS_WITHHOLD");
	CHECK(err == -EOPNOTSUPP, "JDK %d withheld: unsupported (%s)", major, why);
	jvm_stop(&j);
}

static void t_tables17(const char *dir)
{
	(void)dir;
	tables(17);
}

static void t_tables25(const char *dir)
{
	(void)dir;
	tables(25);
}


/* ---- forged tables in our own memory ---- */

/* A memory image at a fixed base: what an hsmem over it reads. */
struct img {
	uint64_t base;
	size_t used, cap;
	uint8_t *b;
};

static int img_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	const struct img *im = ctx;
	size_t end = (im->used + 4095) & ~(size_t)4095; /* mapped by pages, as memory is */

	if (addr < im->base || addr - im->base > end || n > end - (addr - im->base))
		return -EFAULT;
	memcpy(buf, im->b + (addr - im->base), n);
	return 0;
}

static uint64_t img_alloc(struct img *im, size_t n)
{
	uint64_t at = im->base + im->used;

	n = (n + 7) & ~(size_t)7;
	if (im->used + n > im->cap)
		abort();
	im->used += n;
	return at;
}

static uint8_t *img_at(struct img *im, uint64_t addr)
{
	return im->b + (addr - im->base);
}

static uint64_t img_str(struct img *im, const char *s)
{
	uint64_t at;

	if (!*s)
		return 0; /* an empty type string is a NULL one */
	at = img_alloc(im, strlen(s) + 1);
	memcpy(img_at(im, at), s, strlen(s) + 1);
	return at;
}

static void put64(struct img *im, uint64_t addr, uint64_t v)
{
	memcpy(img_at(im, addr), &v, 8);
}

/* The symbols' words first (jvmfile's order, bias 0), then t laid out as
 * HotSpot lays its tables out. jf gets the symbols' addresses. */
static void img_tables(struct img *im, const struct vmtables *t, struct jvmfile *jf)
{
	uint64_t syms = img_alloc(im, 8 * JS_N), f, ty, in, lo;

	for (int k = 0; k < JS_N; k++)
		jf->sym[k] = syms + 8 * (uint64_t)k;
	f = img_alloc(im, 48 * (t->nfields + 1));
	ty = img_alloc(im, 48 * (t->ntypes + 1));
	in = img_alloc(im, 16 * (t->nints + 1));
	lo = img_alloc(im, 16 * (t->nlongs + 1));
	memset(img_at(im, f), 0, 48 * (t->nfields + 1));
	memset(img_at(im, ty), 0, 48 * (t->ntypes + 1));
	memset(img_at(im, in), 0, 16 * (t->nints + 1));
	memset(img_at(im, lo), 0, 16 * (t->nlongs + 1));
	for (size_t i = 0; i < t->nfields; i++) {
		uint64_t e = f + 48 * i;
		int32_t st = t->fields[i].is_static;

		put64(im, e, img_str(im, t->fields[i].type));
		put64(im, e + 8, img_str(im, t->fields[i].name));
		put64(im, e + 16, img_str(im, t->fields[i].type_string));
		memcpy(img_at(im, e + 24), &st, 4);
		put64(im, e + 32, t->fields[i].offset);
		put64(im, e + 40, t->fields[i].address);
	}
	for (size_t i = 0; i < t->ntypes; i++) {
		put64(im, ty + 48 * i, img_str(im, t->types[i].name));
		put64(im, ty + 48 * i + 8, img_str(im, t->types[i].super));
		put64(im, ty + 48 * i + 40, t->types[i].size);
	}
	for (size_t i = 0; i < t->nints; i++) {
		int32_t v = (int32_t)t->ints[i].value;

		put64(im, in + 16 * i, img_str(im, t->ints[i].name));
		memcpy(img_at(im, in + 16 * i + 8), &v, 4);
	}
	for (size_t i = 0; i < t->nlongs; i++) {
		put64(im, lo + 16 * i, img_str(im, t->longs[i].name));
		put64(im, lo + 16 * i + 8, (uint64_t)t->longs[i].value);
	}
	/* table, stride, member offsets */
	uint64_t w[JS_N] = {
		[JS_STRUCTS] = f, [JS_STRUCT_STRIDE] = 48, [JS_STRUCT_TYPE] = 0, [JS_STRUCT_FIELD] = 8,
		[JS_STRUCT_TYPESTR] = 16, [JS_STRUCT_STATIC] = 24, [JS_STRUCT_OFFSET] = 32,
		[JS_STRUCT_ADDRESS] = 40, [JS_TYPES] = ty, [JS_TYPE_STRIDE] = 48, [JS_TYPE_NAME] = 0,
		[JS_TYPE_SUPER] = 8, [JS_TYPE_SIZE] = 40, [JS_INTS] = in, [JS_INT_STRIDE] = 16,
		[JS_INT_NAME] = 0, [JS_INT_VALUE] = 8, [JS_LONGS] = lo, [JS_LONG_STRIDE] = 16,
		[JS_LONG_NAME] = 0, [JS_LONG_VALUE] = 8,
	};
	memcpy(img_at(im, syms), w, sizeof(w));
}

/* The VMStructEntry of type.name in the image, or 0. */
static uint64_t img_field(struct img *im, const struct jvmfile *jf, const char *type,
			  const char *name)
{
	uint64_t f, e, tp, np;

	memcpy(&f, img_at(im, jf->sym[JS_STRUCTS]), 8);
	for (e = f;; e += 48) {
		memcpy(&tp, img_at(im, e), 8);
		memcpy(&np, img_at(im, e + 8), 8);
		if (!tp)
			return 0;
		if (!strcmp((char *)img_at(im, tp), type) && !strcmp((char *)img_at(im, np), name))
			return e;
	}
}

static int build(struct img *im, const struct jvmfile *jf, char *why, size_t wl, int *terr)
{
	struct hsmem m = { img_read, im };
	struct vmtables t;
	struct hslayout l;
	int err;

	why[0] = 0;
	*terr = vmtables__read(&m, jf, 0, &t);
	if (*terr)
		return *terr;
	err = hslayout__build(&t, &l, why, wl);
	vmtables__free(&t);
	return err;
}

/* Copies the tables of a JDK 17 started for it into t, and stops it
 * (checked: a JVM that does not start fails with its reason). 0, or
 * nonzero with nothing in t. */
static int jdk17_tables(struct vmtables *t)
{
	char why[256];
	struct hsmem m;
	struct jvm j;
	int err;

	if (jvm_start(&j, 17, NULL, why, sizeof(why))) {
		CHECK(0, "%s", why);
		return -1;
	}
	m = (struct hsmem){ hsmem__pid_read, &j.pid };
	err = vmtables__read(&m, &j.jf, j.bias, t);
	jvm_stop(&j);
	CHECK(!err, "JDK 17's tables copied");
	return err;
}

static void t_forged(const char *dir)
{
	char why[256];
	struct img im = { .base = 0x10000000, .cap = 4u << 20 };
	struct jvmfile jf;
	struct vmtables t, t2;
	struct hsmem mi = { img_read, &im };
	uint8_t *save;
	uint64_t e, s;
	size_t used0;
	int err, terr;

	(void)dir;
	if (jdk17_tables(&t))
		return;
	im.b = calloc(1, im.cap);
	save = malloc(im.cap);
	img_tables(&im, &t, &jf);
	err = vmtables__read(&mi, &jf, 0, &t2);
	CHECK(!err && t2.nfields == t.nfields && t2.ntypes == t.ntypes && t2.nints == t.nints &&
		      t2.nlongs == t.nlongs &&
		      !strcmp(t2.fields[t.nfields - 1].name, t.fields[t.nfields - 1].name),
	      "the tables laid out again in our memory read back the same (%d)", err);
	if (!err)
		vmtables__free(&t2);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(!err, "... and give the layout (%s)", why);
	memcpy(save, im.b, im.used);

#define RESTORE() memcpy(im.b, save, im.used)
	put64(&im, jf.sym[JS_STRUCT_STRIDE], 4096);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(terr == -EPROTO, "an entry of 4096 bytes refused: %d", terr);
	RESTORE();
	put64(&im, jf.sym[JS_STRUCT_ADDRESS], 44);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(terr == -EPROTO, "a member past the entry's end refused: %d", terr);
	RESTORE();
	put64(&im, jf.sym[JS_TYPES], 0);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(terr == -EAGAIN, "a table not set up yet: look again (%d)", terr);
	RESTORE();
	/* a name 600 bytes long, no NUL in reach */
	used0 = im.used;
	e = img_field(&im, &jf, "CodeBlob", "_name");
	s = img_alloc(&im, 700);
	memset(img_at(&im, s), 'A', 700);
	put64(&im, e + 8, s);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(terr == -EPROTO, "a name without its NUL refused: %d", terr);
	/* ... or running off mapped memory */
	im.used = (im.used + 4095) & ~(size_t)4095;
	put64(&im, e + 8, im.base + im.used - 3);
	memset(img_at(&im, im.base + im.used - 3), 'B', 3);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(terr == -EFAULT, "a name running off the memory: unreadable (%d)", terr);
	im.used = used0;
	RESTORE();
	/* no terminator: the table runs off the memory */
	used0 = im.used;
	{
		uint64_t f;

		memcpy(&f, img_at(&im, jf.sym[JS_STRUCTS]), 8);
		put64(&im, jf.sym[JS_STRUCTS], im.base + im.used - 48 * 3);
		memset(img_at(&im, im.base + im.used - 48 * 3), 0x11, 48 * 3);
		im.used = (im.used + 4095) & ~(size_t)4095; /* the rest of its page too */
		memset(img_at(&im, im.base + used0), 0x11, im.used - used0);
		err = build(&im, &jf, why, sizeof(why), &terr);
		CHECK(terr == -EFAULT || terr == -EPROTO, "a table without its end refused: %d", terr);
		memset(img_at(&im, im.base + used0), 0, im.used - used0);
		im.used = used0;
		RESTORE();
	}
	/* the layout: a field renamed, moved out of its class, retyped */
	e = img_field(&im, &jf, "CodeBlob", "_frame_size");
	put64(&im, e + 8, img_str(&im, "_frame_sizeX"));
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(err == -EPROTO && strstr(why, "CodeBlob::_frame_size"),
	      "a JVM without CodeBlob::_frame_size refused: '%s'", why);
	RESTORE();
	put64(&im, e + 32, 4000);
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(err == -EPROTO && strstr(why, "outside"), "a field past its class's end refused: '%s'",
	      why);
	RESTORE();
	put64(&im, e + 16, img_str(&im, "Method*"));
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(err == -EPROTO && strstr(why, "type"), "a frame size that is a pointer refused: '%s'",
	      why);
	RESTORE();
	/* both nmethod shapes gone: no scopes offset */
	e = img_field(&im, &jf, "nmethod", "_dependencies_offset");
	put64(&im, e + 8, img_str(&im, "_gone"));
	err = build(&im, &jf, why, sizeof(why), &terr);
	CHECK(err == -EPROTO && strstr(why, "shape"), "an nmethod of no known shape refused: '%s'",
	      why);
	RESTORE();
	/* interpreter slots other than frame_x86.hpp's */
	{
		uint64_t in, np;
		int32_t v = -2;

		memcpy(&in, img_at(&im, jf.sym[JS_INTS]), 8);
		for (uint64_t c = in;; c += 16) {
			memcpy(&np, img_at(&im, c), 8);
			if (!np)
				break;
			if (!strcmp((char *)img_at(&im, np), "frame::interpreter_frame_sender_sp_offset"))
				memcpy(img_at(&im, c + 8), &v, 4);
		}
		err = build(&im, &jf, why, sizeof(why), &terr);
		CHECK(err == -EPROTO && strstr(why, "interpreter frame"),
		      "interpreter frame slots not frame_x86.hpp's refused: '%s'", why);
		RESTORE();
	}
#undef RESTORE
	/* A seed for tests/fuzz/fuzz_hsjvm.c, when asked. */
	if (getenv("PROFFS_HS_SEED")) {
		FILE *f = fopen(getenv("PROFFS_HS_SEED"), "w");

		uint64_t ctl[4] = { 0 }; /* no records: fuzz_hsjvm's input format */

		if (f) {
			fwrite(ctl, 1, sizeof(ctl), f);
			fwrite(im.b, 1, im.used, f);
			fclose(f);
		}
	}
	vmtables__free(&t);
	free(save);
	free(im.b);
}

/* ---- forged objects: naming ---- */

static void putf(struct img *im, uint64_t obj, const struct hsf *f, uint64_t v)
{
	memcpy(img_at(im, obj + (uint64_t)f->off), &v, f->size);
}

static uint64_t img_symbol(struct img *im, const struct hslayout *l, const char *txt)
{
	size_t n = strlen(txt);
	uint64_t s = img_alloc(im, (size_t)l->sym_body.off + n + 1);

	putf(im, s, &l->sym_length, n);
	memcpy(img_at(im, s + (uint64_t)l->sym_body.off), txt, n);
	return s;
}

/* One Method of class cls (name meth, source src), its line table tab. */
static uint64_t img_method(struct img *im, const struct hslayout *l, const char *cls,
			   const char *meth, const char *src, const uint8_t *tab, size_t tablen,
			   uint16_t code_size, uint64_t *cm_out)
{
	uint64_t k = img_alloc(im, 256), tags = img_alloc(im, 16), cp = img_alloc(im, l->cp_sizeof + 32);
	uint64_t cm = img_alloc(im, l->cm_sizeof + code_size + tablen), m = img_alloc(im, 96);
	int32_t four = 4;

	memset(img_at(im, k), 0, 256);
	putf(im, k, &l->klass_name, img_symbol(im, l, cls));
	memcpy(img_at(im, tags), &four, 4);
	memset(img_at(im, tags + (uint64_t)l->u1_data.off), (int)l->utf8_tag, 4);
	memset(img_at(im, cp), 0, l->cp_sizeof + 32);
	putf(im, cp, &l->cp_holder, k);
	putf(im, cp, &l->cp_tags, tags);
	putf(im, cp, &l->cp_length, 4);
	putf(im, cp, &l->cp_source_file, 3);
	put64(im, cp + l->cp_sizeof + 8, img_symbol(im, l, meth));
	put64(im, cp + l->cp_sizeof + 16, img_symbol(im, l, "()V"));
	put64(im, cp + l->cp_sizeof + 24, img_symbol(im, l, src));
	memset(img_at(im, cm), 0, l->cm_sizeof + code_size + tablen);
	putf(im, cm, &l->cm_constants, cp);
	putf(im, cm, &l->cm_flags, (uint64_t)l->cm_has_linenumbers);
	putf(im, cm, &l->cm_code_size, code_size);
	putf(im, cm, &l->cm_name_index, 1);
	putf(im, cm, &l->cm_signature_index, 2);
	memcpy(img_at(im, cm + l->cm_sizeof + code_size), tab, tablen);
	memset(img_at(im, m), 0, 96);
	putf(im, m, &l->m_const_method, cm);
	*cm_out = cm;
	return m;
}

static void t_forged_names(const char *dir)
{
	char why[256];
	struct img im = { .base = 0x10000000, .cap = 4u << 20 };
	struct hsmem mi = { img_read, &im };
	struct hsjframe fr[8];
	struct vmtables t;
	struct hsnames *c;
	struct hsvm vm;
	struct jvmfile jf;
	uint64_t m1, m2, cm1, cm2, nm, str, data, pcs, meta, code;
	/* lines: (bci 0, line 10), (4, 11), (9, 13) */
	const uint8_t tab[] = { 0xff, 0, 20, (4 << 3) | 1, (5 << 3) | 2, 0 };
	/* scopes: at 1, outer: no sender, method 1 (m1), bci 4 (+1);
	 * at 4, inner: sender 1, method 2 (m2), bci 9 */
	const uint8_t scopes[] = { 0xff, 0, 1, 5, 1, 2, 10, 0 };
	int n, err;

	(void)dir;
	if (jdk17_tables(&t))
		return;
	im.b = calloc(1, im.cap);
	img_tables(&im, &t, &jf);
	memset(&vm, 0, sizeof(vm));
	err = hslayout__build(&t, &vm.l, why, sizeof(why));
	vmtables__free(&t);
	if (err || !vm.l.nm_scopes_data.ptr) {
		CHECK(0, "JDK 17's layout (%s)", why);
		free(im.b);
		return;
	}
	/* Two methods, and an nmethod of the first with the second inlined. */
	m1 = img_method(&im, &vm.l, "org/example/Outer", "run", "Outer.java", tab, sizeof(tab), 20,
			&cm1);
	m2 = img_method(&im, &vm.l, "org/example/Inner$1", "call", "Inner.java", tab, sizeof(tab), 20,
			&cm2);
	str = img_alloc(&im, 8);
	memcpy(img_at(&im, str), "nmethod", 8);
	nm = img_alloc(&im, vm.l.nm_sizeof + 256);
	/* JDK 17's order: code, metadata, scopes data, PcDescs, dependencies */
	code = nm + vm.l.nm_sizeof;
	meta = code + 64;
	data = meta + 16;
	pcs = data + 16;
	putf(&im, nm, &vm.l.cb_name, str);
	putf(&im, nm, &vm.l.cb_code_begin, code);
	putf(&im, nm, &vm.l.cb_code_end, code + 64);
	putf(&im, nm, &vm.l.nm_compile_id, 777);
	putf(&im, nm, &vm.l.nm_method, m1);
	putf(&im, nm, &vm.l.nm_scopes_data, data);
	putf(&im, nm, &vm.l.nm_scopes_pcs, pcs - nm);
	putf(&im, nm, &vm.l.nm_dependencies, pcs + 4 * 16 - nm);
	putf(&im, nm, &vm.l.nm_metadata, meta - nm);
	memcpy(img_at(&im, data), scopes, sizeof(scopes));
	{
		int32_t p[4][4] = { { -1, 0 }, { 16, 4 }, { 30, 0 }, { INT32_MAX, 0 } };

		memcpy(img_at(&im, pcs), p, sizeof(p));
	}
	put64(&im, meta, m1);
	put64(&im, meta + 8, m2);
	c = hsnames__new(0);

	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(m1, HS_K_INTERP, 0, 0),
			    hs_rec1(4, (uint32_t)(cm1 >> 3)), fr, 8);
	CHECK(n == 1 && !strcmp(fr[0].name, "org.example.Outer.run (Outer.java)") &&
		      !strcmp(fr[0].file, "org/example/Outer.java") && fr[0].line == 11,
	      "an interpreted frame: '%s' %s:%d", n > 0 ? fr[0].name : "", n > 0 ? fr[0].file : "",
	      n > 0 ? fr[0].line : n);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(m1, HS_K_INTERP, 0, 0),
			    hs_rec1(4, (uint32_t)(cm1 >> 3) + 1), fr, 8);
	CHECK(n == -ESTALE, "... a ConstMethod of another stamp: freed (%d)", n);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, 0, 1), hs_rec1(16, 777),
			    fr, 8);
	CHECK(n == 2 && !strcmp(fr[0].sysname, "org.example.Inner$1.call") && fr[0].line == 13 &&
		      fr[0].inlined && !strcmp(fr[1].sysname, "org.example.Outer.run") &&
		      fr[1].line == 11 && !fr[1].inlined,
	      "a compiled frame at a return address: its inlined method, then its own (%d)", n);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, HS_R_EXACT, 0),
			    hs_rec1(20, 777), fr, 8);
	CHECK(n == 1 && !strcmp(fr[0].sysname, "org.example.Outer.run") && fr[0].line == 0,
	      "the leaf past the last scoped PcDesc: the next PcDesc has no scope: the method, no "
	      "line (%d)", n);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, HS_R_EXACT, 0),
			    hs_rec1(10, 777), fr, 8);
	CHECK(n == 2 && fr[0].line == 13, "the leaf before a PcDesc: that PcDesc's scopes (%d)", n);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, 0, 0), hs_rec1(16, 778),
			    fr, 8);
	CHECK(n == -ESTALE, "another compile id at that address: code freed (%d)", n);
	/* a scope whose sender is itself: no loop */
	hsnames__forget(c, 42);
	img_at(&im, data)[4] = 4;
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, 0, 0), hs_rec1(16, 777),
			    fr, 8);
	CHECK(n == 1, "a scope that is its own sender: one frame, no loop (%d)", n);
	img_at(&im, data)[4] = 1;
	/* a metadata index past the array */
	hsnames__forget(c, 42);
	img_at(&im, data)[5] = 9;
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, 0, 0), hs_rec1(16, 777),
			    fr, 8);
	CHECK(n == -EBADMSG, "a method index past the metadata refused (%d)", n);
	img_at(&im, data)[5] = 2;
	/* a constant pool index past its length */
	hsnames__forget(c, 42);
	putf(&im, cm1, &vm.l.cm_name_index, 9);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(m1, HS_K_INTERP, 0, 0),
			    hs_rec1(4, (uint32_t)(cm1 >> 3)), fr, 8);
	CHECK(n == -EBADMSG, "a name index past the pool refused (%d)", n);
	putf(&im, cm1, &vm.l.cm_name_index, 1);
	/* not an nmethod any more */
	memcpy(img_at(&im, str), "vtable ", 8);
	n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(nm, HS_K_COMPILED, 0, 0), hs_rec1(16, 777),
			    fr, 8);
	CHECK(n == -ESTALE, "another kind of blob at that address: code freed (%d)", n);
	memcpy(img_at(&im, str), "nmethod", 8);
	/* A stub blob whose stubs include the call stub: each frame is
	 * named by its own pc, whichever of the blob's stubs came first
	 * (CI: a Temurin run named every call_stub frame after the blob). */
	{
		uint64_t sname = img_alloc(&im, 24), sb = img_alloc(&im, vm.l.nm_sizeof + 256);
		uint64_t scode = sb + vm.l.nm_sizeof;
		const uint32_t offs[3] = { 0x10, 0x40, 0x10 };
		const char *want[3] = { "StubRoutines (1)", "call_stub", "StubRoutines (1)" };

		memcpy(img_at(&im, sname), "StubRoutines (1)", 17);
		putf(&im, sb, &vm.l.cb_name, sname);
		putf(&im, sb, &vm.l.cb_code_begin, scode);
		putf(&im, sb, &vm.l.cb_code_end, scode + 256);
		vm.bpf.call_stub_ra = scode + 0x40;
		for (int i = 0; i < 3; i++) {
			n = hsnames__frames(c, 42, &mi, &vm, hs_rec0(sb, HS_K_STUB, 0, 0),
					    hs_rec1(offs[i], (uint32_t)sname), fr, 8);
			CHECK(n == 1 && !strcmp(fr[0].name, want[i]), "stub frame at +%#x: %s (want %s)",
			      offs[i], n == 1 ? fr[0].name : "none", want[i]);
		}
	}
	hsnames__free(c);
	if (getenv("PROFFS_HS_SEED_NAMES")) {
		FILE *f = fopen(getenv("PROFFS_HS_SEED_NAMES"), "w");
		uint64_t ctl[4] = { hs_rec0(m1, HS_K_INTERP, 0, 0), hs_rec1(4, (uint32_t)(cm1 >> 3)),
				    hs_rec0(nm, HS_K_COMPILED, 0, 1), hs_rec1(16, 777) };

		if (f) {
			fwrite(ctl, 1, sizeof(ctl), f);
			fwrite(im.b, 1, im.used, f);
			fclose(f);
		}
	}
	free(im.b);
}

/* ---- the leaf's frame from its code ---- */

/* code: bytes of a prologue or epilogue; each pc (an instruction start)
 * and the state the twin must see there. */
static void leaf_case(const char *what, const uint8_t *code, size_t n, const int *at,
		      const int *want, int k, bool prologue)
{
	uint8_t buf[96] = { 0 }, win[16];

	if (n > sizeof(buf) - 32) {
		CHECK(0, "%s: %zu bytes of code, more than the window's buffer", what, n);
		return;
	}
	memcpy(buf + 16, code, n);
	for (int i = 0; i < k; i++) {
		int got;

		memcpy(win, buf + 16 + at[i] - 8, 16);
		got = hswalk__leaf_state(win, prologue);
		CHECK(got == want[i], "%s, pc at +%d: state %d (want %d)", what, at[i], got, want[i]);
	}
}

static void t_leaf(const char *dir)
{
	/* C2 with a stack bang (JDK 17): mov [rsp-0x14000],eax; push rbp;
	 * sub rsp,0x30; then the body */
	const uint8_t c2[] = { 0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x83, 0xec,
			       0x30, 0x48, 0x8b, 0xca };
	const int c2_at[] = { 0, 7, 8, 12 };
	const int c2_want[] = { HSWALK_NOTHING, HSWALK_NOTHING, HSWALK_BP_PUSHED, HSWALK_FULL };
	/* C1 (seen live on JDK 17): bang; push rbp; mov rbp,rsp (48 8b ec);
	 * sub rsp,0x40 */
	const uint8_t c1[] = { 0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x8b, 0xec,
			       0x48, 0x83, 0xec, 0x40 };
	const int c1_at[] = { 0, 7, 8, 11 };
	const int c1_want[] = { HSWALK_NOTHING, HSWALK_NOTHING, HSWALK_BP_PUSHED, HSWALK_BP_PUSHED };
	/* C2 without a bang: sub rsp,0x28; mov [rsp+0x20],rbp */
	const uint8_t nob[] = { 0x48, 0x83, 0xec, 0x28, 0x48, 0x89, 0x6c, 0x24, 0x20, 0x90 };
	const int nob_at[] = { 0, 4, 9 };
	const int nob_want[] = { HSWALK_NOTHING, HSWALK_FULL_BP, HSWALK_FULL };
	/* An epilogue: add rsp,0x30; pop rbp; cmp rsp,[r15+0x348];
	 * ja +x; ret */
	const uint8_t epi[] = { 0x48, 0x83, 0xc4, 0x30, 0x5d, 0x49, 0x3b, 0xa7, 0x48, 0x03, 0x00,
				0x00, 0x0f, 0x87, 0x10, 0x00, 0x00, 0x00, 0xc3 };
	const int epi_at[] = { 0, 4, 5, 12, 18 };
	const int epi_want[] = { HSWALK_FULL, HSWALK_BP_PUSHED, HSWALK_NOTHING, HSWALK_NOTHING,
				 HSWALK_NOTHING };
	/* A native wrapper's: leave; ret */
	const uint8_t nat[] = { 0xc9, 0xc3 };
	const int nat_at[] = { 0, 1 };
	const int nat_want[] = { HSWALK_RBP_FRAME, HSWALK_NOTHING };
	/* A native wrapper's on JDK 17, as a stop of k-jni found it: leave;
	 * cmp qword [r15+8],0 (an exception pending?); jne +1; ret; jmp */
	const uint8_t nex[] = { 0xc9, 0x49, 0x81, 0x7f, 0x08, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x85,
				0x01, 0x00, 0x00, 0x00, 0xc3, 0xe9, 0x29, 0xd6, 0xa6, 0xff };
	const int nex_at[] = { 0, 1, 9, 15 };
	const int nex_want[] = { HSWALK_RBP_FRAME, HSWALK_NOTHING, HSWALK_NOTHING, HSWALK_NOTHING };
	/* The same compare in a body (no leave before it), and a jne after
	 * another compare: the frame is whole */
	const uint8_t body[] = { 0x90, 0x49, 0x81, 0x7f, 0x08, 0x00, 0x00, 0x00, 0x00, 0x48, 0x39,
				 0xc8, 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00 };
	const int body_at[] = { 1, 12 };
	const int body_want[] = { HSWALK_FULL, HSWALK_FULL };
	/* A native wrapper's on Temurin 25 (-XX:+PrintNativeNMethods, the
	 * wrapper of getThreadTotalCpuTime0): leave; test byte [r15+0x28],1
	 * (the return poll); je +0x16; the poll's slow path (mov r10,imm64;
	 * mov [r15+0x538],r10; jmp SafepointBlob); cmp qword [r15+8],0
	 * (imm8); jne +1; ret; jmp forward_exception */
	const uint8_t n25[] = { 0xc9, 0x41, 0xf6, 0x47, 0x28, 0x01, 0x74, 0x16, 0x49, 0xba, 0x8f, 0xeb,
				0xec, 0x8f, 0x95, 0x7f, 0x00, 0x00, 0x4d, 0x89, 0x97, 0x38, 0x05, 0x00,
				0x00, 0xe9, 0xb4, 0x9c, 0xab, 0xff, 0x49, 0x83, 0x7f, 0x08, 0x00, 0x0f,
				0x85, 0x01, 0x00, 0x00, 0x00, 0xc3, 0xe9, 0x23, 0xa3, 0xa6, 0xff };
	const int n25_at[] = { 0, 1, 6, 30, 35, 41 };
	const int n25_want[] = { HSWALK_RBP_FRAME, HSWALK_NOTHING, HSWALK_NOTHING, HSWALK_NOTHING,
				 HSWALK_NOTHING, HSWALK_NOTHING };
	/* The poll's test without a leave before it, and the imm8 compare
	 * not followed by jne +1: the frame is whole */
	const uint8_t b25[] = { 0x90, 0x41, 0xf6, 0x47, 0x28, 0x01, 0x49, 0x83, 0x7f, 0x08, 0x00, 0x0f,
				0x85, 0x10, 0x00, 0x00, 0x00 };
	const int b25_at[] = { 1, 6, 11 };
	const int b25_want[] = { HSWALK_FULL, HSWALK_FULL, HSWALK_FULL };
	/* A ja elsewhere in a body: no poll before it */
	const uint8_t ja[] = { 0x48, 0x39, 0xc8, 0x0f, 0x87, 0x10, 0x00, 0x00, 0x00 };
	const int ja_at[] = { 3 };
	const int ja_want[] = { HSWALK_FULL };

	(void)dir;
	leaf_case("C2 prologue", c2, sizeof(c2), c2_at, c2_want, 4, true);
	leaf_case("C1 prologue", c1, sizeof(c1), c1_at, c1_want, 4, true);
	leaf_case("C2 prologue without a bang", nob, sizeof(nob), nob_at, nob_want, 3, true);
	leaf_case("epilogue", epi, sizeof(epi), epi_at, epi_want, 5, false);
	leaf_case("native wrapper epilogue", nat, sizeof(nat), nat_at, nat_want, 2, false);
	leaf_case("a ja in a body", ja, sizeof(ja), ja_at, ja_want, 1, false);
	leaf_case("native wrapper epilogue with the exception check", nex, sizeof(nex), nex_at, nex_want, 4,
		  false);
	leaf_case("the exception check's compare in a body", body, sizeof(body), body_at, body_want, 2, false);
	leaf_case("native wrapper epilogue, JDK 25", n25, sizeof(n25), n25_at, n25_want, 6, false);
	leaf_case("JDK 25's poll and compare in a body", b25, sizeof(b25), b25_at, b25_want, 3, false);
}

static const struct test_scenario scenarios[] = {
	{ "detect", t_detect },
	{ "tables17", t_tables17 },
	{ "tables25", t_tables25 },
	{ "forged", t_forged },
	{ "forged_names", t_forged_names },
	{ "leaf", t_leaf },
};

TEST_SCENARIOS_MAIN(scenarios)
