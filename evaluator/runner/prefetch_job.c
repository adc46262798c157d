/*
 * prefetch_job: the runner's market-data job kind, rows of `data_prefetches`
 * (sql/013), queued by POST /api/data-cache/prefetch.
 *
 * Theory of operation. A kind of the one job queue (jobq.h): claimed after
 * runs and evaluations, with the same lease, heartbeat, cancel, reap and
 * guarded finish. execute() fetches every asset of the window from Binance
 * (market.h mk_fetch_window, as `agenttest data fetch` does: days_back days
 * ending at the last bar served, so the version is a function of its label;
 * mk_fetch: pagination, Retry-After, backoff, the open candle dropped),
 * then, when the prefetch's body gave a CoinGlass key (sealed
 * for the job in its row, sql/020, and erased by the job's finish) or the
 * admin stored one (secret store, owner 0; both opened with the server
 * secret here in the runner), the
 * CoinGlass fields over the same minute grid (mk_cg_fetch), and stores an
 * immutable dataset version with mk_store (staging
 * directory renamed to its hash, then the label symlink swapped), so a
 * runner killed mid-fetch leaves no half-written version, and the reaper
 * hands the row to the next claim (attempts < max_attempts) which fetches
 * again. Progress is durable: the fetcher's progress callback (called from
 * mk_fetch's worker threads, one at a time, so the connection is never used
 * concurrently; Connector/C 3 needs no per-thread init) writes assets_done, rows_fetched and step at most every
 * PF_PROGRESS_MS through a second connection that only this job uses,
 * guarded by (id, status running, attempts) so a lost lease writes nothing.
 * The finishing transaction (commit) registers the version with
 * mk_register (market/register.h, the code `agenttest data fetch` uses
 * too: `datasets`, so runs, evaluations and the SDK can pin it, the
 * window's label in dataset_labels, paper step, updater candidates,
 * forward scores) and records its id; a version label already registered
 * with another hash fails the job with `conflict` instead of re-pointing
 * the label. Retention (MANTIS_DATA_KEEP_VERSIONS, mk_retain) retires the
 * window's oldest unpinned versions beyond the limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <json-c/json.h>
#include <sodium.h>

#include "db.h"
#include "log.h"
#include "secret.h"
#include "secret_store.h"
#include "xalloc.h"
#include "evaluator/dataset.h"
#include "evaluator/runner/jobq.h"
#include "evaluator/runner/jobs.h"
#include "evaluator/runner/market/market.h"
#include "evaluator/runner/market/register.h"
#include "evaluator/runner/runner.h"
#include "evaluator/synth.h"

#define PF_PROGRESS_MS 500
#define PF_MAX_ASSETS  SYNTH_N_ASSETS
#define PF_ASSETS_TEXT_MAX 8192

/* A claimed prefetch: inputs, progress, and the stored version. */
struct pjob {
	char     id[37];
	unsigned attempt;
	char     window[65];
	char     interval[8];
	long     days_back;
	char    *assets_store;               /* names, NUL-separated */
	const char *assets[PF_MAX_ASSETS];
	size_t   n_assets;
	/* the body's CoinGlass key sealed for this job (sql/020; cg_len 0: none) */
	unsigned char cg_nonce[SECRET_STORE_NONCE_BYTES];
	unsigned char cg_sealed[SECRET_STORE_VALUE_MAX + SECRET_STORE_TAG_BYTES];
	size_t   cg_len;
	/* progress, written by the fetcher's callback */
	struct db *pdb;
	int64_t  last_write_ms;
	size_t   done, rows;
	struct job_ctl *ctl;
	/* result */
	struct mk_version v;
	int      retired;                    /* older versions removed by retention */
};

