/*
 * rdb: the runner's SQL against the queue (the `runs` table).
 *
 * Every statement that changes a claimed run is guarded by the lease:
 * `WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ?`.
 * A runner whose lease expired (and whose run was re-queued and perhaps
 * claimed again, which bumps `attempts`) therefore matches zero rows and
 * writes nothing: the result of a run is written exactly once. Transactions
 * are short: a claim is one SELECT ... FOR UPDATE SKIP LOCKED and one UPDATE;
 * the final write is one UPDATE plus the inserts of the metrics, equity and
 * leaderboard rows, committed together.
 *
 * Values are interpolated only as escaped string literals (rdb_quote) or as
 * numbers printed by this file; run ids are UUIDs checked by policy_is_uuid.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dburl.h"
#include "xalloc.h"
#include "evaluator/runner/runner.h"

void rdb_quote(MYSQL *c, struct buf *b, const char *s, size_t n)
{
	size_t need = xadd(xmul(n, 2), 3);
	buf_reserve(b, need);
	b->data[b->len++] = '\'';
	unsigned long w = mysql_real_escape_string(c, b->data + b->len, s, (unsigned long)n);
	b->len += w;
	b->data[b->len++] = '\'';
	b->data[b->len] = '\0';
}

/* Run one statement; on error put the server message in err and return -1. */
static int q(MYSQL *c, const struct buf *sql, struct buf *err)
{
	if (mysql_real_query(c, sql->data, (unsigned long)sql->len) != 0) {
		buf_printf(err, "database: %s", mysql_error(c));
		return -1;
	}
	return 0;
}

/* Run a constant statement. */
static int qs(MYSQL *c, const char *sql, struct buf *err)
{
	if (mysql_query(c, sql) != 0) {
		buf_printf(err, "database: %s", mysql_error(c));
		return -1;
	}
	return 0;
}

/* Roll back after an error, keeping the first message. */
static void rollback(MYSQL *c)
{
	(void)mysql_query(c, "ROLLBACK");
}

