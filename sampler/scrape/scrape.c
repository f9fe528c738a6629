/*
 * scrape.c - the scrape thread: every interval, one transfer per (target,
 * kind), all in flight together on one curl multi handle, so a target
 * that hangs costs its own transfers their timeout and nobody else
 * anything. Each transfer's timeout is below the interval, so a round is
 * over before the next one starts and a target is never asked twice at
 * once. A finished transfer is decoded, turned into a delta where Go
 * counts since process start, and appended through the owner's callback.
 *
 * Why libcurl: an HTTP/1.1 client with TLS, redirects, chunked transfer,
 * gzip content encoding, connection reuse and timeouts is far more code
 * than this file, and each of those is where hand-written clients break.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/version.h"
#include "sampler/http/curl_lazy.h"

#include "sampler/scrape/scrape.h"
#include "store/profile/pprof.h"
#include "store/util/prom.h"
#include "store/util/util.h"

#define SCRAPE_MAX_BODY (64ULL << 20)
#define SCRAPE_MAX_LABELS 64

const char *const scrape_kind_path[SK__N] = { "heap", "allocs", "goroutine", "mutex", "block" };
const char *const scrape_kind_type[SK__N] = { "heap", "alloc", "goroutine", "mutex", "block" };

enum scrape_fail { SF_CONNECT, SF_TIMEOUT, SF_HTTP, SF_TOO_LARGE, SF_BAD_PROFILE, SF_TRANSFER,
		   SF_STORE, SF__N };
static const char *const fail_name[SF__N] = { "connect", "timeout", "http_status", "too_large",
					      "bad_profile", "transfer", "store" };

/* One (target, kind): its transfer, its delta state and its figures. */
struct sjob {
	struct scraper *s;
	const struct scrape_target *t;
	enum scrape_kind kind;
	CURL *easy;
	char *url;
	uint8_t *body;
	size_t len, cap;
	bool too_big, busy;
	struct scrape_delta delta;
	/* figures, under s->mu */
	uint64_t attempts, stored, bytes, restarts, fails[SF__N];
	int up;
	double last_seconds;
	int64_t last_success_s;
};

struct scraper {
	struct scrape_opts o;
	struct scrape_target *targets;
	size_t ntargets;
	struct sjob *jobs;
	size_t njobs;
	CURLM *multi;
	pthread_t thread;
	bool started, curl_inited;
	int stop;
	pthread_mutex_t mu; /* the figures of every job */
};

static size_t on_body(char *ptr, size_t size, size_t n, void *ctx)
{
	struct sjob *j = ctx;
	size_t add = size * n;

	if (j->len + add > j->s->o.max_body) {
		j->too_big = true;
		return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
	}
	if (j->len + add > j->cap) {
		size_t nc = j->cap ? j->cap : 1 << 16;
		uint8_t *nb;

		while (nc < j->len + add)
			nc *= 2;
		nb = realloc(j->body, nc);
		if (!nb)
			return 0;
		j->body = nb;
		j->cap = nc;
	}
	memcpy(j->body + j->len, ptr, add);
	j->len += add;
	return add;
}

