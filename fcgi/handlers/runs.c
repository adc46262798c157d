/*
 * runs: POST /runs, GET /runs, GET /runs/{id}, POST /runs/{id}/cancel,
 * GET /runs/{id}/equity, POST /runs/{id}/verify.
 *
 * The API never executes strategies: POST /runs pins the dataset hash, code
 * hash and config hash, inserts a 'queued' row (the row is the job) and
 * sends a wake-up datagram to the runners of this host (rv_notify). With
 * `wait` the worker then sleeps on the runner's wake-up datagram until the
 * run is finished or the wait is over (run_wait.h: the wait is registered
 * before the run is queued, under a pool-wide and a per-user cap, so waiting
 * requests cannot take every worker; over a cap: 429, nothing queued).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "evaluator/canon_json.h"
#include "evaluator/engine.h"
#include "evaluator/hashes.h"
#include "evaluator/pyrepr.h"
#include "fcgi/handlers/handlers.h"
#include "fcgi/handlers/run_wait.h"
#include "fcgi/handlers/runs_view.h"
#include "job_status.h"

#define RUNS_DEFAULT_MAX_QUEUED 100
#define RUNS_MAX_WAIT_S 60
#define RUNS_PARAMS_MAX 16384

/* The `wait` field or query parameter in seconds (0 when absent); false after replying. */
static bool wait_arg(struct fcgi_ctx *c, json_object *body, double *wait)
{
	*wait = 0;
	if (body && !fcgi_json_number(c, body, "wait", FIELD_OPTIONAL | FIELD_NULLABLE, 0, RUNS_MAX_WAIT_S, wait))
		return false;
	if (*wait == 0 && fcgi_query(c, "wait")) {
		int64_t w;
		if (!fcgi_query_int(c, "wait", 0, RUNS_MAX_WAIT_S, 0, &w))
			return false;
		*wait = (double)w;
	}
	return true;
}

/* The strategy version as POST /runs needs it. */
struct version_info {
	long long owner_id;
	char      code_hash[65];
	char      kind[16];
	char      params[RUNS_PARAMS_MAX + 1];
};

/* The registered dataset version. */
struct dataset_info {
	long long id;
	bool      found;
	char      hash[65];
	char      assets[65536];
	char      version[65];   /* the version pinned (a window label resolves to it) */
};

/*
 * What POST /runs reads before it queues a run, in one statement: strategy
 * version vid (with its owner), dataset `version` (a registered version,
 * else the version a market-data window label points at, sql/013
 * dataset_labels; d->found false when neither) and how many runs the
 * version's owner has queued now (*queued; RUNS_MAX_QUEUED). Every table is
 * read by a unique key (the dataset's id is a COALESCE of two constant
 * subqueries), so the server plans it as constants: cheaper than the
 * three statements it replaces, where a UNION ... ORDER BY p LIMIT 1 for
 * the dataset alone cost about 150 us of server CPU per request. 1 the version
 * exists and the caller may see it (uid owns it, or admin), 0 not (or not
 * visible), -1 replied.
 */
static int load_inputs(struct fcgi_ctx *c, long long vid, long long uid, bool admin, const char *version,
		       struct version_info *v, struct dataset_info *d, long long *queued)
{
	struct db_col cols[] = { DB_COL_INT, DB_COL_TEXT(v->code_hash), DB_COL_TEXT(v->kind), DB_COL_TEXT(v->params),
				 DB_COL_INT, DB_COL_TEXT(d->hash), DB_COL_TEXT(d->assets), DB_COL_TEXT(d->version),
				 DB_COL_INT };
	struct db_arg arg[] = { DB_ARG_TEXT(version), DB_ARG_TEXT(version), DB_ARG_INT(vid) };
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT s.owner_id, v.code_hash, v.kind, v.params, d.id, d.dataset_hash, d.assets, d.version, "
		"(SELECT COUNT(*) FROM runs q WHERE q.owner_id = s.owner_id AND q.status = 'queued') "
		"FROM strategy_versions v JOIN strategies s ON s.id = v.strategy_id "
		"LEFT JOIN datasets d ON d.id = COALESCE((SELECT x.id FROM datasets x WHERE x.version = ?), "
		"(SELECT l.dataset_id FROM dataset_labels l WHERE l.label = ?)) "
		"WHERE v.id = ?",
		arg, 3, cols, sizeof cols / sizeof cols[0], NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return -1;
	}
	if (res.rows == 0)
		return 0;
	v->owner_id = cols[0].i;
	d->found = !cols[4].is_null;
	d->id = d->found ? cols[4].i : 0;
	*queued = cols[8].i;
	return admin || v->owner_id == uid ? 1 : 0;
}

