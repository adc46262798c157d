/*
 * strategy_check: the syntax and contract check of a submission
 * (POST /strategies/submit, POST /strategies), asked of the runner.
 *
 * The pool never parses, runs or sandboxes strategy code (DESIGN, trust
 * boundaries): the runner on this host, which owns the sandbox, answers
 * check requests on a unix socket (common/check_wire.h; path
 * AGENTTEST_CHECK_SOCKET, else $RUNNER_NOTIFY_DIR/check.sock, else
 * /run/agenttest-check/check.sock). One connection per check: a 12-byte
 * header and the source go out, a header and a JSON verdict come back, all
 * within CHECK_DEADLINE_S. The answer is checked like any peer input:
 * header first (magic, version, status, length cap), then strict JSON, and
 * only known fields are used. A connection reset before any answer byte
 * (the checker's runner was killed holding the request) is asked once
 * more. No runner listening (after retrying for CHECK_CONNECT_MS, or
 * CHECK_REFUSED_MS once a left-over socket refuses, which covers a restart
 * or another runner taking the socket over), a busy or
 * failing checker and a missed deadline answer 503 `unavailable`.
 *
 * Verdict cache: a check is a function of the code and of the checker, so
 * every verdict that depends on nothing else (accepted kind; syntax,
 * contract or encoding error) is kept in the code_checks table under
 * (code_hash, CHECK_CHECKER_VERSION) and a later submission of the same
 * bytes is answered from it, with no runner and no sandbox. A verdict read
 * back is parsed and used exactly like a fresh answer; a failing cache read
 * falls back to asking the checker.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/db.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "check_wire.h"
#include "fcgi/handlers/runs_view.h"

#define CHECK_DEADLINE_MS 5000
#define CHECK_CONNECT_MS  1000   /* keep trying to connect this long: a runner restarting or taking over */
#define CHECK_REFUSED_MS  2500   /* ... and this long once the socket refuses: a crashed owner's file is
				  * there and its heir is taking over (100 ms idle, over 1 s on a loaded host) */
#define CHECK_TAKEOVER_MS 3000   /* the same after a reset: the owner just died, its heir is taking over */
#define CHECK_VERDICT_MAX 2048   /* = code_checks.verdict (sql/012_code_checks.sql) */

/* Monotonic milliseconds. */
static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Send (wr) or receive exactly n bytes on non-blocking fd before deadline.
 * 0 or -1 (errno; ECONNRESET for an early EOF). *done (may be NULL) gets
 * the bytes moved, also on failure.
 */
static int io_full(int fd, void *p, size_t n, long long deadline, bool wr, size_t *done)
{
	unsigned char *b = p;
	size_t off = 0, sink;
	if (!done)
		done = &sink;
	*done = 0;
	while (off < n) {
		*done = off;
		ssize_t k = wr ? send(fd, b + off, n - off, MSG_NOSIGNAL) : recv(fd, b + off, n - off, 0);
		if (k > 0) {
			off += (size_t)k;
			continue;
		}
		if (k == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		long long left = deadline - mono_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pfd = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -1;
	}
	*done = off;
	return 0;
}

/* Outcome of asking the checker. ASK_RESET: the connection was reset before
 * any byte of an answer (the checker died with the request: safe to ask again). */
enum ask { ASK_ANSWER, ASK_DOWN, ASK_BUSY, ASK_FAILED, ASK_RESET };

/* The pid of the process listening at the other end of connected fd (SO_PEERCRED), or 0 if unknown. */
static pid_t peer_pid(int fd)
{
	struct ucred cr;
	socklen_t n = sizeof cr;
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &n) == 0 && n == sizeof cr ? cr.pid : 0;
}

/*
 * Ask the checker at path about code, once. ASK_ANSWER with the verdict
 * object in *out (new reference); otherwise why in err (for the log or the
 * reply). *peer: in, a checker not to ask while connect_ms lasts (the one
 * that just reset us, 0 for none); out, the one asked (0 if unknown).
 */
