/*
 * forward.c: one admitted request sent upstream with libcurl, its answer
 * streamed back to the client as it arrives.
 *
 * The client's head is rebuilt, not copied: the allow-listed headers
 * (http_in.c), the owner's key as x-api-key, nothing else (no
 * authorization, cookie or host from the agent). The response goes back
 * with its status, a few allow-listed headers (content-type, retry-after,
 * request-id, x-should-retry, anthropic-ratelimit-*) and the body
 * re-chunked piece by piece from libcurl's write callback, so a server-sent
 * event reaches the agent as soon as it reaches the proxy; the meter sees
 * the same bytes on the way. 429 and 529 are passed back as they are, with
 * their Retry-After: the proxy never retries (the agent's CLI decides, and
 * each attempt counts as a request). The owner's day is settled (owner.c)
 * before the final chunk, like the ledger files, so an agent that has seen
 * the end of an answer also sees its usage counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "evaluator/runner/egress/egress.h"
#include "log.h"

struct xfer {
	int    fd;
	CURL  *curl;
	bool   head_sent, client_gone, sse;
	struct buf hdrs;         /* response headers passed back */
	struct egress_meter meter;
};

/* Write all of p to fd; false when the client is gone. */
static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static const char *reason_of(long st)
{
	switch (st) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 529: return "Overloaded";
	default:  return "Status";
	}
}

void egress_reply_error(int fd, int status, const char *type, const char *msg, const char *extra_headers)
{
	struct json_object *o = json_object_new_object(), *e = json_object_new_object();
	json_object_object_add(e, "type", json_object_new_string(type));
	json_object_object_add(e, "message", json_object_new_string(msg));
	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "error", e);
	const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	struct buf b = BUF_INIT;
	buf_printf(&b, "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n"
		"connection: close\r\n%s\r\n%s", status, reason_of(status), strlen(body),
		extra_headers ? extra_headers : "", body);
	write_all(fd, b.data, b.len);
	buf_free(&b);
	json_object_put(o);
}

/* Whether an upstream response header goes back to the agent. */
static bool passed_back(const char *name, size_t n)
{
	static const char *const exact[] = { "content-type", "retry-after", "request-id", "x-should-retry", NULL };
	for (int i = 0; exact[i]; i++) {
		if (strlen(exact[i]) == n && strncasecmp(name, exact[i], n) == 0)
			return true;
	}
	return n > 20 && strncasecmp(name, "anthropic-ratelimit-", 20) == 0;
}

/* Send the response head (once). */
static void send_head(struct xfer *x)
{
	long st = 0;
	curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &st);
	struct buf b = BUF_INIT;
	buf_printf(&b, "HTTP/1.1 %ld %s\r\n%stransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
		st, reason_of(st), buf_cstr(&x->hdrs));
	x->head_sent = true;
	egress_meter_init(&x->meter, x->sse);
	if (!write_all(x->fd, b.data, b.len))
		x->client_gone = true;
	buf_free(&b);
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (n >= 5 && memcmp(p, "HTTP/", 5) == 0) {   /* a new header block */
		buf_reset(&x->hdrs);
		x->sse = false;
		return n;
	}
	if (n <= 2) {                                   /* the end of a block */
		long st = 0;
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &st);
		if (st >= 200 && !x->head_sent)
			send_head(x);
		return x->client_gone ? 0 : n;
	}
	const char *colon = memchr(p, ':', n);
	if (!colon)
		return n;
	size_t kn = (size_t)(colon - p);
	const char *v = colon + 1;
	size_t vn = n - kn - 1;
	while (vn > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		vn--;
	}
	while (vn > 0 && (v[vn - 1] == '\r' || v[vn - 1] == '\n'))
		vn--;
	if (kn == 12 && strncasecmp(p, "content-type", 12) == 0 && vn >= 17 && memmem(v, vn, "text/event-stream", 17))
		x->sse = true;
	if (passed_back(p, kn)) {
		buf_append(&x->hdrs, p, kn);
		buf_puts(&x->hdrs, ": ");
		buf_append(&x->hdrs, v, vn);
		buf_puts(&x->hdrs, "\r\n");
	}
	return n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;
	if (!x->head_sent)
		send_head(x);
	if (x->client_gone || n == 0)
		return x->client_gone ? 0 : n;
	egress_meter_feed(&x->meter, p, n);
	char len[32];
	int k = snprintf(len, sizeof len, "%zx\r\n", n);
	if (!write_all(x->fd, len, (size_t)k) || !write_all(x->fd, p, n) || !write_all(x->fd, "\r\n", 2)) {
		x->client_gone = true;
		return 0;
	}
	return n;
}