/* Wall clock in ms. */
static int64_t pf_now_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Parse the JSON asset list into p (valid names only). false if malformed. */
static bool pf_parse_assets(struct pjob *p, const char *text)
{
	json_object *a = json_tokener_parse(text);
	size_t n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
	bool ok = n > 0 && n <= PF_MAX_ASSETS;
	struct buf b = BUF_INIT;
	for (size_t i = 0; ok && i < n; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(a, i));
		ok = s && ds_valid_asset(s);
		if (ok)
			buf_append(&b, s, strlen(s) + 1);
	}
	if (ok) {
		p->assets_store = buf_detach(&b, NULL);
		const char *s = p->assets_store;
		for (size_t i = 0; i < n; i++, s += strlen(s) + 1)
			p->assets[i] = s;
		p->n_assets = n;
	}
	buf_free(&b);
	json_object_put(a);
	return ok;
}

/* Row callback: note the row and stop. */
static bool pf_got_row(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}

/* kind->load: the window, days and assets of claimed prefetch l->id. 1, 0 vanished, -1 error. */
static int pf_load(struct db *db, const struct jobq_lease *l, void *job, struct buf *err)
{
	struct pjob *p = job;
	char window[65], interval[8];
	bool found = false;
	int rc = -1;
	struct db_col c[] = { DB_COL_TEXT(window), DB_COL_TEXT(interval), DB_COL_INT,
			      { .type = DB_T_TEXT, .buf = xmalloc(PF_ASSETS_TEXT_MAX), .cap = PF_ASSETS_TEXT_MAX },
			      { .type = DB_T_BLOB, .buf = (char *)p->cg_nonce, .cap = sizeof p->cg_nonce },
			      { .type = DB_T_BLOB, .buf = (char *)p->cg_sealed, .cap = sizeof p->cg_sealed } };
	struct db_arg k[] = { DB_ARG_TEXT(l->id) };
	snprintf(p->id, sizeof p->id, "%s", l->id);
	p->attempt = l->attempt;
	/* keys of prefetches ended without a finish of theirs (reaped, cancelled while queued) */
	(void)db_exec(db, "UPDATE data_prefetches SET coinglass_nonce = NULL, coinglass_sealed = NULL "
			  "WHERE coinglass_sealed IS NOT NULL AND status NOT IN ('queued', 'running')", NULL, 0, NULL,
		      0, NULL, NULL, NULL, 0);
	if (db_exec(db, "SELECT window_label, bar_interval, days_back, assets, coinglass_nonce, coinglass_sealed "
			"FROM data_prefetches WHERE id = ?", k, 1, c, 6, pf_got_row, &found, NULL, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		goto out;
	}
	rc = 0;
	if (!found)
		goto out;
	snprintf(p->window, sizeof p->window, "%s", window);
	snprintf(p->interval, sizeof p->interval, "%s", interval);
	p->days_back = (long)c[2].i;
	p->cg_len = c[5].is_null ? 0 : c[5].len;
	if (p->cg_len && (c[4].is_null || c[4].len != sizeof p->cg_nonce)) {
		buf_printf(err, "prefetch %s has an unusable sealed CoinGlass key", p->id);
		goto out;
	}
	if (!pf_parse_assets(p, c[3].buf) || mk_interval_ms(p->interval) < 0 || p->days_back < 1) {
		buf_printf(err, "prefetch %s has unusable inputs", p->id);
		rc = -1;
		goto out;
	}
	rc = 1;
out:
	free(c[3].buf);
	return rc;
}

/* Write the progress row (guarded by the claim). A failed write is ignored:
 * progress is advisory, the result goes through the guarded finish. */
static void pf_write_progress(struct pjob *p, const char *step)
{
	if (!p->pdb)
		return;
	struct db_arg a[] = { DB_ARG_INT((long long)p->done), DB_ARG_INT((long long)p->rows), DB_ARG_TEXT(step),
			      DB_ARG_TEXT(p->id), DB_ARG_INT(p->attempt) };
	db_exec(p->pdb, "UPDATE data_prefetches SET assets_done = ?, rows_fetched = ?, step = ? "
			"WHERE id = ? AND status = 'running' AND attempts = ?", a, 5, NULL, 0, NULL, NULL, NULL, 0);
}

/* mk_request.progress (serialised by mk_fetch): remember the counts, write
 * them when an asset is done, else at most every PF_PROGRESS_MS. */
static void pf_progress(void *ud, size_t done, size_t n, size_t rows)
{
	struct pjob *p = ud;
	char step[160];
	bool asset_done = done != p->done;
	p->done = done;
	p->rows = rows;
	int64_t t = pf_now_ms();
	/* an asset finished is always written: the next page may be long in coming */
	if (t - p->last_write_ms < PF_PROGRESS_MS && !asset_done)
		return;
	p->last_write_ms = t;
	snprintf(step, sizeof step, "fetching %s candles: %zu/%zu assets, %zu candles", p->interval, done, n, rows);
	pf_write_progress(p, step);
}

/* mk_request.cancelled: the slot's cancel flag (a cancel or a SIGTERM hand-back). */
static int pf_cancelled(void *ud)
{
	struct pjob *p = ud;
	bool hand_back = false;
	return job_cancelled(p->ctl, &hand_back) ? 1 : 0;
}

/* The CoinGlass key into key: the one the prefetch's body gave (sealed for
 * this job), else the admin's (secret store, owner 0). 1 set, 0 none, -1
 * with err filled (no database, the server secret or the value not opening). */
static int pf_cg_key(const struct prefetch_env *env, struct pjob *p, struct buf *key, char *err, size_t errlen)
{
	unsigned char sk[SECRET_BYTES];
	struct buf e = BUF_INIT;
	int got = -1;
	if (p->cg_len) {
		if (!secret_load(env->secret_file, false, sk, &e))
			snprintf(err, errlen, "cannot read the CoinGlass key: %s", buf_cstr(&e));
		else if (!secret_store_open_job(sk, p->id, "coinglass", p->cg_nonce, p->cg_sealed, p->cg_len, key))
			snprintf(err, errlen, "the CoinGlass key of prefetch %s does not open (another server secret?)",
				 p->id);
		else
			got = 1;
	} else if (!p->pdb)
		snprintf(err, errlen, "cannot read the CoinGlass key: no database connection");
	else if (!secret_load(env->secret_file, false, sk, &e))
		snprintf(err, errlen, "cannot read the CoinGlass key: %s", buf_cstr(&e));
	else if ((got = secret_store_get(p->pdb, sk, 0, "coinglass", key, &e)) < 0)
		snprintf(err, errlen, "cannot read the CoinGlass key: %s", buf_cstr(&e));
	sodium_memzero(sk, sizeof sk);
	buf_free(&e);
	return got;
}

/* mk_cg_request.progress: the CoinGlass step, assets done. */
static void pf_cg_progress(void *ud, size_t done, size_t n)
{
	struct pjob *p = ud;
	char step[96];
	snprintf(step, sizeof step, "fetching CoinGlass fields (%zu of %zu assets)", done, n);
	pf_write_progress(p, step);
}

/* With a CoinGlass key set: its fields over the grid [first, last] (1 m)
 * into *cg (n_assets × MK_CG_FIELDS × T, caller frees); *cg stays NULL
 * without a key. MK_OK or the error with err filled. */
static enum mk_err pf_coinglass(const struct prefetch_env *env, struct pjob *p, int64_t first, int64_t last,
				int64_t ival, double **cg, char *err, size_t errlen)
{
	struct buf key = BUF_INIT;
	*cg = NULL;
	int got = pf_cg_key(env, p, &key, err, errlen);
	if (got <= 0) {
		buf_free(&key);
		return got == 0 ? MK_OK : MK_ERR_STORE;
	}
	struct mk_cg_request r;
	mk_cg_request_defaults(&r);
	r.base_url = env->coinglass_url && *env->coinglass_url ? env->coinglass_url : "https://open-api-v4.coinglass.com";
	r.api_key = buf_cstr(&key);
	char cache[4352];
	snprintf(cache, sizeof cache, "%s/coinglass-cache", env->data_dir);
	r.cache_dir = cache;
	r.assets = p->assets;
	r.n_assets = p->n_assets;
	r.progress = pf_cg_progress;
	r.cancelled = pf_cancelled;
	r.ud = p;
	pf_write_progress(p, "fetching CoinGlass fields");
	enum mk_err rc = mk_cg_fetch_grid(&r, first, last, ival, cg, err, errlen);
	sodium_memzero(key.data, key.len);
	buf_free(&key);
	return rc;
}

/* Fetch and store the window into p->v; MK_OK or an error with the message in err. */
static enum mk_err pf_fetch_store(const struct prefetch_env *env, struct pjob *p, char *err, size_t errlen)
{
	struct mk_request r;
	char base[1024], src[256];
	int us = 0;
	mk_request_defaults(&r);
	if (mk_base_url(env->binance_url, env->binance_urls, base, sizeof base, &us, err, errlen) != 0)
		return MK_ERR_HTTP;   /* err names the endpoints tried */
	r.base_url = base;
	if (env->backoff_ms > 0)
		r.backoff_ms = env->backoff_ms;   /* MANTIS_FETCH_BACKOFF_MS */
	if (us && r.pace_ms > 0)
		r.pace_ms = 200;   /* binance.us asks for slower paging */
	r.interval = p->interval;
	r.assets = p->assets;
	r.n_assets = p->n_assets;
	r.progress = pf_progress;
	r.cancelled = pf_cancelled;
	r.ud = p;
	r.now_ms = pf_now_ms();
	int64_t ival = mk_interval_ms(p->interval), first = 0, last = 0;
	struct kl_series *s = xcalloc(p->n_assets, sizeof *s);
	/* the window ends at the last bar served and starts days_back days before it (market.h) */
	enum mk_err rc = mk_fetch_window(&r, p->days_back, s, &first, &last, err, errlen);
	if (rc == MK_OK) {
		double *cg = NULL;
		rc = pf_coinglass(env, p, first, last, ival, &cg, err, errlen);
		pf_write_progress(p, "storing the dataset version");
		snprintf(src, sizeof src,
			 "{\"kind\":\"binance-klines\",\"interval\":\"%s\",\"days_back\":%ld,\"job\":\"%s\",\"coinglass\":%s}",
			 p->interval, p->days_back, p->id, cg ? "true" : "false");
		if (rc == MK_OK)
			rc = mk_store(env->data_dir, p->window, p->assets, p->n_assets, s, first, last, ival, cg, src,
				      &p->v, err, errlen);
		free(cg);
	}
	for (size_t i = 0; i < p->n_assets; i++)
		kl_series_free(&s[i]);
	free(s);
	return rc;
}

/* kind->execute: fetch, store, and map the market error onto the outcome. */
static void pf_execute(const struct jobq_slot *s, const struct jobq_lease *l, void *job, struct job_outcome *o)
{
	const struct prefetch_env *env = s->env;
	struct pjob *p = job;
	struct buf derr = BUF_INIT;
	char err[600] = "";
	int64_t t0 = pf_now_ms();
	(void)l;
	p->ctl = s->ctl;
	if (!env->data_dir || !*env->data_dir) {
		job_outcome_fail(o, "invalid_config", "MANTIS_DATA_DIR is not set: nowhere to store market data");
		return;
	}
	p->pdb = rdb_connect(env->db_url, &derr);   /* progress only; NULL: no progress rows, the job still runs */
	pf_write_progress(p, "starting");
	enum mk_err rc = pf_fetch_store(env, p, err, sizeof err);
	if (rc == MK_OK && p->pdb)
		p->retired = mk_retain(p->pdb, env->data_dir, p->window, p->v.hash, env->keep_versions);
	o->runtime_s = (double)(pf_now_ms() - t0) / 1000.0;
	if (rc == MK_OK)
		o->status = JOB_COMPLETED;
	else {
		job_outcome_fail(o, mk_errcode(rc), "%s", err);
		o->retry = rc == MK_ERR_STORE;   /* a local I/O failure may pass; upstream verdicts are final */
	}
	if (p->pdb)
		db_free(p->pdb);
	p->pdb = NULL;
	buf_free(&derr);
}

/* kind->columns: the version stored (completed) and the final counts. */
static void pf_columns(void *job, const struct job_outcome *o, struct jobq_set *set)
{
	struct pjob *p = job;
	jobq_set_col(set, "assets_done", DB_ARG_INT((long long)p->done));
	jobq_set_col(set, "rows_fetched", DB_ARG_INT((long long)p->rows));
	jobq_set_col(set, "coinglass_nonce", DB_ARG_NULL);    /* the body's key is for this job only */
	jobq_set_col(set, "coinglass_sealed", DB_ARG_NULL);
	if (o->status == JOB_COMPLETED) {
		jobq_set_col(set, "dataset_version", DB_ARG_TEXT(p->v.label));
		jobq_set_col(set, "dataset_hash", DB_ARG_TEXT(p->v.hash));
		jobq_set_col(set, "step", DB_ARG_TEXT("done"));
	} else {
		jobq_set_col(set, "step", DB_ARG_TEXT(o->status == JOB_CANCELLED ? "cancelled" : "failed"));
	}
}

/* kind->commit: register the stored version (register.h, shared with `agenttest
 * data fetch`) and link the prefetch row to it; a label clash fails the job. */
static int pf_commit(struct db *db, const struct jobq_lease *l, void *job, const struct job_outcome *o,
		     struct buf *err)
{
	struct pjob *p = job;
	char have[65];
	if (o->status != JOB_COMPLETED)
		return 0;
	int reg = mk_register(db, p->window, &p->v, p->assets, p->n_assets, mk_interval_ms(p->interval), have, err);
	if (reg < 0)
		return -1;
	if (reg == 1) {
		struct db_arg a[] = { DB_ARG_TEXT(p->v.label), DB_ARG_TEXT(l->id) };
		if (db_exec(db, "UPDATE data_prefetches SET dataset_id = (SELECT id FROM datasets WHERE version = ?) "
				"WHERE id = ?", a, 2, NULL, 0, NULL, NULL, NULL, 0) != DB_OK) {
			buf_printf(err, "database: %s", db_error(db));
			return -1;
		}
		return 0;
	}
	char msg[400];
	snprintf(msg, sizeof msg, "dataset version %s is already registered with another hash (%.16s...); "
		 "this fetch stored %.16s... and left the registration alone", p->v.label, have, p->v.hash);
	struct db_arg f[] = { DB_ARG_TEXT(msg), DB_ARG_TEXT(l->id) };
	if (db_exec(db, "UPDATE data_prefetches SET status = 'failed', error_code = 'conflict', error_message = ?, "
			"dataset_version = NULL, dataset_hash = NULL, step = 'failed' WHERE id = ?", f, 2, NULL, 0, NULL,
		    NULL, NULL, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* kind->release. */
static void pf_release(void *job)
{
	struct pjob *p = job;
	free(p->assets_store);
	json_object_put(p->v.quality);
	sodium_memzero(p, sizeof *p);
}

const struct job_kind prefetch_kind = {
	.name = "prefetch", .table = "data_prefetches", .lease_s = RUNNER_LEASE_S, .job_size = sizeof(struct pjob),
	.load = pf_load, .execute = pf_execute, .columns = pf_columns, .commit = pf_commit, .release = pf_release,
	.owner_col = "owner_id",
};