static int job_init(struct scraper *s, struct sjob *j)
{
	/* A transfer ends before the next round; at least 1 s, at most 30 s. */
	long tmo = (long)(s->o.interval_ns / 1000000 * 8 / 10);

	if (tmo < 1000)
		tmo = 1000;
	if (tmo > 30000)
		tmo = 30000;
	if (asprintf(&j->url, "%s/%s", j->t->base, scrape_kind_path[j->kind]) < 0) {
		j->url = NULL;
		return -ENOMEM;
	}
	j->easy = curl_easy_init();
	if (!j->easy)
		return -ENOMEM;
	if (curl_easy_setopt(j->easy, CURLOPT_URL, j->url) ||
	    curl_easy_setopt(j->easy, CURLOPT_PRIVATE, j) ||
	    curl_easy_setopt(j->easy, CURLOPT_WRITEFUNCTION, on_body) ||
	    curl_easy_setopt(j->easy, CURLOPT_WRITEDATA, j) ||
	    curl_easy_setopt(j->easy, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(j->easy, CURLOPT_TIMEOUT_MS, tmo) ||
	    curl_easy_setopt(j->easy, CURLOPT_CONNECTTIMEOUT_MS, tmo < 5000 ? tmo : 5000L) ||
	    curl_easy_setopt(j->easy, CURLOPT_ACCEPT_ENCODING, "") ||
	    curl_easy_setopt(j->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s->o.max_body) ||
	    curl_easy_setopt(j->easy, CURLOPT_FOLLOWLOCATION, 1L) ||
	    curl_easy_setopt(j->easy, CURLOPT_MAXREDIRS, 5L) ||
	    curl_easy_setopt(j->easy, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    curl_easy_setopt(j->easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") ||
	    curl_easy_setopt(j->easy, CURLOPT_USERAGENT, "proffs/" PROFFS_VERSION))
		return -EINVAL;
	return 0;
}

static void fail(struct sjob *j, enum scrape_fail why, const char *detail)
{
	pthread_mutex_lock(&j->s->mu);
	j->fails[why]++;
	j->up = 0;
	pthread_mutex_unlock(&j->s->mu);
	pr_debug("scrape: %s: %s (%s)", j->url, fail_name[why], detail);
}

/* Labels of every profile of target t: job, instance, then --label (a
 * --label job=... or instance=... does not override the target's own). */
static size_t labels_of(const struct scraper *s, const struct scrape_target *t,
			struct store_label *l)
{
	size_t n = 0;

	l[n++] = (struct store_label){ "job", t->job };
	l[n++] = (struct store_label){ "instance", t->instance };
	for (size_t i = 0; i < s->o.nextra && n < SCRAPE_MAX_LABELS; i++)
		if (strcmp(s->o.extra[i].name, "job") && strcmp(s->o.extra[i].name, "instance"))
			l[n++] = s->o.extra[i];
	return n;
}

/* A finished transfer: check, decode, delta, store, count. */
static void job_done(struct sjob *j, CURLcode res)
{
	struct scraper *s = j->s;
	struct store_label labels[SCRAPE_MAX_LABELS];
	struct profile *p = NULL, *d = NULL;
	int64_t t = now_ns(), start = t, dur = 0;
	long status = 0;
	curl_off_t us = 0;
	char err[256];
	int rc;

	/* The transfer's own time, not the wait for this thread. */
	curl_easy_getinfo(j->easy, CURLINFO_TOTAL_TIME_T, &us);
	pthread_mutex_lock(&s->mu);
	j->attempts++;
	j->bytes += j->len;
	j->last_seconds = (double)us / 1e6;
	pthread_mutex_unlock(&s->mu);
	if (res != CURLE_OK) {
		enum scrape_fail why = SF_TRANSFER;

		if (j->too_big || res == CURLE_FILESIZE_EXCEEDED)
			why = SF_TOO_LARGE;
		else if (res == CURLE_OPERATION_TIMEDOUT)
			why = SF_TIMEOUT;
		else if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST)
			why = SF_CONNECT;
		fail(j, why, curl_easy_strerror(res));
		return;
	}
	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		snprintf(err, sizeof(err), "HTTP %ld", status);
		fail(j, SF_HTTP, err);
		return;
	}
	if (pprof__decode_max(j->body, j->len, 4 * s->o.max_body, &p, err, sizeof(err)) ||
	    !p->nvalues) {
		fail(j, SF_BAD_PROFILE, p ? "no sample types" : err);
		profile__free(p);
		return;
	}
	if (scrape_kind_cumulative(j->kind)) {
		rc = scrape_delta__next(&j->delta, p, t, &d, &start, &dur);
		p = NULL; /* taken over */
		if (rc == -EINVAL)
			pr_warn("scrape: %s: value types changed; new baseline", j->url);
		if (rc == -ENOMEM) {
			fail(j, SF_STORE, "out of memory");
			return;
		}
	} else {
		d = p;
		p = NULL;
	}
	/* A baseline or an empty profile is a success with nothing to add. */
	if (d && d->nsamples) {
		rc = s->o.append(s->o.append_ctx, scrape_kind_type[j->kind], start, dur, d, labels,
				 labels_of(s, j->t, labels));
		if (rc) {
			profile__free(d);
			fail(j, SF_STORE, strerror(-rc));
			return;
		}
	}
	pthread_mutex_lock(&s->mu);
	j->up = 1;
	j->last_success_s = t / 1000000000;
	j->stored += d && d->nsamples;
	j->restarts = j->delta.restarts;
	pthread_mutex_unlock(&s->mu);
	profile__free(d);
}

static void round_start(struct scraper *s)
{
	for (size_t i = 0; i < s->njobs; i++) {
		struct sjob *j = &s->jobs[i];

		if (j->busy) /* cannot happen with timeout < interval; be safe */
			continue;
		j->len = 0;
		j->too_big = false;
		if (curl_multi_add_handle(s->multi, j->easy) != CURLM_OK) {
			fail(j, SF_TRANSFER, "cannot start the transfer");
			continue;
		}
		j->busy = true;
	}
}

static void reap(struct scraper *s)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(s->multi, &left))) {
		struct sjob *j = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		/* Stopping: answers not yet stored are dropped (scraper__free
		 * removes their handles), so SIGTERM is not held up by them. */
		if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			return;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		CURLcode res = m->data.result;

		curl_multi_remove_handle(s->multi, m->easy_handle);
		if (!j)
			continue;
		j->busy = false;
		job_done(j, res);
		/* A large answer's buffer is not kept for the next round. */
		if (j->cap > (1 << 20)) {
			free(j->body);
			j->body = NULL;
			j->cap = 0;
		}
	}
}

