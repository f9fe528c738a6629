/* test_rbwalk: the Ruby walk against Debian's real ruby (3.1).
 *
 * file:    rbfile__read on libruby finds version, rb_vm_exec, the TLS
 *          relocation pair and the facts its code tells; the 3.1 row
 *          passes rblayout__check; a row off in one fact, or for another
 *          version, is refused; files that are not Ruby are -ENOENT.
 * points:  tests/helpers/rb_points.rb stops at points where it prints
 *          its own caller_locations(0) and blocks in IO#read on the same
 *          line. Each time, the thread is stopped with ptrace (its fsbase
 *          from PTRACE_GETREGS), rbproc__twin (the BPF walk's twin) walks
 *          it and rbcodes__name names it: every frame (label, path,
 *          line, absolute path) must equal what Ruby printed, with
 *          IO#read on top; the first walk learns the static TLS offset
 *          from the DTV, the second walks by it to the same records; a
 *          recursion deeper than RB_MAX_FRAMES ends RB_END_TRUNC with
 *          the printed prefix; a wrong stamp is -ESTALE.
 * threads: tests/helpers/rb_known.rb runs three threads; each is
 *          stopped 8 times: the sleeper's frames are its own (Kernel#sleep
 *          under `sleeper`, never the busy threads' `heavy`/`spin`), and
 *          the three threads' ECs differ.
 * gc:      a thread looping on GC.start, stopped 30 times: its stops
 *          carry the GC record (first, before the Ruby frames); the main
 *          thread, blocked in IO#read (no GVL) while the other runs the
 *          GC, never does; points stopped in IO#read never do.
 * A missing ruby is a FAIL naming it. Every child is killed on every path. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/ruby/rbcode.h"
#include "sampler/ruby/rbfile.h"
#include "sampler/ruby/rblayout.h"
#include "sampler/ruby/rbproc.h"
#include "sampler/symbols/elfsym.h"
#include "tests/test.h"
#include "tests/unit/test_ruby.h"

/* Stops thread tid (ptrace seize + interrupt) and gives its fsbase. */
static int stop_thread(pid_t tid, uint64_t *fsbase)
{
	struct user_regs_struct r;
	int st;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) || ptrace(PTRACE_INTERRUPT, tid, 0, 0))
		return -errno;
	if (waitpid(tid, &st, __WALL) != tid || ptrace(PTRACE_GETREGS, tid, 0, &r)) {
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return -EIO;
	}
	*fsbase = r.fs_base;
	return 0;
}

static void go_on(pid_t tid)
{
	ptrace(PTRACE_DETACH, tid, 0, 0);
}

/* What a process's walk needs. */
struct rb {
	struct rbfile rf;
	const struct rblayout *l;
	struct rb_proc c;
	uint64_t symbols;
	char lib[512];
};

/* Where find_lib puts what it finds. */
struct found_lib {
	char *path;
	size_t cap;
	uint64_t *bias;
};

/* libruby_maps' callback for find_lib: 1, the path and load bias kept,
 * when the mapping's file is an ELF file that maps its offset. */
