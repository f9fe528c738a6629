/* test_rbline: Ruby's succinct-index line lookup (sampler/ruby/rbline.c).
 *
 * Synthetic: tables built the way Ruby's succ_index_table_create builds
 * them (written again here from its description), for position sets of
 * every size class (under 54 positions, exactly 54, one and several
 * 512-position blocks), must answer each position with a linear scan's
 * rank; forged and inconsistent tables are refused.
 * The oracle: tests/helpers/rb_lines.rb compiles Ruby's whole standard
 * library (/usr/lib/ruby/3.1.0) and prints each iseq's instructions with
 * the line RubyVM::InstructionSequence#to_a gives them. We read every
 * iseq from the live process (rbcodes__get: body, insns_info, succ
 * index) and require, for every instruction, the line of its start and
 * the line of a pc just past it (Ruby's calc_pos: pc - 1) to equal
 * to_a's. As a check that the oracle can fail, rbspy's rule (the last
 * entry's line) is counted too. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler/ruby/rbcode.h"
#include "sampler/ruby/rblayout.h"
#include "sampler/ruby/rbline.h"
#include "tests/spawn.h"
#include "tests/test.h"
#include "tests/unit/test_ruby.h"

/* ---- synthetic ---- */

/* Ruby's succ_index_table_create (iseq.c), from its description. */
static size_t build(const int *pos, int n, int size, uint8_t *out)
{
	size_t len = rbline__succ_bytes((uint32_t)size);
	int imm = (size < 54 ? size + 8 : 54) / 9, blocks = size < 54 ? 0 : (size - 54 + 511) / 512;
	int r = 0;

	memset(out, 0, len);
	for (int j = 0; j < imm; j++) {
		uint64_t w = 0;

		for (int i = 0; i < 9; i++) {
			if (r < n && pos[r] == j * 9 + i)
				r++;
			w |= (uint64_t)r << (7 * i);
		}
		memcpy(out + 8 * j, &w, 8);
	}
	for (int k = 0; k < blocks; k++) {
		uint8_t *b = out + 48 + 80 * k;
		uint64_t small = 0;
		uint32_t rank = (uint32_t)r;
		int srank = 0;

		memcpy(b, &rank, 4);
		for (int j = 0; j < 8; j++) {
			uint64_t bits = 0;

			if (j)
				small |= (uint64_t)srank << (9 * (j - 1));
			for (int i = 0; i < 64; i++)
				if (r < n && pos[r] == k * 512 + j * 64 + i + 54) {
					bits |= 1ull << i;
					r++;
				}
			memcpy(b + 16 + 8 * j, &bits, 8);
			srank += __builtin_popcountll(bits);
		}
		memcpy(b + 8, &small, 8);
	}
	return len;
}

static void t_synthetic(const char *dir)
{
	static const int sizes[] = { 1, 2, 9, 53, 54, 55, 100, 565, 566, 567, 1500, 5000 };
	static int pos[5000];
	static uint8_t ent[5000 * 12], succ[65536];

	(void)dir;
	srand(7);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int size = sizes[s], bad = 0, n = 0;
		struct rbline *t;
		size_t len;

		/* Position 0 always starts an entry; then one in three. */
		for (int p = 0; p < size; p++)
			if (!p || rand() % 3 == 0) {
				int32_t line = 1000 + n;

				pos[n] = p;
				memset(ent + 12 * n, 0xee, 12);
				memcpy(ent + 12 * n, &line, 4);
				n++;
			}
		len = build(pos, n, size, succ);
		t = rbline__new(ent, (uint32_t)n, 12, 0, succ, len, (uint32_t)size);
		for (int p = 0, r = 0; t && p < size; p++) {
			int32_t line = 0;

			while (r < n && pos[r] <= p)
				r++;
			bad += rbline__at(t, (uint32_t)p, &line) || line != 1000 + r - 1;
		}
		CHECK(t && !bad, "size %d, %d entries, %zu index bytes: every position's entry", size,
		      n, len);
		if (t) {
			int32_t line;

			CHECK(rbline__at(t, (uint32_t)size, &line) == -ERANGE, "size %d: past the end: -ERANGE",
			      size);
		}
		rbline__free(t);
	}
	{
		int32_t one = 42, line = 0;
		struct rbline *t = rbline__new((uint8_t *)&one, 1, 4, 0, NULL, 0, 10);

		CHECK(t && !rbline__at(t, 9, &line) && line == 42, "one entry: no index, its line");
		rbline__free(t);
		t = rbline__new(NULL, 0, 12, 0, NULL, 0, 10);
		CHECK(t && rbline__at(t, 0, &line) == -ENOENT, "no entries: -ENOENT");
		rbline__free(t);
	}
	errno = 0;
	CHECK(!rbline__new(ent, 3, 12, 0, succ, 7, 100) && errno == EINVAL,
	      "an index of the wrong size: EINVAL");
	CHECK(!rbline__new(ent, 3, 12, 10, succ, rbline__succ_bytes(100), 100) && errno == EINVAL,
	      "a line field past the entry: EINVAL");
	CHECK(!rbline__new(ent, 200, 12, 0, succ, rbline__succ_bytes(100), 100) && errno == EINVAL,
	      "more entries than positions: EINVAL");
	CHECK(!rbline__new(ent, 3, 12, 0, succ, 0, RBLINE_MAX_ISEQ + 1) && errno == EFBIG,
	      "an iseq over the cap: EFBIG");
	{
		/* A forged index: rank 0 at position 0, rank past n elsewhere. */
		uint64_t w = 0x7full << 7;
		int32_t line;
		struct rbline *t = rbline__new(ent, 3, 12, 0, (uint8_t *)&w, 8, 5);

		CHECK(t && rbline__at(t, 0, &line) == -EBADMSG && rbline__at(t, 1, &line) == -EBADMSG,
		      "ranks 0 and 127 of 3 entries: -EBADMSG");
		rbline__free(t);
	}
	CHECK(rbline__pos(0) == 0 && rbline__pos(5) == 4, "calc_pos: pc - 1, except at 0");
}

