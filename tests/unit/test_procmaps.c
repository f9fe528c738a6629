/* test_procmaps: a process's executable mappings as procinfo reads them
 * (PROCMAP_QUERY where the kernel has it) against the text of
 * /proc/PID/maps: the same mappings, in order, with the same start, end,
 * offset, device, inode and path, for this test, for a process with a
 * deleted file mapped (a copy of /bin/sleep, removed once it runs) and
 * for Debian's python3 (its extension modules). [vsyscall] is left out
 * of the comparison: it is no mapping of the process (the kernel's gate
 * page, listed in the text only), and no code runs from it on a kernel
 * that emulates or forbids it. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/proc/labels.h"
#include "sampler/proc/procinfo.h"
#include "sampler/symbols/symbolize.h"
#include "tests/test.h"

/* The executable mappings of pid from the text, compared with p's. */
static void compare(struct procs *ps, pid_t pid, const char *what, bool want_deleted)
{
	char path[64], line[4096];
	struct proc *p = procs__get(ps, pid, NULL, 0);
	size_t i = 0, bad = 0, deleted = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	CHECK(p && p->maps && f, "%s: read", what);
	if (!p || !p->maps || !f) {
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off, ino;
		unsigned maj, min;
		char perm[8], name[4096] = "";
		int n = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e, perm, &off, &maj, &min, &ino,
			   &n) < 7 || perm[2] != 'x')
			continue;
		snprintf(name, sizeof(name), "%s", line + n);
		name[strcspn(name, "\n")] = 0;
		if (!strcmp(name, "[vsyscall]"))
			continue;
		size_t l = strlen(name);
		if (l > 10 && !strcmp(name + l - 10, " (deleted)")) {
			name[l - 10] = 0;
			deleted++;
		}
		const struct vma *v = i < p->maps->n ? &p->maps->v[i] : NULL;

		if (!v || v->start != s || v->end != e || v->pgoff != off || v->dev != makedev(maj, min) ||
		    v->ino != ino || strcmp(v->path, name) || v->file != (name[0] == '/')) {
			if (bad++ < 3)
				printf("  %s: text %llx-%llx %llx %s, read %llx-%llx %llx %s\n", what, s, e,
				       off, name, v ? (unsigned long long)v->start : 0,
				       v ? (unsigned long long)v->end : 0,
				       v ? (unsigned long long)v->pgoff : 0, v ? v->path : "(none)");
		}
		i++;
	}
	fclose(f);
	CHECK(i > 0 && i == p->maps->n && !bad, "%s: %zu executable mappings as the text lists them (%zu read, %zu differ)",
	      what, i, p->maps->n, bad);
	if (want_deleted)
		CHECK(deleted > 0, "%s: the deleted file is among them, its path without the suffix", what);
}

int main(void)
{
	struct symbolizer *sym = symbolizer__new(NULL);
	struct labeler *lab = labeler__new(NULL);
	char tmp[] = "/tmp/test_procmaps.XXXXXX", cmd[512];
	struct procs *ps;
	pid_t child;
	int fd;

	CHECK(sym && lab, "symbolizer and labeler");
	if (!sym || !lab)
		return test_done();
	ps = procs__new(&(struct procs_opts){ .sym = sym, .lab = lab });
	compare(ps, getpid(), "this test", false);
	CHECK(procs__maps_by_query(), "read through PROCMAP_QUERY (this kernel has it)");
	child = fork();
	if (child == 0) {
		execl("/usr/bin/python3", "python3", "-c", "import json, ssl, time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	usleep(700000);
	compare(ps, child, "python3", false);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	fd = mkstemp(tmp);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s && chmod 755 %s", tmp, tmp);
	if (fd >= 0)
		close(fd);
	CHECK(fd >= 0 && system(cmd) == 0, "a copy of sleep");
	child = fork();
	if (child == 0) {
		execl(tmp, "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(200000);
	unlink(tmp);
	compare(ps, child, "a deleted binary", true);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	procs__free(ps);
	symbolizer__free(sym);
	labeler__free(lab);
	return test_done();
}