/* True if asset is listed in the JSON array text assets. */
static bool has_asset(const char *assets, const char *asset)
{
	json_object *a = json_tokener_parse(assets);
	bool found = false;
	for (size_t i = 0; a && json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(a, i)), asset) == 0)
			found = true;
	json_object_put(a);
	return found;
}

/* The first asset of the JSON array text assets, copied into the request
 * arena; NULL when there is none. */
static const char *first_asset(struct fcgi_ctx *c, const char *assets)
{
	json_object *a = json_tokener_parse(assets);
	const char *r = NULL;
	if (a && json_object_is_type(a, json_type_array) && json_object_array_length(a) > 0) {
		const char *s = json_object_get_string(json_object_array_get_idx(a, 0));
		if (s) {
			size_t n = strlen(s) + 1;
			char *p = arena_alloc(fcgi_arena(c), n);
			memcpy(p, s, n);
			r = p;
		}
	}
	json_object_put(a);
	return r;
}

/* Queued runs of the owner; -1 after replying. */
static long long queued_count(struct fcgi_ctx *c, long long owner)
{
	struct db_col col = DB_COL_INT;
	struct db_arg arg = DB_ARG_INT(owner);
	enum db_status st = db_exec(fcgi_db(c), "SELECT COUNT(*) FROM runs WHERE owner_id = ? AND status = 'queued'",
				    &arg, 1, &col, 1, NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return -1;
	}
	return col.i;
}

/* The per-user limit of queued runs (RUNS_MAX_QUEUED). */
static long long max_queued(struct fcgi_ctx *c)
{
	const char *v = fcgi_config(c, "RUNS_MAX_QUEUED");
	long long n = v ? atoll(v) : 0;
	return n > 0 ? n : RUNS_DEFAULT_MAX_QUEUED;
}

/* True if an owner with q runs queued may queue one more; false after
 * replying 429 with Retry-After. */
static bool room_for(struct fcgi_ctx *c, long long q)
{
	if (q >= max_queued(c)) {
		fcgi_add_header(c, "Retry-After", "5");
		fcgi_reply_error(c, 429, "rate_limited", "%lld runs are already queued for this user (limit %lld); retry later",
				 q, max_queued(c));
		return false;
	}
	return true;
}

/* True if owner may queue one more run (a run or a verification: both are
 * queued runs of their owner); false after replying 429 with Retry-After. */
static bool queue_room(struct fcgi_ctx *c, long long owner)
{
	long long q = queued_count(c, owner);
	return q >= 0 && room_for(c, q);
}

/* Fields of a run to queue. */
struct new_run {
	long long   owner_id, version_id, dataset_id;
	const char *dataset_version, *dataset_hash, *code_hash, *config_hash, *params, *asset, *verify_of, *engine;
	bool        audit;
};

/* Insert a queued run with a fresh id into id[37]. false after replying. */
static bool insert_run(struct fcgi_ctx *c, const struct new_run *n, char id[37])
{
	rv_uuid(id);
	struct db_arg args[] = {
		DB_ARG_TEXT(id), DB_ARG_INT(n->owner_id), DB_ARG_INT(n->version_id), DB_ARG_INT(n->dataset_id),
		DB_ARG_TEXT(n->dataset_version), DB_ARG_TEXT(n->dataset_hash), DB_ARG_TEXT(n->code_hash),
		DB_ARG_TEXT(n->config_hash), DB_ARG_TEXT(n->params),
		n->asset ? DB_ARG_TEXT(n->asset) : DB_ARG_NULL, DB_ARG_INT(n->audit ? 1 : 0),
		n->verify_of ? DB_ARG_TEXT(n->verify_of) : DB_ARG_NULL, n->engine ? DB_ARG_TEXT(n->engine) : DB_ARG_NULL,
	};
	enum db_status st = db_exec(fcgi_db(c),
		"INSERT INTO runs (id, owner_id, strategy_version_id, dataset_id, dataset_version, dataset_hash, "
		"code_hash, config_hash, params, asset, audit, verify_of, engine) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		args, sizeof args / sizeof args[0], NULL, 0, NULL, NULL, NULL, 0);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return false;
	}
	rv_notify(c, "q");
	return true;
}

