/*
 * job: execute one claimed run through the evaluator's backtest API.
 *
 * Theory of operation. The pinned dataset comes verified from the runner's
 * dataset cache (dscache.c) and its hash is compared with the hash pinned
 * on the run when it was queued; a directory whose bytes changed fails the
 * run with `dataset_mismatch` instead of scoring other data under the old
 * label.
 *
 * bt_run does the rest (sandbox, protocol, validation, engine, metrics,
 * audit). Everything about the run is decided from pinned inputs only: the
 * audit's pseudo-random cut points are seeded from the config hash, so the
 * same (dataset_hash, code_hash, config_hash) gives the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "evaluator/runner/drive/backtest.h"
#include "evaluator/buyhold.h"
#include "evaluator/dataset.h"
#include "evaluator/pyrepr.h"
#include "evaluator/runner/runner.h"
#include "log.h"
#include "xalloc.h"

/* Wall seconds with nanoseconds. */
static double mono_d(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Engine configuration of a positions run from its pinned JSON. */
static bool engine_from_json(const char *json, struct engine_cfg *cfg)
{
	cfg->fee_bps = ENGINE_DEFAULT_FEE_BPS;
	cfg->max_leverage = ENGINE_DEFAULT_MAX_LEVERAGE;
	if (!json)
		return true;
	json_object *o = json_tokener_parse(json), *v;
	bool ok = o && json_object_is_type(o, json_type_object);
	if (ok && json_object_object_get_ex(o, "fee_bps", &v))
		cfg->fee_bps = json_object_get_double(v);
	if (ok && json_object_object_get_ex(o, "max_leverage", &v))
		cfg->max_leverage = json_object_get_double(v);
	json_object_put(o);
	char msg[128];
	return ok && engine_cfg_valid(cfg, msg, sizeof msg);
}

/* Seed of the audit's pseudo-random cuts: the first 16 hex digits of the config hash. */
static uint64_t audit_seed(const char *config_hash)
{
	char h[17];
	snprintf(h, sizeof h, "%.16s", config_hash);
	return strtoull(h, NULL, 16);
}

/* Append the audit report of res as JSON. */
static void audit_json(struct buf *b, const struct bt_result *res)
{
	const struct bt_audit *a = &res->audit;
	buf_printf(b, "{\"performed\":%s,\"passed\":%s,\"cuts\":[", a->performed ? "true" : "false",
		   a->performed ? (a->passed ? "true" : "false") : "null");
	for (size_t i = 0; i < a->n_cuts && i < BT_MAX_CUTS; i++)
		buf_printf(b, "%s%zu", i ? "," : "", a->cuts[i]);
	buf_printf(b, "],\"strategy_calls\":%zu", a->runs);
	if (a->performed && !a->passed)
		buf_printf(b, ",\"fail_cut\":%zu,\"first_diff\":%zu,\"check\":\"%s\"", a->fail_cut, a->first_diff,
			   a->check[0] ? a->check : "prefix");
	buf_putc(b, '}');
}

/* Append a double for JSON (non-finite: null). */
static void num(struct buf *b, double x)
{
	char t[PYREPR_MAX];
	if (!isfinite(x)) {
		buf_puts(b, "null");
		return;
	}
	pyrepr_double(x, t);
	buf_puts(b, t);
}

/* Append the resources object (sandbox verdict, usage, limits, timing). */
static void resources_json(struct buf *b, const struct bt_result *res)
{
	const struct sbx_verdict *v = &res->verdict;
	uint64_t peak = v->cg_mem_bytes > v->max_rss_bytes ? v->cg_mem_bytes : v->max_rss_bytes;
	buf_printf(b, "{\"verdict\":\"%s\",\"cpu_seconds\":", sbx_status_code(v->status));
	num(b, v->cpu_seconds);
	buf_puts(b, ",\"wall_seconds\":");
	num(b, v->wall_seconds);
	buf_printf(b, ",\"peak_memory_bytes\":%" PRIu64 ",\"limits\":{\"cpu_seconds\":", peak);
	num(b, v->limits.cpu_seconds);
	buf_puts(b, ",\"wall_seconds\":");
	num(b, v->limits.wall_seconds);
	buf_printf(b, ",\"memory_bytes\":%" PRIu64 ",\"processes\":%u,\"open_files\":%u,\"output_bytes\":%" PRIu64 "}",
		   v->limits.memory_bytes, v->limits.processes, v->limits.open_files, v->limits.output_bytes);
	buf_puts(b, ",\"timing\":{\"total_s\":");
	num(b, res->timing.total_s);
	buf_puts(b, ",\"startup_s\":");
	num(b, res->timing.startup_s);
	buf_puts(b, ",\"load_s\":");
	num(b, res->timing.load_s);
	buf_puts(b, ",\"host_s\":");
	num(b, res->timing.host_s);
	buf_puts(b, ",\"audit_s\":");
	num(b, res->timing.audit_s);
	buf_puts(b, "},\"warnings\":");
	json_object *w = json_object_new_string(v->warnings);
	buf_puts(b, json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(w);
	buf_putc(b, '}');
}

/*
 * Write <root>/<id>/equity.csv (step,equity) via a temporary file. 0 or -1.
 * On failure nothing of this attempt stays behind (the temporary file is
 * removed, the run's directory too if this call created it and it is
 * empty), why holds the reason without any server path ("equity.csv: No
 * space left on device") for the run's artifacts_error, and one
 * artifacts_failed line goes to the log with the path and errno for the
 * operator.
 */
static int write_artifacts(const char *root, const char *id, const double *eq, size_t n, struct buf *dir,
			   struct buf *why)
{
	char path[PATH_MAX], tmp[PATH_MAX], t[PYREPR_MAX];
	struct buf b = BUF_INIT;
	int rc = -1, fd = -1, e = 0;
	bool made_dir = false, made_tmp = false;
	const char *step = "equity.csv";
	buf_printf(dir, "%s/%s", root, id);
	(void)mkdir(root, 0750);
	if (mkdir(dir->data, 0750) == 0) {
		made_dir = true;
	} else if (errno != EEXIST) {
		e = errno;
		step = "run directory";
		goto out;
	}
	if (snprintf(path, sizeof path, "%s/equity.csv", dir->data) >= (int)sizeof path ||
	    snprintf(tmp, sizeof tmp, "%s/.equity.csv.tmp", dir->data) >= (int)sizeof tmp) {
		e = ENAMETOOLONG;
		goto out;
	}
	buf_puts(&b, "step,equity\n");
	for (size_t i = 0; i < n; i++) {
		pyrepr_double(eq[i], t);
		buf_printf(&b, "%zu,%s\n", i, t);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		e = errno;
		goto out;
	}
	made_tmp = true;
	size_t off = 0;
	while (off < b.len) {
		ssize_t w = write(fd, b.data + off, b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : ENOSPC;   /* a write of 0 bytes on a regular file: no space */
			goto out;
		}
		off += (size_t)w;
	}
	int crc = close(fd);
	fd = -1;
	if (crc != 0 || rename(tmp, path) != 0) {
		e = errno;
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		(void)close(fd);
	if (rc != 0) {
		if (made_tmp)
			(void)unlink(tmp);
		if (made_dir)
			(void)rmdir(dir->data);
		buf_reset(why);
		buf_printf(why, "%s: %s", step, strerror(e ? e : EIO));
		struct buf l = BUF_INIT;
		log_begin(&l, LOG_LVL_ERROR, "artifacts_failed");
		log_str(&l, "run_id", id);
		log_str(&l, "path", dir->data ? dir->data : root);
		log_str(&l, "reason", why->data);
		log_int(&l, "errno", e ? e : EIO);
		log_end(&l);
		buf_free(&l);
	}
	buf_free(&b);
	return rc;
}

/*
 * The host's stderr tail, then, for a strategy exception, its traceback as
 * the host reported it (only the strategy's own frames, `File "strategy.py",
 * line N, in f`, already scrubbed of host paths), the whole kept to the
 * last RUNNER_LOG_TAIL_MAX bytes: what the CLI prints, on the run page.
 */
static void run_log_tail(struct buf *out, const struct bt_result *res)
{
	struct buf t = BUF_INIT;
	json_object *ex, *tb;

	buf_append(&t, res->log_tail, strnlen(res->log_tail, sizeof res->log_tail));
	if (res->err != EV_OK && res->extra && json_object_object_get_ex(res->extra, "exception", &ex) &&
	    json_object_object_get_ex(ex, "traceback", &tb) && json_object_is_type(tb, json_type_array) &&
	    json_object_array_length(tb) > 0) {
		if (t.len && t.data[t.len - 1] != '\n')
			buf_putc(&t, '\n');
		buf_puts(&t, "Traceback (most recent call last):\n");
		for (size_t i = 0; i < json_object_array_length(tb); i++) {
			const char *l = json_object_get_string(json_object_array_get_idx(tb, i));
			if (l) {
				buf_puts(&t, l);
				buf_putc(&t, '\n');
			}
		}
	}
	policy_tail(out, t.data ? t.data : "", t.len, RUNNER_LOG_TAIL_MAX);
	buf_free(&t);
}

/* Fill r from a finished bt_run. */
static void take_result(const struct rjob *j, struct bt_result *res, struct rresult *r, double t0)
{
	r->runtime_s = mono_d() - t0;
	r->audit_ran = res->audit.performed != 0;
	r->audit_passed = res->audit.performed && res->audit.passed;
	audit_json(&r->audit_json, res);
	resources_json(&r->resources_json, res);
	run_log_tail(&r->log_tail, res);
	if (res->err != EV_OK) {
		rresult_fail(r, ev_errcode(res->err), "%s", res->detail[0] ? res->detail : ev_strerror(res->err));
		return;
	}
	r->m = res->metrics;
	metrics_set(&r->m, MET_RUNTIME_S, r->runtime_s);
	int bad = metrics_first_non_finite(&r->m);
	if (bad >= 0) {
		rresult_fail(r, "non_finite_metric", "metric %s is not finite", metric_name((enum metric_id)bad));
		return;
	}
	metrics_to_json(&r->m, &r->metrics_json);
	r->n = res->n;
	r->equity = xcalloc(res->n ? res->n : 1, sizeof(double));
	memcpy(r->equity, res->equity, res->n * sizeof(double));
	r->status = RJOB_COMPLETED;
	(void)j;
}

/*
 * The fills and per-bar positions of a completed positions run (fills.h),
 * from the engine's clamped exposures w and the dataset's closes and
 * timestamps. The replay must give back the scored curve bit for bit; if
 * it did not (a bug, never the strategy's doing) the run keeps its equity
 * and stores no trades rather than trades that do not add up.
 */
static void take_fills(const struct rjob *j, const struct engine_cfg *cfg, const double *prices,
		       const int64_t *ts, const double *w, struct rresult *r)
{
	size_t n = r->n, cap = n > 1 ? n - 1 : 0;   /* at most one fill per executed bar */
	struct fills_out o = {
		.max = cap < FILLS_STORE_MAX ? cap : FILLS_STORE_MAX,
		.positions = xcalloc(n ? n : 1, sizeof(double)),
		.equity = xcalloc(n ? n : 1, sizeof(double)),
	};
	o.fills = xcalloc(o.max ? o.max : 1, sizeof(struct fill));
	fills_compute(cfg, prices, ts, w, n, &o);
	if (memcmp(o.equity, r->equity, n * sizeof(double)) != 0) {
		log_msg(LOG_LVL_ERROR, "fills_mismatch", "run %s: the fills do not replay the scored equity; no trades stored", j->id);
		free(o.fills);
		free(o.positions);
	} else {
		r->fills = o.fills;
		r->n_fills = o.stored;
		r->fills_total = o.total;
		r->positions = o.positions;
	}
	free(o.equity);
}

void job_execute(const struct job_env *env, struct job_ctl *ctl, const struct rjob *j,
		 struct rresult *r, struct buf *artifacts_dir)
{
	double t0 = mono_d();
	struct bt_result res;
	struct dataset *ds = NULL;
	bool hand_back;
	memset(&res, 0, sizeof res);
	int kind = j->kind ? bt_kind_parse(j->kind) : -1;
	if (kind <= 0) {
		rresult_fail(r, "invalid_field", "strategy kind '%s' cannot be backtested (signal strategies are "
			     "evaluated by challenges)", j->kind ? j->kind : "?");
		goto out;
	}
	if (!(ds = dscache_acquire(j->dataset_path, r)))
		goto out;
	if (strcmp(ds_hash(ds), j->dataset_hash) != 0) {
		rresult_fail(r, "dataset_mismatch", "dataset %s changed: its files hash to %s, the run pinned %s",
			     j->dataset_version, ds_hash(ds), j->dataset_hash);
		goto out;
	}
	long asset = j->asset ? ds_asset_index(ds, j->asset) : 0;
	const double *prices = asset >= 0 ? ds_column(ds, (size_t)asset, DS_CLOSE) : NULL;
	if (!prices) {
		rresult_fail(r, "invalid_field", "asset %s has no close prices in dataset %s", j->asset ? j->asset : "#0",
			     j->dataset_version);
		goto out;
	}
	struct bt_request rq = {
		.code = j->code, .code_len = strlen(j->code), .kind = (enum bt_kind)kind, .prices = prices,
		.n = ds_bars(ds), .params_json = j->params, .bars_per_year = ds_bars_per_year(ds),
		.audit = j->audit, .audit_seed = audit_seed(j->config_hash),
		.sbx = { .mode = SBX_CONFINED, .box_id = env->box_id, .limits = env->limits },
		.on_host = job_on_host, .on_host_arg = ctl, .spare_box_id = env->spare_box_id,
	};
	if (!engine_from_json(j->engine, &rq.engine)) {
		rresult_fail(r, "invalid_field", "the run's engine configuration is invalid");
		goto out;
	}
	if (!job_cancelled(ctl, NULL))
		bt_run(&rq, &res);
	if (job_cancelled(ctl, &hand_back)) {
		r->status = RJOB_CANCELLED;
		snprintf(r->error_code, sizeof r->error_code, "cancelled");
		buf_puts(&r->error_message, hand_back ? "runner stopped" : "cancelled while running");
		r->runtime_s = mono_d() - t0;
		resources_json(&r->resources_json, &res);
		goto out;
	}
	take_result(j, &res, r, t0);
	if (r->status == RJOB_COMPLETED) {
		/* the benchmark from the dataset's closes, over the bars the run saw */
		r->benchmark = xcalloc(r->n ? r->n : 1, sizeof(double));
		buyhold_curve(prices, r->n, r->benchmark);
		if (res.positions)
			take_fills(j, &rq.engine, prices, ds_timestamps(ds), res.positions, r);
	}
	if (r->status == RJOB_COMPLETED &&
	    write_artifacts(env->artifacts_root, j->id, r->equity, r->n, artifacts_dir, &r->artifacts_error) != 0) {
		/* the DB holds the curve; the file is a convenience copy: the run
		 * completes and shows artifacts_error instead of a path */
		buf_reset(artifacts_dir);
	}
out:
	if (r->runtime_s == 0)
		r->runtime_s = mono_d() - t0;
	if (ds)
		dscache_release(ds);
	bt_result_free(&res);
}