/* The request's headers for upstream: the allow-listed ones and the key. */
static struct curl_slist *upstream_headers(const struct egress_request *r, const char *key)
{
	struct curl_slist *h = NULL;
	struct buf b = BUF_INIT;
	for (size_t i = 0; i < r->nh; i++) {
		if (!egress_header_forwarded(r->h[i].name))
			continue;
		buf_reset(&b);
		buf_printf(&b, "%s: %s", r->h[i].name, r->h[i].value);
		h = curl_slist_append(h, buf_cstr(&b));
	}
	buf_reset(&b);
	buf_printf(&b, "x-api-key: %s", key);
	h = curl_slist_append(h, buf_cstr(&b));
	explicit_bzero(b.data, b.len);
	h = curl_slist_append(h, "Expect:");
	buf_free(&b);
	return h;
}

/* Zero and free a header list (one of its entries holds the key). */
static void free_headers(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

/* The model named by a request body, or NULL (not JSON, no model). */
static char *model_of(const struct egress_request *r)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *o = r->body ? json_tokener_parse_ex(tok, r->body, (int)r->body_len) : NULL, *m;
	bool whole = o && json_tokener_get_parse_end(tok) == r->body_len;
	json_tokener_free(tok);
	char *out = NULL;
	if (whole && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "model", &m) &&
	    json_object_is_type(m, json_type_string) && json_object_get_string_len(m) < 128)
		out = strdup(json_object_get_string(m));
	json_object_put(o);
	return out;
}