/* Reply with run id after the registered wait w: 200 when finished within it, else 202. */
static void reply_after_wait(struct fcgi_ctx *c, const char *id, struct run_wait *w)
{
	int done = run_wait_for(c, w, id, true);
	if (done < 0)
		return;
	char loc[64];
	snprintf(loc, sizeof loc, "/runs/%s", id);
	fcgi_add_header(c, "Location", loc);
	rv_reply_run(c, done ? 200 : 202, id);
}

/* POST /runs */
void h_runs_create(struct fcgi_ctx *c)
{
	static const char *const allowed[] = { "strategy_version_id", "strategy_path", "dataset_version", "params",
					       "asset", "audit", "wait", "trusted", "fee_bps", "max_leverage", NULL };
	json_object *body = fcgi_body(c), *params = NULL;
	int64_t vid = 0;
	const char *path = NULL, *dsv = NULL, *asset = NULL;
	bool audit = true, admin, trusted = false;
	double wait;
	struct engine_cfg eng = { ENGINE_DEFAULT_FEE_BPS, ENGINE_DEFAULT_MAX_LEVERAGE };
	json_object *engine = NULL;
	struct buf etext = BUF_INIT;
	long long uid;
	char cfg_hash[65], err[256], id[37];
	struct buf canon = BUF_INIT;
	json_object *defaults = NULL;
	if (!fcgi_json_only(c, body, allowed) ||
	    !fcgi_json_int(c, body, "strategy_version_id", FIELD_OPTIONAL | FIELD_NULLABLE, 1, INT64_MAX - 1, &vid) ||
	    !fcgi_json_string(c, body, "strategy_path", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 4096, &path) ||
	    !fcgi_json_string(c, body, "dataset_version", FIELD_OPTIONAL | FIELD_NULLABLE, 0, 64, &dsv) ||
	    !fcgi_json_object(c, body, "params", FIELD_OPTIONAL, &params) ||
	    !fcgi_json_string(c, body, "asset", FIELD_OPTIONAL | FIELD_NULLABLE, 1, 32, &asset) ||
	    !fcgi_json_bool(c, body, "audit", FIELD_OPTIONAL | FIELD_NULLABLE, &audit) ||
	    !fcgi_json_number(c, body, "fee_bps", FIELD_OPTIONAL | FIELD_NULLABLE, 0, ENGINE_MAX_FEE_BPS, &eng.fee_bps) ||
	    !fcgi_json_number(c, body, "max_leverage", FIELD_OPTIONAL | FIELD_NULLABLE, 0, ENGINE_MAX_LEVERAGE,
			      &eng.max_leverage) ||
	    !fcgi_json_bool(c, body, "trusted", FIELD_OPTIONAL | FIELD_NULLABLE, &trusted) ||
	    !wait_arg(c, body, &wait) || !rv_caller(c, &uid, &admin))
		goto out;
	if (trusted) {
		/* The original ran admins' trusted-directory files unsandboxed; this
		 * server runs every strategy in the sandbox and says so. */
		fcgi_reply_error(c, 400, "invalid_field", "trusted: server runs always execute in the sandbox "
				 "(only the local CLI has --trusted); omit the field or send false");
		goto out;
	}
	if (!engine_cfg_valid(&eng, err, sizeof err)) {
		fcgi_reply_error(c, 400, "invalid_field", "%s", err);
		goto out;
	}
	if (!vid && !path) {
		fcgi_reply_error(c, 400, "missing_field", "Provide strategy_version_id or strategy_path");
		goto out;
	}
	if (!vid) {
		if (!admin) {
			fcgi_reply_error(c, 403, "forbidden", "running a server file by strategy_path needs the admin role");
			goto out;
		}
		long long v;
		if (!st_register_path(c, path, uid, &v, NULL))
			goto out;
		vid = v;
	}
	if (!dsv || !*dsv)
		dsv = fcgi_config(c, "DATASET_VERSION");
	if (!dsv || !*dsv)
		dsv = "v1";
	struct version_info *v = arena_alloc(fcgi_arena(c), sizeof *v);
	struct dataset_info *d = arena_alloc(fcgi_arena(c), sizeof *d);
	long long queued = 0;
	int got = load_inputs(c, vid, uid, admin, dsv, v, d, &queued);
	if (got <= 0) {
		if (got == 0)
			fcgi_reply_error(c, 404, "not_found", "strategy_version_id not found");
		goto out;
	}
	if (!d->found) {
		fcgi_reply_error(c, 404, "not_found", "dataset_version '%s' is not registered (see GET /datasets)", dsv);
		goto out;
	}
	dsv = d->version;   /* pin the version, not a moving label */
	if (asset && !has_asset(d->assets, asset)) {
		fcgi_reply_error(c, 400, "invalid_field", "asset '%s' is not in dataset %s", asset, dsv);
		goto out;
	}
	/* The run records the asset it actually uses (the dataset's first by
	 * default); config_hash names it when it is not that default. */
	const char *first = first_asset(c, d->assets);
	bool other_asset = asset && first && strcmp(asset, first) != 0;
	if (!asset)
		asset = first;
	if (!params) {
		defaults = json_tokener_parse(v->params);
		params = defaults;
	}
	if (strcmp(v->kind, "positions") == 0) {
		/* fee and leverage change a positions run's results: part of its config */
		engine = json_object_new_object();
		json_object_object_add(engine, "fee_bps", json_object_new_double(eng.fee_bps));
		json_object_object_add(engine, "max_leverage", json_object_new_double(eng.max_leverage));
		if (cj_write(&etext, engine, err, sizeof err) != 0) {
			fcgi_reply_error(c, 500, "internal", "engine configuration: %s", err);
			goto out;
		}
	}
	if (hash_config_asset(dsv, other_asset ? asset : NULL, params, engine, cfg_hash, NULL, err, sizeof err) != 0) {
		fcgi_reply_error(c, 400, "invalid_field", "params: %s", err);
		goto out;
	}
	buf_reset(&canon);
	if (cj_write(&canon, params, err, sizeof err) != 0 || canon.len > RUNS_PARAMS_MAX) {
		fcgi_reply_error(c, 400, "invalid_field", "params: %s",
				 canon.len > RUNS_PARAMS_MAX ? "larger than 16 KiB" : err);
		goto out;
	}
	const char *ptext = buf_cstr(&canon);
	if (!room_for(c, queued))
		goto out;
	struct new_run n = {
		.owner_id = v->owner_id, .version_id = vid, .dataset_id = d->id, .dataset_version = dsv,
		.dataset_hash = d->hash, .code_hash = v->code_hash, .config_hash = cfg_hash, .params = ptext,
		.asset = asset, .audit = audit, .engine = engine ? buf_cstr(&etext) : NULL,
	};
	struct run_wait rw;
	if (!run_wait_begin(c, wait, &rw))
		goto out;
	if (!insert_run(c, &n, id)) {
		run_wait_end(&rw);
		goto out;
	}
	reply_after_wait(c, id, &rw);
out:
	json_object_put(engine);
	buf_free(&etext);
	json_object_put(defaults);
	buf_free(&canon);
}

