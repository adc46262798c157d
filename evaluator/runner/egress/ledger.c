/*
 * ledger.c: the budget ledgers of the egress proxy, as small JSON files
 * rewritten atomically (temporary file, fsync, rename) under an flock on a
 * sibling "<file>.lock".
 *
 * Two files take part in every request, always locked in the same order
 * (agent, turn) so concurrent proxy children never deadlock: the agent's
 * lifetime totals (its budget) and the current turn's usage, which the
 * trusted side reads into the iteration when the turn ends. The owner's
 * budget of the day is not a file: it is shared by the owner's agents on
 * every host, so admitting a request also reserves its estimate in MariaDB
 * (owner.c), while the agent's locks are held (a refusal there is recorded
 * in these files like any other). A request is counted when it is admitted
 * (so a burst cannot pass a request budget) and its tokens and cost when
 * its response has ended; the overshoot of the agent's token or USD budget
 * is therefore at most what its requests in flight at that moment spend.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "evaluator/runner/egress/egress.h"

#define LEDGER_MAX 4096

int64_t egress_tokens(const struct egress_usage *u)
{
	return u->input + u->output + u->cache_write + u->cache_read;
}

/* An int64 field >= 0 of o, or 0 when absent. False when malformed. */
static bool get_i64(struct json_object *o, const char *k, int64_t *out)
{
	struct json_object *v;
	*out = 0;
	if (!json_object_object_get_ex(o, k, &v))
		return true;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return false;
	*out = json_object_get_int64(v);
	return true;
}

bool egress_totals_read(const char *path, struct egress_totals *t)
{
	memset(t, 0, sizeof *t);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT;
	char raw[LEDGER_MAX + 1];
	ssize_t n = read(fd, raw, LEDGER_MAX + 1);
	close(fd);
	if (n < 0 || n > LEDGER_MAX)
		return false;
	struct json_tokener *tok = json_tokener_new_ex(4);
	struct json_object *o = json_tokener_parse_ex(tok, raw, (int)n), *v;
	json_tokener_free(tok);
	bool ok = o && json_object_is_type(o, json_type_object) &&
		get_i64(o, "input", &t->u.input) && get_i64(o, "output", &t->u.output) &&
		get_i64(o, "cache_write", &t->u.cache_write) && get_i64(o, "cache_read", &t->u.cache_read) &&
		get_i64(o, "requests", &t->requests) && get_i64(o, "refused", &t->refused);
	if (ok && json_object_object_get_ex(o, "usd", &v)) {
		t->usd = json_object_get_double(v);
		ok = isfinite(t->usd) && t->usd >= 0;
	}
	if (ok && json_object_object_get_ex(o, "exhausted", &v) && json_object_is_type(v, json_type_string))
		snprintf(t->exhausted, sizeof t->exhausted, "%s", json_object_get_string(v));
	json_object_put(o);
	return ok;
}

/* Replace path with the totals (temporary file, fsync, rename). */
static bool totals_write(const char *path, const struct egress_totals *t)
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
		return false;
	struct buf b = BUF_INIT;
	buf_printf(&b, "{\"input\":%lld,\"output\":%lld,\"cache_write\":%lld,\"cache_read\":%lld,"
		"\"tokens\":%lld,\"requests\":%lld,\"usd\":%.9f,\"refused\":%lld,\"exhausted\":\"%s\"}\n",
		(long long)t->u.input, (long long)t->u.output, (long long)t->u.cache_write,
		(long long)t->u.cache_read, (long long)egress_tokens(&t->u), (long long)t->requests,
		t->usd, (long long)t->refused, t->exhausted);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	bool ok = fd >= 0 && write(fd, b.data, b.len) == (ssize_t)b.len && fsync(fd) == 0;
	if (fd >= 0)
		ok = close(fd) == 0 && ok;
	ok = ok && rename(tmp, path) == 0;
	if (!ok)
		unlink(tmp);
	buf_free(&b);
	return ok;
}

