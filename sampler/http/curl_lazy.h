/*
 * curl_lazy.h - libcurl, mapped on first use rather than at start-up.
 *
 * Why: libcurl brings 28 more shared libraries (TLS, Kerberos, LDAP,
 * IDN...), and mapping them doubled a cold `proffs cat`'s start-up (38 ms
 * to 79 ms with the page cache dropped). Only `proffs run --push` and
 * `--scrape` need HTTP. So libcurl is dlopen'ed by curl_lazy__load(), and
 * the curl functions the project calls are redirected, by the macros
 * below, to pointers it fills. Include this instead of <curl/curl.h>, and
 * call curl_lazy__load() before the first curl call of a code path.
 */
#ifndef PROFFS_SAMPLER_HTTP_CURL_LAZY_H
#define PROFFS_SAMPLER_HTTP_CURL_LAZY_H

/* The type-checking wrappers are macros named like the functions. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

struct curl_lazy {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_perform)(CURL *);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	void (*free)(void *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_perform)(CURLM *, int *);
	CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
	CURLMcode (*multi_wakeup)(CURLM *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
};

/* Filled by curl_lazy__load(); all NULL before. */
extern struct curl_lazy curl_lazy;

/*
 * Maps libcurl (libcurl.so.4) and fills curl_lazy, once per process
 * (thread-safe; later calls return the first call's result). Returns 0,
 * or -ELIBACC when the library or one of its functions is missing (the
 * reason is logged).
 */
int curl_lazy__load(void);

#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init curl_lazy.global_init
#define curl_global_cleanup curl_lazy.global_cleanup
#define curl_easy_init curl_lazy.easy_init
#define curl_easy_setopt curl_lazy.easy_setopt
#define curl_easy_getinfo curl_lazy.easy_getinfo
#define curl_easy_perform curl_lazy.easy_perform
#define curl_easy_cleanup curl_lazy.easy_cleanup
#define curl_easy_reset curl_lazy.easy_reset
#define curl_easy_strerror curl_lazy.easy_strerror
#define curl_slist_append curl_lazy.slist_append
#define curl_slist_free_all curl_lazy.slist_free_all
#define curl_free curl_lazy.free
#define curl_url curl_lazy.url
#define curl_url_cleanup curl_lazy.url_cleanup
#define curl_url_set curl_lazy.url_set
#define curl_url_get curl_lazy.url_get
#define curl_multi_init curl_lazy.multi_init
#define curl_multi_cleanup curl_lazy.multi_cleanup
#define curl_multi_add_handle curl_lazy.multi_add_handle
#define curl_multi_remove_handle curl_lazy.multi_remove_handle
#define curl_multi_perform curl_lazy.multi_perform
#define curl_multi_poll curl_lazy.multi_poll
#define curl_multi_wakeup curl_lazy.multi_wakeup
#define curl_multi_info_read curl_lazy.multi_info_read

#endif