static void *scrape_thread(void *arg)
{
	struct scraper *s = arg;
	int64_t next = now_mono_ns();

	/* its CPU shows apart in top -H and /proc/PID/task */
	pthread_setname_np(pthread_self(), "proffs-scrape");

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		int64_t now = now_mono_ns(), wait_ms;
		int running = 0;

		if (now >= next) {
			round_start(s);
			next += s->o.interval_ns;
			if (next <= now) /* we fell behind (suspend): skip, do not burst */
				next = now + s->o.interval_ns;
		}
		curl_multi_perform(s->multi, &running);
		reap(s);
		wait_ms = (next - now_mono_ns()) / 1000000;
		if (wait_ms > 100)
			wait_ms = 100;
		if (wait_ms < 1)
			wait_ms = 1;
		curl_multi_poll(s->multi, NULL, 0, (int)wait_ms, NULL);
	}
	return NULL;
}

struct scraper *scraper__new(const struct scrape_opts *o)
{
	struct scraper *s = calloc(1, sizeof(*s));
	int err = ENOMEM;

	if (!s) {
		for (size_t i = 0; i < o->ntargets; i++)
			scrape_target__fini(&o->targets[i]);
		free(o->targets);
		errno = ENOMEM;
		return NULL;
	}
	s->o = *o;
	s->targets = o->targets;
	s->ntargets = o->ntargets;
	if (!s->o.max_body)
		s->o.max_body = SCRAPE_MAX_BODY;
	pthread_mutex_init(&s->mu, NULL);
	if (curl_lazy__load()) {
		err = ELIBACC;
		goto fail;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		err = EIO;
		goto fail;
	}
	s->curl_inited = true;
	s->multi = curl_multi_init();
	s->jobs = calloc(s->ntargets * SK__N + 1, sizeof(*s->jobs));
	if (!s->multi || !s->jobs)
		goto fail;
	for (size_t i = 0; i < s->ntargets; i++)
		for (int k = 0; k < SK__N; k++) {
			struct sjob *j = &s->jobs[s->njobs++];

			j->s = s;
			j->t = &s->targets[i];
			j->kind = k;
			if ((err = -job_init(s, j)))
				goto fail;
		}
	return s;
fail:
	scraper__free(s);
	errno = err;
	return NULL;
}

int scraper__start(struct scraper *s)
{
	int err = pthread_create(&s->thread, NULL, scrape_thread, s);

	if (err)
		return -err;
	s->started = true;
	return 0;
}