int egress_ledger_lock(const char *path)
{
	char lp[4200];
	if ((size_t)snprintf(lp, sizeof lp, "%s.lock", path) >= sizeof lp)
		return -1;
	int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

#define HELD 2   /* the agent's file, the turn's file */

/* The files of a request, locked, their totals read. */
struct held {
	char path[HELD][4200];
	int  lock[HELD];
	struct egress_totals t[HELD];
};

/* Lock and read both (agent, turn). False on any error. */
static bool hold(const struct egress_ledger *l, struct held *h, struct buf *why)
{
	for (int i = 0; i < HELD; i++)
		h->lock[i] = -1;
	if ((size_t)snprintf(h->path[0], sizeof h->path[0], "%s", l->agent_path) >= sizeof h->path[0] ||
	    (size_t)snprintf(h->path[1], sizeof h->path[1], "%s", l->turn_path) >= sizeof h->path[1]) {
		buf_puts(why, "ledger path too long");
		return false;
	}
	for (int i = 0; i < HELD; i++) {
		h->lock[i] = egress_ledger_lock(h->path[i]);
		if (h->lock[i] < 0 || !egress_totals_read(h->path[i], &h->t[i])) {
			buf_printf(why, "ledger %s unreadable", h->path[i]);
			return false;
		}
	}
	return true;
}

/* Write back the files (when commit) and release the locks. */
static bool release(struct held *h, bool commit)
{
	bool ok = true;
	for (int i = 0; i < HELD; i++) {
		if (commit && h->lock[i] >= 0)
			ok = totals_write(h->path[i], &h->t[i]) && ok;
	}
	for (int i = HELD - 1; i >= 0; i--) {
		if (h->lock[i] >= 0)
			close(h->lock[i]);
		h->lock[i] = -1;
	}
	return ok;
}

/* Whether totals t are within limits lim; names the exhausted one. */
static bool within(const struct egress_totals *t, const struct egress_limits *lim, const char *who, struct buf *why)
{
	int64_t tok = egress_tokens(&t->u);
	if (lim->requests >= 0 && t->requests >= lim->requests) {
		buf_printf(why, "%s requests: %lld of %lld used", who, (long long)t->requests, (long long)lim->requests);
		return false;
	}
	if (lim->tokens >= 0 && tok >= lim->tokens) {
		buf_printf(why, "%s tokens: %lld of %lld used", who, (long long)tok, (long long)lim->tokens);
		return false;
	}
	if (lim->usd >= 0 && t->usd >= lim->usd) {
		buf_printf(why, "%s usd: %.6f of %.6f used", who, t->usd, lim->usd);
		return false;
	}
	return true;
}

int egress_ledger_admit(const struct egress_ledger *l, struct egress_owner *o, const struct llm_reserve_usage *est,
			struct buf *why)
{
	struct held h;
	if (!hold(l, &h, why)) {
		release(&h, false);
		return -1;
	}
	struct buf reason = BUF_INIT;
	bool ok = within(&h.t[0], &l->agent, "agent", &reason);
	if (ok) {
		int rc = egress_owner_reserve(o, est, &reason);
		if (rc < 0) {   /* the database failed: nothing admitted, nothing recorded */
			buf_puts(why, buf_cstr(&reason));
			buf_free(&reason);
			release(&h, false);
			return -1;
		}
		ok = rc == 1;
	}
	for (int i = 0; i < HELD; i++) {
		if (ok) {
			h.t[i].requests++;
		} else {
			h.t[i].refused++;
			snprintf(h.t[i].exhausted, sizeof h.t[i].exhausted, "%s", buf_cstr(&reason));
		}
	}
	buf_puts(why, buf_cstr(&reason));
	buf_free(&reason);
	if (!release(&h, true)) {
		buf_puts(why, " (ledger not written)");
		return -1;
	}
	return ok ? 1 : 0;
}

bool egress_ledger_charge(const struct egress_ledger *l, const struct egress_usage *u, double usd)
{
	struct held h;
	struct buf why = BUF_INIT;
	bool ok = hold(l, &h, &why);
	buf_free(&why);
	for (int i = 0; ok && i < HELD; i++) {
		h.t[i].u.input += u->input;
		h.t[i].u.output += u->output;
		h.t[i].u.cache_write += u->cache_write;
		h.t[i].u.cache_read += u->cache_read;
		h.t[i].usd += usd;
	}
	return release(&h, ok) && ok;
}
