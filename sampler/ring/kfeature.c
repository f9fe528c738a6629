/*
 * kfeature.c - libbpf's messages, the verifier's reasons and the features
 * the kernel took (kfeature.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <bpf/libbpf.h>

#include "sampler/ring/kfeature.h"
#include "store/util/buf.h"
#include "store/util/prom.h"
#include "store/util/util.h"

#define BEGIN_LOG "-- BEGIN PROG LOAD LOG --"
#define END_LOG "-- END PROG LOAD LOG --"
#define MAX_FEATURES 16

/* The last lines of the last refused program's verifier log (a ring). */
static char *tail[KFEATURE_LOG_LINES];
static unsigned tail_next, tail_lines;
static char tail_prog[64];

static struct {
	const char *name;
	bool on;
} features[MAX_FEATURES];
static unsigned nfeatures;

static void tail_clear(void)
{
	for (unsigned i = 0; i < KFEATURE_LOG_LINES; i++) {
		free(tail[i]);
		tail[i] = NULL;
	}
	tail_next = tail_lines = 0;
	tail_prog[0] = 0;
}

static void tail_add(const char *s, size_t n)
{
	char *l = strndup(s, n);

	if (!l)
		return;
	free(tail[tail_next]);
	tail[tail_next] = l;
	tail_next = (tail_next + 1) % KFEATURE_LOG_LINES;
	tail_lines++;
}

/* Keeps the log between the markers; the text before BEGIN names the
 * program ("prog 'on_switch': "). */
static void keep_log(const char *msg, const char *begin)
{
	const char *p = begin + strlen(BEGIN_LOG), *end = strstr(p, END_LOG);
	size_t pre = (size_t)(begin - msg);

	tail_clear();
	if (strncmp(msg, "libbpf: ", 8)) /* tail_prog + 8 is the program */
		return;
	if (pre >= sizeof(tail_prog))
		pre = sizeof(tail_prog) - 1;
	memcpy(tail_prog, msg, pre);
	tail_prog[pre] = 0;
	if (!end)
		end = p + strlen(p);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (n)
			tail_add(p, n);
		p += n + 1;
	}
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL, *p, *begin;

	if (level == LIBBPF_DEBUG && log_level < LOG_DEBUG)
		return 0;
	if (vasprintf(&msg, fmt, ap) < 0)
		return 0;
	begin = strstr(msg, BEGIN_LOG);
	if (begin) {
		keep_log(msg, begin);
		/* The whole log is for whoever asks (PROFFS_DEBUG=1). */
		if (log_level >= LOG_DEBUG)
			log_msg(LOG_DEBUG, "%s", msg);
		else
			pr_warn("%sverifier log of %u lines kept", tail_prog, tail_lines);
		free(msg);
		return 0;
	}
	for (p = msg; *p;) {
		size_t n = strcspn(p, "\n");

		if (n)
			log_msg(level == LIBBPF_WARN ? LOG_WARN : level == LIBBPF_INFO ? LOG_INFO : LOG_DEBUG,
				"%.*s", (int)n, p);
		p += n + (p[n] == '\n');
	}
	free(msg);
	return 0;
}

void kfeature__install(void)
{
	libbpf_set_print(libbpf_log);
}

static void set(const char *name, bool on)
{
	for (unsigned i = 0; i < nfeatures; i++)
		if (!strcmp(features[i].name, name)) {
			features[i].on = on;
			return;
		}
	if (nfeatures < MAX_FEATURES)
		features[nfeatures++] = (typeof(features[0])){ name, on };
}

void kfeature__on(const char *name)
{
	set(name, true);
}

void kfeature__refused(const char *name, const char *missing, int err)
{
	struct utsname u;
	unsigned n = tail_lines < KFEATURE_LOG_LINES ? tail_lines : KFEATURE_LOG_LINES;

	if (uname(&u))
		strcpy(u.release, "?");
	set(name, false);
	pr_err("kernel %s refused %s: %s (%s)%s%.*s%s", u.release, name, missing, strerror(err < 0 ? -err : err),
	       n ? "; the verifier's last lines (" : "", n ? (int)strcspn(tail_prog + 8, ":") : 0, tail_prog + 8,
	       n ? "):" : "");
	for (unsigned i = 0; i < n; i++) {
		unsigned k = (tail_next + KFEATURE_LOG_LINES - n + i) % KFEATURE_LOG_LINES;

		pr_err("  %s", tail[k]);
	}
	tail_clear();
}

bool kfeature__test_refuse(const char *name)
{
	const char *s = getenv("PROFFS_REFUSE");
	size_t n = strlen(name);

	while (s && *s) {
		size_t m = strcspn(s, ",");

		if (m == n && !strncmp(s, name, n))
			return true;
		s += m + (s[m] == ',');
	}
	return false;
}

void kfeature__metrics(struct buf *out)
{
	if (!nfeatures)
		return;
	prom__family(out, "proffs_kernel_feature", PROM_GAUGE,
		     "1 if the kernel loaded the feature's BPF programs, 0 if it refused them.");
	for (unsigned i = 0; i < nfeatures; i++)
		prom__u64_by(out, "proffs_kernel_feature", "feature", features[i].name, features[i].on);
}
