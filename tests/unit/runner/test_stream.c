/*
 * test_stream.c: lockstep streaming (evaluator/runner/drive/stream.c) against the real
 * strategy host (sandbox/host, $AGENTTEST_HOST_DIR) in trusted mode: the
 * rows come back in order with the view the host built at each step, bars
 * beyond `bars` are never streamed, assets are sorted, derivative columns
 * reach cg()/cg_fields()/has_cg(), and failures
 * (exception, rows of different lengths, oversized rows) end the run with
 * the right error; the caller's mark (a split's holdout start) runs once
 * before its bar and can end the stream there. Runs under the sanitizers and valgrind in stage 20.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "evaluator/runner/drive/stream.h"

#define NBARS 300

static double close_a[NBARS], close_b[NBARS], vol_a[NBARS], vol_b[NBARS];
static int64_t ts[NBARS];

/* Point the host lookup at the repository's sandbox/host. */
static int setup(void **state)
{
	(void)state;
	if (!getenv("AGENTTEST_HOST_DIR"))
		setenv("AGENTTEST_HOST_DIR", "sandbox/host", 1);
	for (int t = 0; t < NBARS; t++) {
		close_a[t] = 100.0 + t;   /* "ETH" */
		close_b[t] = 1000.0 + t;  /* "AAA": sorts first */
		vol_a[t] = vol_b[t] = 1.0;
		ts[t] = 1700000000000LL + 60000LL * t;
	}
	return 0;
}

/* What the mark callback saw (test_mark). */
struct mark_seen {
	int calls, stop;
	size_t rows, steps;
};

/* stream_request.on_mark: note the rows read back so far; stop if asked. */
static int on_mark(void *arg, const struct stream_result *res)
{
	struct mark_seen *m = arg;
	m->calls++;
	m->rows = res->rows;
	m->steps = res->st.steps;
	return m->stop;
}

/* Run `code` over `bars` bars of the two-asset market; with `seen`, the
 * mark at bar `mark` (rows kept on a failure). */
static enum ev_err run_marked(const char *code, size_t bars, struct mark_seen *seen, size_t mark,
			      struct stream_result *res)
{
	static const char *const names[] = { "ETH", "AAA" };
	static const double *const closes[] = { close_a, close_b };
	static const double *const vols[] = { vol_a, vol_b };
	struct ch_market m = {
		.T = NBARS, .ts = ts, .n_assets = 2, .names = names, .close = closes, .volume = vols,
	};
	struct stream_request rq = {
		.m = &m, .bars = bars, .code = code, .code_len = strlen(code),
		.sbx = { .mode = SBX_TRUSTED, .limits = { .cpu_seconds = 60 } },
		.keep_rows = seen != NULL, .on_mark = seen ? on_mark : NULL, .on_mark_arg = seen, .mark_bar = mark,
	};
	return stream_run(&rq, res);
}

/* Run `code` over `bars` bars of the two-asset market. */
static enum ev_err run(const char *code, size_t bars, struct stream_result *res)
{
	return run_marked(code, bars, NULL, 0, res);
}

static const char ok_code[] =
	"import numpy as np\n"
	"from agenttest import Featurizer, Predictor\n"
	"class TechFeaturizer(Featurizer):\n"
	"    warmup = 50\n"
	"    compute_interval = 3\n"
	"    def setup(self, assets, total):\n"
	"        assert assets == ['AAA', 'ETH'] and total == BARS, (assets, total)\n"
	"    def compute(self, view):\n"
	"        m = view.prices_matrix()\n"
	"        b = object.__getattribute__(view, '_CausalView__b')\n"
	"        assert not np.count_nonzero(b.closes[view.t + 1:])\n"
	"        return [view.t, m.shape[0], m[-1, 0], view.prices('ETH')[-1], view.timestamps()[-1] % 100000]\n"
	"class TechPredictor(Predictor):\n"
	"    def predict(self, f):\n"
	"        return np.array(f, dtype=float)\n";