MYSQL *rdb_connect(const char *url, struct buf *err)
{
	struct dburl u;
	MYSQL *c = NULL;
	if (!dburl_parse(url, &u, err))
		return NULL;
	c = mysql_init(NULL);
	if (!c) {
		buf_puts(err, "database: out of memory");
		goto out;
	}
	unsigned timeout = 5;
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(c, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (!mysql_real_connect(c, u.socket ? "localhost" : u.host, u.user, u.password, u.database,
				u.port, u.socket, 0)) {
		buf_printf(err, "database: %s", mysql_error(c));
		mysql_close(c);
		c = NULL;
		goto out;
	}
	if (qs(c, "SET SESSION time_zone = '+00:00', autocommit = 1, "
		  "tx_isolation = 'READ-COMMITTED'", err) != 0) {
		mysql_close(c);
		c = NULL;
	}
out:
	dburl_free(&u);
	return c;
}

void rjob_free(struct rjob *j)
{
	free(j->dataset_version);
	free(j->dataset_path);
	free(j->params);
	free(j->asset);
	free(j->verify_of);
	free(j->code);
	free(j->kind);
	free(j->engine);
	memset(j, 0, sizeof *j);
}

/* strdup of a nullable column. */
static char *col(MYSQL_ROW row, unsigned long *len, int i)
{
	return row[i] ? xstrndup(row[i], len[i]) : NULL;
}

/* Copy a hash column into a 65-byte field. */
static void hash_col(char dst[65], MYSQL_ROW row, unsigned long *len, int i)
{
	size_t n = row[i] ? len[i] : 0;
	if (n > 64)
		n = 64;
	if (n)
		memcpy(dst, row[i], n);
	dst[n] = '\0';
}

/* Load the execution details of claimed run j->id. 1 ok, 0 vanished, -1 error. */
static int load_job(MYSQL *c, struct rjob *j, struct buf *err)
{
	struct buf sql = BUF_INIT;
	MYSQL_RES *res = NULL;
	int rc = -1;
	buf_puts(&sql, "SELECT r.seq, r.strategy_version_id, r.dataset_version, d.path, r.dataset_hash, "
		       "r.code_hash, r.config_hash, r.params, r.asset, r.audit, r.verify_of, v.code, v.kind, r.engine "
		       "FROM runs r JOIN strategy_versions v ON v.id = r.strategy_version_id "
		       "JOIN datasets d ON d.id = r.dataset_id WHERE r.id = ");
	rdb_quote(c, &sql, j->id, strlen(j->id));
	if (q(c, &sql, err) != 0 || !(res = mysql_store_result(c))) {
		if (!err->len)
			buf_printf(err, "database: %s", mysql_error(c));
		goto out;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row) {
		rc = 0;
		goto out;
	}
	unsigned long *len = mysql_fetch_lengths(res);
	j->seq = strtoull(row[0], NULL, 10);
	j->strategy_version_id = strtoull(row[1], NULL, 10);
	j->dataset_version = col(row, len, 2);
	j->dataset_path = col(row, len, 3);
	hash_col(j->dataset_hash, row, len, 4);
	hash_col(j->code_hash, row, len, 5);
	hash_col(j->config_hash, row, len, 6);
	j->params = col(row, len, 7);
	j->asset = col(row, len, 8);
	j->audit = row[9] && row[9][0] == '1';
	j->verify_of = col(row, len, 10);
	j->code = col(row, len, 11);
	j->kind = col(row, len, 12);
	j->engine = col(row, len, 13);
	rc = 1;
out:
	if (res)
		mysql_free_result(res);
	buf_free(&sql);
	return rc;
}

int rdb_claim(MYSQL *c, const char *owner, struct rjob *j, struct buf *err)
{
	struct buf sql = BUF_INIT;
	MYSQL_RES *res = NULL;
	int rc = -1;
	memset(j, 0, sizeof *j);
	if (qs(c, "START TRANSACTION", err) != 0)
		goto out;
	if (qs(c, "SELECT id, attempts, max_attempts FROM runs WHERE status = 'queued' "
		  "ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED", err) != 0)
		goto fail;
	if (!(res = mysql_store_result(c))) {
		buf_printf(err, "database: %s", mysql_error(c));
		goto fail;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row) {
		rollback(c);
		rc = 0;
		goto out;
	}
	snprintf(j->id, sizeof j->id, "%s", row[0]);
	j->attempt = (unsigned)strtoul(row[1], NULL, 10) + 1;
	j->max_attempts = (unsigned)strtoul(row[2], NULL, 10);
	buf_puts(&sql, "UPDATE runs SET status = 'running', lease_owner = ");
	rdb_quote(c, &sql, owner, strlen(owner));
	buf_printf(&sql, ", lease_expires_at = NOW(6) + INTERVAL %d SECOND, attempts = %u, "
			 "started_at = NOW(6) WHERE id = ", RUNNER_LEASE_S, j->attempt);
	rdb_quote(c, &sql, j->id, strlen(j->id));
	if (q(c, &sql, err) != 0)
		goto fail;
	if (qs(c, "COMMIT", err) != 0)
		goto fail;
	rc = load_job(c, j, err);
	if (rc == 0)
		buf_printf(err, "claimed run %s vanished", j->id);
	goto out;
fail:
	rollback(c);
out:
	if (res)
		mysql_free_result(res);
	buf_free(&sql);
	return rc;
}

/* Append the lease guard of j for owner. */
static void guard(MYSQL *c, struct buf *sql, const char *owner, const struct rjob *j)
{
	buf_puts(sql, " WHERE id = ");
	rdb_quote(c, sql, j->id, strlen(j->id));
	buf_puts(sql, " AND status = 'running' AND lease_owner = ");
	rdb_quote(c, sql, owner, strlen(owner));
	buf_printf(sql, " AND attempts = %u", j->attempt);
}

/* Append `, name = 'text'` or `, name = NULL` for an empty buffer. */
static void set_text(MYSQL *c, struct buf *sql, const char *name, const struct buf *v)
{
	buf_printf(sql, ", %s = ", name);
	if (v->len)
		rdb_quote(c, sql, v->data, v->len);
	else
		buf_puts(sql, "NULL");
}

/* The current time of the server with microseconds, into now[32]. */
static int db_now(MYSQL *c, char now[32], struct buf *err)
{
	MYSQL_RES *res;
	if (qs(c, "SELECT NOW(6)", err) != 0 || !(res = mysql_store_result(c)))
		return -1;
	MYSQL_ROW row = mysql_fetch_row(res);
	int rc = -1;
	if (row && row[0]) {
		snprintf(now, 32, "%s", row[0]);
		rc = 0;
	}
	mysql_free_result(res);
	return rc;
}

/* Append metric id of m as an SQL number, or NULL when absent. */
static void metric_sql(struct buf *sql, const struct metrics *m, enum metric_id id)
{
	if (m->present[id])
		buf_printf(sql, ", %.17g", m->v[id]);
	else
		buf_puts(sql, ", NULL");
}

/* INSERTs of metrics, equity and the leaderboard row of a completed run. */
static int write_completed(MYSQL *c, const struct rjob *j, struct rresult *r, const char *now,
			   struct buf *err)
{
	static const enum metric_id cols[] = { MET_TOTAL_RETURN, MET_CAGR, MET_MAX_DRAWDOWN, MET_VOLATILITY,
					       MET_SHARPE, MET_LIQUIDATION_EVENTS, MET_CAPITAL_EFFICIENCY,
					       MET_SCORE, MET_RUNTIME_S };
	struct buf sql = BUF_INIT;
	int rc = -1;
	const struct metrics *m = &r->m;
	bool eligible = !j->verify_of && r->audit_ran && r->audit_passed && policy_metrics_finite(m) &&
			m->present[MET_SCORE];
	buf_puts(&sql, "INSERT INTO run_metrics (run_id, run_seq, strategy_version_id, dataset_version, "
		       "total_return, cagr, max_drawdown, volatility, sharpe, liquidation_events, "
		       "capital_efficiency, score, runtime_s, extra, eligible, completed_at) VALUES (");
	rdb_quote(c, &sql, j->id, strlen(j->id));
	buf_printf(&sql, ", %" PRIu64 ", %" PRIu64 ", ", j->seq, j->strategy_version_id);
	rdb_quote(c, &sql, j->dataset_version, strlen(j->dataset_version));
	for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
		if (cols[i] == MET_LIQUIDATION_EVENTS && m->present[cols[i]])
			buf_printf(&sql, ", %lld", (long long)m->v[cols[i]]);
		else
			metric_sql(&sql, m, cols[i]);
	}
	buf_puts(&sql, ", ");
	rdb_quote(c, &sql, r->metrics_json.data ? r->metrics_json.data : "{}", r->metrics_json.len);
	buf_printf(&sql, ", %d, '%s')", eligible ? 1 : 0, now);
	if (q(c, &sql, err) != 0)
		goto out;
	buf_reset(&sql);
	buf_puts(&sql, "INSERT INTO run_equity (run_id, n, data) VALUES (");
	rdb_quote(c, &sql, j->id, strlen(j->id));
	buf_printf(&sql, ", %zu, ", r->n);
	rdb_quote(c, &sql, (const char *)r->equity, xmul(r->n, sizeof(double)));
	buf_putc(&sql, ')');
	if (q(c, &sql, err) != 0)
		goto out;
	if (eligible) {
		buf_reset(&sql);
		buf_puts(&sql, "INSERT INTO leaderboard_best (dataset_version, strategy_version_id, run_id, "
			       "run_seq, score, completed_at) VALUES (");
		rdb_quote(c, &sql, j->dataset_version, strlen(j->dataset_version));
		buf_printf(&sql, ", %" PRIu64 ", ", j->strategy_version_id);
		rdb_quote(c, &sql, j->id, strlen(j->id));
		buf_printf(&sql, ", %" PRIu64 ", %.17g, '%s') ON DUPLICATE KEY UPDATE "
				 "run_id = IF(VALUES(score) > score, VALUES(run_id), run_id), "
				 "run_seq = IF(VALUES(score) > score, VALUES(run_seq), run_seq), "
				 "completed_at = IF(VALUES(score) > score, VALUES(completed_at), completed_at), "
				 "score = GREATEST(score, VALUES(score))",
			   j->seq, m->v[MET_SCORE], now);
		if (q(c, &sql, err) != 0)
			goto out;
		/* the leaderboard of this dataset version changed (API caches key on it) */
		buf_reset(&sql);
		buf_puts(&sql, "INSERT INTO leaderboard_gen (dataset_version, gen) VALUES (");
		rdb_quote(c, &sql, j->dataset_version, strlen(j->dataset_version));
		buf_puts(&sql, ", 1) ON DUPLICATE KEY UPDATE gen = gen + 1");
		if (q(c, &sql, err) != 0)
			goto out;
	}
	rc = 0;
out:
	buf_free(&sql);
	return rc;
}

