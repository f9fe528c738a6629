/* test_pyinterp: CPython recognised in its ELF files (sampler/python/
 * interp.c) and our per-version layout rows checked against each file's
 * own PyCode_Type member table and, for 3.13, its _Py_DebugOffsets
 * (sampler/python/layout.c). Files: Debian's /usr/bin/python3.11 (static
 * interpreter, non-PIE, stripped) and pyenv's shared-library builds
 * (lib/libpython3.X.so.1.0) of 3.10.13, 3.11.7, 3.12.1, 3.13.0; a file
 * not installed fails the test. A copy of libpython3.12 with
 * tp_members zeroed reads the same table through its relocation.
 * Non-Python files are refused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler/python/interp.h"
#include "sampler/python/layout.h"
#include "tests/test.h"

struct file {
	const char *path;
	int minor;
	uint64_t hexversion; /* 0: not checked (3.10 has none) */
};

static const struct file files[] = {
	{ "/usr/bin/python3.11", 11, 0 },
	{ "/root/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0", 10, 0 },
	{ "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0", 11, 0x030b07f0 },
	{ "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", 12, 0x030c01f0 },
	{ "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0", 13, 0x030d00f0 },
};

/* Debian 12's python3.11 3.11.2 (/work/shared/PYTHON.md): known figures. */
#define DEBIAN_BUILD_ID "571d98e0"

static void one(const struct file *f, int *ran)
{
	struct pyinterp pi;
	const struct pylayout *l;
	struct pymember m[PYINTERP_MAX_MEMBERS];
	uint64_t basic = 0;
	size_t n = 0;
	char why[256];
	int fd, err;

	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* Every version is provided here: missing is a failure. */
		CHECK(0, "%s: %s", f->path, strerror(errno));
		return;
	}
	(*ran)++;
	err = pyinterp__read(fd, f->path, &pi);
	CHECK(err == 0 && pi.major == 3 && pi.minor == f->minor,
	      "%s: CPython %d.%d (hex %#" PRIx64 "), _PyRuntime %#" PRIx64 " (file %#" PRIx64
	      ", %" PRIu64 " B), PyCode_Type %#" PRIx64 ", eval %#" PRIx64 ", debug offsets %#" PRIx64
	      " (%s)",
	      f->path, pi.major, pi.minor, pi.hexversion, pi.runtime, pi.runtime_off,
	      pi.runtime_size, pi.code_type, pi.eval_frame, pi.debug_offsets, strerror(-err));
	if (err) {
		close(fd);
		return;
	}
	if (f->hexversion)
		CHECK(pi.hexversion == f->hexversion, "%s: Py_Version %#" PRIx64, f->path,
		      pi.hexversion);
	CHECK(pi.eval_frame && pi.eval_frame_size > 10000,
	      "%s: _PyEval_EvalFrameDefault found (%" PRIu64 " B)", f->path, pi.eval_frame_size);
	CHECK(f->minor >= 13 ? pi.debug_offsets == pi.runtime && pi.runtime_off
			     : pi.debug_offsets == 0,
	      "%s: _Py_DebugOffsets %s", f->path, f->minor >= 13 ? "at _PyRuntime" : "absent");
	if (!strncmp(pi.build_id, DEBIAN_BUILD_ID, strlen(DEBIAN_BUILD_ID)))
		CHECK(pi.hexversion == 0x030b02f0 && pi.runtime == 0xa5b740,
		      "%s: Debian's 3.11.2: Py_Version 0x030b02f0, _PyRuntime 0xa5b740", f->path);

	err = pyinterp__code_members(fd, &pi, m, PYINTERP_MAX_MEMBERS, &n, &basic);
	CHECK(err == 0 && n >= 10, "%s: PyCode_Type: tp_basicsize %" PRIu64 ", %zu members (%s)",
	      f->path, basic, n, strerror(-err));
	printf("     members:");
	for (size_t i = 0; i < n; i++)
		printf(" %s@%" PRId64, m[i].name, m[i].offset);
	printf("\n");

	l = pylayout__get(f->minor);
	err = l ? pylayout__check(l, fd, &pi, why, sizeof(why)) : -errno;
	CHECK(err == 0, "%s: the 3.%d row agrees with the file (%s)", f->path, f->minor,
	      err ? (why[0] ? why : strerror(-err)) : "members, tp_basicsize, debug offsets");
	if (l) {
		struct pylayout bad = *l;

		bad.co_firstlineno += 4;
		err = pylayout__check(&bad, fd, &pi, why, sizeof(why));
		CHECK(err == -EPROTO, "%s: a row with co_firstlineno off by 4 is refused: %s", f->path,
		      why);
		if (f->minor >= 13) {
			bad = *l;
			bad.fr_instr += 8;
			err = pylayout__check(&bad, fd, &pi, why, sizeof(why));
			CHECK(err == -EPROTO, "%s: a row with instr_ptr off by 8 is refused: %s",
			      f->path, why);
		}
		/* The neighbour version's offsets under this version's number. */
		bad = *pylayout__get(f->minor == 10 ? 11 : f->minor - 1);
		bad.minor = f->minor;
		err = pylayout__check(&bad, fd, &pi, why, sizeof(why));
		CHECK(err == -EPROTO, "%s: the 3.%d row's offsets are refused: %s", f->path,
		      f->minor == 10 ? 11 : f->minor - 1, why);
		bad = *l;
		bad.minor = f->minor == 13 ? 12 : f->minor + 1;
		err = pylayout__check(&bad, fd, &pi, why, sizeof(why));
		CHECK(err == -EPROTO, "%s: a row for another version is refused: %s", f->path, why);
	}

	/* 3.10 has no Py_Version: without a name its version is unknown. */
	if (f->minor == 10) {
		err = pyinterp__read(fd, NULL, &pi);
		CHECK(err == -EOPNOTSUPP, "%s: without a name, 3.10 is an unknown version (%s)",
		      f->path, strerror(-err));
		err = pyinterp__read(fd, "python3.12", &pi);
		CHECK(err == -EINVAL, "%s: named 3.12 without Py_Version: refused (%s)", f->path,
		      strerror(-err));
	}
	close(fd);
}

