/*
 * Synthetic market: pinned dataset hash (2 days, seed 1), determinism,
 * subset = same columns, OHLC consistency and value checks through a
 * verified open, config refusals, and the model's stylised facts (fat
 * tails, volatility clustering, market correlation, volume vs |return|,
 * the planted ETH momentum and its absence elsewhere) on 20 days in memory.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "evaluator/dataset.h"
#include "evaluator/synth.h"
#include "tests/unit/evaluator/ds_testutil.h"

/* `agenttest data synth --days 2 --seed 1` (all 29 assets, start 2024-01-01).
 * Changing the model changes this on purpose: bump SYNTH_MODEL and the docs. */
#define PINNED_HASH_2D_SEED1 "7c36fbd3deb3847bc00afdf1b764430be5c89cf5ce3231627b3ca57871b61baa"
#define PINNED_ETH_CLOSE     "5144361fa578fe08c69b6983338b5e9e24af48e959daeb7e37e26ae8025e76cc"
#define START_2024           1704067200000LL

static struct synth_config cfg(unsigned days, uint64_t seed)
{
	struct synth_config c = { .seed = seed, .days = days, .start_ms = START_2024, .kappa = SYNTH_ETH_KAPPA };
	return c;
}

static void test_pinned_hash_and_verify(void **state)
{
	(void)state;
	char base[256], dir[300], hash[65];
	struct ds_error e = { 0 };
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/synth", base);
	struct synth_config c = cfg(2, 1);
	assert_int_equal(synth_write(dir, "synth-test", &c, hash, &e), DS_OK);
	assert_string_equal(hash, PINNED_HASH_2D_SEED1);
	enum ds_err err;
	char msg[512];
	struct dataset *ds = ds_open(dir, 1, &err, msg, sizeof msg); /* verify: hashes, OHLC, values */
	if (!ds)
		fail_msg("%s", msg);
	assert_string_equal(ds_hash(ds), PINNED_HASH_2D_SEED1);
	assert_int_equal(ds_asset_count(ds), 29);
	assert_int_equal(ds_bars(ds), 2 * 1440);
	assert_int_equal(ds_timestamps(ds)[0], START_2024);
	assert_int_equal(ds_timestamps(ds)[2879], START_2024 + 2879 * 60000LL);
	for (size_t i = 0; i < 29; i++)
		assert_string_equal(ds_asset_name(ds, i), synth_assets[i]);
	assert_string_equal(ds_asset_name(ds, 24), "PEPE");
	char hex[65];
	unsigned char h[32];
	crypto_hash_sha256(h, (const unsigned char *)ds_column(ds, 1, DS_CLOSE), 2 * 1440 * 8);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	assert_string_equal(hex, PINNED_ETH_CLOSE);
	ds_close(ds);
	ds_rmtree(base);
}

/* OHLC consistency, positivity and continuity on every asset and bar. */
static void test_ohlc_consistent(void **state)
{
	(void)state;
	struct synth_config c = cfg(3, 7);
	size_t T = 3 * 1440;
	double *m = calloc(T, sizeof *m), *o = calloc(T * 5, sizeof *o);
	assert_non_null(m);
	assert_non_null(o);
	synth_market(&c, m);
	for (int a = 0; a < SYNTH_N_ASSETS; a++) {
		double *op = o, *hi = o + T, *lo = o + 2 * T, *cl = o + 3 * T, *vo = o + 4 * T;
		synth_asset(&c, a, m, op, hi, lo, cl, vo);
		for (size_t t = 0; t < T; t++) {
			assert_true(isfinite(op[t]) && op[t] > 0 && isfinite(cl[t]) && cl[t] > 0);
			assert_true(lo[t] > 0 && lo[t] <= op[t] && lo[t] <= cl[t]);
			assert_true(hi[t] >= op[t] && hi[t] >= cl[t]);
			assert_true(isfinite(vo[t]) && vo[t] > 0);
			if (t)
				assert_true(op[t] == cl[t - 1]);
		}
	}
	free(m);
	free(o);
}