int rdb_finish(MYSQL *c, const char *owner, const struct rjob *j, struct rresult *r,
	       const char *artifacts_dir, struct buf *err)
{
	static const char *const names[] = { "completed", "failed", "cancelled" };
	struct buf sql = BUF_INIT;
	char now[32];
	int rc = -1;
	if (qs(c, "START TRANSACTION", err) != 0)
		goto out;
	if (db_now(c, now, err) != 0)
		goto fail;
	buf_printf(&sql, "UPDATE runs SET status = '%s', completed_at = '%s', runtime_s = %.17g, "
			 "lease_owner = NULL, lease_expires_at = NULL",
		   names[r->status], now, r->runtime_s);
	set_text(c, &sql, "resources", &r->resources_json);
	set_text(c, &sql, "audit_result", &r->audit_json);
	buf_printf(&sql, ", audit_passed = %s", r->audit_ran ? (r->audit_passed ? "1" : "0") : "NULL");
	if (r->status == RJOB_COMPLETED) {
		buf_puts(&sql, ", error_code = NULL, error_message = NULL, error_log_tail = NULL");
		buf_puts(&sql, ", artifacts_dir = ");
		if (artifacts_dir)
			rdb_quote(c, &sql, artifacts_dir, strlen(artifacts_dir));
		else
			buf_puts(&sql, "NULL");
	} else {
		struct buf code = BUF_INIT;
		buf_puts(&code, r->error_code[0] ? r->error_code : (r->status == RJOB_CANCELLED ? "cancelled" : "internal"));
		set_text(c, &sql, "error_code", &code);
		buf_free(&code);
		/* the API reads messages into 4 KiB: cut long ones at a character */
		size_t cut = r->error_message.len;
		if (cut > RUNNER_MESSAGE_MAX) {
			cut = RUNNER_MESSAGE_MAX;
			while (cut && ((unsigned char)r->error_message.data[cut] & 0xC0) == 0x80)
				cut--;
			r->error_message.len = cut;
			r->error_message.data[cut] = '\0';
		}
		set_text(c, &sql, "error_message", &r->error_message);
		set_text(c, &sql, "error_log_tail", &r->log_tail);
	}
	guard(c, &sql, owner, j);
	if (q(c, &sql, err) != 0)
		goto fail;
	if (mysql_affected_rows(c) != 1) {
		rollback(c);
		rc = 0;
		goto out;
	}
	if (r->status == RJOB_COMPLETED && write_completed(c, j, r, now, err) != 0)
		goto fail;
	if (j->verify_of && r->verification_json.len) {
		buf_reset(&sql);
		buf_puts(&sql, "UPDATE runs SET verification = ");
		rdb_quote(c, &sql, r->verification_json.data, r->verification_json.len);
		buf_puts(&sql, " WHERE id = ");
		rdb_quote(c, &sql, j->verify_of, strlen(j->verify_of));
		if (q(c, &sql, err) != 0)
			goto fail;
	}
	if (qs(c, "COMMIT", err) != 0)
		goto fail;
	rc = 1;
	goto out;
fail:
	rollback(c);
out:
	buf_free(&sql);
	return rc;
}

