/* test_kallsyms: the compressed kernel symbol table (sampler/symbols/kallsyms.h)
 * against a plain one. A generated listing of 1,000 text symbols (eight
 * blocks), out of order, with data symbols, aliases and module suffixes:
 * every address at, inside and before a symbol names what a sorted plain
 * table names; names stay valid and equal across lookups in any order; a
 * symbol 20 GiB below the rest is left out, not the rest. Then the
 * host's own /proc/kallsyms, every symbol looked up by its address. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/symbols/kallsyms.h"
#include "tests/test.h"

#define N 1000
#define BASE 0xffffffff81000000ULL

struct plain {
	unsigned long long addr;
	int seq; /* place in the listing */
	char name[48];
};

static int plain_cmp(const void *a, const void *b)
{
	const struct plain *x = a, *y = b;

	if (x->addr != y->addr)
		return (x->addr > y->addr) - (x->addr < y->addr);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The plain answer: the last symbol at or below addr, of aliases the one
 * listed last (t sorted by address, then listing order). */
static const char *plain_lookup(const struct plain *t, size_t n, unsigned long long addr)
{
	const char *r = NULL;

	for (size_t i = 0; i < n && t[i].addr <= addr; i++)
		r = t[i].name;
	return r;
}

static void generated(void)
{
	static struct plain t[N];
	char *buf = NULL;
	size_t len = 0, bad = 0, checked = 0;
	FILE *f = open_memstream(&buf, &len);
	struct kallsyms *k;
	const char *first[N];

	for (int i = 0; i < N; i++) {
		/* every seventh an alias of the one before it */
		t[i].addr = i % 7 == 3 ? t[i - 1].addr : BASE + (unsigned long long)i * 0x40;
		snprintf(t[i].name, sizeof(t[i].name), "%s_%d_%.*s", i % 5 ? "do_work" : "__x64_sys", i,
			 i % 13, "abcdefghijklmnop");
	}
	/* listed out of order: the second half first, as modules follow the
	 * core kernel; data symbols between */
	for (int j = 0; j < N; j++) {
		int i = (j + N / 2) % N;

		t[i].seq = j;
		fprintf(f, "%016llx %c %s%s\n", t[i].addr, "tTwW"[i % 4], t[i].name,
			i % 11 ? "" : "\t[some_mod]");
		fprintf(f, "%016llx d data_%d\n", t[i].addr + 8, i);
	}
	fprintf(f, "%016llx T far_away\n", BASE - (5ULL << 32));
	fclose(f);
	f = fmemopen(buf, len, "r");
	k = f ? kallsyms__read(f) : NULL;
	if (f)
		fclose(f);
	CHECK(k != NULL, "read a generated listing");
	if (!k) {
		free(buf);
		return;
	}
	CHECK(kallsyms__count(k) == N, "%d text symbols held, the far one left out (%zu)", N,
	      kallsyms__count(k));
	CHECK(kallsyms__lookup(k, BASE - 1) == NULL, "below the first symbol: none");
	CHECK(kallsyms__lookup(k, BASE - (5ULL << 32)) == NULL, "the far symbol: not named");
	qsort(t, N, sizeof(*t), plain_cmp);
	/* backwards, then forwards: the block cache and the name cache both
	 * see misses and hits */
	for (int i = N - 1; i >= 0; i--) {
		unsigned long long probes[3] = { t[i].addr, t[i].addr + 0x3f, t[i].addr + 0x10 };

		for (int p = 0; p < 3; p++) {
			const char *want = plain_lookup(t, N, probes[p]), *got = kallsyms__lookup(k, probes[p]);

			checked++;
			if (!got || !want || strcmp(got, want)) {
				if (bad++ < 5)
					printf("  %#llx: want %s, got %s\n", probes[p], want ? want : "(none)",
					       got ? got : "(none)");
			}
		}
		first[i] = kallsyms__lookup(k, t[i].addr);
	}
	CHECK(!bad, "%zu addresses named as the plain table names them (%zu wrong)", checked, bad);
	bad = 0;
	for (int i = 0; i < N; i++)
		bad += kallsyms__lookup(k, t[i].addr) != first[i];
	CHECK(!bad, "a name looked up again is the same string (%zu differ)", bad);
	kallsyms__free(k);
	free(buf);
}

/* The whole of /proc/kallsyms, read once: the table under test and the
 * plain parse must see one listing, because a BPF program loaded by a test
 * running beside this one adds symbols between two reads. */
static char *slurp_kallsyms(size_t *len)
{
	FILE *in = fopen("/proc/kallsyms", "re"), *out;
	char *buf = NULL, chunk[65536];
	size_t n;

	*len = 0;
	if (!in)
		return NULL;
	out = open_memstream(&buf, len);
	if (out) {
		while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
			fwrite(chunk, 1, n, out);
		fclose(out);
	}
	fclose(in);
	return buf;
}

static void host(void)
{
	size_t len;
	char *copy = slurp_kallsyms(&len);
	FILE *kf = copy ? fmemopen(copy, len, "r") : NULL;
	struct kallsyms *k = kf ? kallsyms__read(kf) : NULL;
	FILE *f = copy ? fmemopen(copy, len, "r") : NULL;
	struct plain *t = NULL;
	size_t n = 0, cap = 0, checked = 0, bad = 0;
	char line[512];

	if (kf)
		fclose(kf);
	CHECK(f && k, "the host's /proc/kallsyms, read once (%zu bytes)", len);
	if (!f || !k)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char ty, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &ty, name) != 3 || !a || !strchr("tTwW", ty))
			continue;
		if (n == cap) {
			struct plain *m = realloc(t, (cap = cap ? 2 * cap : 4096) * sizeof(*t));

			if (!m)
				goto out;
			t = m;
		}
		t[n].addr = a;
		t[n].seq = (int)n;
		snprintf(t[n].name, sizeof(t[n].name), "%.47s", name);
		n++;
	}
	qsort(t, n, sizeof(*t), plain_cmp);
	/* a symbol no other text symbol shares an address with is named by
	 * its own name (names cut at 47 here are compared as far as kept) */
	for (size_t i = 0; i < n; i++) {
		if ((i && t[i - 1].addr == t[i].addr) || (i + 1 < n && t[i + 1].addr == t[i].addr))
			continue;
		const char *got = kallsyms__lookup(k, t[i].addr);

		checked++;
		if ((!got || strncmp(got, t[i].name, 47)) && bad++ < 5)
			printf("  %#llx: want %s, got %s\n", t[i].addr, t[i].name, got ? got : "(none)");
	}
	CHECK(checked > 1000 && !bad, "%zu kernel symbols looked up by address, %zu misnamed", checked, bad);
	{
		/* the loader by path reads the same file (a later listing) */
		struct kallsyms *byp = kallsyms__load("/proc/kallsyms");

		CHECK(byp && kallsyms__count(byp) > 1000, "kallsyms__load of /proc/kallsyms: %zu symbols",
		      byp ? kallsyms__count(byp) : 0);
		kallsyms__free(byp);
	}
out:
	if (f)
		fclose(f);
	free(t);
	free(copy);
	kallsyms__free(k);
}

int main(void)
{
	generated();
	host();
	return test_done();
}
