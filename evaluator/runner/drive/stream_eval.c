/*
 * stream_eval.c: one walk-forward evaluation end to end (stream.h), shared
 * by `agenttest evaluate` and the runner's evaluation jobs.
 *
 * dataset -> ch_market (the last days_back days; every asset and field,
 * pointers into the mmap'd columns, no copies) -> ch_prepare (the
 * challenge's assets, aligned for the mode) -> stream_run (lockstep through
 * the sandbox) -> ch_score_prepared. The holdout starts holdout_days before
 * the end (the original's agent script: max(0, T - 20 days)). In dev-only
 * mode the market is cut at that point before anything is streamed, and
 * the dev period is scored on its own (every window counts): the holdout
 * bars never reach the strategy, not even through labels.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/dataset.h"
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/runner/drive/stream.h"

/* The error object for (e, msg). */
static json_object *err_obj(const char *code, const char *msg)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "detail", json_object_new_string(msg));
	return o;
}

/* Column arrays of a market built over ds (freed by market_free). */
struct mkt {
	struct ch_market m;
	const char **names, **fnames;
	const double **col[5];
	const double **fields;
};

/* Build the market of ds from bar `start` on. */
static void market_build(struct mkt *k, const struct dataset *ds, size_t start)
{
	size_t A = ds_asset_count(ds), F = ds_field_count(ds), nf = 0;
	memset(k, 0, sizeof *k);
	k->names = xcalloc(A + 1, sizeof *k->names);
	for (int f = 0; f < 5; f++)
		k->col[f] = xcalloc(A + 1, sizeof *k->col[f]);
	k->fnames = xcalloc(F + 1, sizeof *k->fnames);
	for (size_t i = 0; i < F; i++) {
		const char *n = ds_field_name(ds, i);
		if (strcmp(n, "open") && strcmp(n, "high") && strcmp(n, "low") && strcmp(n, "close") && strcmp(n, "volume"))
			k->fnames[nf++] = n;
	}
	k->fields = xcalloc(nf * A + 1, sizeof *k->fields);
	for (size_t a = 0; a < A; a++) {
		k->names[a] = ds_asset_name(ds, a);
		for (int f = 0; f < 5; f++) {
			const double *c = ds_column(ds, a, (enum ds_field)f);
			k->col[f][a] = c ? c + start : NULL;
		}
		for (size_t j = 0; j < nf; j++)
			k->fields[j * A + a] = ds_column_at(ds, a, (size_t)ds_field_index(ds, k->fnames[j])) + start;
	}
	k->m.T = ds_bars(ds) - start;
	k->m.ts = ds_timestamps(ds) + start;
	k->m.n_assets = A;
	k->m.names = k->names;
	k->m.open = k->col[DS_OPEN];
	k->m.high = k->col[DS_HIGH];
	k->m.low = k->col[DS_LOW];
	k->m.close = k->col[DS_CLOSE];
	k->m.volume = k->col[DS_VOLUME];
	k->m.n_fields = nf;
	k->m.field_names = k->fnames;
	k->m.fields = k->fields;
}

/* Release the arrays of a market. */
static void market_free(struct mkt *k)
{
	free(k->names);
	free(k->fnames);
	for (int f = 0; f < 5; f++)
		free(k->col[f]);
	free(k->fields);
}