int rdb_heartbeat(MYSQL *c, const char *owner, struct buf *err)
{
	struct buf sql = BUF_INIT;
	buf_printf(&sql, "UPDATE runs SET lease_expires_at = NOW(6) + INTERVAL %d SECOND "
			 "WHERE status = 'running' AND lease_owner = ", RUNNER_LEASE_S);
	rdb_quote(c, &sql, owner, strlen(owner));
	int rc = q(c, &sql, err);
	buf_free(&sql);
	return rc;
}

int rdb_cancel_requests(MYSQL *c, const char *owner, struct buf *out, struct buf *err)
{
	struct buf sql = BUF_INIT;
	MYSQL_RES *res = NULL;
	int n = -1;
	buf_puts(&sql, "SELECT id FROM runs WHERE status = 'running' AND cancel_requested = 1 AND lease_owner = ");
	rdb_quote(c, &sql, owner, strlen(owner));
	if (q(c, &sql, err) != 0 || !(res = mysql_store_result(c)))
		goto out;
	n = 0;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		buf_append(out, row[0], strlen(row[0]) + 1);
		n++;
	}
out:
	if (res)
		mysql_free_result(res);
	buf_free(&sql);
	return n;
}

int rdb_reap(MYSQL *c, struct buf *err)
{
	struct buf sql = BUF_INIT;
	MYSQL_RES *res = NULL;
	int requeued = -1;
	if (qs(c, "START TRANSACTION", err) != 0)
		goto out;
	if (qs(c, "SELECT id, attempts, max_attempts, cancel_requested FROM runs "
		  "WHERE status = 'running' AND lease_expires_at < NOW(6) "
		  "ORDER BY lease_expires_at LIMIT 32 FOR UPDATE SKIP LOCKED", err) != 0 ||
	    !(res = mysql_store_result(c)))
		goto fail;
	requeued = 0;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long attempts = strtoul(row[1], NULL, 10), max = strtoul(row[2], NULL, 10);
		bool cancel = row[3][0] == '1';
		buf_reset(&sql);
		if (cancel)
			buf_puts(&sql, "UPDATE runs SET status = 'cancelled', completed_at = NOW(6), "
				       "error_code = 'cancelled', error_message = 'cancelled while its runner was lost', "
				       "lease_owner = NULL, lease_expires_at = NULL WHERE id = ");
		else if (attempts >= max)
			buf_printf(&sql, "UPDATE runs SET status = 'failed', completed_at = NOW(6), "
					 "error_code = 'runner_lost', error_message = 'the runner executing this run "
					 "was lost %lu times (lease expired); giving up', "
					 "lease_owner = NULL, lease_expires_at = NULL WHERE id = ", attempts);
		else
			buf_puts(&sql, "UPDATE runs SET status = 'queued', lease_owner = NULL, "
				       "lease_expires_at = NULL WHERE id = ");
		rdb_quote(c, &sql, row[0], strlen(row[0]));
		if (q(c, &sql, err) != 0)
			goto fail;
		if (!cancel && attempts < max)
			requeued++;
	}
	if (qs(c, "COMMIT", err) != 0)
		goto fail;
	goto out;
