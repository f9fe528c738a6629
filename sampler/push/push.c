/*
 * push.c - the pusher thread: walks the store minute by minute behind a
 * cursor kept in the store, and sends each complete minute's series with
 * libcurl (see push.h for the contract).
 *
 * The cursor is one u64 in the store ("push.cursor": minute / 60 in the
 * high half, the count of that minute's series already accepted in the
 * low half), written after every accepted request. A minute's series are
 * taken in a fixed order (types sorted, series ids ascending) and a
 * complete minute never changes, so "the first k were accepted" stays
 * true across restarts. Requests hold a few MiB of series, so a long
 * minute needs several and a failure costs one request, not the minute.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "sampler/http/curl_lazy.h"
#include "sampler/push/retry_after.h"

#include "sampler/push/push.h"
#include "store/util/prom.h"
#include "store/util/util.h"

#define CURSOR_KEY "push.cursor"
#define REQ_BYTES (2u << 20)  /* a request closes once this much is in it */
#define REQ_SERIES 500
#define AGE_SLACK_S 30        /* margin before the server's age limit */

struct pusher {
	struct store *s;
	char *url;
	int64_t settle_s, backoff_max_s, max_age_s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	uint64_t rng;
	/* metrics, relaxed atomics */
	uint64_t minutes, profiles, bytes, requests, retries, rejected, dropped_old,
		dropped_limits, labels_cut, errors;
	int64_t cursor_minute; /* next minute to push */
};

#define ADD(f, v) __atomic_add_fetch(&(f), (v), __ATOMIC_RELAXED)
#define GET(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)

static bool stopping(struct pusher *p)
{
	return __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE);
}

/* Sleeps up to ms, less if stopped. Returns true when stopping. */
static bool nap(struct pusher *p, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->lock);
	while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&p->lock);
	return stopping(p);
}