/* Load run {id} for the caller: 1 ok, 0 replied 404, -1 replied an error. */
static int visible_run(struct fcgi_ctx *c, struct rv_run *r)
{
	long long uid;
	bool admin;
	if (!rv_caller(c, &uid, &admin))
		return -1;
	int got = rv_load_run(c, fcgi_param(c, "id"), r);
	if (got < 0)
		return -1;
	if (got == 0 || (!admin && r->owner_id != uid)) {
		fcgi_reply_error(c, 404, "not_found", "run_id not found");
		return 0;
	}
	return 1;
}

/* GET /runs/{id} */
void h_runs_get(struct fcgi_ctx *c)
{
	struct rv_run *r = arena_alloc(fcgi_arena(c), sizeof *r);
	if (visible_run(c, r) <= 0)
		return;
	struct buf *b = fcgi_body_buf(c);
	rv_write_run(b, r);
	fcgi_reply_buf(c, 200, "application/json");
}

/* List state of GET /runs. */
struct list_ctx {
	struct buf *b;
	size_t      n, limit;
	long long   last_seq;
};

/* Row callback: one run summary. */
static bool list_row(void *ctx, const struct db_col *col, size_t ncol)
{
	struct list_ctx *l = ctx;
	(void)ncol;
	if (l->n == l->limit) {
		l->n++;   /* one more exists: there is a next page */
		return false;
	}
	struct buf *b = l->b;
	buf_puts(b, l->n ? ",{\"run_id\":" : "{\"run_id\":");
	rv_str(b, col[0].buf);
	buf_printf(b, ",\"strategy_version_id\":%lld,\"dataset_version\":", col[1].i);
	rv_str(b, col[2].buf);
	buf_puts(b, ",\"status\":");
	rv_str(b, col[3].buf);
	buf_puts(b, ",\"score\":");
	rv_num(b, col[4].is_null ? NULL : col[4].buf);
	buf_puts(b, ",\"error_code\":");
	rv_str(b, col[5].is_null ? NULL : col[5].buf);
	buf_puts(b, ",\"queued_at\":");
	rv_str(b, col[6].buf);
	buf_puts(b, ",\"completed_at\":");
	rv_str(b, col[7].is_null ? NULL : col[7].buf);
	buf_printf(b, ",\"attempts\":%lld,\"verify_of\":", col[8].i);
	rv_str(b, col[10].is_null ? NULL : col[10].buf);
	buf_printf(b, ",\"strategy_id\":%lld,\"strategy_name\":", col[11].i);
	rv_str(b, col[12].buf);
	buf_puts(b, ",\"owner\":");
	rv_str(b, col[13].buf);
	buf_puts(b, ",\"runtime_s\":");
	rv_num(b, col[14].is_null ? NULL : col[14].buf);
	buf_putc(b, '}');
	l->last_seq = col[9].i;
	l->n++;
	return true;
}