static enum ask ask_once(const char *path, const char *code, size_t len, long long connect_ms, pid_t *peer,
			 json_object **out, char *err, size_t errlen)
{
	pid_t avoid = *peer;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t hdr[CHECK_HDR_LEN];
	unsigned status;
	uint32_t blen;
	char *body = NULL;
	enum ask rc = ASK_FAILED;
	long long deadline = mono_ms() + CHECK_DEADLINE_MS;
	if (len > CHECK_CODE_MAX) {
		snprintf(err, errlen, "code is larger than the checker accepts");
		return ASK_FAILED;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = -1;
	long long start = mono_ms();
	for (long long give_up = start + connect_ms;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			return ASK_FAILED;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
			/* a killed owner's listening socket outlives its threads for a
			 * moment and resets what it takes in: wait for the heir's */
			*peer = peer_pid(fd);
			if (avoid == 0 || *peer != avoid || mono_ms() >= give_up)
				break;
		} else {
			int e = errno;
			snprintf(err, errlen, "connect %s: %s", path, strerror(e));
			rc = e == EAGAIN ? ASK_BUSY : ASK_DOWN;   /* EAGAIN: its backlog is full */
			if (e == ECONNREFUSED && give_up < start + CHECK_REFUSED_MS)
				give_up = start + CHECK_REFUSED_MS;
			if ((e != ENOENT && e != ECONNREFUSED) || mono_ms() >= give_up)
				goto out;
		}
		close(fd);
		fd = -1;
		struct timespec nap = { 0, 50 * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
	check_hdr_encode(hdr, CHECK_REQUEST, CHECK_OP_STRATEGY, (uint32_t)len);
	/* a checker that answers BUSY without reading closes early: read its answer anyway */
	if (io_full(fd, hdr, sizeof hdr, deadline, true, NULL) == 0)
		(void)io_full(fd, (void *)(uintptr_t)code, len, deadline, true, NULL);
	size_t got = 0;
	if (io_full(fd, hdr, sizeof hdr, deadline, false, &got) != 0) {
		int e = errno;
		if (e == ETIMEDOUT)
			snprintf(err, errlen, "the code checker did not answer within %d s", CHECK_DEADLINE_MS / 1000);
		else
			snprintf(err, errlen, "the code checker hung up: %s", strerror(e));
		if (e != ETIMEDOUT && got == 0)
			rc = ASK_RESET;
		goto out;
	}
	if (check_hdr_decode(hdr, CHECK_ANSWER, CHECK_ST__MAX, CHECK_ANSWER_MAX, &status, &blen) != 0) {
		snprintf(err, errlen, "malformed answer header from the checker");
		goto out;
	}
	body = xmalloc((size_t)blen + 1);
	if (io_full(fd, body, blen, deadline, false, NULL) != 0) {
		snprintf(err, errlen, "truncated answer from the checker");
		goto out;
	}
	body[blen] = '\0';
	json_object *o = json_tokener_parse(body);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		snprintf(err, errlen, "malformed answer from the checker");
		goto out;
	}
	if (status == CHECK_ST_ANSWER) {
		*out = o;
		rc = ASK_ANSWER;
		goto out;
	}
	json_object *m;
	snprintf(err, errlen, "%.300s", json_object_object_get_ex(o, "message", &m) && json_object_is_type(m, json_type_string)
					      ? json_object_get_string(m) : "no message");
	json_object_put(o);
	rc = status == CHECK_ST_BUSY ? ASK_BUSY : ASK_FAILED;
out:
	free(body);
	close(fd);
	return rc;
}

/*
 * Ask the checker at path about code (ask_once). A check has no side
 * effects, so a connection reset before any answer byte (the socket's owner
 * was killed with the request in hand, and another runner takes the socket
 * over) is asked once more, on a new connection to another checker than the
 * one that reset it (the dead owner's listening socket still takes
 * connections for a moment, and resets them too), for up to
 * CHECK_TAKEOVER_MS: a takeover is not seen by clients. A second reset is
 * ASK_FAILED, as any hang-up was.
 */
static enum ask ask_checker(const char *path, const char *code, size_t len, json_object **out, char *err,
			    size_t errlen)
{
	pid_t peer = 0;
	enum ask rc = ask_once(path, code, len, CHECK_CONNECT_MS, &peer, out, err, errlen);
	if (rc == ASK_RESET) {
		log_msg(LOG_LVL_WARNING, "check_retried", "%s (checker pid %ld)", err, (long)peer);
		rc = ask_once(path, code, len, CHECK_TAKEOVER_MS, &peer, out, err, errlen);
	}
	return rc == ASK_RESET ? ASK_FAILED : rc;
}

/* String field of o, or def. */
static const char *field(json_object *o, const char *k, const char *def)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : def;
}