static void test_deterministic_and_subset(void **state)
{
	(void)state;
	char base[256], d1[300], d2[300], d3[300], h1[65], h2[65], h3[65];
	struct ds_error e = { 0 };
	ds_tmpdir(base, sizeof base);
	snprintf(d1, sizeof d1, "%s/a", base);
	snprintf(d2, sizeof d2, "%s/b", base);
	snprintf(d3, sizeof d3, "%s/c", base);
	struct synth_config c = cfg(1, 42);
	assert_int_equal(synth_write(d1, "x1", &c, h1, &e), DS_OK);
	assert_int_equal(synth_write(d2, "x2", &c, h2, &e), DS_OK);
	assert_string_equal(h1, h2); /* the label is not part of the hash */
	static const char *const sub[] = { "SOL", "ETH" };
	c.n_assets = 2;
	c.assets = sub;
	assert_int_equal(synth_write(d3, "x3", &c, h3, &e), DS_OK);
	assert_string_not_equal(h1, h3);
	enum ds_err err;
	struct dataset *full = ds_open(d1, 0, &err, NULL, 0), *part = ds_open(d3, 0, &err, NULL, 0);
	assert_non_null(full);
	assert_non_null(part);
	assert_string_equal(ds_asset_name(part, 0), "SOL");
	for (int f = 0; f < DS_FIELD__MAX; f++) {
		assert_memory_equal(ds_column(full, 3, (enum ds_field)f), ds_column(part, 0, (enum ds_field)f), 1440 * 8);
		assert_memory_equal(ds_column(full, 1, (enum ds_field)f), ds_column(part, 1, (enum ds_field)f), 1440 * 8);
	}
	ds_close(full);
	ds_close(part);
	/* another seed: different data */
	char d4[300], h4[65];
	snprintf(d4, sizeof d4, "%s/d", base);
	c = cfg(1, 43);
	assert_int_equal(synth_write(d4, "x4", &c, h4, &e), DS_OK);
	assert_string_not_equal(h1, h4);
	ds_rmtree(base);
}

static void test_bad_configs(void **state)
{
	(void)state;
	char base[256], dir[300], hash[65];
	ds_tmpdir(base, sizeof base);
	snprintf(dir, sizeof dir, "%s/x", base);
	static const char *const unknown[] = { "BTC", "FOO" };
	static const char *const dup[] = { "BTC", "BTC" };
	struct synth_config cases[] = {
		{ .seed = 1, .days = 0, .start_ms = START_2024, .kappa = SYNTH_ETH_KAPPA },
		{ .seed = 1, .days = SYNTH_MAX_DAYS + 1, .start_ms = START_2024, .kappa = SYNTH_ETH_KAPPA },
		{ .seed = 1, .days = 1, .start_ms = START_2024 + 1, .kappa = SYNTH_ETH_KAPPA },
		{ .seed = 1, .days = 1, .start_ms = START_2024, .kappa = 0.95 },
		{ .seed = 1, .days = 1, .start_ms = START_2024, .kappa = NAN },
		{ .seed = 1, .days = 1, .start_ms = START_2024, .n_assets = 2, .assets = unknown, .kappa = SYNTH_ETH_KAPPA },
		{ .seed = 1, .days = 1, .start_ms = START_2024, .n_assets = 2, .assets = dup, .kappa = SYNTH_ETH_KAPPA },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ds_error e = { 0 };
		assert_int_equal(synth_write(dir, "v", &cases[i], hash, &e), DS_ERR_INPUT);
		assert_true(e.msg[0] != '\0');
	}
	struct ds_error e = { 0 };
	struct synth_config c = cfg(1, 1);
	assert_int_equal(synth_write(dir, "bad label!", &c, hash, &e), DS_ERR_INPUT);
	assert_int_equal(ds_count_entries(base), 0);
	ds_rmtree(base);
}

/* Pearson correlation of x and y (n values). */
static double corr(const double *x, const double *y, size_t n)
{
	double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
	for (size_t i = 0; i < n; i++) {
		mx += x[i];
		my += y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		sxx += (x[i] - mx) * (x[i] - mx);
		syy += (y[i] - my) * (y[i] - my);
		sxy += (x[i] - mx) * (y[i] - my);
	}
	return sxy / sqrt(sxx * syy);
}