fail:
	requeued = -1;
	rollback(c);
out:
	if (res)
		mysql_free_result(res);
	buf_free(&sql);
	return requeued;
}

int rdb_hand_back(MYSQL *c, const char *owner, const struct rjob *j, struct buf *err)
{
	struct buf sql = BUF_INIT;
	buf_puts(&sql, "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, "
		       "attempts = attempts - 1, started_at = NULL");
	guard(c, &sql, owner, j);
	int rc = q(c, &sql, err);
	buf_free(&sql);
	return rc;
}

int rdb_requeue(MYSQL *c, const char *owner, const struct rjob *j, struct buf *err)
{
	struct buf sql = BUF_INIT;
	buf_puts(&sql, "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL");
	guard(c, &sql, owner, j);
	int rc = q(c, &sql, err);
	buf_free(&sql);
	return rc;
}

int rdb_load_reference(MYSQL *c, const char *run_id, struct buf *metrics_json, struct buf *equity, struct buf *err)
{
	struct buf sql = BUF_INIT;
	MYSQL_RES *res = NULL;
	int rc = -1;
	buf_puts(&sql, "SELECT m.extra, e.data FROM run_metrics m JOIN run_equity e ON e.run_id = m.run_id "
		       "WHERE m.run_id = ");
	rdb_quote(c, &sql, run_id, strlen(run_id));
	if (q(c, &sql, err) != 0 || !(res = mysql_store_result(c)))
		goto out;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row) {
		rc = 0;
		goto out;
	}
	unsigned long *len = mysql_fetch_lengths(res);
	if (row[0])
		buf_append(metrics_json, row[0], len[0]);
	buf_append(equity, row[1], len[1]);
	rc = 1;
out:
	if (res)
		mysql_free_result(res);
	buf_free(&sql);
	return rc;
}
