/*
 * scrape_target.c - "[job=NAME@]URL" to a target. The URL is parsed by
 * libcurl's URL API, the same parser that later fetches it, so what we
 * accept is exactly what curl will request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/http/curl_lazy.h"

#include "sampler/scrape/scrape.h"

#define JOB_MAX 128

void scrape_target__fini(struct scrape_target *t)
{
	if (!t)
		return;
	free(t->job);
	free(t->instance);
	free(t->base);
	memset(t, 0, sizeof(*t));
}

int scrape_target__parse(const char *spec, struct scrape_target *t, char *err, size_t errsz)
{
	const char *url = spec;
	char *job = NULL, *scheme = NULL, *host = NULL, *port = NULL, *full = NULL;
	CURLU *u = NULL;
	size_t n;
	int rc = -EINVAL;

	memset(t, 0, sizeof(*t));
	/* Before any exit through out: its curl_free calls need libcurl. */
	if (curl_lazy__load()) {
		snprintf(err, errsz, "libcurl cannot be loaded");
		return -ELIBACC;
	}
	if (!strncmp(spec, "job=", 4)) {
		const char *at = strchr(spec + 4, '@');

		if (!at) {
			snprintf(err, errsz, "job=NAME must end with '@' before the URL");
			goto out;
		}
		n = (size_t)(at - (spec + 4));
		if (!n || n > JOB_MAX) {
			snprintf(err, errsz, "job name must be 1 to %d bytes", JOB_MAX);
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			if (spec[4 + i] < 0x21 || spec[4 + i] > 0x7e) {
				snprintf(err, errsz, "job name must be printable ASCII without spaces");
				goto out;
			}
		job = strndup(spec + 4, n);
		if (!job)
			goto nomem;
		url = at + 1;
	}
	/* curl would guess a scheme for "host:port"; a typo should not
	 * become a plain-text request to somewhere else. */
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		snprintf(err, errsz, "URL must start with http:// or https://");
		goto out;
	}
	u = curl_url();
	if (!u)
		goto nomem;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		snprintf(err, errsz, "not a valid URL");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
		snprintf(err, errsz, "URL has no host");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		snprintf(err, errsz, "URL has no port");
		goto out;
	}
	/* The answer is fetched from base + "/heap" etc.: no query or
	 * fragment may sit in between. */
	{
		char *q = NULL, *f = NULL;
		bool extra = curl_url_get(u, CURLUPART_QUERY, &q, 0) == CURLUE_OK ||
			     curl_url_get(u, CURLUPART_FRAGMENT, &f, 0) == CURLUE_OK;

		curl_free(q);
		curl_free(f);
		if (extra) {
			snprintf(err, errsz, "URL must not have a query or fragment");
			goto out;
		}
	}
	if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK) {
		snprintf(err, errsz, "not a valid URL");
		goto out;
	}
	n = strlen(full);
	while (n && full[n - 1] == '/')
		n--;
	t->base = strndup(full, n);
	if (!t->base || asprintf(&t->instance, "%s:%s", host, port) < 0) {
		t->instance = NULL;
		goto nomem;
	}
	t->job = job ? job : strdup(t->instance);
	job = NULL;
	if (!t->job)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	snprintf(err, errsz, "out of memory");
	rc = -ENOMEM;
out:
	if (rc)
		scrape_target__fini(t);
	free(job);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(full);
	curl_url_cleanup(u);
	return rc;
}
