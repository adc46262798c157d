/* Challenge table, market preparation and scoring entry points
 * (evaluator/challenges/ch_table.c, ch_prepare.c, ch_score.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "evaluator/challenges/ch_internal.h"

static void table_lookup(void **st)
{
	(void)st;
	assert_int_equal(ch_count(), 7);
	const struct ch_def *d = ch_lookup("MULTI-BREAKOUT");
	assert_non_null(d);
	assert_int_equal(d->n_assets, 29);
	assert_int_equal(d->emb_dim, 58);
	assert_string_equal(d->assets[28], "ONDO");
	assert_int_equal(d->range_lookback, 5760);
	d = ch_lookup("FUNDING-XSEC");
	assert_int_equal(d->n_assets, 20);
	assert_string_equal(d->field, "funding_1h");
	assert_int_equal(ch_lookup("BTC-LBFGS-6H")->horizon, 360);
	assert_int_equal(ch_lookup("ETH-HITFIRST-100M")->vol_window, 7200);
	assert_null(ch_lookup("eth-1h-binary"));
	assert_null(ch_at(7));
	assert_int_equal(ch_mode_parse("mantis"), CH_MODE_MANTIS);
	assert_int_equal(ch_mode_parse("strict"), CH_MODE_STRICT);
	assert_int_equal(ch_mode_parse("Strict"), -1);
	assert_string_equal(ch_errcode(CH_ERR_PREDICTION), "bad_output");
}

static int has_funding(const char *f, void *ctx)
{
	(void)ctx;
	return strcmp(f, "funding_1h") == 0;
}

static void catalog(void **st)
{
	(void)st;
	json_object *c = ch_catalog(NULL, NULL), *e, *mi, *b;
	assert_int_equal(json_object_object_length(c), 6);
	assert_false(json_object_object_get_ex(c, "FUNDING-XSEC", NULL));
	assert_true(json_object_object_get_ex(c, "ETH-HITFIRST-100M", &e));
	assert_true(json_object_object_get_ex(e, "metric_info", &mi));
	assert_true(json_object_object_get_ex(mi, "baseline", &b));
	assert_true(fabs(json_object_get_double(b) - log(3.0)) < 1e-15);
	assert_true(json_object_object_get_ex(mi, "direction", &b));
	assert_string_equal(json_object_get_string(b), "lower");
	json_object_put(c);
	c = ch_catalog(has_funding, NULL);
	assert_int_equal(json_object_object_length(c), 7);
	json_object_put(c);
}

/* A one-asset market over n bars. */
struct mk {
	double close[64];
	unsigned char valid[64];
	const double *cl[1];
	const unsigned char *va[1];
	const char *names[1];
	struct ch_market m;
};

static void mk_init(struct mk *k, size_t n, const char *name)
{
	memset(k, 0, sizeof *k);
	for (size_t i = 0; i < n; i++) {
		k->close[i] = 100.0 + (double)i;
		k->valid[i] = 1;
	}
	k->cl[0] = k->close;
	k->va[0] = k->valid;
	k->names[0] = name;
	k->m.T = n;
	k->m.n_assets = 1;
	k->m.names = k->names;
	k->m.close = k->cl;
}

static void prepare_row_vs_time_alignment(void **st)
{
	(void)st;
	struct mk k;
	struct ch_prepared *p = NULL;
	char err[128];
	mk_init(&k, 10, "ETH");
	k.valid[3] = 0;
	k.m.valid = k.va;
	/* mantis: the missing bar is squeezed out, rows shift */
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_MANTIS, &k.m, &p, err, sizeof err), CH_OK);
	const struct ch_market *m = ch_prepared_market(p);
	assert_int_equal(m->T, 9);
	assert_true(m->close[0][3] == 104.0);
	ch_prepared_free(p);
	/* strict: the bar stays, as NaN */
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_STRICT, &k.m, &p, err, sizeof err), CH_OK);
	m = ch_prepared_market(p);
	assert_int_equal(m->T, 10);
	assert_true(isnan(m->close[0][3]) && m->close[0][4] == 104.0);
	ch_prepared_free(p);
	/* no gap: no copy, the caller's column is used */
	k.valid[3] = 1;
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_MANTIS, &k.m, &p, err, sizeof err), CH_OK);
	assert_ptr_equal(ch_prepared_market(p)->close[0], k.close);
	ch_prepared_free(p);
}

static void prepare_timestamps(void **st)
{
	(void)st;
	struct mk k;
	struct ch_prepared *p = NULL;
	char err[128];
	int64_t ts[6] = { 0, 60000, 120000, 300000, 360000, 420000 };
	mk_init(&k, 6, "ETH");
	k.m.ts = ts;
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_STRICT, &k.m, &p, err, sizeof err), CH_OK);
	const struct ch_market *m = ch_prepared_market(p);
	assert_int_equal(m->T, 8);
	assert_true(isnan(m->close[0][3]) && isnan(m->close[0][4]) && m->close[0][5] == 103.0);
	assert_int_equal(m->ts[4], 240000);
	ch_prepared_free(p);
	ts[2] = 130000;
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_STRICT, &k.m, &p, err, sizeof err), CH_ERR_INPUT);
	assert_null(p);
	assert_non_null(strstr(err, "1-minute grid"));
	/* mantis ignores timestamps (row alignment) */
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_MANTIS, &k.m, &p, err, sizeof err), CH_OK);
	assert_int_equal(ch_prepared_market(p)->T, 6);
	ch_prepared_free(p);
}

static void prepare_missing_asset(void **st)
{
	(void)st;
	struct mk k;
	struct ch_prepared *p = NULL;
	char err[128];
	mk_init(&k, 10, "SOL");
	assert_int_equal(ch_prepare(ch_lookup("ETH-1H-BINARY"), CH_MODE_STRICT, &k.m, &p, err, sizeof err), CH_ERR_INPUT);
	assert_string_equal(err, "the dataset has no ETH prices");
}

static void score_errors_and_shapes(void **st)
{
	(void)st;
	struct mk k;
	json_object *r = NULL;
	char err[256];
	float emb[64 * 2] = { 0 };
	mk_init(&k, 64, "ETH");
	const struct ch_def *d = ch_lookup("ETH-1H-BINARY");
	/* wrong row count: input error, no result object */
	assert_int_equal(ch_score(d, CH_MODE_STRICT, &k.m, emb, 10, 2, 0, 0, &r, err, sizeof err), CH_ERR_INPUT);
	assert_null(r);
	/* too little data: the original's message as the result */
	assert_int_equal(ch_score(d, CH_MODE_MANTIS, &k.m, emb, 54, 2, 10, 0, &r, err, sizeof err), CH_ERR_EVAL);
	assert_string_equal(err, "not enough data after warmup");
	assert_string_equal(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN),
	    "{\"error\":\"not enough data after warmup\"}");
	json_object_put(r);
	char *s = ch_score_json("NOPE", 0, &k.m, emb, 64, 2, 0, 0, NULL);
	assert_non_null(strstr(s, "unknown challenge"));
	ch_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_lookup),
		cmocka_unit_test(catalog),
		cmocka_unit_test(prepare_row_vs_time_alignment),
		cmocka_unit_test(prepare_timestamps),
		cmocka_unit_test(prepare_missing_asset),
		cmocka_unit_test(score_errors_and_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
