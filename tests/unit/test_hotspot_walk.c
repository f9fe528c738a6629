/* test_hotspot_walk: live walks of stopped JVM threads through
 * interpreted, C1, C2, native-wrapper and stub frames
 * (sampler/java/hswalk.c, the twin of the BPF step) and their names
 * (sampler/java/hsname.c), against what the JVM itself says.
 *
 * tests/helpers/java/Known runs under Debian's JDK 17 and Temurin 25, by
 * default (C1 then C2), with -XX:TieredStopAtLevel=1 (C1 only) and with
 * -Xint. Its threads k-deep (parked in C under Java -> JNI -> C -> call
 * stub -> Java -> JNI), k-blocked (waiting for a monitor, in the VM),
 * k-holder (sleeping) keep their stacks; the JVM prints them
 * (Thread.getAllStackTraces) and then each thread is stopped with ptrace
 * and walked. Checks, per thread: the walk reaches the thread's root
 * (clone3/start_thread) through the Java frames; the Java frames, in
 * order, with their inlined frames, equal the JVM's, name and source
 * file and line for line (a native method's line -2 is our 0); the native
 * frames between them are the JNI function and libjvm's call path
 * (JavaCalls::call_helper under the call stub). The main thread's walk
 * reaches JavaMain. The running threads (k-hot, k-jni) are stopped
 * at random moments: every walk reaches the root and its outermost Java
 * frames are the JVM's. Interpreted, C1 and C2 frames are counted by the
 * nmethod's own compile level. Under -Xint, k-jni and k-hot are stopped
 * at the interpreter's method entries (a hardware breakpoint) and walked
 * at every instruction until the frame is built: each walk reaches the
 * root, names the entered method as its leaf and the rest as the built
 * frame's walk does. */
#include <dirent.h>

#include "sampler/java/hsname.h"
#include "sampler/java/hsvm.h"
#include "sampler/java/vmtables.h"
#include "tests/test.h"
#include "tests/unit/test_hotspot_stop.h"

/* One frame as the JVM printed it. */
struct jf {
	char name[256], file[128];
	int line;
};

struct jthread {
	char name[64];
	struct jf f[64];
	int n;
};

static int parse_dump(char *got, size_t len, struct jthread *t, int max)
{
	int n = -1;

	for (size_t at = 0; at < len; at += strlen(got + at) + 1) {
		char *l = got + at;

		if (!strncmp(l, "T ", 2) && n + 1 < max) {
			n++;
			memset(&t[n], 0, sizeof(t[n]));
			sscanf(l + 2, "%63s", t[n].name);
		} else if (!strncmp(l, "F ", 2) && n >= 0 && t[n].n < 64) {
			struct jf *f = &t[n].f[t[n].n];

			if (sscanf(l + 2, "%255s %127s %d", f->name, f->file, &f->line) == 3)
				t[n].n++;
		}
	}
	return n + 1;
}