/* A shared library's pointers are stored in the file and relocated
 * (RELATIVE) at load: with PyCode_Type.tp_members zeroed in a copy, the
 * member table is still found, through the relocation's addend. */
static void relocated(const char *path)
{
	struct pymember m[PYINTERP_MAX_MEMBERS], m2[PYINTERP_MAX_MEMBERS];
	struct pyinterp pi;
	uint64_t basic, zero = 0;
	size_t n = 0, n2 = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), copy = -1, err;
	off_t at = 0;

	if (fd < 0) {
		CHECK(0, "relocation: %s: %s", path, strerror(errno));
		return;
	}
	copy = memfd_create("pyinterp", MFD_CLOEXEC);
	err = copy < 0 || fstat(fd, &st) || sendfile(copy, fd, &at, st.st_size) != st.st_size ||
	      pyinterp__read(copy, path, &pi) ||
	      pyinterp__code_members(copy, &pi, m, PYINTERP_MAX_MEMBERS, &n, &basic) ||
	      pwrite(copy, &zero, 8, (off_t)pi.code_type_off + 240) != 8;
	if (!err)
		err = pyinterp__code_members(copy, &pi, m2, PYINTERP_MAX_MEMBERS, &n2, &basic);
	for (size_t i = 0; !err && i < n2 && i < n; i++)
		err = strcmp(m[i].name, m2[i].name) || m[i].offset != m2[i].offset;
	CHECK(!err && n > 10 && n2 == n,
	      "%s with tp_members zeroed: the same %zu members through its RELATIVE relocation", path,
	      n2);
	if (copy >= 0)
		close(copy);
	close(fd);
}

static void not_python(const char *path, int want)
{
	struct pyinterp pi;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		printf("SKIP %s: %s\n", path, strerror(errno));
		return;
	}
	err = pyinterp__read(fd, path, &pi);
	CHECK(err == want, "%s: %s (want %s)", path, strerror(-err), strerror(-want));
	close(fd);
}

int main(void)
{
	int ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		one(&files[i], &ran);
	relocated("/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0");
	not_python("/bin/true", -ENOENT);
	not_python("/root/.pyenv/versions/3.12.1/bin/python3.12", -ENOENT); /* uses libpython */
	not_python("/root/.pyenv/versions/3.12.1/lib/libpython3.so", -ENOENT);
	not_python("/etc/passwd", -ENOEXEC);
	CHECK(!pylayout__get(9) && errno == EOPNOTSUPP, "no row for 3.9");
	CHECK(!pylayout__get(14) && errno == EOPNOTSUPP, "no row for 3.14");
	if (!ran && !test_fail_) {
		test_done();
		printf("SKIP: no CPython 3.10-3.13 file installed\n");
		return 77;
	}
	return test_done();
}
