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
#include "sampler/java/hsmem.h"
#include "sampler/java/hsvm.h"
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

static const struct test_scenario scenarios[] = {
	{ "detect", t_detect },
	{ "tables17", t_tables17 },
	{ "tables25", t_tables25 },
};

int main(int argc, char **argv)
{
	return test_scenarios_main(scenarios, sizeof(scenarios) / sizeof(scenarios[0]), argc, argv);
}