/* A list of the challenge names for an unknown-challenge message. */
static void valid_names(char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < ch_count(); i++) {
		int n = snprintf(out + used, len - used, "%s%s", i ? ", " : "", ch_at(i)->name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

size_t stream_days_bars(double days, double per_day)
{
	double x = days * per_day;
	if (!(x > 0))
		return 0;
	if (x >= (double)SIZE_MAX / 2)
		return SIZE_MAX / 2;
	return (size_t)floor(x + 1e-6);
}

/* The keys every result carries besides the challenge's metrics. */
static void result_keys(json_object *res, const struct dataset *ds, enum ch_mode mode, size_t hs, size_t T,
			bool dev_only, const struct stream_result *sr, double score_s)
{
	json_object_object_add(res, "mode", json_object_new_string(ch_mode_name(mode)));
	json_object_object_add(res, "dev_length", json_object_new_int64((int64_t)hs));
	json_object_object_add(res, "eval_holdout_minutes", json_object_new_int64(dev_only ? 0 : (int64_t)(T - hs)));
	json_object_object_add(res, "dev_only", json_object_new_boolean(dev_only));
	json_object_object_add(res, "dataset_version", json_object_new_string(ds_version(ds)));
	json_object_object_add(res, "dataset_hash", json_object_new_string(ds_hash(ds)));
	json_object *tm = stream_stats_json(&sr->st);
	json_object_object_add(tm, "warmup", json_object_new_int64((int64_t)sr->warmup));
	json_object_object_add(tm, "score_s", json_object_new_double(score_s));
	json_object_object_add(res, "timing", tm);
}

/* Score `rows` rows of sr on p with the holdout from hs (0: none): EV_OK
 * and the result in *res, or the failure with its error object in *res. */
static enum ev_err score_rows(const struct ch_prepared *p, const struct stream_result *sr, size_t rows, long hs,
			      double *score_s, json_object **res)
{
	char err[1024];
	double t0 = proto_now();
	*res = NULL;
	enum ch_err ce = ch_score_prepared(p, sr->emb, rows, sr->dim, sr->warmup, hs, res, err, sizeof err);
	*score_s = proto_now() - t0;
	if (ce == CH_OK)
		return EV_OK;
	json_object_put(*res);
	*res = err_obj(ch_errcode(ce), err);
	return ce == CH_ERR_PREDICTION ? EV_BAD_OUTPUT : EV_INVALID_FIELD;
}

/* The dev part of a split evaluation, scored at the holdout start. */
struct split_dev {
	const struct stream_eval_opts *o;
	const struct ch_prepared *dev;
	const struct dataset *ds;
	size_t hs, T;
	int reached;          /* the stream got to the holdout start */
	enum ev_err rc;       /* the dev scoring's outcome */
	json_object *res;     /* the dev result, or its error object */
};

/* stream_request.on_mark of a split: score the dev rows (every bar before
 * the holdout start is in) and tell o->on_dev; nonzero (end the stream
 * before any holdout bar) when the dev part failed. */
static int split_mark(void *arg, const struct stream_result *sr)
{
	struct split_dev *k = arg;
	size_t w = sr->warmup, dev_rows = k->hs > w ? k->hs - w : 0;
	double score_s = 0;
	k->reached = 1;
	k->rc = score_rows(k->dev, sr, dev_rows, 0, &score_s, &k->res);
	if (k->rc != EV_OK)
		return -1;
	result_keys(k->res, k->ds, k->o->mode, k->hs, k->T, true, sr, score_s);
	if (k->o->on_dev)
		k->o->on_dev(k->o->on_dev_arg, k->res, k->hs, k->T - k->hs);
	return 0;
}

enum ev_err stream_evaluate(const struct dataset *ds, const struct stream_eval_opts *o, json_object **out)
{
	char err[1024], names[512];
	struct mkt mk;
	struct ch_prepared *prep = NULL, *dev = NULL;
	struct stream_result sr;
	enum ev_err rc = EV_OK;
	memset(&sr, 0, sizeof sr);
	*out = NULL;
	const struct ch_def *def = ch_lookup(o->challenge ? o->challenge : "");
	if (!def) {
		valid_names(names, sizeof names);
		snprintf(err, sizeof err, "unknown challenge '%s'; valid: %s", o->challenge ? o->challenge : "", names);
		*out = err_obj("invalid_field", err);
		return EV_INVALID_FIELD;
	}
	int64_t iv = ds_interval_ms(ds);
	double per_day = iv > 0 ? 86400000.0 / (double)iv : 1440;
	size_t T0 = ds_bars(ds), start = 0;
	size_t back = o->days_back > 0 ? stream_days_bars(o->days_back, per_day) : 0;
	if (back > 0 && back < T0)
		start = T0 - back;
	market_build(&mk, ds, start);
	if (ch_prepare(def, o->mode, &mk.m, &prep, err, sizeof err) != CH_OK) {
		*out = err_obj("bad_request", err);
		rc = EV_INVALID_FIELD;
		goto out;
	}
	const struct ch_market *pm = ch_prepared_market(prep);
	size_t T = pm->T;
	size_t hb = o->holdout_bars > 0 ? o->holdout_bars : stream_days_bars(o->holdout_days, per_day);
	bool asked = o->holdout_bars > 0 || o->holdout_days > 0;
	size_t hs = !asked || hb >= T ? 0 : T - hb;   /* under a bar asked: no holdout bar, as before */
	const struct ch_prepared *score_on = prep;
	size_t bars = T;
	if (o->dev_only || o->split) {
		/* the dev period prepared on its own (what a dev-only run streams and scores) */
		struct ch_market cut = *pm;
		cut.T = hs;
		if (hs == 0 || ch_prepare(def, o->mode, &cut, &dev, err, sizeof err) != CH_OK) {
			*out = err_obj("bad_request", hs == 0 ? "no dev period: the holdout covers the whole series" : err);
			rc = EV_INVALID_FIELD;
			goto out;
		}
	}
	if (o->dev_only) {
		score_on = dev;
		pm = ch_prepared_market(dev);
		bars = pm->T;
	}
	struct split_dev sd = { .o = o, .dev = dev, .ds = ds, .hs = hs, .T = T };
	struct stream_request rq = {
		.m = pm, .bars = bars, .code = o->code, .code_len = o->code_len, .sbx = o->sbx, .max_dim = def->emb_dim,
		.on_host = o->on_host, .on_host_arg = o->on_host_arg, .keep_rows = o->split,
		.on_progress = o->on_progress, .on_progress_arg = o->on_progress_arg,
		.on_mark = o->split ? split_mark : NULL, .on_mark_arg = &sd, .mark_bar = hs,
	};
	if (rq.sbx.limits.cpu_seconds <= 0)
		rq.sbx.limits.cpu_seconds = o->split ? 2 * STREAM_CPU_S : STREAM_CPU_S;
	if (rq.sbx.limits.memory_bytes == 0) {
		/* the mapping of the shared market counts against the address space */
		size_t A = pm->n_assets;
		rq.sbx.limits.memory_bytes = STREAM_MEM_BASE + (uint64_t)bars * (8 + 48 * A + 8 * pm->n_fields * A);
	}
	enum ev_err se = stream_run(&rq, &sr);
	double score_s = 0;
	json_object *res = NULL;
	if (!o->split) {
		if (se != EV_OK) {
			*out = stream_error_json(&sr);
			rc = sr.err;
			goto out;
		}
		rc = score_rows(score_on, &sr, sr.rows, o->dev_only ? 0 : (long)hs, &score_s, &res);
		if (rc == EV_OK)
			result_keys(res, ds, o->mode, hs, T, o->dev_only != 0, &sr, score_s);
		*out = res;
		goto out;
	}
	/* split: the dev part is done when its rows are in (scored at the
	 * holdout start by split_mark), whatever came after */
	if (!sd.reached) {
		*out = stream_error_json(&sr);
		rc = sr.err;
		goto out;
	}
	res = sd.res;
	sd.res = NULL;
	if (sd.rc != EV_OK) {
		*out = res;
		rc = sd.rc;
		goto out;
	}
	json_object *full = NULL;
	if (se != EV_OK)
		full = stream_error_json(&sr);
	else if (score_rows(prep, &sr, sr.rows, (long)hs, &score_s, &full) == EV_OK)
		result_keys(full, ds, o->mode, hs, T, false, &sr, score_s);
	*out = json_object_new_object();
	json_object_object_add(*out, "dev", res);
	bool full_ok = se == EV_OK && !json_object_object_get_ex(full, "code", NULL);
	json_object_object_add(*out, "full", full_ok ? full : NULL);
	json_object_object_add(*out, "full_error", full_ok ? NULL : full);
out:
	stream_result_free(&sr);
	ch_prepared_free(dev);
	ch_prepared_free(prep);
	market_free(&mk);
	return rc;
}
