/*
 * demangle.c - libiberty's demangler, and pprof's short form made from
 * its output (demangle.h).
 */
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "store/util/demangle.h"

/* A symbol longer than this is shown as it is: demangling cost grows with
 * it, and no reader wants a 4 KB frame name anyway. */
#define DEMANGLE_MAX_IN 4096

bool demangle__looks_mangled(const char *name)
{
	return name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* Copies s into out without template argument lists: "<...>" nested,
 * except the angle brackets of an operator's own name (operator<,
 * operator<<=, operator->, ...). Returns the length written. */
static size_t drop_templates(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	int depth = 0;

	for (const char *p = s; *p && n + 1 < cap; p++) {
		if (!depth && p - s >= 8 && !strncmp(p - 8, "operator", 8)) {
			/* copy the operator's symbol as is */
			while ((*p == '<' || *p == '>' || *p == '=' || *p == '-') && n + 1 < cap)
				out[n++] = *p++;
			if (!*p)
				break;
		}
		if (*p == '<') {
			/* libiberty writes "operator< <T>": the space goes too */
			if (!depth++ && n && out[n - 1] == ' ')
				n--;
			continue;
		}
		if (*p == '>' && depth) {
			depth--;
			continue;
		}
		if (!depth)
			out[n++] = *p;
	}
	out[n] = 0;
	return n;
}

size_t demangle__name(const char *name, bool full, char *out, size_t cap)
{
	char *d;
	size_t n;

	if (!cap || !demangle__looks_mangled(name) || strnlen(name, DEMANGLE_MAX_IN) >= DEMANGLE_MAX_IN)
		return 0;
	d = cplus_demangle(name, DMGL_ANSI | DMGL_AUTO | (full ? DMGL_PARAMS : 0));
	if (!d)
		return 0;
	if (full) {
		n = strlen(d);
		if (n >= cap)
			n = cap - 1;
		memcpy(out, d, n);
		out[n] = 0;
	} else {
		n = drop_templates(d, out, cap);
	}
	free(d);
	return n;
}