/* Integer field of o clamped to [0, 1e9], or 0. */
static long long ifield(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	long long x = json_object_get_int64(v);
	return x < 0 ? 0 : x > 1000000000 ? 1000000000 : x;
}

/* Reply 400 for a syntax error: {"error","code","detail","line","column"}. */
static void reply_syntax(struct fcgi_ctx *c, json_object *a)
{
	long long line = ifield(a, "line"), col = ifield(a, "column");
	char msg[512];
	snprintf(msg, sizeof msg, "syntax error at line %lld, column %lld: %.300s", line, col,
		 field(a, "message", "invalid syntax"));
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string("invalid_field"));
	json_object_object_add(o, "detail", json_object_new_string(msg));
	json_object_object_add(o, "line", json_object_new_int64(line));
	json_object_object_add(o, "column", json_object_new_int64(col));
	fcgi_reply_json(c, 400, o);
}

/*
 * Whether a checker's answer is a function of the code alone (so it may be
 * cached): an accepted kind, or a syntax, contract or encoding error. A
 * check stopped by a limit depends on the load and is never cached.
 */
static bool cacheable(json_object *a)
{
	json_object *okv;
	if (json_object_object_get_ex(a, "ok", &okv) && json_object_get_boolean(okv))
		return true;
	const char *what = field(a, "error", "");
	return strcmp(what, "syntax") == 0 || strcmp(what, "contract") == 0 || strcmp(what, "encoding") == 0;
}

/*
 * The reduced verdict the API acts on, as JSON text in out (NUL-ended):
 * ok and kind, or error, message (cut to 400 bytes), line and column.
 * false if it does not fit (then nothing is cached).
 */
static bool reduce(json_object *a, char *out, size_t cap)
{
	json_object *r = json_object_new_object(), *okv;
	bool ok = json_object_object_get_ex(a, "ok", &okv) && json_object_get_boolean(okv);
	char msg[401];
	json_object_object_add(r, "ok", json_object_new_boolean(ok));
	if (ok) {
		json_object_object_add(r, "kind", json_object_new_string(field(a, "kind", "")));
	} else {
		snprintf(msg, sizeof msg, "%s", field(a, "message", ""));
		json_object_object_add(r, "error", json_object_new_string(field(a, "error", "")));
		json_object_object_add(r, "message", json_object_new_string(msg));
		json_object_object_add(r, "line", json_object_new_int64(ifield(a, "line")));
		json_object_object_add(r, "column", json_object_new_int64(ifield(a, "column")));
	}
	const char *t = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN);
	bool fits = strlen(t) < cap;
	if (fits)
		memcpy(out, t, strlen(t) + 1);
	json_object_put(r);
	return fits;
}

/* Row callback: copy the one verdict column. */
static bool cache_row(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)ncols;
	json_object **out = ctx;
	json_object *o = json_tokener_parse(cols[0].buf);
	if (o && json_object_is_type(o, json_type_object))
		*out = o;
	else
		json_object_put(o);
	return false;
}

