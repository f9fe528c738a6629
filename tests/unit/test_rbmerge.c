/* test_rbmerge: the pure parts of the Ruby pipeline. The merge of Ruby
 * records into a native stack (rbmerge) on the shapes a real sample
 * has: a C method on top (Kernel#sleep), a block through a C method
 * (Array#each), C methods calling C methods (sort_by -> each), the GC
 * marker, an unwind marker, records left over, an anchor left over, a
 * full output. Display names (rbcode__display) of gem, standard
 * library, vendor, built-in and plain paths. The String and Array
 * header readers and the UTF-8 sanitizer on hand-made objects. */
#include <stdio.h>
#include <string.h>

#include "sampler/ruby/rbcode.h"
#include "sampler/ruby/rbproc.h"
#include "tests/test.h"

#define N RBM_NATIVE
#define A RBM_ANCHOR
#define M RBM_MARKER
#define F RB_FRAME_FINISH
#define C RB_FRAME_CFUNC

/* The merge as a string: native i is "n<i>", record i "r<i>", GC "gc". */
static const char *merged(const uint8_t *kind, int n, const uint64_t *flags, int m, int max)
{
	static char s[512];
	struct rb_frame rec[16] = { 0 };
	struct rbm_item out[64];
	int k, o = 0;

	for (int i = 0; i < m; i++)
		rec[i].addr = 0x1000 * (i + 1) | flags[i];
	k = rbmerge(kind, n, rec, m, out, max);
	s[0] = 0;
	for (int i = 0; i < k; i++)
		o += out[i].ruby == 2 ? snprintf(s + o, sizeof(s) - (size_t)o, "%sgc", i ? " " : "")
				      : snprintf(s + o, sizeof(s) - (size_t)o, "%s%s%d", i ? " " : "",
						 out[i].ruby ? "r" : "n", out[i].i);
	return s;
}

#define MERGE(kinds, flags, max) \
	merged(kinds, sizeof(kinds), flags, sizeof(flags) / sizeof(flags[0]), max)

static void t_merge(const char *dir)
{
	const char *s;

	(void)dir;
	{
		/* ppoll, sleep's C, vm_call_cfunc, vm_exec_core, rb_vm_exec,
		 * ruby_run_node, main; sleep (C), leaf, mid, <main> (FINISH) */
		const uint8_t k[] = { N, N, N, N, A, N, N };
		const uint64_t f[] = { C, 0, 0, F };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "n0 n1 n2 n3 r0 r1 r2 r3 n5 n6"),
		      "sleep on top: its C frames leafward of it, rb_vm_exec replaced: %s", s);
	}
	{
		/* vm_exec_core, rb_vm_exec (inner), rb_yield, rb_ary_each,
		 * vm_call, vm_exec_core, rb_vm_exec (outer), ruby_run_node;
		 * block in mid (FINISH), each (C), mid, <main> (FINISH) */
		const uint8_t k[] = { N, A, N, N, N, N, A, N };
		const uint64_t f[] = { F, C, 0, F };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "n0 r0 n2 n3 n4 n5 r1 r2 r3 n7"),
		      "a block through each: each owns rb_yield and rb_ary_each: %s", s);
	}
	{
		/* sort_by -> each (C calling C), the block a group of its own */
		const uint8_t k[] = { N, A, N, N, N, N, N, A, N };
		const uint64_t f[] = { F, C, C, 0, F };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "n0 r0 n2 n3 n4 n5 n6 r1 r2 r3 r4 n8"),
		      "sort_by's block: each above sort_by above in_sort_by: %s", s);
	}
	{
		/* gc_mark, newobj, vm_exec_core, rb_vm_exec, run_node */
		const uint8_t k[] = { N, N, N, A, N };
		const uint64_t f[] = { RB_FRAME_GC, 0, F };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "n0 n1 n2 gc r1 r2 n4"), "GC: the marker over the Ruby frames: %s",
		      s);
	}
	{
		const uint8_t k[] = { N, A, N, M };
		const uint64_t f[] = { F, 0, F, 0 };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "n0 r0 n2 r1 r2 r3 n3"), "an unwind marker: the rest before it: %s",
		      s);
	}
	{
		const uint8_t k[] = { A, N };
		const uint64_t f[] = { F, 0, F };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "r0 n1 r1 r2"), "records left over go at the root end: %s", s);
	}
	{
		const uint8_t k[] = { A, N, A };
		const uint64_t f[] = { F };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "r0 n1 n2"), "an anchor with no records left stays native: %s", s);
	}
	{
		const uint8_t k[] = { N, A, N };
		const uint64_t f[] = { RB_FRAME_GC };

		s = MERGE(k, f, 64);
		CHECK(!strcmp(s, "n0 gc n1 n2"),
		      "a GC record alone (the walk found no frame) takes the first anchor's place "
		      "before it: %s",
		      s);
	}
	{
		const uint8_t k[] = { N, N, A, N };
		const uint64_t f[] = { 0, 0, F, 0, F };

		s = MERGE(k, f, 4);
		CHECK(!strcmp(s, "n0 n1 r0 r1"), "max 4: cut at 4: %s", s);
		s = MERGE(k, f, 0);
		CHECK(!strcmp(s, ""), "max 0: nothing");
	}
	{
		const uint8_t k[] = { N, A, N };
		struct rbm_item out[8];
		int n = rbmerge(k, 3, NULL, 0, out, 8);

		CHECK(n == 3 && out[1].ruby == 0 && out[1].i == 1, "no records: the native stack");
	}
}