static int lib_bias(void *ctx, unsigned long lo, unsigned long off, const char *p)
{
	struct found_lib *fl = ctx;
	struct elf_info e;
	uint64_t va;
	int fd, found = 0;

	fd = open(p, O_RDONLY);
	if (fd < 0 || elfsym__read(fd, false, &e)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (elfsym__off_to_vaddr(&e, off, &va)) {
		*fl->bias = lo - va;
		snprintf(fl->path, fl->cap, "%s", p);
		found = 1;
	}
	elfsym__fini(&e);
	close(fd);
	return found;
}

/* libruby's mapping in pid: its path and load bias. */
static int find_lib(pid_t pid, char *path, size_t cap, uint64_t *bias)
{
	struct found_lib fl = { path, cap, bias };
	int r = libruby_maps(pid, lib_bias, &fl);

	return r < 0 ? r : r ? 0 : -ENOENT;
}

static int setup(pid_t pid, struct rb *rb)
{
	uint64_t bias = 0;
	int fd, err;

	memset(rb, 0, sizeof(*rb));
	err = find_lib(pid, rb->lib, sizeof(rb->lib), &bias);
	if (err)
		return err;
	fd = open(rb->lib, O_RDONLY);
	if (fd < 0)
		return -errno;
	err = rbfile__read(fd, &rb->rf);
	close(fd);
	if (err)
		return err;
	rb->l = rblayout__get(rb->rf.major, rb->rf.minor);
	if (!rb->l || rblayout__check(rb->l, &rb->rf, NULL, 0))
		return -EPROTO;
	for (int i = 0; i < 50; i++) {
		err = rbproc__setup(pid, &rb->rf, rb->l, bias, &rb->c, &rb->symbols);
		if (err != -EAGAIN)
			break;
		usleep(20000);
	}
	return err;
}

/* ---- file ---- */

static void t_file(const char *dir)
{
	struct rbfile rf;
	struct rblayout bad;
	const struct rblayout *l;
	char why[200], path[512];
	uint64_t bias;
	int fd, err;
	struct child ch = { 0 };
	char *argv[] = { RUBY, "-e", "$stdin.read", NULL };

	(void)dir;
	err = spawn_ruby(&ch, argv);
	CHECK(!err, "%s runs: %s", RUBY, strerror(-err));
	if (err)
		return;
	usleep(300000);
	err = find_lib(ch.pid, path, sizeof(path), &bias);
	kill_child(&ch);
	CHECK(!err, "ruby maps a libruby: %s", err ? strerror(-err) : path);
	if (err)
		return;
	fd = open(path, O_RDONLY);
	err = rbfile__read(fd, &rf);
	close(fd);
	CHECK(!err && rf.major == 3 && rf.minor == 1, "%s: CRuby %d.%d.%d (%s)", path, rf.major,
	      rf.minor, rf.teeny, strerror(-err));
	CHECK(rf.vm_exec && rf.vm_exec_size > 100, "rb_vm_exec at %#lx, %lu bytes",
	      (unsigned long)rf.vm_exec, (unsigned long)rf.vm_exec_size);
	CHECK(rf.tls_modid_got && rf.tls_dtpoff == 8, "ruby_current_ec: DTPMOD64 at %#lx, DTPOFF %lu",
	      (unsigned long)rf.tls_modid_got, (unsigned long)rf.tls_dtpoff);
	CHECK(rf.vm_objspace > 0 && rf.objspace_flags >= 0 && rf.during_gc_bit >= 0,
	      "rb_during_gc: vm->objspace %#x, flags +%d, bit %d", rf.vm_objspace,
	      rf.objspace_flags, rf.during_gc_bit);
	CHECK(rf.th_dtpoff >= 0 && rf.th_blocking > 0,
	      "ruby_thread_has_gvl_p: the thread pointer at TLS +%d, blocking_region_buffer +%#x",
	      rf.th_dtpoff, rf.th_blocking);
	CHECK(rf.global_symbols && rf.symbols_ids == 16 && rf.id_scope_shift == 4,
	      "rb_id2str: ruby_global_symbols at %#lx, ids +%d, last op %#x, shift %d",
	      (unsigned long)rf.global_symbols, rf.symbols_ids, rf.id_last_op, rf.id_scope_shift);
	l = rblayout__get(3, 1);
	err = l ? rblayout__check(l, &rf, why, sizeof(why)) : -1;
	CHECK(!err, "the 3.1 row passes its check %s", why);
	if (!l)
		return;
	bad = *l;
	bad.vm_objspace += 8;
	err = rblayout__check(&bad, &rf, why, sizeof(why));
	CHECK(err == -EPROTO && strstr(why, "objspace"), "a row off in vm->objspace is refused: %s",
	      why);
	bad = *l;
	bad.minor = 2;
	err = rblayout__check(&bad, &rf, why, sizeof(why));
	CHECK(err == -EPROTO, "a 3.2 row for a 3.1 file is refused: %s", why);
	rf.during_gc_bit = RBF_UNKNOWN;
	err = rblayout__check(l, &rf, why, sizeof(why));
	CHECK(err == -EPROTO, "a fact the file did not tell fails the check: %s", why);
	CHECK(!rblayout__get(3, 4) && errno == EOPNOTSUPP, "no row for 3.4: EOPNOTSUPP");
	{
		struct rbinfo ri;

		fd = open(path, O_RDONLY);
		err = rbproc__detect(fd, path, &ri);
		CHECK(!err && !ri.status && ri.l, "rbproc__detect: walkable (%s)", ri.why);
		setenv("PROFFS_RB_WITHHOLD", "3.1", 1);
		err = rbproc__detect(fd, path, &ri);
		unsetenv("PROFFS_RB_WITHHOLD");
		close(fd);
		CHECK(!err && ri.status == -EOPNOTSUPP && !ri.l,
		      "3.1 withheld: an unknown version, not walked: %s", ri.why);
	}
	for (size_t i = 0; i < 2; i++) {
		const char *p = i ? "/usr/lib/x86_64-linux-gnu/libc.so.6" : "/bin/true";

		fd = open(p, O_RDONLY);
		err = rbfile__read(fd, &rf);
		close(fd);
		CHECK(err == -ENOENT, "%s is not CRuby: %s", p, strerror(-err));
	}
	fd = open("tests/fuzz/corpus/fuzz_rbfile/fake31.so", O_RDONLY);
	err = rbfile__read(fd, &rf);
	if (fd >= 0)
		close(fd);
	CHECK(!err && !rblayout__check(l, &rf, why, sizeof(why)) && rf.tls_modid_got,
	      "fuzz_rbfile's seed (fake_libruby.c) passes as a 3.1 libruby: %s %s", strerror(-err),
	      why);
	fd = open("/etc/hostname", O_RDONLY);
	err = rbfile__read(fd, &rf);
	close(fd);
	CHECK(err == -ENOEXEC, "a text file: -ENOEXEC (%d)", err);
}

/* ---- points ---- */

#define MAXLOC 128

struct loc {
	char label[128], path[512], abs[512];
	int line;
};

/* Reads "point NAME TID", the loc lines and "end". */
static int read_point(FILE *f, char *name, size_t cap, pid_t *tid, struct loc *locs, int *n)
{
	char line[2048];

	*n = 0;
	if (!fgets(line, sizeof(line), f))
		return -EIO;
	if (!strcmp(line, "done\n"))
		return 1;
	if (sscanf(line, "point %127s %d", name, tid) != 2)
		return -EINVAL;
	(void)cap;
	while (fgets(line, sizeof(line), f)) {
		char *t[4], *s = line;

		if (!strcmp(line, "end\n"))
			return 0;
		if (strncmp(line, "loc ", 4) || *n >= MAXLOC)
			return -EINVAL;
		line[strcspn(line, "\n")] = 0;
		s += 4;
		for (int k = 0; k < 4; k++)
			t[k] = strsep(&s, "\t");
		if (!t[3])
			return -EINVAL;
		snprintf(locs[*n].label, sizeof(locs[*n].label), "%s", t[0]);
		snprintf(locs[*n].path, sizeof(locs[*n].path), "%s", t[1]);
		locs[*n].line = atoi(t[2]);
		snprintf(locs[*n].abs, sizeof(locs[*n].abs), "%s", t[3]);
		(*n)++;
	}
	return -EIO;
}

/* Compares names[0..m) with IO#read then locs[0..n); returns mismatches
 * (printing the first few). */
static int compare(const struct rbname *nm, int m, const struct loc *locs, int n, bool prefix)
{
	int bad = 0, want = n + 1;

	if (prefix ? m > want : m != want) {
		printf("  %d frames walked, %d expected\n", m, want);
		bad++;
	}
	for (int i = 0; i < m && i < want; i++) {
		const struct loc *e = i ? &locs[i - 1] : &locs[0];
		const char *label = i ? e->label : "read";
		bool ok = !strcmp(nm[i].label, label) && !strcmp(nm[i].path, e->path) &&
			  nm[i].line == e->line && (i ? 1 : nm[i].kind == RBN_CFUNC) &&
			  (!e->abs[0] || !strcmp(nm[i].realpath, e->abs));

		if (!ok && bad++ < 6)
			printf("  #%d: walked %s %s:%d (%s) kind %d, Ruby says %s %s:%d (%s)\n", i,
			       nm[i].label, nm[i].path, nm[i].line, nm[i].realpath, nm[i].kind, label,
			       e->path, e->line, e->abs);
	}
	return bad;
}

static void t_points(const char *dir)
{
	char *argv[] = { RUBY, "tests/helpers/rb_points.rb", NULL };
	struct child ch = { 0 };
	struct loc *locs = calloc(MAXLOC, sizeof(*locs));
	struct rb_frame rec[RB_MAX_FRAMES], rec2[RB_MAX_FRAMES];
	struct rbname nm[RB_MAX_FRAMES];
	struct rbcodes *codes = rbcodes__new(0), *tiny = rbcodes__new(1);
	struct rb rb;
	int npoints = 0, err, first = 1, last_m = 0;

	(void)dir;
	err = spawn_ruby(&ch, argv);
	CHECK(!err, "ruby %s runs: %s", argv[1], strerror(-err));
	for (; !err;) {
		char name[128];
		pid_t tid;
		uint64_t fs;
		int n, r, m, m2, end;
		bool deep;

		r = read_point(ch.out, name, sizeof(name), &tid, locs, &n);
		if (r) {
			CHECK(r == 1 && npoints == 8, "rb_points.rb ran its %d points to the end (%d)",
			      npoints, r);
			break;
		}
		npoints++;
		if (first) {
			err = setup(ch.pid, &rb);
			CHECK(!err, "set-up of pid %d: %s (modid %lu, dtpoff %lu, gc %#lx/%#x)",
			      (int)ch.pid, strerror(-err), (unsigned long)rb.c.modid,
			      (unsigned long)rb.c.dtpoff, (unsigned long)rb.c.gc_flags, rb.c.gc_mask);
			if (err)
				break;
		}
		CHECK(wait_read(ch.pid, tid), "%s: thread %d blocks reading stdin", name, (int)tid);
		err = stop_thread(tid, &fs);
		CHECK(!err, "%s: thread %d stopped, fsbase %#lx", name, (int)tid, (unsigned long)fs);
		if (err)
			break;
		r = rbproc__twin(ch.pid, fs, &rb.c, rec, RB_MAX_FRAMES);
		if (first) {
			CHECK(rb.c.flags & RB_TLS_STATIC,
			      "the first walk learnt the static TLS offset from the DTV: fsbase %+ld",
			      (long)rb.c.tls_off);
			first = 0;
		}
		m2 = rbproc__twin(ch.pid, fs, &rb.c, rec2, RB_MAX_FRAMES);
		go_on(tid);
		m = r & 0xffff;
		end = r >> 16;
		deep = !strcmp(name, "deep");
		CHECK(m2 == r && !memcmp(rec, rec2, (size_t)m * sizeof(rec[0])),
		      "%s: a second walk (static TLS) gives the same %d records", name, m);
		CHECK(end == (deep ? RB_END_TRUNC : RB_END_OK) && m > 0 && !(rec[0].addr & RB_FRAME_GC),
		      "%s: %d records, end %d, no GC record", name, m, end);
		rbcodes__name(codes, ch.pid, rb.l, rb.symbols, rec, m, nm);
		CHECK(compare(nm, m, locs, n, deep) == 0,
		      "%s: %d walked frames equal IO#read + Ruby's %d caller_locations%s", name, m, n,
		      deep ? " (a prefix: truncated)" : "");
		/* A cache of one byte: every entry is over the budget, yet the
		 * sample's names stay whole while it is named. */
		rbcodes__name(tiny, ch.pid, rb.l, rb.symbols, rec, m, nm);
		last_m = m;
		CHECK(compare(nm, m, locs, n, deep) == 0, "%s: the same with a 1-byte cache", name);
		/* The BPF records' FINISH flags: one per rb_vm_exec, the last
		 * (oldest) frame always one. */
		CHECK(deep || (rec[m - 1].addr & RB_FRAME_FINISH), "%s: the oldest frame is FINISH",
		      name);
		if (!strcmp(name, "nested")) {
			const struct rbcode *rc;

			err = rbcodes__get(codes, ch.pid, rb.l, rb.symbols, rec[1].addr,
					   rec[1].stamp ^ 1, &rc);
			CHECK(err == -ESTALE && !rc, "a wrong stamp: -ESTALE (%d)", err);
			err = 0;
		}
		if (write(ch.in, "x", 1) != 1)
			break;
	}
	{
		struct rbcodes_stats st;

		rbcodes__stats(codes, &st);
		CHECK(st.hits > 0 && st.misses > 0 && st.stale == 1 && !st.err_read &&
			      !st.err_object && !st.no_lines,
		      "naming: %lu hits, %lu misses, %lu stale, %lu read errors, %lu bad objects, "
		      "%lu without lines",
		      (unsigned long)st.hits, (unsigned long)st.misses, (unsigned long)st.stale,
		      (unsigned long)st.err_read, (unsigned long)st.err_object,
		      (unsigned long)st.no_lines);
	}
	{
		struct rbcodes_stats st;

		rbcodes__stats(tiny, &st);
		CHECK(st.cache.entries <= (size_t)last_m && st.cache.evicted > 0,
		      "the 1-byte cache keeps only the last sample's entries: %zu for %d records (%lu "
		      "evicted)",
		      st.cache.entries, last_m, (unsigned long)st.cache.evicted);
	}
	kill_child(&ch);
	rbcodes__free(codes);
	rbcodes__free(tiny);
	free(locs);
}

/* ---- threads ---- */

static bool has(const struct rbname *nm, int m, const char *label)
{
	for (int i = 0; i < m; i++)
		if (!strcmp(nm[i].label, label))
			return true;
	return false;
}

/* Reads the first line of ch's ruby, fmt with the ids of its n (at most
 * 3) threads, into tids, and sets up the walk of it in rb. 0, -EIO
 * (the line is not there or not that), or setup's error. */
static int tids_setup(struct child *ch, const char *fmt, pid_t *tids, int n, struct rb *rb)
{
	pid_t got[3];
	char line[256];

	if (!fgets(line, sizeof(line), ch->out) || sscanf(line, fmt, &got[0], &got[1], &got[2]) != n)
		return -EIO;
	memcpy(tids, got, n * sizeof(*tids));
	return setup(ch->pid, rb);
}

static void t_threads(const char *dir)
{
	char *argv[] = { RUBY, "tests/helpers/rb_known.rb", "6", NULL };
	struct child ch = { 0 };
	struct rb_frame rec[RB_MAX_FRAMES];
	struct rbname nm[RB_MAX_FRAMES];
	struct rbcodes *codes = rbcodes__new(0);
	pid_t tids[3];
	struct rb rb;
	int err, ok[3] = { 0 }, own = 0, other = 0, distinct = 0, asleep = 0;

	(void)dir;
	err = spawn_ruby(&ch, argv);
	CHECK(!err, "ruby %s runs", argv[1]);
	if (!err)
		err = tids_setup(&ch, "threads %d %d %d", tids, 3, &rb);
	CHECK(!err, "rb_known.rb: threads and set-up: %s", strerror(-err));
	for (int round = 0; !err && round < 8; round++) {
		uint64_t ec[3] = { 0 };

		usleep(50000);
		for (int t = 0; t < 3; t++) {
			uint64_t fs;
			int r, m;

			if (stop_thread(tids[t], &fs))
				continue;
			r = rbproc__twin(ch.pid, fs, &rb.c, rec, RB_MAX_FRAMES);
			if (rb.c.flags & RB_TLS_STATIC)
				process_vm_readv(ch.pid, &(struct iovec){ &ec[t], 8 }, 1,
						 &(struct iovec){ (void *)(fs + rb.c.tls_off), 8 }, 1,
						 0);
			go_on(tids[t]);
			m = r & 0xffff;
			rbcodes__name(codes, ch.pid, rb.l, rb.symbols, rec, m, nm);
			if ((r >> 16) != RB_END_OK || !m)
				continue;
			ok[t]++;
			{
				bool mine = t == 2 ? has(nm, m, "sleeper") : t == 1 ? has(nm, m, "spin") : has(nm, m, "main");

				if (!mine) {
					printf("#    thread %d stop %d lacks its own frame:", t, round);
					for (int i = 0; i < m; i++)
						printf(" %s:%d", nm[i].label ? nm[i].label : "?", (int)nm[i].line);
					printf("\n");
				}
			}
			if (t == 2) {
				/* Asleep, or (rarely) between two naps. */
				own += has(nm, m, "sleeper");
				asleep += !strcmp(nm[0].label, "sleep") && nm[0].kind == RBN_CFUNC;
				other += has(nm, m, "heavy") || has(nm, m, "spin") || has(nm, m, "work");
			} else {
				other += has(nm, m, "sleeper");
				own += t == 1 ? has(nm, m, "spin") : has(nm, m, "main");
			}
		}
		distinct += ec[0] && ec[1] && ec[2] && ec[0] != ec[1] && ec[1] != ec[2] &&
			    ec[0] != ec[2];
	}
	CHECK(ok[0] == 8 && ok[1] == 8 && ok[2] == 8, "every stop walked whole: %d %d %d of 8",
	      ok[0], ok[1], ok[2]);
	CHECK(own == 24 && !other,
	      "each thread shows its own frames (%d of 24), never another's (%d)", own, other);
	CHECK(asleep >= 6, "the sleeper: Kernel#sleep (a C method) on top under sleeper, %d of 8",
	      asleep);
	CHECK(distinct == 8, "three distinct ECs in each of %d rounds", distinct);
	kill_child(&ch);
	rbcodes__free(codes);
}

/* ---- gc ---- */

static void t_gc(const char *dir)
{
	char *argv[] = { RUBY, "-e",
			 "a = []; 2000.times { a << 'x' * 100 }; q = Queue.new; "
			 "Thread.new { q << File.readlink('/proc/thread-self').split('/').last; "
			 "loop { GC.start } }; "
			 "puts \"tids #{Process.pid} #{q.pop}\"; $stdout.flush; $stdin.read",
			 NULL };
	struct child ch = { 0 };
	struct rb_frame rec[RB_MAX_FRAMES];
	struct rbname nm[RB_MAX_FRAMES];
	struct rbcodes *codes = rbcodes__new(0);
	pid_t tids[2];
	struct rb rb;
	int err, gc = 0, named = 0, walked = 0, flagged = 0, wrong = 0;

	(void)dir;
	err = spawn_ruby(&ch, argv);
	if (!err)
		err = tids_setup(&ch, "tids %d %d", tids, 2, &rb);
	CHECK(!err, "a thread looping on GC.start, the main one in IO#read: set-up %s",
	      strerror(-err));
	for (int i = 0; !err && i < 60; i++) {
		pid_t tid = tids[i % 2];
		uint32_t fl = 0;
		uint64_t fs;
		int r, m;

		usleep(7000);
		/* The reader is stopped only while it is in its read: a stop
		 * can cut the read short, and Ruby then takes the GVL back (out
		 * of the blocking region, waiting for the GC's thread) before
		 * reading again; that is the stop's doing, not a sampled state. */
		if (tid == tids[0] && !wait_read(ch.pid, tid))
			continue;
		if (stop_thread(tid, &fs))
			continue;
		r = rbproc__twin(ch.pid, fs, &rb.c, rec, RB_MAX_FRAMES);
		process_vm_readv(ch.pid, &(struct iovec){ &fl, 4 }, 1,
				 &(struct iovec){ (void *)rb.c.gc_flags, 4 }, 1, 0);
		go_on(tid);
		m = r & 0xffff;
		walked += (r >> 16) == RB_END_OK;
		if (tid == tids[0]) {
			/* Blocked in read, without the GVL, while the other runs
			 * the GC: never this thread's GC. */
			flagged += !!(fl & rb.c.gc_mask);
			wrong += m && (rec[0].addr & RB_FRAME_GC);
		} else if (m && (rec[0].addr & RB_FRAME_GC)) {
			gc++;
			rbcodes__name(codes, ch.pid, rb.l, rb.symbols, rec, m, nm);
			named += nm[0].kind == RBN_GC && m > 1 && has(nm, m, "start");
		}
	}
	CHECK(walked == 60, "60 stops walked whole (%d)", walked);
	CHECK(gc > 0 && named == gc,
	      "%d of 30 stops of the GC.start thread carry the GC record, first, over `start` (%d)",
	      gc, named);
	CHECK(flagged > 0 && !wrong,
	      "the thread in IO#read: the GC ran at %d of its 30 stops, its walk never took it "
	      "for its own (%d)",
	      flagged, wrong);
	kill_child(&ch);
	rbcodes__free(codes);
}

static const struct test_scenario scenarios[] = {
	{ "file", t_file },
	{ "points", t_points },
	{ "threads", t_threads },
	{ "gc", t_gc },
};

RUBY_SCENARIOS_MAIN(scenarios)