/* The cached verdict for hash under this checker, or NULL (none, or the DB failed: then ask). */
static json_object *cache_get(struct fcgi_ctx *c, const char *hash)
{
	char verdict[CHECK_VERDICT_MAX];
	struct db_arg args[] = { DB_ARG_TEXT(hash), DB_ARG_TEXT(CHECK_CHECKER_VERSION) };
	struct db_col cols[] = { DB_COL_TEXT(verdict) };
	json_object *o = NULL;
	enum db_status st = db_exec(fcgi_db(c), "SELECT verdict FROM code_checks WHERE code_hash = ? AND checker = ?",
				    args, 2, cols, 1, cache_row, &o, NULL, DB_IDEMPOTENT);
	if (st != DB_OK)
		log_msg(LOG_LVL_WARNING, "check_cache_read", "%s", db_strerror(st));
	return o;
}

/* Store a cacheable answer; a failure only costs a later check. */
static void cache_put(struct fcgi_ctx *c, const char *hash, json_object *a)
{
	char verdict[CHECK_VERDICT_MAX];
	if (!cacheable(a) || !reduce(a, verdict, sizeof verdict))
		return;
	struct db_arg args[] = { DB_ARG_TEXT(hash), DB_ARG_TEXT(CHECK_CHECKER_VERSION), DB_ARG_TEXT(verdict) };
	enum db_status st = db_exec(fcgi_db(c), "INSERT IGNORE INTO code_checks (code_hash, checker, verdict) VALUES (?, ?, ?)",
				    args, 3, NULL, 0, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK)
		log_msg(LOG_LVL_WARNING, "check_cache_write", "%s", db_strerror(st));
}

/* Ask the checker; on an answer, cache it and return it, else reply 503 and return NULL. */
static json_object *ask(struct fcgi_ctx *c, const char *code, size_t len, const char *hash)
{
	char err[512] = "", path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	json_object *a = NULL;
	if (check_socket_path(fcgi_config(c, "AGENTTEST_CHECK_SOCKET"), fcgi_config(c, "RUNNER_NOTIFY_DIR"), path,
			      sizeof path) != 0) {
		log_msg(LOG_LVL_ERROR, "check_socket_invalid", "AGENTTEST_CHECK_SOCKET is not an absolute socket path");
		fcgi_reply_error(c, 503, "unavailable", "the code checker is not configured on this server");
		return NULL;
	}
	switch (ask_checker(path, code, len, &a, err, sizeof err)) {
	case ASK_ANSWER:
		cache_put(c, hash, a);
		return a;
	case ASK_DOWN:
		log_msg(LOG_LVL_WARNING, "checker_unavailable", "%s", err);
		fcgi_add_header(c, "Retry-After", "5");
		fcgi_reply_error(c, 503, "unavailable",
				 "the code checker (agenttest-runner) is not running on this server; try again later");
		return NULL;
	case ASK_BUSY:
		fcgi_add_header(c, "Retry-After", "1");
		fcgi_reply_error(c, 503, "unavailable", "the code checker is busy; try again shortly");
		return NULL;
	case ASK_FAILED:
	case ASK_RESET:   /* ask_checker turns a second reset into ASK_FAILED */
		break;
	}
	log_msg(LOG_LVL_ERROR, "check_failed", "%s", err);
	fcgi_reply_error(c, 503, "unavailable", "the code check could not run: %s", err);
	return NULL;
}

bool st_check_code(struct fcgi_ctx *c, const char *code, size_t len, const char *hash, char kind[16])
{
	json_object *a = cache_get(c, hash);
	bool ok = false;
	if (!a && !(a = ask(c, code, len, hash)))
		return false;
	json_object *okv;
	const char *what = field(a, "error", "");
	if (json_object_object_get_ex(a, "ok", &okv) && json_object_get_boolean(okv)) {
		const char *k = field(a, "kind", "");
		if (strcmp(k, "simulate") == 0 || strcmp(k, "positions") == 0 || strcmp(k, "signal") == 0) {
			snprintf(kind, 16, "%s", k);
			ok = true;
		} else {
			fcgi_reply_error(c, 500, "internal", "the code check returned an unknown kind");
		}
	} else if (strcmp(what, "syntax") == 0) {
		reply_syntax(c, a);
	} else {
		fcgi_reply_error(c, 400, "invalid_field", "%.400s", field(a, "message", "code does not define a strategy"));
	}
	json_object_put(a);
	return ok;
}