static void t_display(const char *dir)
{
	static const struct {
		const char *label, *path, *want;
	} c[] = {
		{ "call", "/var/lib/gems/3.1.0/gems/rack-2.2.3/lib/rack/builder.rb",
		  "call (rack-2.2.3/lib/rack/builder.rb)" },
		{ "x", "/app/vendor/bundle/ruby/3.1.0/bundler/gems/foo-1a2b/lib/foo.rb",
		  "x (foo-1a2b/lib/foo.rb)" },
		{ "add", "/usr/lib/ruby/3.1.0/set.rb", "add (set.rb)" },
		{ "parse", "/usr/lib/ruby/3.1.0/json/common.rb", "parse (json/common.rb)" },
		{ "run", "/usr/lib/ruby/vendor_ruby/rspec/core.rb", "run (rspec/core.rb)" },
		{ "y", "/usr/local/lib/site_ruby/3.1.0/y.rb", "y (y.rb)" },
		{ "tap", "<internal:kernel>", "tap (<internal:kernel>)" },
		{ "require", "<internal:/usr/lib/ruby/vendor_ruby/rubygems/core_ext/kernel_require.rb>",
		  "require (rubygems/core_ext/kernel_require.rb)" },
		{ "require", "<internal:/opt/app/x.rb>", "require (x.rb)" },
		{ "heavy", "/home/u/app/known.rb", "heavy (known.rb)" },
		{ "<main>", "-e", "<main> (-e)" },
		{ "block in <main>", "(eval)", "block in <main> ((eval))" },
		{ "each", "", "each" },
	};
	char out[256];

	(void)dir;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		rbcode__display(c[i].label, c[i].path, out, sizeof(out));
		CHECK(!strcmp(out, c[i].want), "%s -> %s", c[i].path, out);
	}
	rbcode__display("label", "/a/b.rb", out, 8);
	CHECK(!strcmp(out, "label ("), "cut to the buffer: '%s'", out);
}

static void t_objects(const char *dir)
{
	const struct rblayout *l = rblayout__get(3, 1);
	uint8_t o[40] = { 0 };
	uint64_t flags, v;
	struct rbstr s;
	struct rbary a;
	char out[64];
	bool cut;

	(void)dir;
	flags = l->t_string | 5ull << l->str_embed_shift;
	memcpy(o, &flags, 8);
	memcpy(o + 16, "hello", 5);
	CHECK(!rbstr__header(l, o, 40, &s) && s.len == 5 && !s.ptr && s.at == 16,
	      "an embedded String: 5 bytes at 16");
	flags = l->t_string | l->str_noembed;
	memcpy(o, &flags, 8);
	v = 1000;
	memcpy(o + 16, &v, 8);
	v = 0x7f0000001000;
	memcpy(o + 24, &v, 8);
	CHECK(!rbstr__header(l, o, 40, &s) && s.len == 1000 && s.ptr == v, "a heap String");
	v = (uint64_t)-1;
	memcpy(o + 16, &v, 8);
	CHECK(rbstr__header(l, o, 40, &s) == -EBADMSG, "a negative length: -EBADMSG");
	flags = l->t_array;
	memcpy(o, &flags, 8);
	CHECK(rbstr__header(l, o, 40, &s) == -EBADMSG, "an Array is no String");
	CHECK(rbstr__header(l, o, 20, &s) == -EINVAL, "20 bytes: too short");
	flags = l->t_string | 31ull << l->str_embed_shift;
	memcpy(o, &flags, 8);
	CHECK(rbstr__header(l, o, 40, &s) == -EBADMSG, "an embedded length past the slot: -EBADMSG");
	flags = l->t_array | l->ary_embed_flag | 2ull << l->ary_embed_shift;
	memcpy(o, &flags, 8);
	CHECK(!rbary__header(l, o, 40, &a) && a.len == 2 && !a.ptr && a.at == 16,
	      "an embedded Array of 2");
	flags = l->t_array;
	memcpy(o, &flags, 8);
	v = 0;
	memcpy(o + 32, &v, 8);
	v = 3;
	memcpy(o + 16, &v, 8);
	CHECK(rbary__header(l, o, 40, &a) == -EBADMSG, "a heap Array of 3 without a pointer: -EBADMSG");

	CHECK(rbstr__utf8((const uint8_t *)"abc", 3, out, sizeof(out), &cut) == 3 &&
		      !strcmp(out, "abc") && !cut,
	      "ASCII as is");
	rbstr__utf8((const uint8_t *)"a\0b\xff\xc3\xa9", 6, out, sizeof(out), &cut);
	CHECK(!strcmp(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xc3\xa9") && !cut,
	      "NUL and a stray byte -> U+FFFD, valid UTF-8 kept");
	rbstr__utf8((const uint8_t *)"\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf", 9, out, sizeof(out),
		    &cut);
	{
		bool all = strlen(out) == 27;

		for (int i = 0; all && i < 27; i += 3)
			all = !memcmp(out + i, "\xef\xbf\xbd", 3);
		CHECK(all, "a surrogate, a code point past U+10FFFF, an overlong form: each byte "
			   "-> U+FFFD (9)");
	}
	CHECK(!strchr(out, 0xed) && !strchr(out, 0xf4) && !strchr(out, 0xc0),
	      "... none of their bytes is left");
	CHECK(rbstr__utf8((const uint8_t *)"\xc3\xa9\xc3\xa9", 4, out, 4, &cut) == 2 && cut &&
		      !strcmp(out, "\xc3\xa9"),
	      "cap 4: one whole character, cut");
}

int main(int argc, char **argv)
{
	static const struct test_scenario t[] = {
		{ "merge", t_merge },
		{ "display", t_display },
		{ "objects", t_objects },
	};

	return test_scenarios_main(t, sizeof(t) / sizeof(t[0]), argc, argv);
}