static const struct jthread *thread_named(const struct jthread *t, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

struct walked {
	struct hsjframe f[128];
	char names[128][256], files[128][128];
	int n;		     /* Java frames (stubs left out) */
	int interp, c1, c2, stubs, natives, inlined, stale;
};

struct ctx {
	uint64_t seen[256]; /* Methods of interpreted frames walked */
	int nseen;
	struct jvm j;
	struct hsvm vm;
	struct hsmem m;
	struct hsnames *names;
	struct hsf comp_level;
	int major;
	const char *label;
};

/* Names the records of s (copying the strings: the cache's live until
 * the next call only). */
static void name_walk(struct ctx *x, const struct stopped *s, struct walked *w)
{
	memset(w, 0, sizeof(*w));
	for (int i = 0; i < s->nrec; i++) {
		struct hsjframe fr[HSNAME_MAX_INLINE];
		uint32_t kind = hs_rec_kind(s->rec[i][0]);
		int k = hsnames__frames(x->names, x->j.pid, &x->m, &x->vm, s->rec[i][0], s->rec[i][1],
					fr, HSNAME_MAX_INLINE);

		if (k == -ESTALE) {
			w->stale++;
			continue;
		}
		if (k <= 0 || kind == HS_K_STUB) {
			w->stubs += kind == HS_K_STUB;
			continue;
		}
		if (kind == HS_K_INTERP) {
			uint64_t a = hs_rec_addr(s->rec[i][0]);
			int k2;

			w->interp++;
			for (k2 = 0; k2 < x->nseen && x->seen[k2] != a; k2++)
				;
			if (k2 == x->nseen && x->nseen < 256)
				x->seen[x->nseen++] = a;
		}
		else {
			uint64_t lvl = 0;
			uint8_t b[8];

			if (x->comp_level.off >= 0 &&
			    !hsmem__read(&x->m, hs_rec_addr(s->rec[i][0]) + x->comp_level.off, b,
					 x->comp_level.size)) {
				memcpy(&lvl, b, x->comp_level.size);
				if (lvl >= 1 && lvl <= 3)
					w->c1++;
				else if (lvl == 4)
					w->c2++;
				else
					w->natives++; /* native wrappers: level 0 */
			}
		}
		for (int j = 0; j < k && w->n < 128; j++) {
			w->f[w->n] = fr[j];
			snprintf(w->names[w->n], sizeof(w->names[0]), "%s", fr[j].sysname);
			snprintf(w->files[w->n], sizeof(w->files[0]), "%s", fr[j].file);
			w->inlined += fr[j].inlined;
			w->n++;
		}
	}
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Does our frame k equal the JVM's f? */
static bool same(const struct walked *w, int k, const struct jf *f)
{
	int line = f->line < 0 ? 0 : f->line;
	const char *file = strcmp(f->file, "null") ? f->file : "";

	return !strcmp(w->names[k], f->name) && !strcmp(base(w->files[k]), file) &&
	       w->f[k].line == line;
}

static void print_walk(const struct stopped *s, const struct walked *w)
{
	int r = 0;

	for (int i = 0; i < s->n; i++) {
		bool java = r < s->nrec && hs_rec_index(s->rec[r][0]) == (uint32_t)i;
		const char *sym = stop_sym(s, s->pcs[i], i == 0);

		printf("      #%d %#llx %s%s\n", i, (unsigned long long)s->pcs[i],
		       java ? "[java] " : "", java ? "" : sym ? sym : "?");
		if (java)
			r++;
	}
	for (int i = 0; i < w->n; i++)
		printf("      J %s (%s:%d) bci %d%s\n", w->names[i], w->files[i], w->f[i].line,
		       w->f[i].bci, w->f[i].inlined ? " inlined" : "");
}

/* Does the native part of s contain a symbol with sub in its name? */
static bool has_sym(const struct stopped *s, const char *sub)
{
	for (int i = 0; i < s->n; i++) {
		const char *sym = stop_sym(s, s->pcs[i], i == 0);

		if (sym && strstr(sym, sub))
			return true;
	}
	return false;
}

/* The tables' root: a frame whose return address is undefined (clone3,
 * _start: glibc's CFI says so). */
static bool reached_root(const struct stopped *s)
{
	return s->end == PROF_UE_ROOT;
}

/* A thread whose stack stays: the whole Java part equals the JVM's.
 * Returns how many of its frames were deoptimized ones. */
static int steady(struct ctx *x, const struct jthread *jt, const char *name, int *totals)
{
	static struct stopped s;
	struct walked w;
	pid_t tid = 0;
	bool eq;
	int err;

	if (!jt) {
		CHECK(0, "%s: the JVM printed no thread %s", x->label, name);
		return 0;
	}
	if (stop_tids(x->j.pid, name, &tid, 1) != 1) {
		CHECK(0, "%s: no task named %s", x->label, name);
		return 0;
	}
	err = stop_take(&s, x->j.pid, tid);
	if (err) {
		CHECK(0, "%s: %s stopped: %s", x->label, name, strerror(-err));
		return 0;
	}
	stop_walk(&s, &x->m, &x->vm.bpf);
	name_walk(x, &s, &w);
	eq = w.n == jt->n;
	for (int i = 0; eq && i < w.n; i++)
		eq = same(&w, i, &jt->f[i]);
	CHECK(reached_root(&s), "%s: %s: the walk reaches the root (%d frames, end %d, hs %d)",
	      x->label, name, s.n, s.end, s.hs_end);
	CHECK(eq && !w.stale,
	      "%s: %s: %d Java frames equal the JVM's %d (%d interpreted, %d C1, %d C2, %d native "
	      "wrappers, %d inlined, %d stubs)",
	      x->label, name, w.n, jt->n, w.interp, w.c1, w.c2, w.natives, w.inlined, w.stubs);
	if (!eq || !reached_root(&s)) {
		print_walk(&s, &w);
		for (int i = 0; i < jt->n; i++)
			printf("      JVM %s (%s:%d)\n", jt->f[i].name, jt->f[i].file, jt->f[i].line);
	}
	if (!strcmp(name, "k-deep")) {
		CHECK(has_sym(&s, "Java_Known_down") && has_sym(&s, "call_helper") && w.stubs >= 2,
		      "%s: k-deep: Java_Known_down and JavaCalls::call_helper between call stubs "
		      "and Java frames",
		      x->label);
	}
	totals[0] += w.interp;
	totals[1] += w.c1;
	totals[2] += w.c2;
	totals[3] += w.inlined;
	err = 0;
	for (int i = 0; i < s.nrec; i++)
		err += !!(hs_rec_flags(s.rec[i][0]) & HS_R_DEOPT);
	return err;
}

/* A running thread: stopped n times; each walk reaches the root and
 * ends in the JVM's outermost `outer` frames. */
static void running(struct ctx *x, const struct jthread *jt, const char *name, int shots,
		    int outer, int *totals)
{
	static struct stopped s;
	int ok = 0, took = 0, same_outer = 0, bad = 0;
	struct walked w;
	pid_t tid = 0;

	if (!jt || stop_tids(x->j.pid, name, &tid, 1) != 1) {
		CHECK(0, "%s: no thread %s", x->label, name);
		return;
	}
	if (outer > jt->n)
		outer = jt->n;
	for (int i = 0; i < shots; i++) {
		bool eq;

		usleep(3000 + (unsigned)(i * 7919) % 20000);
		if (stop_take(&s, x->j.pid, tid))
			continue;
		took++;
		stop_walk(&s, &x->m, &x->vm.bpf);
		name_walk(x, &s, &w);
		ok += reached_root(&s);
		eq = w.n >= outer;
		for (int k = 1; eq && k <= outer; k++) {
			const struct jf *f = &jt->f[jt->n - k];

			/* the outermost frames' names and files; lines too
			 * but for the innermost of them (it moves) */
			eq = !strcmp(w.names[w.n - k], f->name) &&
			     (k == outer || same(&w, w.n - k, f));
		}
		same_outer += eq;
		if ((!eq || !reached_root(&s)) && bad++ < 2) {
			uint8_t code[32];

			printf("    %s shot %d: end %d hs %d; rip %#llx rsp %#llx rbp %#llx\n", name, i,
			       s.end, s.hs_end, (unsigned long long)s.regs.rip,
			       (unsigned long long)s.regs.rsp, (unsigned long long)s.regs.rbp);
			if (!hsmem__read(&x->m, s.regs.rip - 16, code, sizeof(code))) {
				printf("      code at pc-16:");
				for (int k = 0; k < 32; k++)
					printf(" %02x", code[k]);
				printf("\n");
			}
			for (int k = 0; k < s.nrec; k++)
				printf("      rec %#llx %#llx flags %u\n", (unsigned long long)s.rec[k][0],
				       (unsigned long long)s.rec[k][1], hs_rec_flags(s.rec[k][0]));
			print_walk(&s, &w);
		}
		totals[0] += w.interp;
		totals[1] += w.c1;
		totals[2] += w.c2;
		totals[3] += w.inlined;
	}
	CHECK(took >= shots * 9 / 10 && ok == took,
	      "%s: %s: %d of %d stops walked to the root", x->label, name, ok, took);
	CHECK(same_outer == took, "%s: %s: %d of %d walks end in the JVM's %d outermost frames",
	      x->label, name, same_outer, took, outer);
}

/* One walk through a method entry, as stop_entry's callback keeps it. */
struct estop {
	uint64_t pc, method; /* the pc, the leaf's Method* (0: none) */
	int n, nrec, end, hs_end;
	__u64 pcs[64];
	uint64_t rec[64][2];
};

struct ewalk {
	struct estop st[400];
	int n;
	uint64_t rbx; /* on entry: the Method* entered */
};

static void entry_stop(void *ctx, struct stopped *s, const struct user_regs_struct *in, bool last)
{
	struct ewalk *e = ctx;
	struct estop *t = &e->st[e->n < 400 ? e->n++ : 399];

	(void)last;
	e->rbx = in->rbx;
	memset(t, 0, sizeof(*t));
	t->pc = s->regs.rip;
	t->n = s->n;
	t->nrec = s->nrec;
	t->end = s->end;
	t->hs_end = s->hs_end;
	if (s->nrec && !hs_rec_index(s->rec[0][0]) && hs_rec_kind(s->rec[0][0]) == HS_K_INTERP)
		t->method = hs_rec_addr(s->rec[0][0]);
	memcpy(t->pcs, s->pcs, sizeof(t->pcs));
	memcpy(t->rec, s->rec, sizeof(t->rec));
}

/* Thread `name` stopped at `entry` (the interpreter's entry for methods
 * of one kind) and walked at every instruction until its frame is
 * built: every walk reaches the root, its leaf is the method entered
 * (rbx on entry), and its callers are the built frame's. */
static void entry_walks(struct ctx *x, const char *name, uint64_t entry, const char *what)
{
	static struct stopped s;
	static struct ewalk e;
	int got, root = 0, leaf = 0, same = 0, nroot = 0, nleaf = 0, neq = 0;
	const struct estop *ref;
	uint64_t rbx;
	pid_t tid = 0;

	e.n = 0;
	if (!entry || stop_tids(x->j.pid, name, &tid, 1) != 1) {
		CHECK(0, "%s: %s at the %s entry: no entry or no thread", x->label, name, what);
		return;
	}
	got = stop_entry(&s, x->j.pid, tid, entry, &x->m, &x->vm.bpf, entry_stop, &e);
	CHECK(got > 10 && e.n == got, "%s: %s stepped through the %s entry (%d stops)", x->label,
	      name, what, got);
	if (got <= 10 || e.n != got)
		return;
	ref = &e.st[e.n - 1];
	rbx = e.rbx == ref->method ? e.rbx : 0;
	for (int i = 0; i < e.n; i++) {
		const struct estop *t = &e.st[i];
		bool r = t->end == PROF_UE_ROOT, l = t->method && t->method == rbx,
		     eq = t->n == ref->n && t->nrec == ref->nrec && t->n <= 64 && t->nrec <= 64;

		for (int k = 1; eq && k < t->n; k++)
			eq = t->pcs[k] == ref->pcs[k];
		for (int k = 1; eq && k < t->nrec; k++)
			eq = t->rec[k][0] == ref->rec[k][0] && t->rec[k][1] == ref->rec[k][1];
		root += r;
		leaf += l;
		same += eq;
		/* (up to three of each kind of miss: CI shows these lines) */
		if ((!r && nroot++ < 3) || (!l && nleaf++ < 3) || (!eq && neq++ < 3))
			printf("    stop %d at entry%+lld: end %d hs %d, %d frames, %d records, leaf %#llx "
			       "(want %#llx; the built frame's walk: %d frames, %d records)\n",
			       i, (long long)(t->pc - entry), t->end, t->hs_end, t->n, t->nrec,
			       (unsigned long long)t->method, (unsigned long long)rbx, ref->n, ref->nrec);
	}
	CHECK(root == e.n, "%s: %s at the %s entry: %d of %d stops walked to the root", x->label, name,
	      what, root, e.n);
	CHECK(rbx && leaf == e.n,
	      "%s: %s at the %s entry: %d of %d walks name the entered method (rbx on entry: %#llx)",
	      x->label, name, what, leaf, e.n, (unsigned long long)e.rbx);
	CHECK(same == e.n, "%s: %s at the %s entry: %d of %d walks' callers are the built frame's",
	      x->label, name, what, same, e.n);
}

/* One method's line table: (bci, line) pairs in table order. */
struct ltab {
	char name[128];
	int n;
	int32_t bci[512], line[512];
	bool used;
};

/* javap -l -p's tables of class cls: its methods' LineNumberTables. */
static int javap_lines(int major, const char *cls, struct ltab *t, int max)
{
	char cmd[6000], line[1024], simple[256];
	const char *dot = strrchr(cls, '.');
	int n = 0;
	FILE *p;

	snprintf(simple, sizeof(simple), "%s", dot ? dot + 1 : cls);
	snprintf(cmd, sizeof(cmd), "%s/bin/javap -c -l -p -cp %s '%s' 2>/dev/null", jdk_home(major),
		 java_dir(), cls);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *paren = strchr(line, '('), *sp;
		int l, b;

		if (!strncmp(line, "  ", 2) && line[2] != ' ' && (paren || strstr(line, "static {}")) &&
		    strchr(line, ';') && n < max) {
			memset(&t[n], 0, sizeof(t[n]));
			if (!paren) {
				snprintf(t[n].name, sizeof(t[n].name), "<clinit>");
			} else {
				*paren = 0;
				sp = strrchr(line, ' ');
				sp = sp ? sp + 1 : line;
				if (!strcmp(sp, cls) || !strcmp(sp, simple))
					snprintf(t[n].name, sizeof(t[n].name), "<init>");
				else
					snprintf(t[n].name, sizeof(t[n].name), "%.127s", sp);
			}
			n++;
		} else if (n && sscanf(line, " line %d: %d", &l, &b) == 2 && t[n - 1].n < 512) {
			struct ltab *m = &t[n - 1];

			/* HotSpot keeps no pair equal to the one before it */
			if (m->n && m->bci[m->n - 1] == b && m->line[m->n - 1] == l)
				continue;
			m->bci[m->n] = b;
			m->line[m->n] = l;
			m->n++;
		}
	}
	pclose(p);
	return n;
}

/* Every method of the classes of the interpreted frames walked: its
 * line table as decoded from the live JVM equals javap's. */
static void lines_vs_javap(struct ctx *x)
{
	static struct ltab jt[512];
	uint64_t holders[8];
	int nh = 0, classes = 0, methods = 0, same = 0, tables = 0;
	struct vmtables t;
	const struct vmt_field *fm = NULL, *fd = NULL;
	int64_t mo = -1, dd = -1;

	if (!vmtables__read(&x->m, &x->j.jf, x->j.bias, &t)) {
		fm = vmtables__field(&t, "InstanceKlass", "_methods");
		fd = vmtables__field(&t, "Array<Klass*>", "_data[0]");
		mo = fm ? (int64_t)fm->offset : -1;
		dd = fd ? (int64_t)fd->offset : -1;
		vmtables__free(&t);
	}
	CHECK(mo >= 0 && dd >= 0, "%s: InstanceKlass::_methods and the arrays' data offset",
	      x->label);
	if (mo < 0 || dd < 0)
		return;
	for (int i = 0; i < x->nseen && nh < 8; i++) {
		uint64_t cm, cp, h;
		int k;

		if (hsmem__read(&x->m, x->seen[i] + x->vm.l.m_const_method.off, &cm, 8) ||
		    hsmem__read(&x->m, cm + x->vm.l.cm_constants.off, &cp, 8) ||
		    hsmem__read(&x->m, cp + x->vm.l.cp_holder.off, &h, 8))
			continue;
		for (k = 0; k < nh && holders[k] != h; k++)
			;
		if (k == nh)
			holders[nh++] = h;
	}
	for (int i = 0; i < nh; i++) {
		uint64_t arr, ms[512];
		int32_t len;
		char cls[256] = "";
		int nj = 0;

		if (hsmem__read(&x->m, holders[i] + (uint64_t)mo, &arr, 8) ||
		    hsmem__read(&x->m, arr, &len, 4) || len <= 0 || len > 512 ||
		    hsmem__read(&x->m, arr + (uint64_t)dd, ms, 8 * (size_t)len))
			continue;
		for (int k = 0; k < len; k++) {
			const char *sys;
			const struct hsline *lt;
			uint32_t cs;

			if (hsnames__method(x->names, x->j.pid, &x->m, &x->vm, ms[k], &sys, &lt, &cs))
				continue;
			if (!cls[0]) {
				snprintf(cls, sizeof(cls), "%s", sys);
				*strrchr(cls, '.') = 0;
				if (strchr(cls, '/')) /* a hidden class: javap has none */
					break;
				nj = javap_lines(x->major, cls, jt, 512);
				if (nj <= 0)
					break;
				classes++;
			}
			methods++;
			/* a javap table of this name, not yet matched, equal to ours */
			for (int q = 0; q < nj; q++) {
				bool eq = !jt[q].used && !strcmp(jt[q].name, strrchr(sys, '.') + 1) &&
					  jt[q].n == (lt ? (int)lt->n : 0);

				for (int r = 0; eq && r < jt[q].n; r++)
					eq = jt[q].bci[r] == lt->p[r].bci && jt[q].line[r] == lt->p[r].line;
				if (eq) {
					jt[q].used = true;
					same++;
					tables += jt[q].n > 0;
					break;
				}
			}
		}
	}
	CHECK(classes >= 2 && methods > 20 && same == methods,
	      "%s: %d of %d methods (%d with lines) of %d classes: line tables equal javap -l's",
	      x->label, same, methods, tables, classes);
}

static void run(int major, const char *const *flags, const char *label, bool want_c1,
		bool want_c2)
{
	struct ctx x = { .major = major, .label = label };
	struct jthread jt[64];
	struct vmtables t;
	int totals[4] = { 0 }, nt;
	char why[256], *got = NULL;
	size_t gotlen = 0;
	pid_t main_tid[4];
	int nmain;

	if (jvm_start(&x.j, major, flags, why, sizeof(why))) {
		CHECK(0, "%s", why);
		return;
	}
	x.m = (struct hsmem){ hsmem__pid_read, &x.j.pid };
	x.names = hsnames__new(0);
	x.comp_level.off = -1;
	if (!vmtables__read(&x.m, &x.j.jf, x.j.bias, &t)) {
		const struct vmt_field *f = vmtables__field(&t, "nmethod", "_comp_level");

		const struct vmt_type *ty = f ? vmtables__type(&t, f->type_string) : NULL;

		/* an int (17) or the enum CompLevel of the size the table says (25) */
		if (f)
			x.comp_level = (struct hsf){ (int32_t)f->offset,
						     ty && ty->size <= 4 ? (uint8_t)ty->size : 4, false,
						     false };
		vmtables__free(&t);
	}
	if (hsvm__open(&x.m, &x.j.jf, x.j.bias, &x.vm, why, sizeof(why))) {
		CHECK(0, "%s: set up: %s", label, why);
		goto out;
	}
	/* The deep thread parks after its warm-up; then give the compilers
	 * a moment. */
	for (int i = 0; i < 100; i++) {
		free(got);
		got = NULL;
		if (jvm_cmd(&x.j, "deep", &got, &gotlen))
			break;
		if (got && strstr(got, "true"))
			break;
		usleep(100000);
	}
	usleep(700000);
	free(got);
	got = NULL;
	if (jvm_cmd(&x.j, "dump", &got, &gotlen)) {
		CHECK(0, "%s: the JVM's dump", label);
		goto out;
	}
	nt = parse_dump(got, gotlen, jt, 64);
	steady(&x, thread_named(jt, nt, "k-deep"), "k-deep", totals);
	steady(&x, thread_named(jt, nt, "k-blocked"), "k-blocked", totals);
	/* Circle loaded: k-deep's C2 frames that inlined Sq.area (C2 does, on
	 * the class hierarchy's word) are deoptimized under it; the walk
	 * finds their original pcs. */
	if (want_c2) {
		int deopt;

		free(got);
		got = NULL;
		if (jvm_cmd(&x.j, "deopt", NULL, NULL) || (usleep(300000), 0) ||
		    jvm_cmd(&x.j, "dump", &got, &gotlen)) {
			CHECK(0, "%s: deopt and dump", label);
			goto out;
		}
		nt = parse_dump(got, gotlen, jt, 64);
		deopt = steady(&x, thread_named(jt, nt, "k-deep"), "k-deep", totals);
		CHECK(deopt > 0, "%s: k-deep after Circle: %d deoptimized frames walked by their "
			      "original pc", label, deopt);
	}
	steady(&x, thread_named(jt, nt, "k-holder"), "k-holder", totals);
	jvm_cmd(&x.j, "spin 1200", NULL, NULL);
	running(&x, thread_named(jt, nt, "k-hot"), "k-hot", 25, 2, totals);
	jvm_cmd(&x.j, "spin 1500", NULL, NULL);
	running(&x, thread_named(jt, nt, "k-jni"), "k-jni", 60, 2, totals);
	if (!want_c1 && !want_c2) {
		/* k-deep's walk has Known.down (native) and Known.up
		 * interpreted: their entries are the native and the normal
		 * one; k-jni enters both, k-hot the normal one from
		 * interpreted code */
		uint64_t native, normal;

		stop_entries(&x.j, &x.m, &x.vm, &native, &normal);
		entry_walks(&x, "k-jni", native, "native");
		entry_walks(&x, "k-jni", normal, "normal");
		entry_walks(&x, "k-hot", normal, "normal");
	}
	/* The main thread (the second "java" task) reads stdin in Java. */
	nmain = stop_tids(x.j.pid, "java", main_tid, 4);
	if (nmain >= 2) {
		static struct stopped s;
		pid_t tid = main_tid[0] == x.j.pid ? main_tid[1] : main_tid[0];

		if (!stop_take(&s, x.j.pid, tid)) {
			struct walked w;

			stop_walk(&s, &x.m, &x.vm.bpf);
			name_walk(&x, &s, &w);
			CHECK(reached_root(&s) && has_sym(&s, "JavaMain") && w.n >= 2 &&
				      !strcmp(w.names[w.n - 1], "Known.main"),
			      "%s: main: Known.main under JavaMain, to the root (%d Java frames)", label,
			      w.n);
			if (!reached_root(&s) || !has_sym(&s, "JavaMain"))
				print_walk(&s, &w);
		} else {
			CHECK(0, "%s: main stopped", label);
		}
	} else {
		CHECK(0, "%s: the main thread", label);
	}
	/* C1 code is replaced by C2's soon under the defaults: C1 frames are
	 * asked for in the C1-only run. */
	lines_vs_javap(&x);
	CHECK(totals[0] > 0 && (!want_c1 || totals[1] > 0) && (!want_c2 || totals[2] > 0) &&
		      (want_c1 || want_c2 || totals[1] + totals[2] == 0) && (want_c2 || !totals[2]),
	      "%s: frames walked: %d interpreted, %d C1, %d C2 (%d inlined)", label, totals[0],
	      totals[1], totals[2], totals[3]);
	{
		struct hsnames_stats st;

		hsnames__stats(x.names, &st);
		printf("    names: %llu hits, %llu misses, %llu stale, %llu unreadable, %llu bad, "
		       "%llu return addresses without their PcDesc\n",
		       (unsigned long long)st.hits, (unsigned long long)st.misses,
		       (unsigned long long)st.stale, (unsigned long long)st.err_read,
		       (unsigned long long)st.err_bad, (unsigned long long)st.no_pcdesc);
	}
out:
	free(got);
	hsnames__free(x.names);
	jvm_stop(&x.j);
}

static const char *const xint[] = { "-Xint", NULL };
static const char *const c1only[] = { "-XX:TieredStopAtLevel=1", NULL };

static void t_jdk17(const char *d) { (void)d; run(17, NULL, "JDK 17", false, true); }
static void t_jdk17_c1(const char *d) { (void)d; run(17, c1only, "JDK 17 C1", true, false); }
static void t_jdk17_xint(const char *d) { (void)d; run(17, xint, "JDK 17 -Xint", false, false); }
static void t_jdk25(const char *d) { (void)d; run(25, NULL, "JDK 25", false, true); }
static void t_jdk25_xint(const char *d) { (void)d; run(25, xint, "JDK 25 -Xint", false, false); }

static const struct test_scenario scenarios[] = {
	{ "jdk17", t_jdk17 },	      { "jdk17_c1", t_jdk17_c1 }, { "jdk17_xint", t_jdk17_xint },
	{ "jdk25", t_jdk25 },	      { "jdk25_xint", t_jdk25_xint },
};

TEST_SCENARIOS_MAIN(scenarios)