/*
 * GET /runs?status=&strategy_id=&strategy_version_id=&dataset_version=&limit=&cursor=
 * One statement: the strategy's id and name and the owner's name come from
 * joins on primary keys, never from a query per row.
 */
void h_runs_list(struct fcgi_ctx *c)
{
	static const char *const statuses[] = { "queued", "running", "completed", "failed", "cancelled", NULL };
	long long uid;
	bool admin;
	int64_t limit, cursor, vid, sid;
	char scope[32];
	const char *status = fcgi_query(c, "status"), *dsv = fcgi_query(c, "dataset_version");
	if (!rv_caller(c, &uid, &admin))
		return;
	/* a cursor is the caller's: another user's does not open */
	snprintf(scope, sizeof scope, "u:%lld", uid);
	if (!fcgi_query_int(c, "limit", 1, 200, 50, &limit) ||
	    !fcgi_query_cursor(c, CURSOR_RUNS, scope, INT64_MAX - 1, &cursor, NULL) ||
	    !fcgi_query_int(c, "strategy_version_id", 1, INT64_MAX - 1, 0, &vid) ||
	    !fcgi_query_int(c, "strategy_id", 1, INT64_MAX - 1, 0, &sid))
		return;
	if (status) {
		bool ok = false;
		for (int i = 0; statuses[i]; i++)
			ok |= strcmp(status, statuses[i]) == 0;
		if (!ok) {
			fcgi_reply_error(c, 400, "invalid_field", "status must be one of queued, running, completed, failed, cancelled");
			return;
		}
	}
	if (dsv && strlen(dsv) > 64) {
		fcgi_reply_error(c, 400, "invalid_field", "dataset_version is too long");
		return;
	}
	struct buf sql = BUF_INIT;
	struct db_arg args[7];
	size_t na = 0;
	/* Keyset page: STRAIGHT_JOIN reads runs first, through an index whose
	 * equality prefix matches the filters and whose last column is seq,
	 * backwards, so LIMIT stops after limit + 1 matching rows whatever the
	 * table size (the optimizer otherwise chose a table scan and a
	 * filesort once "seq < cursor" covered most of the table); the joins
	 * are by primary key, forced: with the users table at a handful of
	 * rows the optimizer otherwise scanned it into a join buffer, which
	 * gives up the index order, so an admin's unfiltered page sorted every
	 * run (3-12 s at 100,000 runs). Measured by tests/bench/runs_list.sh. */
	const char *ix = vid ? "ix_runs_version" : status ? (admin ? "ix_runs_queue" : "ix_runs_owner")
		       : !admin ? "ix_runs_owner_seq" : dsv ? "ix_runs_dataset" : "uq_runs_seq";
	buf_puts(&sql, "SELECT STRAIGHT_JOIN r.id, r.strategy_version_id, r.dataset_version, r.status, CAST(m.score AS CHAR), "
		       "r.error_code, " RV_TS("r.queued_at") ", " RV_TS("r.completed_at") ", r.attempts, r.seq, "
		       "r.verify_of, v.strategy_id, s.name, u.name, CAST(r.runtime_s AS CHAR) FROM runs r FORCE INDEX (");
	buf_puts(&sql, ix);
	buf_puts(&sql, ") "
		       "JOIN strategy_versions v FORCE INDEX (PRIMARY) ON v.id = r.strategy_version_id "
		       "JOIN strategies s FORCE INDEX (PRIMARY) ON s.id = v.strategy_id "
		       "JOIN users u FORCE INDEX (PRIMARY) ON u.id = r.owner_id "
		       "LEFT JOIN run_metrics m FORCE INDEX (PRIMARY) ON m.run_id = r.id WHERE r.seq < ?");
	args[na++] = DB_ARG_INT(cursor);
	if (!admin) {
		buf_puts(&sql, " AND r.owner_id = ?");
		args[na++] = DB_ARG_INT(uid);
	}
	if (status) {
		buf_puts(&sql, " AND r.status = ?");
		args[na++] = DB_ARG_TEXT(status);
	}
	if (vid) {
		buf_puts(&sql, " AND r.strategy_version_id = ?");
		args[na++] = DB_ARG_INT(vid);
	}
	if (sid) {
		buf_puts(&sql, " AND v.strategy_id = ?");
		args[na++] = DB_ARG_INT(sid);
	}
	if (dsv) {
		buf_puts(&sql, " AND r.dataset_version = ?");
		args[na++] = DB_ARG_TEXT(dsv);
	}
	buf_puts(&sql, " ORDER BY r.seq DESC LIMIT ?");
	args[na++] = DB_ARG_INT(limit + 1);
	char id[40], dv[130], st[16], score[40], ec[40], qa[RV_TS_LEN], ca[RV_TS_LEN], vof[40];
	char sname[RV_NAME_LEN], owner[RV_NAME_LEN], rt[40];
	struct db_col cols[] = { DB_COL_TEXT(id), DB_COL_INT, DB_COL_TEXT(dv), DB_COL_TEXT(st), DB_COL_TEXT(score),
				 DB_COL_TEXT(ec), DB_COL_TEXT(qa), DB_COL_TEXT(ca), DB_COL_INT, DB_COL_INT,
				 DB_COL_TEXT(vof), DB_COL_INT, DB_COL_TEXT(sname), DB_COL_TEXT(owner), DB_COL_TEXT(rt) };
	struct buf *b = fcgi_body_buf(c);
	struct list_ctx l = { .b = b, .limit = (size_t)limit };
	buf_puts(b, "{\"runs\":[");
	enum db_status dst = db_exec(fcgi_db(c), sql.data, args, na, cols, sizeof cols / sizeof cols[0], list_row, &l,
				     NULL, DB_IDEMPOTENT);
	buf_free(&sql);
	if (dst != DB_OK) {
		buf_reset(b);
		fcgi_reply_db_error(c, dst);
		return;
	}
	buf_puts(b, "],\"next_cursor\":");
	if (l.n > l.limit)
		fcgi_put_cursor(c, b, CURSOR_RUNS, scope, l.last_seq);
	else
		buf_puts(b, "null");
	buf_putc(b, '}');
	fcgi_reply_buf(c, 200, "application/json");
}

