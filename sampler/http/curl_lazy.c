/*
 * curl_lazy.c - see curl_lazy.h.
 */
#include "sampler/http/curl_lazy.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "store/util/util.h"

struct curl_lazy curl_lazy;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_err;

/* Where each function's pointer goes. */
#define F(field, sym) { sym, offsetof(struct curl_lazy, field) }
static const struct {
	const char *name;
	size_t off;
} syms[] = {
	F(global_init, "curl_global_init"),
	F(global_cleanup, "curl_global_cleanup"),
	F(easy_init, "curl_easy_init"),
	F(easy_setopt, "curl_easy_setopt"),
	F(easy_getinfo, "curl_easy_getinfo"),
	F(easy_perform, "curl_easy_perform"),
	F(easy_cleanup, "curl_easy_cleanup"),
	F(easy_reset, "curl_easy_reset"),
	F(easy_strerror, "curl_easy_strerror"),
	F(slist_append, "curl_slist_append"),
	F(slist_free_all, "curl_slist_free_all"),
	F(free, "curl_free"),
	F(url, "curl_url"),
	F(url_cleanup, "curl_url_cleanup"),
	F(url_set, "curl_url_set"),
	F(url_get, "curl_url_get"),
	F(multi_init, "curl_multi_init"),
	F(multi_cleanup, "curl_multi_cleanup"),
	F(multi_add_handle, "curl_multi_add_handle"),
	F(multi_remove_handle, "curl_multi_remove_handle"),
	F(multi_perform, "curl_multi_perform"),
	F(multi_poll, "curl_multi_poll"),
	F(multi_wakeup, "curl_multi_wakeup"),
	F(multi_info_read, "curl_multi_info_read"),
};
#undef F

_Static_assert(sizeof(syms) / sizeof(syms[0]) * sizeof(void (*)(void)) == sizeof(struct curl_lazy),
	       "every pointer of struct curl_lazy has its symbol");

static void load(void)
{
	struct curl_lazy c;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		pr_err("http: cannot load libcurl: %s", dlerror());
		load_err = -ELIBACC;
		return;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = dlsym(h, syms[i].name);

		if (!f) {
			pr_err("http: libcurl lacks %s", syms[i].name);
			load_err = -ELIBACC;
			return; /* h stays mapped: harmless, nothing points into it */
		}
		/* POSIX lets a function's address travel through void *. */
		memcpy((char *)&c + syms[i].off, &f, sizeof(f));
	}
	curl_lazy = c;
}

int curl_lazy__load(void)
{
	pthread_once(&once, load);
	return load_err;
}