/* One JSON log line per request (never a header value, never the key). */
static void log_request(const struct egress_ctx *cx, const struct egress_request *r, const char *model,
			long status, const struct egress_usage *u, double usd, double ms, const char *note)
{
	struct buf b = BUF_INIT;
	log_begin(&b, LOG_LVL_INFO, "egress_request");
	log_str(&b, "agent", cx->agent_id);
	log_str(&b, "method", r->method);
	log_str(&b, "path", r->target);
	log_str(&b, "model", model ? model : "");
	log_int(&b, "status", status);
	log_int(&b, "input_tokens", u->input);
	log_int(&b, "output_tokens", u->output);
	log_int(&b, "cache_write_tokens", u->cache_write);
	log_int(&b, "cache_read_tokens", u->cache_read);
	log_int(&b, "usd_micro", (long long)(usd * 1e6 + 0.5));
	log_int(&b, "ms", (long long)ms);
	if (note)
		log_str(&b, "note", note);
	log_end(&b);
	buf_free(&b);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Send r upstream and stream the answer, all but its final empty chunk
 * (*complete says whether it is due: the caller charges the usage first,
 * so the ledger is up to date once the client has seen the end). Returns
 * the upstream status, 0 when none came (nothing was sent to the client).
 */
static long forward(const struct egress_ctx *cx, int fd, const struct egress_request *r, struct egress_usage *u,
		    char *errbuf, bool *complete)
{
	struct xfer x = { .fd = fd };
	struct buf url = BUF_INIT;
	buf_printf(&url, "%s%s", cx->upstream, r->target);
	struct curl_slist *h = upstream_headers(r, cx->key);
	x.curl = curl_easy_init();
	long st = 0;
	if (!x.curl)
		goto out;
	curl_easy_setopt(x.curl, CURLOPT_URL, buf_cstr(&url));
	curl_easy_setopt(x.curl, CURLOPT_POST, 1L);
	curl_easy_setopt(x.curl, CURLOPT_POSTFIELDS, r->body ? r->body : "");
	curl_easy_setopt(x.curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	curl_easy_setopt(x.curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(x.curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x.curl, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(x.curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x.curl, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(x.curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(x.curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x.curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(x.curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x.curl, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(x.curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(x.curl, CURLOPT_LOW_SPEED_TIME, 600L);
	curl_easy_setopt(x.curl, CURLOPT_TIMEOUT, 3600L);
	CURLcode rc = curl_easy_perform(x.curl);
	curl_easy_getinfo(x.curl, CURLINFO_RESPONSE_CODE, &st);
	if (!x.head_sent) {
		if (rc == CURLE_OK && st >= 200)
			send_head(&x);   /* a response without a body */
		else
			st = 0;
	}
	if (x.head_sent) {
		egress_meter_finish(&x.meter);
		*u = x.meter.u;
		*complete = rc == CURLE_OK && !x.client_gone;
		if (!*complete && !errbuf[0])
			snprintf(errbuf, CURL_ERROR_SIZE, "%s", x.client_gone ? "client went away" : curl_easy_strerror(rc));
		egress_meter_free(&x.meter);
	} else if (!errbuf[0]) {
		snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
	}
out:
	if (x.curl)
		curl_easy_cleanup(x.curl);
	free_headers(h);
	buf_free(&x.hdrs);
	buf_free(&url);
	return st;
}

void egress_serve(const struct egress_ctx *cx, int fd)
{
	struct egress_request r;
	struct buf err = BUF_INIT;
	struct egress_usage u = { 0, 0, 0, 0 };
	double t0 = now_ms();
	char *model = NULL;
	bool metered = false;
	struct egress_owner own = *cx->owner;   /* this child's: its own connection and reservation */
	own.db = NULL;
	own.res = 0;
	int st = egress_read_request(fd, &r, &err);
	if (st != 0) {
		egress_reply_error(fd, st, "invalid_request_error", buf_cstr(&err), NULL);
		log_request(cx, &r, NULL, st, &u, 0, now_ms() - t0, buf_cstr(&err));
		goto out;
	}
	if (!egress_route_allowed(r.method, r.target, &metered)) {
		egress_reply_error(fd, 403, "permission_error",
			"agenttest egress: only POST /v1/messages and /v1/messages/count_tokens are forwarded", NULL);
		log_request(cx, &r, NULL, 403, &u, 0, now_ms() - t0, "route refused");
		goto out;
	}
	model = model_of(&r);
	const struct llm_price *price = model ? llm_price_for(cx->prices, model) : NULL;
	if (!price) {
		buf_printf(&err, "agenttest egress: %s", model ? "the model is not in the price table"
			: "the body must be a JSON object naming a model");
		egress_reply_error(fd, model ? 403 : 400, model ? "permission_error" : "invalid_request_error",
			buf_cstr(&err), NULL);
		log_request(cx, &r, model, model ? 403 : 400, &u, 0, now_ms() - t0, "model refused");
		goto out;
	}
	buf_reset(&err);
	struct llm_reserve_usage est;
	egress_estimate(&r, price, metered, &est);
	int adm = egress_ledger_admit(cx->ledger, &own, &est, &err);
	if (adm < 0)
		egress_owner_cancel(&own);   /* the ledger was not written after a reservation */
	if (adm <= 0) {
		struct buf msg = BUF_INIT;
		buf_printf(&msg, "agenttest budget exhausted (%s)", buf_cstr(&err));
		if (adm == 0)
			egress_reply_error(fd, 400, "invalid_request_error", buf_cstr(&msg), "x-agenttest-budget: exhausted\r\n");
		else
			egress_reply_error(fd, 503, "api_error", "agenttest egress: the budget ledger is unavailable", NULL);
		log_request(cx, &r, model, adm == 0 ? 400 : 503, &u, 0, now_ms() - t0, buf_cstr(&msg));
		buf_free(&msg);
		goto out;
	}
	char errbuf[CURL_ERROR_SIZE] = "";
	bool complete = false;
	long ust = forward(cx, fd, &r, &u, errbuf, &complete);
	if (ust == 0)
		egress_reply_error(fd, 502, "api_error", "agenttest egress: the upstream could not be reached", NULL);
	double usd = metered ? llm_price_cost(price, u.input, u.output, u.cache_write, u.cache_read) : 0.0;
	if (!metered)
		memset(&u, 0, sizeof u);   /* count_tokens reports no usage to charge */
	egress_owner_settle(&own, &u, usd);
	if (!egress_ledger_charge(cx->ledger, &u, usd))
		log_msg(LOG_LVL_ERROR, "egress_ledger", "usage of a request could not be written");
	if (complete)
		write_all(fd, "0\r\n\r\n", 5);
	log_request(cx, &r, model, ust ? ust : 502, &u, usd, now_ms() - t0, errbuf[0] ? errbuf : NULL);
out:
	egress_owner_free(&own);
	free(model);
	buf_free(&err);
	egress_request_free(&r);
}