/* Fraction of hours (non-overlapping, t = 60k) where sign(past 60 min) == sign(next 60 min),
 * using minute-sliding windows for more power: all t with both windows inside. */
static double hit_rate(const double *close, size_t T)
{
	size_t hits = 0, n = 0;
	for (size_t t = 60; t + 60 < T; t++) {
		double past = close[t] / close[t - 60] - 1, fut = close[t + 60] / close[t] - 1;
		if (past == 0 || fut == 0)
			continue;
		hits += (past > 0) == (fut > 0);
		n++;
	}
	return (double)hits / (double)n;
}

static void test_stylised_facts(void **state)
{
	(void)state;
	struct synth_config c = cfg(20, 1);
	size_t T = 20 * 1440;
	double *m = calloc(T, sizeof *m), *btc = calloc(T * 5, sizeof *btc), *x = calloc(T * 5, sizeof *x);
	double *rb = calloc(T, sizeof *rb), *rx = calloc(T, sizeof *rx), *ax = calloc(T, sizeof *ax);
	assert_true(m && btc && x && rb && rx && ax);
	synth_market(&c, m);
	synth_asset(&c, 0, m, btc, btc + T, btc + 2 * T, btc + 3 * T, btc + 4 * T);
	for (size_t t = 1; t < T; t++)
		rb[t] = btc[3 * T + t] / btc[3 * T + t - 1] - 1;
	for (int a = 1; a < SYNTH_N_ASSETS; a++) {
		synth_asset(&c, a, m, x, x + T, x + 2 * T, x + 3 * T, x + 4 * T);
		double m2 = 0, m4 = 0;
		for (size_t t = 1; t < T; t++) {
			rx[t] = x[3 * T + t] / x[3 * T + t - 1] - 1;
			ax[t] = fabs(rx[t]);
			m2 += rx[t] * rx[t];
			m4 += rx[t] * rx[t] * rx[t] * rx[t];
		}
		m2 /= (double)(T - 1);
		m4 /= (double)(T - 1);
		double kurt = m4 / (m2 * m2);
		double ann_vol = sqrt(m2 * 525600.0);
		double c_btc = corr(rb + 1, rx + 1, T - 1);
		double clus = corr(ax + 1, ax + 2, T - 2);           /* |r| autocorrelation */
		double vol_abs = corr(x + 4 * T + 1, ax + 1, T - 1); /* volume vs |r| */
		double hr = hit_rate(x + 3 * T, T);
		print_message("%-5s vol %.2f kurt %.1f corrBTC %.2f clus %.2f vol~|r| %.2f hit %.4f\n", synth_assets[a],
			      ann_vol, kurt, c_btc, clus, vol_abs, hr);
		assert_true(kurt > 5);                       /* fat tails */
		assert_true(clus > 0.05);                    /* volatility clustering */
		assert_true(c_btc > 0.25 && c_btc < 0.9);    /* common factor */
		assert_true(vol_abs > 0.3 && vol_abs < 0.9); /* volume tied to |r|, not equal to it */
		assert_true(ann_vol > 0.3 && ann_vol < 1.6);
		if (a == 1)
			assert_true(hr > 0.53);                  /* planted momentum */
		else
			assert_true(hr > 0.46 && hr < 0.535);    /* none elsewhere */
	}
	/* the control: ETH without the planted effect */
	c.kappa = 0.0;
	synth_asset(&c, 1, m, x, x + T, x + 2 * T, x + 3 * T, x + 4 * T);
	double hr0 = hit_rate(x + 3 * T, T);
	print_message("ETH kappa=0 hit %.4f\n", hr0);
	assert_true(hr0 > 0.46 && hr0 < 0.53);
	free(m);
	free(btc);
	free(x);
	free(rb);
	free(rx);
	free(ax);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pinned_hash_and_verify),
		cmocka_unit_test(test_ohlc_consistent),
		cmocka_unit_test(test_deterministic_and_subset),
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_stylised_facts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
