/* test_prom: the Prometheus text writer - exact family and sample lines,
 * escaping of label values and HELP text as the text format requires. */
#include <string.h>

#include "store/util/prom.h"
#include "tests/test.h"

static void expect(struct buf *b, const char *want, const char *what)
{
	CHECK(!b->err && b->data && !strcmp(b->data, want), "%s: got [%s] want [%s]", what,
	      b->data ? b->data : "(null)", want);
	buf__free(b);
}

int main(void)
{
	struct buf b = { 0 };
	struct prom_label l[2] = { { "kind", "a\"b\\c\nd" }, { "le", "+Inf" } };

	prom__counter(&b, "x_total", "Things.", 42);
	expect(&b, "# HELP x_total Things.\n# TYPE x_total counter\nx_total 42\n", "counter");

	prom__gauge(&b, "g", "Help with \\ and\nnewline, \"quotes\" kept.", UINT64_MAX);
	expect(&b, "# HELP g Help with \\\\ and\\nnewline, \"quotes\" kept.\n# TYPE g gauge\n"
		   "g 18446744073709551615\n", "gauge, HELP escaped");

	prom__u64(&b, "h_bucket", l, 2, 7);
	expect(&b, "h_bucket{kind=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 7\n", "label values escaped");

	prom__family(&b, "h", PROM_HISTOGRAM, "H.");
	prom__f64(&b, "h_sum", l + 1, 1, 0.25);
	prom__i64(&b, "n", NULL, 0, -3);
	prom__u64_by(&b, "r_total", "op", "read", 0);
	expect(&b, "# HELP h H.\n# TYPE h histogram\nh_sum{le=\"+Inf\"} 0.250000\nn -3\n"
		   "r_total{op=\"read\"} 0\n", "histogram header, f64, i64, one label");

	return test_done();
}
