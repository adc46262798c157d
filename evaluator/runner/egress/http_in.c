/*
 * http_in.c: the one HTTP/1.1 request a proxy child reads from its client
 * (the relay in the agent's box), and the allow-lists applied to it.
 *
 * The request is hostile input: the head is capped (64 KiB, 64 headers,
 * a 512-byte target), the body must have a Content-Length (no chunked
 * uploads) of at most 32 MiB, and only the headers named in
 * forwarded_headers go upstream; the agent's auth headers never do.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluator/runner/egress/egress.h"
#include "parse.h"
#include "xalloc.h"

/* Read until the end of the head; returns the bytes read or -1/-2/-3
 * (I/O error, too long, closed). */
static ssize_t read_head(int fd, char *b, size_t cap, size_t *head_len)
{
	size_t n = 0;
	for (;;) {
		if (n == cap)
			return -2;
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return -3;
		size_t from = n > 3 ? n - 3 : 0;
		n += (size_t)r;
		for (size_t i = from; i + 3 < n; i++) {
			if (memcmp(b + i, "\r\n\r\n", 4) == 0) {
				*head_len = i + 4;
				return (ssize_t)n;
			}
		}
	}
}

/* Split the head into the request line and headers. Returns 0 or a status. */
static int parse_head(struct egress_request *r, char *head, size_t len, struct buf *err)
{
	head[len - 2] = '\0';     /* drop the final empty line */
	char *save = NULL, *line = strtok_r(head, "\r\n", &save);
	if (!line) {
		buf_puts(err, "empty request");
		return 400;
	}
	char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || (size_t)(sp1 - line) >= sizeof r->method ||
	    (size_t)(sp2 - sp1 - 1) >= sizeof r->target || strcmp(sp2 + 1, "HTTP/1.1") != 0) {
		buf_puts(err, "malformed request line");
		return 400;
	}
	memcpy(r->method, line, (size_t)(sp1 - line));
	memcpy(r->target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	while ((line = strtok_r(NULL, "\r\n", &save)) != NULL) {
		char *colon = strchr(line, ':');
		if (!colon || colon == line) {
			buf_puts(err, "malformed header line");
			return 400;
		}
		if (r->nh == EGRESS_HDRS_MAX) {
			buf_puts(err, "too many headers");
			return 431;
		}
		*colon = '\0';
		for (char *p = line; *p; p++) {
			if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') {
				buf_puts(err, "bad header name");
				return 400;
			}
			*p = (char)tolower((unsigned char)*p);
		}
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		r->h[r->nh].name = xstrdup(line);
		r->h[r->nh].value = xstrdup(v);
		r->nh++;
	}
	return 0;
}

/* Read the body of Content-Length bytes, `have` of which are in pre. */
static int read_body(int fd, struct egress_request *r, const char *pre, size_t have, struct buf *err)
{
	const char *cl = egress_header_get(r, "content-length");
	int64_t n = 0;
	if (egress_header_get(r, "transfer-encoding")) {
		buf_puts(err, "chunked request bodies are not accepted");
		return 411;
	}
	if (!cl) {
		if (have > 0 || strcmp(r->method, "POST") == 0) {
			buf_puts(err, "a Content-Length is required");
			return 411;
		}
		return 0;
	}
	if (!parse_int(cl, strlen(cl), 0, INT64_MAX, &n)) {
		buf_puts(err, "bad Content-Length");
		return 400;
	}
	if ((uint64_t)n > EGRESS_BODY_MAX) {
		buf_puts(err, "request body too large");
		return 413;
	}
	if (have > (size_t)n) {
		buf_puts(err, "bytes after the body");
		return 400;
	}
	r->body = xmalloc((size_t)n + 1);
	memcpy(r->body, pre, have);
	size_t got = have;
	while (got < (size_t)n) {
		ssize_t k = read(fd, r->body + got, (size_t)n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			buf_puts(err, "body ended early");
			return 400;
		}
		got += (size_t)k;
	}
	r->body[n] = '\0';
	r->body_len = (size_t)n;
	return 0;
}

int egress_read_request(int fd, struct egress_request *r, struct buf *err)
{
	memset(r, 0, sizeof *r);
	char *b = xmalloc(EGRESS_HEAD_MAX);
	size_t head_len = 0;
	ssize_t n = read_head(fd, b, EGRESS_HEAD_MAX, &head_len);
	int st;
	if (n == -2) {
		buf_puts(err, "request head too large");
		st = 431;
	} else if (n < 0) {
		buf_puts(err, "connection closed before a request");
		st = 400;
	} else {
		st = parse_head(r, b, head_len, err);
		bool metered;   /* a request that will be refused is not read further */
		if (st == 0 && egress_route_allowed(r->method, r->target, &metered))
			st = read_body(fd, r, b + head_len, (size_t)n - head_len, err);
	}
	free(b);
	return st;
}

const char *egress_header_get(const struct egress_request *r, const char *name)
{
	for (size_t i = 0; i < r->nh; i++) {
		if (strcmp(r->h[i].name, name) == 0)
			return r->h[i].value;
	}
	return NULL;
}

void egress_request_free(struct egress_request *r)
{
	for (size_t i = 0; i < r->nh; i++) {
		free(r->h[i].name);
		free(r->h[i].value);
	}
	free(r->body);
	memset(r, 0, sizeof *r);
}

bool egress_route_allowed(const char *method, const char *target, bool *metered)
{
	static const char *const paths[] = { "/v1/messages", "/v1/messages/count_tokens" };
	if (strcmp(method, "POST") != 0)
		return false;
	const char *q = strchr(target, '?');
	size_t plen = q ? (size_t)(q - target) : strlen(target);
	if (q && strcmp(q, "?beta=true") != 0)
		return false;
	for (size_t i = 0; i < 2; i++) {
		if (strlen(paths[i]) == plen && memcmp(target, paths[i], plen) == 0) {
			*metered = i == 0;
			return true;
		}
	}
	return false;
}

bool egress_header_forwarded(const char *name)
{
	static const char *const exact[] = { "content-type", "accept", "anthropic-version", "anthropic-beta",
		"user-agent", "x-app", NULL };
	for (int i = 0; exact[i]; i++) {
		if (strcmp(name, exact[i]) == 0)
			return true;
	}
	return strncmp(name, "x-stainless-", 12) == 0;
}