static uint64_t rnd(struct pusher *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

/* ---- HTTP ---- */

struct resp {
	int64_t retry_after; /* seconds, -1 = none */
	char body[256];
	size_t blen;
};

static size_t on_header(char *b, size_t size, size_t n, void *ctx)
{
	struct resp *r = ctx;
	size_t len = size * n;

	int64_t v = retry_after__parse(b, len); /* b is not NUL-terminated */

	if (v >= 0)
		r->retry_after = v;
	return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *ctx)
{
	struct resp *r = ctx;
	size_t len = size * n, room = sizeof(r->body) - 1 - r->blen;

	memcpy(r->body + r->blen, b, len < room ? len : room);
	r->blen += len < room ? len : room;
	r->body[r->blen] = 0;
	return len;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	return stopping(ctx); /* non-zero aborts the transfer */
}

enum outcome { SENT, RETRY, REFUSED, STOPPED };

static enum outcome post(struct pusher *p, CURL *h, const uint8_t *body, size_t len,
			 int64_t *retry_after)
{
	struct curl_slist *hdr = NULL;
	struct resp r = { .retry_after = -1 };
	long code = 0;
	CURLcode rc;

	hdr = curl_slist_append(hdr, "Content-Type: application/proto");
	hdr = curl_slist_append(hdr, "Connect-Protocol-Version: 1");
	hdr = curl_slist_append(hdr, "Expect:");
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, p->url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, p);
	rc = curl_easy_perform(h);
	curl_slist_free_all(hdr);
	ADD(p->requests, 1);
	*retry_after = -1;
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return STOPPED;
	if (rc != CURLE_OK) {
		pr_debug("push: %s: %s", p->url, curl_easy_strerror(rc));
		return RETRY;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return SENT;
	if (code >= 500 || code == 408 || code == 429) {
		*retry_after = r.retry_after;
		pr_debug("push: %s: HTTP %ld", p->url, code);
		return RETRY;
	}
	pr_warn("push: %s refused a request: HTTP %ld %s", p->url, code, r.body);
	return REFUSED;
}

/* ---- the minute walk ---- */

struct todo {
	char **types;
	size_t ntypes;
	struct store_series **ser; /* per type */
	size_t *nser;
	size_t total;
};

static void todo_free(struct todo *t)
{
	for (size_t i = 0; i < t->ntypes; i++)
		store__free_series(t->ser ? t->ser[i] : NULL, t->nser ? t->nser[i] : 0);
	store__free_strv(t->types, t->ntypes);
	free(t->ser);
	free(t->nser);
	memset(t, 0, sizeof(*t));
}

static int todo_load(struct pusher *p, int64_t minute, struct todo *t)
{
	int err;

	memset(t, 0, sizeof(*t));
	err = store__types(p->s, &t->types, &t->ntypes);
	if (err)
		return err;
	t->ser = calloc(t->ntypes + 1, sizeof(*t->ser));
	t->nser = calloc(t->ntypes + 1, sizeof(*t->nser));
	if (!t->ser || !t->nser) {
		todo_free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->ntypes; i++) {
		err = store__minute_series(p->s, t->types[i], minute, &t->ser[i], &t->nser[i]);
		if (err && err != -ENOENT) {
			todo_free(t);
			return err;
		}
		t->total += t->nser[i];
	}
	return 0;
}

/* The k-th series of the minute (0-based), its type in *type. */
static const struct store_series *todo_at(const struct todo *t, size_t k, const char **type)
{
	for (size_t i = 0; i < t->ntypes; i++) {
		if (k < t->nser[i]) {
			*type = t->types[i];
			return &t->ser[i][k];
		}
		k -= t->nser[i];
	}
	return NULL;
}

static int save_cursor(struct pusher *p, int64_t minute, uint64_t done)
{
	int err = store__meta_put(p->s, CURSOR_KEY, (uint64_t)(minute / 60) << 32 | done);

	if (err) {
		pr_warn("push: cannot save the cursor: %s", strerror(-err));
		ADD(p->errors, 1);
	}
	__atomic_store_n(&p->cursor_minute, minute, __ATOMIC_RELAXED);
	return err;
}

static bool too_old(struct pusher *p, int64_t minute)
{
	return minute < now_s() - p->max_age_s + AGE_SLACK_S;
}

/* Sends the series [*done, total) of minute, advancing *done and the
 * cursor with every accepted request. Returns 0 when the minute went
 * out, 2 when it had nothing to send or became too old, 1 when stopping,
 * -errno on a store error (the minute is tried again later). */
static int push_minute(struct pusher *p, CURL *h, int64_t minute, uint64_t *done)
{
	struct todo t;
	int err;

	err = todo_load(p, minute, &t);
	if (err)
		return err;
	if (*done >= t.total) {
		todo_free(&t);
		return 2;
	}
	while (*done < t.total) {
		struct push_item items[REQ_SERIES];
		size_t n = 0, bytes = 0, nprof = 0;
		uint8_t *body = NULL;
		size_t len = 0;
		int64_t backoff = 1;
		enum outcome o;

		if (too_old(p, minute)) {
			ADD(p->dropped_old, 1);
			pr_warn("push: minute %" PRId64 " is too old for the server: dropped", minute);
			todo_free(&t);
			return 2;
		}
		while (*done + n < t.total && n < REQ_SERIES && bytes < REQ_BYTES) {
			const char *type = NULL;
			const struct store_series *ser = todo_at(&t, *done + n, &type);

			err = push_item__build(p->s, type, ser, minute, &items[n]);
			if (err)
				break;
			for (size_t j = 0; j < items[n].nprof; j++)
				bytes += items[n].gzlen[j];
			nprof += items[n].nprof;
			n++;
		}
		if (!err)
			err = push_req__encode(items, n, &body, &len);
		if (err) {
			for (size_t i = 0; i < n; i++)
				push_item__fini(&items[i]);
			todo_free(&t);
			return err;
		}
		for (;;) {
			int64_t ra, delay_ms;

			o = post(p, h, body, len, &ra);
			if (o != RETRY)
				break;
			ADD(p->retries, 1);
			/* Capped exponential backoff, full jitter in its upper
			 * half; the server's Retry-After wins when it says more. */
			delay_ms = backoff * 1000 / 2 + (int64_t)(rnd(p) % (uint64_t)(backoff * 500 + 1));
			if (ra >= 0 && ra * 1000 > delay_ms)
				delay_ms = ra * 1000;
			backoff = backoff * 2 > p->backoff_max_s ? p->backoff_max_s : backoff * 2;
			if (nap(p, delay_ms)) {
				o = STOPPED;
				break;
			}
			if (too_old(p, minute)) {
				o = REFUSED;
				ADD(p->dropped_old, 1);
				pr_warn("push: minute %" PRId64 " got too old while retrying: dropped", minute);
				break;
			}
		}
		free(body);
		for (size_t i = 0; i < n; i++) {
			if (o == SENT) {
				ADD(p->dropped_limits, items[i].dropped);
				ADD(p->labels_cut, items[i].labels_cut);
			}
			push_item__fini(&items[i]);
		}
		if (o == STOPPED) {
			todo_free(&t);
			return 1;
		}
		if (o == REFUSED && too_old(p, minute)) {
			todo_free(&t);
			return 2; /* the rest of it is too old too */
		}
		if (o == SENT) {
			ADD(p->profiles, nprof);
			ADD(p->bytes, len);
		} else {
			ADD(p->rejected, n);
		}
		*done += n;
		if (*done < t.total)
			save_cursor(p, minute, *done);
	}
	todo_free(&t);
	return 0;
}

static void *pusher_thread(void *arg)
{
	struct pusher *p = arg;
	CURL *h = curl_easy_init();
	uint64_t cur;
	int64_t minute;
	uint64_t done = 0;
	int err;

	if (!h) {
		pr_err("push: cannot create a curl handle: pushing is off");
		return NULL;
	}
	err = store__meta_get(p->s, CURSOR_KEY, &cur);
	if (!err) {
		minute = (int64_t)(cur >> 32) * 60;
		done = cur & 0xffffffffu;
	} else {
		/* First run over this store: the oldest minute the server
		 * still takes. */
		int64_t now = now_s();

		minute = (now - p->max_age_s + AGE_SLACK_S + 59) / 60 * 60;
		if (err != -ENOENT)
			pr_warn("push: cannot read the cursor (%s): starting an hour back",
				strerror(-err));
	}
	__atomic_store_n(&p->cursor_minute, minute, __ATOMIC_RELAXED);
	pr_info("push: to %s from minute %" PRId64 "%s", p->url, minute,
		done ? " (part sent)" : "");
	while (!stopping(p)) {
		int64_t now = now_s();

		if (minute + 60 + p->settle_s > now) {
			nap(p, (minute + 60 + p->settle_s - now) * 1000 > 1000 ? 1000 :
			       (minute + 60 + p->settle_s - now) * 1000);
			continue;
		}
		if (too_old(p, minute)) {
			/* Skipped without a look: the store may hold data
			 * there, but the server would refuse it. */
			struct todo t;

			if (!todo_load(p, minute, &t)) {
				if (t.total > done)
					ADD(p->dropped_old, 1);
				todo_free(&t);
			}
		} else {
			err = push_minute(p, h, minute, &done);
			if (err == 1)
				break;
			if (err < 0) {
				pr_warn("push: reading minute %" PRId64 ": %s", minute, strerror(-err));
				ADD(p->errors, 1);
				nap(p, 5000);
				continue;
			}
			if (err == 0)
				ADD(p->minutes, 1);
		}
		minute += 60;
		done = 0;
		save_cursor(p, minute, 0);
	}
	curl_easy_cleanup(h);
	return NULL;
}

int pusher__start(struct pusher **out, struct store *s, const struct pusher_opts *o)
{
	struct pusher *p;
	size_t ul;
	int err;

	if (!o->url || !*o->url)
		return -EINVAL;
	if (curl_lazy__load())
		return -ELIBACC;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	ul = strlen(o->url);
	while (ul && o->url[ul - 1] == '/')
		ul--;
	if (asprintf(&p->url, "%.*s/push.v1.PusherService/Push", (int)ul, o->url) < 0) {
		free(p);
		return -ENOMEM;
	}
	p->s = s;
	p->settle_s = o->settle_s;
	p->backoff_max_s = o->backoff_max_s > 0 ? o->backoff_max_s : 60;
	p->max_age_s = o->max_age_s > 0 ? o->max_age_s : 3600;
	p->rng = (uint64_t)now_mono_ns() | 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	err = pthread_create(&p->thread, NULL, pusher_thread, p);
	if (err) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p->url);
		free(p);
		return -err;
	}
	pthread_setname_np(p->thread, "proffs-push"); /* its CPU shows apart */
	*out = p;
	return 0;
}