/* Every row is the view of the last compute (t on the grid warmup + 3k). */
static void test_rows_in_order(void **state)
{
	(void)state;
	char code[2048];
	struct stream_result res;
	snprintf(code, sizeof code, "BARS = %d\n%s", NBARS, ok_code);
	assert_int_equal(run(code, NBARS, &res), EV_OK);
	assert_int_equal(res.rows, NBARS - 50);
	assert_int_equal(res.dim, 5);
	assert_int_equal(res.warmup, 50);
	assert_int_equal(res.compute_interval, 3);
	assert_int_equal(res.st.steps, NBARS - 50);
	assert_int_equal(res.st.compute_calls, 1 + (NBARS - 50 - 1) / 3);
	for (size_t i = 0; i < res.rows; i++) {
		size_t t = 50 + i, c = 50 + (i / 3) * 3;
		const float *r = res.emb + i * 5;
		assert_true(r[0] == (float)c);
		assert_true(r[1] == (float)(c + 1));
		assert_true(r[2] == (float)close_b[c]);
		assert_true(r[3] == (float)close_a[c]);
		assert_true(r[4] == (float)(ts[c] % 100000));
		(void)t;
	}
	assert_true(res.st.loop_s > 0 && res.st.strategy_s >= 0);
	json_object *j = stream_stats_json(&res.st);
	assert_non_null(j);
	json_object_put(j);
	stream_result_free(&res);
}

/* bars < T: the host is told the shorter length and never sees more. */
static void test_fewer_bars(void **state)
{
	(void)state;
	char code[2048];
	struct stream_result res;
	snprintf(code, sizeof code, "BARS = 120\n%s", ok_code);
	assert_int_equal(run(code, 120, &res), EV_OK);
	assert_int_equal(res.rows, 70);
	assert_true(res.emb[69 * 5] <= 119.0f);
	stream_result_free(&res);
}

static void test_exception(void **state)
{
	(void)state;
	static const char code[] =
		"from agenttest import Featurizer, Predictor\n"
		"class TechFeaturizer(Featurizer):\n"
		"    warmup = 5\n"
		"    def compute(self, view):\n"
		"        if view.t == 77:\n"
		"            raise ValueError('bad bar %d' % view.t)\n"
		"        return [1.0]\n"
		"class TechPredictor(Predictor):\n"
		"    def predict(self, f):\n"
		"        return f\n";
	struct stream_result res;
	assert_int_equal(run(code, NBARS, &res), EV_STRATEGY_ERROR);
	assert_non_null(strstr(res.message, "bad bar 77"));
	assert_non_null(res.exception);
	json_object *ty;
	assert_true(json_object_object_get_ex(res.exception, "type", &ty));
	assert_string_equal(json_object_get_string(ty), "ValueError");
	assert_null(res.emb);
	json_object *e = stream_error_json(&res);
	assert_non_null(e);
	json_object_put(e);
	stream_result_free(&res);
}

static void test_bad_rows(void **state)
{
	(void)state;
	static const char ragged[] =
		"from agenttest import Featurizer, Predictor\n"
		"class TechFeaturizer(Featurizer):\n"
		"    def compute(self, view):\n"
		"        return view.t\n"
		"class TechPredictor(Predictor):\n"
		"    def predict(self, t):\n"
		"        return [0.5] * (3 if t == 10 else 2)\n";
	static const char huge[] =
		"from agenttest import Featurizer, Predictor\n"
		"class TechFeaturizer(Featurizer):\n"
		"    def compute(self, view):\n"
		"        return view.t\n"
		"class TechPredictor(Predictor):\n"
		"    def predict(self, t):\n"
		"        return [0.5] * 5000\n";
	struct stream_result res;
	assert_int_equal(run(ragged, NBARS, &res), EV_BAD_OUTPUT);
	assert_non_null(strstr(res.message, "different lengths"));
	stream_result_free(&res);
	assert_int_equal(run(huge, NBARS, &res), EV_BAD_OUTPUT);
	assert_non_null(strstr(res.message, "4096"));
	stream_result_free(&res);
}