/* POST /runs/{id}/cancel */
void h_runs_cancel(struct fcgi_ctx *c)
{
	struct rv_run *r = arena_alloc(fcgi_arena(c), sizeof *r);
	struct db_result res = { 0 };
	double wait = 0;
	struct run_wait rw;
	if (visible_run(c, r) <= 0)
		return;
	if (fcgi_query(c, "wait")) {
		int64_t w;
		if (!fcgi_query_int(c, "wait", 0, RUNS_MAX_WAIT_S, 0, &w))
			return;
		wait = (double)w;
	}
	if (!run_wait_begin(c, wait, &rw))
		return;
	enum db_status st = job_request_cancel(fcgi_db(c), "runs", r->id, &res.affected);
	if (st != DB_OK) {
		run_wait_end(&rw);
		fcgi_reply_db_error(c, st);
		return;
	}
	if (res.affected == 0 && strcmp(r->status, "running") != 0 && strcmp(r->status, "queued") != 0) {
		run_wait_end(&rw);
		fcgi_reply_error(c, 409, "conflict", "run %s is already %s", r->id, r->status);
		return;
	}
	rv_notify(c, "c");
	if (strcmp(r->status, "queued") == 0)
		jobwait_wake_all(fcgi_config(c, "RUNNER_NOTIFY_DIR"));  /* a queued run is final now */
	if (run_wait_for(c, &rw, r->id, false) < 0)
		return;
	rv_reply_run(c, 202, r->id);
}