/* ---- the oracle ---- */

static void t_oracle(const char *dir)
{
#if defined(__SANITIZE_ADDRESS__)
	char *argv[] = { RUBY, "tests/helpers/rb_lines.rb", "120", NULL };
#else
	char *argv[] = { RUBY, "tests/helpers/rb_lines.rb", NULL };
#endif
	const struct rblayout *l = rblayout__get(3, 1);
	struct rbcodes *codes = rbcodes__new(64u << 20);
	int in = -1, out = -1, err, files = 0, skipped = 0;
	long iseqs = 0, insns = 0, zero = 0, bad_start = 0, bad_pc = 0, bad_size = 0, unread = 0, rbspy = 0;
	size_t cap = 1 << 22;
	char *line = malloc(cap);
	pid_t pid = 0;
	FILE *f = NULL;

	(void)dir;
	if (!line || !codes) {
		CHECK(0, "memory");
		return;
	}
	err = test_spawn(RUBY, argv, NULL, &pid, &in, &out);
	f = err ? NULL : fdopen(out, "r");
	CHECK(!err && f, "%s %s runs", RUBY, argv[1]);
	while (!err && f && fgets(line, (int)cap, f)) {
		unsigned long wrap, iseq, body;
		const struct rbcode *rc;
		char *s, *tok;
		int size, n, prev = -2;

		if (sscanf(line, "files %d skipped %d", &files, &skipped) == 2)
			break;
		if (sscanf(line, "iseq %lx %d %n", &wrap, &size, &n) != 2)
			continue;
		iseqs++;
		/* The wrapper's DATA_PTR (RTypedData.data, +32) is the iseq. */
		if (process_vm_readv(pid, &(struct iovec){ &iseq, 8 }, 1,
				     &(struct iovec){ (void *)(wrap + 32), 8 }, 1, 0) != 8 ||
		    process_vm_readv(pid, &(struct iovec){ &body, 8 }, 1,
				     &(struct iovec){ (void *)(iseq + 16), 8 }, 1, 0) != 8 ||
		    rbcodes__get(codes, pid, l, 0, iseq, rb_stamp(body), &rc) || !rc->lines) {
			unread++;
			continue;
		}
		bad_size += rc->lines->iseq_size != (uint32_t)size;
		for (s = line + n; (tok = strsep(&s, " \n"));) {
			int p, want, len, tok_want;
			int32_t got = 0, pcl = 0;

			if (sscanf(tok, "%d:%d:%d", &p, &want, &len) != 3)
				continue;
			tok_want = want;
			insns++;
			if (want < 0)
				continue; /* before to_a's first line */
			rbspy += rc->lines->line[rc->lines->n - 1] != want;
			err = rbline__at(rc->lines, (uint32_t)p, &got);
			/* An entry of line 0 (ends of ensure and rescue clauses):
			 * Ruby's rule, and caller_locations, say 0; to_a pushes
			 * no line for it and keeps the one before. */
			if (!err && got == 0 && want == prev) {
				zero++;
				want = 0;
			}
			if ((err || got != want) && bad_start < 8)
				printf("  iseq %#lx (%s %s:%d) position %d: ours %d, to_a %d\n", iseq,
				       rc->label, rc->path, rc->first_lineno, p, got, want);
			bad_start += err || got != want;
			bad_pc += rbcode__line(rc, (uint32_t)(rc->iseq_encoded + 8 * (uint64_t)(p + len)),
					       &pcl) ||
				  pcl != want;
			err = 0;
			prev = tok_want;
		}
	}
	printf("  %d files (%d skipped), %ld iseqs (%ld unread), %ld instructions (%ld of line 0); "
	       "mismatches: start %ld, pc %ld; rbspy's rule %ld (%.1f%%)\n",
	       files, skipped, iseqs, unread, insns, zero, bad_start, bad_pc, rbspy,
	       insns ? 100.0 * rbspy / insns : 0);
	CHECK(files > 100 && iseqs > 1000 && !unread && !bad_size,
	      "the standard library: %d files, %ld iseqs, every one read, sizes agree", files, iseqs);
	CHECK(insns > 10000 && !bad_start && !bad_pc,
	      "%ld instructions: every start and every pc past it has to_a's line", insns);
	CHECK(rbspy > insns / 2, "the oracle can fail: the last entry's line (rbspy) is wrong for %ld",
	      rbspy);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (f)
		fclose(f);
	if (in >= 0)
		close(in);
	rbcodes__free(codes);
	free(line);
}

static const struct test_scenario scenarios[] = {
	{ "synthetic", t_synthetic },
	{ "oracle", t_oracle },
};

RUBY_SCENARIOS_MAIN(scenarios)