/* A derivatives field present for one asset: cg(), cg_fields(), has_cg(). */
static void test_derivatives_layer(void **state)
{
	(void)state;
	static double fund[NBARS];
	static const char *const names[] = { "ETH", "AAA" };
	static const double *const closes[] = { close_a, close_b };
	static const char *const fnames[] = { "funding_1h" };
	static const double *fields[2];
	for (int t = 0; t < NBARS; t++)
		fund[t] = 0.001 * t;
	fields[0] = fund;   /* (field 0, asset 0 = ETH) */
	fields[1] = NULL;   /* AAA has none */
	struct ch_market m = {
		.T = NBARS, .ts = ts, .n_assets = 2, .names = names, .close = closes,
		.n_fields = 1, .field_names = fnames, .fields = fields,
	};
	static const char code[] =
		"import numpy as np\n"
		"from agenttest import Featurizer, Predictor\n"
		"class TechFeaturizer(Featurizer):\n"
		"    warmup = 20\n"
		"    def compute(self, view):\n"
		"        assert view.has_cg() and view.cg_fields('ETH') == ['funding_1h'] and view.cg_fields('AAA') == []\n"
		"        f = view.cg('ETH', 'funding_1h')\n"
		"        assert len(f) == view.t + 1 and f.flags.writeable and f[0] == 0.0\n"
		"        last = float(f[-1])\n"
		"        f[:] = -1.0\n"   /* copy-on-write: the next step sees the data again */
		"        try:\n"
		"            view.cg('AAA', 'funding_1h')\n"
		"            missing = 0.0\n"
		"        except KeyError:\n"
		"            missing = 1.0\n"
		"        return [last, missing, view.ohlcv('ETH')[-1, 4]]\n"
		"class TechPredictor(Predictor):\n"
		"    def predict(self, f):\n"
		"        return f\n";
	struct stream_request rq = {
		.m = &m, .bars = NBARS, .code = code, .code_len = strlen(code),
		.sbx = { .mode = SBX_TRUSTED, .limits = { .cpu_seconds = 60 } },
	};
	struct stream_result res;
	assert_int_equal(stream_run(&rq, &res), EV_OK);
	assert_int_equal(res.rows, NBARS - 20);
	for (size_t i = 0; i < res.rows; i++) {
		assert_true(res.emb[i * 3] == (float)fund[20 + i]);
		assert_true(res.emb[i * 3 + 1] == 1.0f);
		assert_true(res.emb[i * 3 + 2] == 0.0f);   /* no volume column: 0 */
	}
	stream_result_free(&res);
}

/* warmup beyond the data: no step, no row, no error (scoring refuses later). */
static void test_no_steps(void **state)
{
	(void)state;
	static const char code[] =
		"from agenttest import Featurizer, Predictor\n"
		"class TechFeaturizer(Featurizer):\n"
		"    warmup = 10000\n"
		"    def compute(self, view):\n"
		"        return 1\n"
		"class TechPredictor(Predictor):\n"
		"    def predict(self, f):\n"
		"        return [f]\n";
	struct stream_result res;
	assert_int_equal(run(code, NBARS, &res), EV_OK);
	assert_int_equal(res.rows, 0);
	stream_result_free(&res);
}

/* Run ok_code over every bar with the mark at bar `mark`. */
static enum ev_err run_mark(size_t mark, struct mark_seen *seen, struct stream_result *res)
{
	static char code[2048];
	snprintf(code, sizeof code, "BARS = %d\n%s", NBARS, ok_code);
	return run_marked(code, NBARS, seen, mark, res);
}

/* The mark (a split's holdout start) runs once, when every bar before it is
 * in and its own bar is not yet written; a nonzero answer ends the stream
 * there with the rows before it kept. Inside the warmup it sees no row;
 * at the end of the bars it runs after the last row. */
static void test_mark(void **state)
{
	(void)state;
	struct stream_result res;
	struct mark_seen go = { 0 }, stop = { .stop = 1 }, warm = { .stop = 1 }, end = { 0 };
	assert_int_equal(run_mark(120, &go, &res), EV_OK);
	assert_int_equal(go.calls, 1);
	assert_int_equal(go.rows, 70);
	assert_int_equal(go.steps, 70);
	assert_int_equal(res.rows, NBARS - 50);
	stream_result_free(&res);
	assert_int_equal(run_mark(120, &stop, &res), EV_INTERNAL);
	assert_int_equal(stop.calls, 1);
	assert_int_equal(res.rows, 70);
	assert_non_null(strstr(res.message, "stopped at bar 120"));
	assert_true(res.emb[69 * 5] <= 119.0f);
	stream_result_free(&res);
	assert_int_equal(run_mark(20, &warm, &res), EV_INTERNAL);
	assert_int_equal(warm.calls, 1);
	assert_int_equal(warm.rows, 0);
	assert_int_equal(res.rows, 0);
	stream_result_free(&res);
	assert_int_equal(run_mark(NBARS, &end, &res), EV_OK);
	assert_int_equal(end.calls, 1);
	assert_int_equal(end.rows, NBARS - 50);
	stream_result_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_in_order),
		cmocka_unit_test(test_fewer_bars),
		cmocka_unit_test(test_exception),
		cmocka_unit_test(test_bad_rows),
		cmocka_unit_test(test_no_steps),
		cmocka_unit_test(test_derivatives_layer),
		cmocka_unit_test(test_mark),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