/* True if the client asked for JSON (Accept or ?format=json). */
static bool wants_json(struct fcgi_ctx *c)
{
	const char *f = fcgi_query(c, "format");
	if (f)
		return strcmp(f, "json") == 0;
	const char *acc = fcgi_header(c, "HTTP_ACCEPT");
	return acc && strstr(acc, "application/json") && !strstr(acc, "text/csv");
}

/* Append the n little-endian float64 values at raw to b as a JSON array
 * (shortest round-trip repr, as the CSV). */
static void curve_json(struct buf *b, const char *raw, size_t n)
{
	char num[PYREPR_MAX];
	buf_putc(b, '[');
	for (size_t i = 0; i < n; i++) {
		double x;
		memcpy(&x, raw + i * sizeof x, sizeof x);
		pyrepr_double(x, num);
		if (i)
			buf_putc(b, ',');
		buf_puts(b, num);
	}
	buf_putc(b, ']');
}

/* GET /runs/{id}/equity */
void h_runs_equity(struct fcgi_ctx *c)
{
	long long uid;
	bool admin;
	const char *id = fcgi_param(c, "id");
	if (!rv_caller(c, &uid, &admin))
		return;
	char status[16];
	struct db_col cols[] = { DB_COL_INT, DB_COL_TEXT(status), DB_COL_INT };
	struct db_arg arg = DB_ARG_TEXT(id);
	struct db_result res = { 0 };
	enum db_status st = db_exec(fcgi_db(c),
		"SELECT r.owner_id, r.status, COALESCE(e.n, -1) FROM runs r LEFT JOIN run_equity e ON e.run_id = r.id "
		"WHERE r.id = ?", &arg, 1, cols, 3, NULL, NULL, &res, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (res.rows == 0 || (!admin && cols[0].i != uid)) {
		fcgi_reply_error(c, 404, "not_found", "run_id not found");
		return;
	}
	if (cols[2].i < 0) {
		fcgi_reply_error(c, 409, "conflict", "run %s has no equity curve (status %s)", id, status);
		return;
	}
	size_t n = (size_t)cols[2].i, bytes = n * sizeof(double);
	struct db_col data[] = {
		{ .type = DB_T_BLOB, .buf = arena_alloc(fcgi_arena(c), bytes + 1), .cap = bytes + 1 },
		{ .type = DB_T_BLOB, .buf = arena_alloc(fcgi_arena(c), bytes + 1), .cap = bytes + 1 },
	};
	st = db_exec(fcgi_db(c), "SELECT data, benchmark FROM run_equity WHERE run_id = ?", &arg, 1, data, 2, NULL,
		     NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	if (data[0].len != bytes || (!data[1].is_null && data[1].len != bytes)) {
		fcgi_reply_error(c, 500, "internal", "stored equity curve of run %s is damaged", id);
		return;
	}
	bool json = wants_json(c);
	struct buf *b = fcgi_body_buf(c);
	if (json) {
		buf_puts(b, "{\"run_id\":");
		rv_str(b, id);
		buf_puts(b, ",\"equity\":");
		curve_json(b, data[0].buf, n);
		buf_puts(b, ",\"benchmark\":");
		if (data[1].is_null)
			buf_puts(b, "null");
		else
			curve_json(b, data[1].buf, n);
		buf_puts(b, "}");
	} else {
		char num[PYREPR_MAX];
		buf_puts(b, "step,equity\n");
		for (size_t i = 0; i < n; i++) {
			double x;
			memcpy(&x, data[0].buf + i * sizeof x, sizeof x);
			pyrepr_double(x, num);
			buf_printf(b, "%zu,%s\n", i, num);
		}
	}
	fcgi_reply_buf(c, 200, json ? "application/json" : "text/csv; charset=utf-8");
}

/* POST /runs/{id}/verify */
void h_runs_verify(struct fcgi_ctx *c)
{
	struct rv_run *r = arena_alloc(fcgi_arena(c), sizeof *r);
	double wait = 0;
	char id[37];
	if (visible_run(c, r) <= 0 || !wait_arg(c, fcgi_body(c), &wait))
		return;
	if (strcmp(r->status, "completed") != 0 || r->verify_of) {
		fcgi_reply_error(c, 409, "conflict", "only a completed run can be verified (run %s is %s)", r->id, r->status);
		return;
	}
	char engine[512];
	struct db_col dcol[] = { DB_COL_INT, DB_COL_TEXT(engine) };
	struct db_arg arg = DB_ARG_TEXT(r->id);
	enum db_status st = db_exec(fcgi_db(c), "SELECT dataset_id, engine FROM runs WHERE id = ?", &arg, 1, dcol, 2,
				    NULL, NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return;
	}
	struct new_run n = {
		.owner_id = r->owner_id, .version_id = r->strategy_version_id, .dataset_id = dcol[0].i,
		.dataset_version = r->dataset_version, .dataset_hash = r->dataset_hash, .code_hash = r->code_hash,
		.config_hash = r->config_hash, .params = r->params ? r->params : "{}", .asset = r->asset,
		.audit = r->audit_requested, .verify_of = r->id, .engine = dcol[1].is_null ? NULL : engine,
	};
	struct run_wait rw;
	if (!queue_room(c, n.owner_id) || !run_wait_begin(c, wait, &rw))
		return;
	if (!insert_run(c, &n, id)) {
		run_wait_end(&rw);
		return;
	}
	int done = run_wait_for(c, &rw, id, true);
	if (done < 0)
		return;
	struct rv_run *orig = arena_alloc(fcgi_arena(c), sizeof *orig);
	if (rv_load_run(c, r->id, orig) < 0)
		return;
	char vstatus[16];
	if (!run_wait_status(c, id, vstatus))
		return;
	struct buf *b = fcgi_body_buf(c);
	buf_puts(b, "{\"run_id\":");
	rv_str(b, r->id);
	buf_puts(b, ",\"verification_run_id\":");
	rv_str(b, id);
	buf_puts(b, ",\"status\":");
	rv_str(b, vstatus);
	buf_puts(b, ",\"verification\":");
	rv_raw(b, done ? orig->verification : NULL);
	buf_putc(b, '}');
	fcgi_reply_buf(c, done ? 200 : 202, "application/json");
}