void scraper__free(struct scraper *s)
{
	if (!s)
		return;
	if (s->started) {
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		curl_multi_wakeup(s->multi);
		pthread_join(s->thread, NULL);
	}
	for (size_t i = 0; i < s->njobs; i++) {
		struct sjob *j = &s->jobs[i];

		if (j->busy)
			curl_multi_remove_handle(s->multi, j->easy);
		if (j->easy)
			curl_easy_cleanup(j->easy);
		free(j->url);
		free(j->body);
		scrape_delta__fini(&j->delta);
	}
	if (s->multi)
		curl_multi_cleanup(s->multi);
	if (s->curl_inited)
		curl_global_cleanup();
	for (size_t i = 0; i < s->ntargets; i++)
		scrape_target__fini(&s->targets[i]);
	free(s->targets);
	free(s->jobs);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* One sample per job of a family: labels job, instance, type (and reason). */
static void put(struct buf *out, const struct sjob *j, const char *name, const char *reason,
		uint64_t u, const double *f)
{
	struct prom_label l[4] = { { "job", j->t->job }, { "instance", j->t->instance },
				   { "type", scrape_kind_type[j->kind] }, { "reason", reason } };

	if (f)
		prom__f64(out, name, l, reason ? 4 : 3, *f);
	else
		prom__u64(out, name, l, reason ? 4 : 3, u);
}

void scraper__metrics(struct scraper *s, struct buf *out)
{
	if (!s || !s->njobs)
		return;
	pthread_mutex_lock(&s->mu);
	prom__family(out, "proffs_scrape_up", PROM_GAUGE,
		     "1 if the last scrape of this target and type succeeded.");
	for (size_t i = 0; i < s->njobs; i++)
		put(out, &s->jobs[i], "proffs_scrape_up", NULL, (uint64_t)s->jobs[i].up, NULL);
	prom__family(out, "proffs_scrape_attempts_total", PROM_COUNTER,
		     "Scrapes that finished, successful or not.");
	for (size_t i = 0; i < s->njobs; i++)
		put(out, &s->jobs[i], "proffs_scrape_attempts_total", NULL, s->jobs[i].attempts, NULL);
	prom__family(out, "proffs_scrape_failures_total", PROM_COUNTER, "Failed scrapes, by reason.");
	for (size_t i = 0; i < s->njobs; i++)
		for (int r = 0; r < SF__N; r++)
			put(out, &s->jobs[i], "proffs_scrape_failures_total", fail_name[r],
			    s->jobs[i].fails[r], NULL);
	prom__family(out, "proffs_scrape_stored_total", PROM_COUNTER,
		     "Profiles (snapshots or deltas) stored.");
	for (size_t i = 0; i < s->njobs; i++)
		put(out, &s->jobs[i], "proffs_scrape_stored_total", NULL, s->jobs[i].stored, NULL);
	prom__family(out, "proffs_scrape_restarts_total", PROM_COUNTER,
		     "Target restarts seen (a cumulative total went down).");
	for (size_t i = 0; i < s->njobs; i++)
		if (scrape_kind_cumulative(s->jobs[i].kind))
			put(out, &s->jobs[i], "proffs_scrape_restarts_total", NULL, s->jobs[i].restarts,
			    NULL);
	prom__family(out, "proffs_scrape_received_bytes_total", PROM_COUNTER,
		     "Answer bytes received (after content decoding).");
	for (size_t i = 0; i < s->njobs; i++)
		put(out, &s->jobs[i], "proffs_scrape_received_bytes_total", NULL, s->jobs[i].bytes, NULL);
	prom__family(out, "proffs_scrape_duration_seconds", PROM_GAUGE,
		     "How long the last transfer took.");
	for (size_t i = 0; i < s->njobs; i++)
		put(out, &s->jobs[i], "proffs_scrape_duration_seconds", NULL, 0,
		    &s->jobs[i].last_seconds);
	prom__family(out, "proffs_scrape_last_success_timestamp_seconds", PROM_GAUGE,
		     "Unix time of the last successful scrape (0 = never).");
	for (size_t i = 0; i < s->njobs; i++)
		put(out, &s->jobs[i], "proffs_scrape_last_success_timestamp_seconds", NULL,
		    (uint64_t)s->jobs[i].last_success_s, NULL);
	pthread_mutex_unlock(&s->mu);
}
