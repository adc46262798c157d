/*
 * agents_ask_http: the one HTTP call of POST /api/agents/{id}/ask, a plain
 * (non-streaming) POST /v1/messages to AGENTTEST_ANTHROPIC_UPSTREAM with
 * libcurl, inside the prefork worker that serves the request.
 *
 * Theory of operation. The worker is single-threaded and blocks on the
 * call; the time it may block is bounded by ASK_CONNECT_S to connect and
 * ASK_TOTAL_S in all, below nginx's fastcgi_read_timeout (60 s), so the
 * client always gets this pool's answer and never nginx's 504. The answer
 * body is capped at ASK_BODY_MAX (a Messages answer of max_tokens 1024 is
 * a few KiB). No redirect is followed, only http/https are allowed, and
 * the key goes in the x-api-key header only: it is wiped from the header
 * list before the list is freed, and curl runs without verbose output, so
 * the key is never logged.
 */
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <sodium.h>

#include "fcgi/handlers/agents_ask.h"

#define ASK_CONNECT_S 10L
#define ASK_TOTAL_S   45L
#define ASK_BODY_MAX  (1u << 20)

/* curl write callback: append to the answer body, refusing past the cap. */
static size_t ah_body(char *p, size_t sz, size_t n, void *ctx)
{
	struct ask_http *h = ctx;
	size_t len = sz * n;
	if (h->body.len + len > ASK_BODY_MAX)
		return 0;   /* aborts the transfer: CURLE_WRITE_ERROR */
	buf_append(&h->body, p, len);
	return len;
}

/* curl header callback: keep Retry-After (digits only, at most 6). */
static size_t ah_header(char *p, size_t sz, size_t n, void *ctx)
{
	struct ask_http *h = ctx;
	size_t len = sz * n;
	static const char name[] = "retry-after:";
	if (len > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
		size_t i = sizeof name - 1, k = 0;
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		while (i < len && k < sizeof h->retry_after - 1 && p[i] >= '0' && p[i] <= '9')
			h->retry_after[k++] = p[i++];
		h->retry_after[k] = '\0';
	}
	return len;
}

/* Append "x-api-key: <key>" to the list; the header text is wiped after use. */
static struct curl_slist *ah_key_header(struct curl_slist *l, const struct buf *key, struct buf *tmp)
{
	buf_reset(tmp);
	buf_puts(tmp, "x-api-key: ");
	buf_append(tmp, key->data, key->len);
	return curl_slist_append(l, buf_cstr(tmp));
}

/* Wipe every header text of the list (the key is one of them), then free it. */
static void ah_free_headers(struct curl_slist *l)
{
	for (struct curl_slist *i = l; i; i = i->next)
		sodium_memzero(i->data, strlen(i->data));
	curl_slist_free_all(l);
}

bool ask_http_post(const char *upstream, const struct buf *key, const char *body, struct ask_http *h)
{
	static bool inited;
	struct buf url = BUF_INIT, kh = BUF_INIT;
	struct curl_slist *hdr = NULL;
	CURL *cu = NULL;
	bool ok = false;
	memset(h->retry_after, 0, sizeof h->retry_after);
	h->status = 0;
	buf_reset(&h->body);
	buf_reset(&h->error);
	if (!inited) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
			buf_puts(&h->error, "libcurl cannot be initialised");
			return false;
		}
		inited = true;
	}
	if (!(cu = curl_easy_init())) {
		buf_puts(&h->error, "libcurl cannot be initialised");
		goto out;
	}
	buf_printf(&url, "%s/v1/messages", upstream);
	hdr = curl_slist_append(hdr, "content-type: application/json");
	hdr = curl_slist_append(hdr, "accept: application/json");
	hdr = curl_slist_append(hdr, "anthropic-version: 2023-06-01");
	hdr = curl_slist_append(hdr, "Expect:");   /* no 100-continue round trip before the body */
	hdr = ah_key_header(hdr, key, &kh);
	sodium_memzero(kh.data, kh.cap);
	if (!hdr) {
		buf_puts(&h->error, "out of memory for the request headers");
		goto out;
	}
	curl_easy_setopt(cu, CURLOPT_URL, buf_cstr(&url));
	curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(cu, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT, ASK_CONNECT_S);
	curl_easy_setopt(cu, CURLOPT_TIMEOUT, ASK_TOTAL_S);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(cu, CURLOPT_USERAGENT, "agenttest-ask/1");
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, ah_body);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, ah_header);
	curl_easy_setopt(cu, CURLOPT_HEADERDATA, h);
	CURLcode rc = curl_easy_perform(cu);
	if (rc != CURLE_OK) {
		buf_printf(&h->error, "the model API did not answer: %s", curl_easy_strerror(rc));
		goto out;
	}
	long st = 0;
	curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &st);
	h->status = (int)st;
	ok = true;
out:
	ah_free_headers(hdr);
	if (cu)
		curl_easy_cleanup(cu);
	buf_free(&url);
	buf_free(&kh);
	return ok;
}

void ask_http_free(struct ask_http *h)
{
	buf_free(&h->body);
	buf_free(&h->error);
}