void pusher__stop(struct pusher *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->url);
	free(p);
}

void pusher__metrics(struct pusher *p, struct buf *out)
{
	int64_t cm;

	if (!p)
		return;
	cm = __atomic_load_n(&p->cursor_minute, __ATOMIC_RELAXED);
#define C(name, help, v) prom__counter(out, name, help, (uint64_t)(v))
	C("proffs_push_minutes_total", "Minutes pushed to the server (all their series accepted).", GET(p->minutes));
	C("proffs_push_profiles_total", "Profiles the server accepted.", GET(p->profiles));
	C("proffs_push_bytes_total", "Bytes of requests the server accepted.", GET(p->bytes));
	C("proffs_push_requests_total", "Push requests made, whatever their outcome.", GET(p->requests));
	C("proffs_push_retries_total", "Requests retried after 5xx, 408, 429 or a connection error.", GET(p->retries));
	C("proffs_push_refused_series_total", "Series the server refused for good (other 4xx).", GET(p->rejected));
	C("proffs_push_dropped_too_old_minutes_total", "Minutes (or their rest) dropped: older than the server takes.", GET(p->dropped_old));
	C("proffs_push_dropped_profiles_total", "Profile pieces over Pyroscope's per-profile limits.", GET(p->dropped_limits));
	C("proffs_push_labels_cut_total", "Labels left out (at most 30 per series).", GET(p->labels_cut));
	C("proffs_push_errors_total", "Store errors of the pusher.", GET(p->errors));
#undef C
	prom__family(out, "proffs_push_lag_seconds", PROM_GAUGE,
		     "Seconds from the end of the oldest minute not yet pushed to now.");
	prom__i64(out, "proffs_push_lag_seconds", NULL, 0,
		  now_s() - (cm + 60) > 0 ? now_s() - (cm + 60) : 0);
	prom__family(out, "proffs_push_next_minute", PROM_GAUGE,
		     "The next minute to push (Unix seconds).");
	prom__i64(out, "proffs_push_next_minute", NULL, 0, cm);
}
