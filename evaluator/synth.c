/*
 * synth: the synthetic market generator (model in synth.h and
 * docs/datasets.md). Theory of operation:
 *
 *   1. The market factor m_t (T values) is drawn once from its own stream:
 *      m_t = sig_m * sqrt(g_t) * s(tod_t) * z_t + jump_t, with the relative
 *      GARCH variance g_{t+1} = (1 - a - b) + a * g_t * z_t^2 + b * g_t
 *      (+ a * (jump/sig)^2), clamped to [G_MIN, G_MAX].
 *   2. Each asset is drawn independently from its own stream:
 *      r_t = beta * m_t + sig_e * sqrt(g_t) * s(tod_t) * z_t + jump_t + mu_t,
 *      mu_t = (kappa / 60) * sum of its previous 60 returns (ETH only).
 *      close_t = close_{t-1} * (1 + r_t); open_t = close_{t-1}.
 *   3. High and low come from an intra-bar Brownian bridge from open to
 *      close (SUB interior points); volume from |r_t| and the session.
 *
 * Only +, -, *, / and sqrt are used on doubles (IEEE 754 exactly rounded),
 * so the output is bit-identical across conforming machines; the pragmas
 * below keep GCC and clang from contracting a*b+c into FMA whatever the
 * flags (an FMA rounds once and would change the bytes).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off") /* GCC ignores the STDC pragma */
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/dataset_priv.h"
#include "evaluator/synth.h"

#define MIN_PER_DAY 1440
#define SUB         6        /* interior points of the intra-bar path */
#define G_MIN       0.05     /* clamp of the relative GARCH variance */
#define G_MAX       30.0
#define RET_MIN     (-0.5)   /* clamp of one bar's simple return */
#define RET_MAX     1.0

const char *const synth_assets[SYNTH_N_ASSETS] = {
	"BTC", "ETH", "XRP", "SOL", "TRX", "DOGE", "ADA", "BCH", "XMR", "LINK",
	"XLM", "ZEC", "SUI", "LTC", "AVAX", "HBAR", "SHIB", "TON", "CRO", "DOT",
	"UNI", "MNT", "TAO", "AAVE", "PEPE", "NEAR", "ICP", "ETC", "ONDO",
};

/* Per-asset parameters (docs/datasets.md, table "Assets"). */
struct synth_param {
	double price;    /* starting price, USDT */
	double vol;      /* annualised volatility of returns */
	double rho;      /* correlation with the market factor */
	double usd_min;  /* mean traded value per minute, USDT */
};

static const struct synth_param params[SYNTH_N_ASSETS] = {
	/* BTC  */ { 60000.0,    0.50, 0.90, 2500000 },
	/* ETH  */ { 3000.0,     0.65, 0.80, 1200000 },
	/* XRP  */ { 0.55,       0.80, 0.65,  300000 },
	/* SOL  */ { 150.0,      0.85, 0.72,  500000 },
	/* TRX  */ { 0.12,       0.45, 0.45,   60000 },
	/* DOGE */ { 0.15,       0.90, 0.68,  250000 },
	/* ADA  */ { 0.45,       0.80, 0.70,  100000 },
	/* BCH  */ { 400.0,      0.75, 0.65,   50000 },
	/* XMR  */ { 150.0,      0.60, 0.45,   10000 },
	/* LINK */ { 15.0,       0.85, 0.70,   80000 },
	/* XLM  */ { 0.11,       0.75, 0.62,   30000 },
	/* ZEC  */ { 25.0,       0.90, 0.50,   40000 },
	/* SUI  */ { 1.2,        1.10, 0.60,  150000 },
	/* LTC  */ { 80.0,       0.70, 0.68,   60000 },
	/* AVAX */ { 30.0,       0.90, 0.70,   70000 },
	/* HBAR */ { 0.08,       0.90, 0.62,   50000 },
	/* SHIB */ { 0.00002,    0.95, 0.62,   40000 },
	/* TON  */ { 6.0,        0.75, 0.45,   30000 },
	/* CRO  */ { 0.10,       0.70, 0.50,   10000 },
	/* DOT  */ { 6.5,        0.80, 0.70,   40000 },
	/* UNI  */ { 8.0,        0.90, 0.65,   40000 },
	/* MNT  */ { 0.80,       0.85, 0.50,   15000 },
	/* TAO  */ { 400.0,      1.10, 0.55,   30000 },
	/* AAVE */ { 120.0,      0.90, 0.62,   60000 },
	/* PEPE */ { 0.000009,   1.20, 0.58,  120000 },
	/* NEAR */ { 5.0,        0.95, 0.68,   60000 },
	/* ICP  */ { 10.0,       0.90, 0.60,   20000 },
	/* ETC  */ { 25.0,       0.75, 0.65,   25000 },
	/* ONDO */ { 0.90,       1.10, 0.55,   30000 },
};

/* Market factor and GARCH/jump parameters (docs/datasets.md). */
#define MKT_VOL       0.55           /* annualised */
#define MKT_A         0.03           /* GARCH alpha, market */
#define MKT_B         0.965          /* GARCH beta, market */
#define IDIO_A        0.04           /* GARCH alpha, idiosyncratic */
#define IDIO_B        0.95           /* GARCH beta, idiosyncratic */
#define MKT_JUMP_P    (1.0 / (3.0 * MIN_PER_DAY))  /* per bar */
#define MKT_JUMP_SD   8.0            /* in per-minute market sd */
#define IDIO_JUMP_P   (1.0 / (2.0 * MIN_PER_DAY))
#define IDIO_JUMP_SD  10.0           /* in per-minute asset sd */
#define MIN_PER_YEAR  525600.0
#define STREAM_MARKET 1000u
#define VOL_LEVEL_W   0.5            /* volume weight on the current vol level */
#define VOL_MOVE_W    0.5            /* volume weight on |return| / sd */

/* Intraday volatility profile: relative level at each UTC hour (knot h at
 * minute 60h; linear in between, hour 24 = hour 0). Normalised at run time
 * so that the mean of s^2 over a day is 1. */
static const double tod_knots[25] = {
	1.00, 0.95, 0.88, 0.80, 0.75, 0.74, 0.78, 0.88, 1.00, 1.02, 0.98, 0.95,
	1.00, 1.15, 1.35, 1.30, 1.18, 1.08, 1.02, 0.98, 1.00, 1.02, 0.98, 1.00, 1.00,
};

/* ---- PRNG: splitmix64 to seed, xoshiro256** to draw (public domain algorithms) ---- */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

/* Seed stream `stream` of `seed`: splitmix64 over seed mixed with the stream id. */
static void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * UINT64_C(0xd1b54a32d192ed03));
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

/* Uniform in [0, 1) with 53 random bits. */
static double unif(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Student-t with 4 degrees of freedom scaled to unit variance (Bailey's
 * polar method; for nu = 4, W^(-2/nu) = 1/sqrt(W), so only sqrt is needed). */
static double student4(struct rng *r)
{
	for (;;) {
		double u = 2.0 * unif(r) - 1.0, v = 2.0 * unif(r) - 1.0;
		double w = u * u + v * v;
		if (w > 1.0 || w <= 0x1.0p-40)
			continue;
		double t = u * sqrt(4.0 * (1.0 / sqrt(w) - 1.0) / w);
		return t * 0.70710678118654752440; /* var(t4) = 2 */
	}
}

/* Symmetric triangular variable with unit variance (sum of two uniforms). */
static double tri(struct rng *r)
{
	return (unif(r) + unif(r) - 1.0) * 2.44948974278317809820; /* sqrt(6) */
}

/* ---- model ---- */

/* Intraday multipliers for every minute of the day (normalised). */
static void tod_profile(double prof[MIN_PER_DAY])
{
	double ss = 0;
	for (int m = 0; m < MIN_PER_DAY; m++) {
		int h = m / 60;
		double f = (double)(m % 60) / 60.0;
		prof[m] = tod_knots[h] + (tod_knots[h + 1] - tod_knots[h]) * f;
		ss += prof[m] * prof[m];
	}
	double norm = sqrt((double)MIN_PER_DAY / ss);
	for (int m = 0; m < MIN_PER_DAY; m++)
		prof[m] *= norm;
}

/* Minute of the UTC day of bar 0. */
static int first_minute(const struct synth_config *c)
{
	int64_t m = (c->start_ms / 60000) % MIN_PER_DAY;
	return (int)(m < 0 ? m + MIN_PER_DAY : m);
}

/* One GARCH update of the relative variance g with standardized shock z. */
static double garch_step(double g, double z2, double a, double b)
{
	g = (1.0 - a - b) + a * g * z2 + b * g;
	return g < G_MIN ? G_MIN : g > G_MAX ? G_MAX : g;
}

int synth_asset_index(const char *name)
{
	for (int i = 0; i < SYNTH_N_ASSETS; i++)
		if (strcmp(synth_assets[i], name) == 0)
			return i;
	return -1;
}

void synth_market(const struct synth_config *c, double *market)
{
	struct rng r;
	double prof[MIN_PER_DAY], g = 1.0;
	size_t T = (size_t)c->days * MIN_PER_DAY;
	double sig = MKT_VOL / sqrt(MIN_PER_YEAR);
	int tod = first_minute(c);
	tod_profile(prof);
	rng_seed(&r, c->seed, STREAM_MARKET);
	for (size_t t = 0; t < T; t++) {
		double z = student4(&r), jz = 0.0;
		if (unif(&r) < MKT_JUMP_P)
			jz = MKT_JUMP_SD * student4(&r);
		market[t] = sig * (sqrt(g) * prof[tod] * z + jz);
		g = garch_step(g, z * z + jz * jz, MKT_A, MKT_B);
		if (++tod == MIN_PER_DAY)
			tod = 0;
	}
}

/* Fill high/low from an intra-bar Brownian bridge from open to close. */
static void bar_range(struct rng *r, double open, double ret, double sd, double *hi, double *lo)
{
	double b[SUB + 2], close = open * (1.0 + ret);
	double step = sd / 2.64575131106459059050; /* sqrt(SUB + 1) */
	b[0] = 0.0;
	for (int k = 1; k <= SUB + 1; k++)
		b[k] = b[k - 1] + step * tri(r);
	double h = open > close ? open : close, l = open < close ? open : close;
	for (int k = 1; k <= SUB; k++) {
		double frac = (double)k / (double)(SUB + 1);
		double x = ret * frac + b[k] - frac * b[SUB + 1];
		if (x < RET_MIN)
			x = RET_MIN;
		double p = open * (1.0 + x);
		h = p > h ? p : h;
		l = p < l ? p : l;
	}
	*hi = h;
	*lo = l;
}

void synth_asset(const struct synth_config *c, int asset, const double *market,
		 double *open, double *high, double *low, double *close, double *volume)
{
	const struct synth_param *p = &params[asset];
	struct rng r;
	double prof[MIN_PER_DAY], g = 1.0, hist[SYNTH_MOM_WINDOW] = { 0 }, hsum = 0.0;
	size_t T = (size_t)c->days * MIN_PER_DAY;
	double sig = p->vol / sqrt(MIN_PER_YEAR), sig_m = MKT_VOL / sqrt(MIN_PER_YEAR);
	double beta = p->rho * sig / sig_m, sig_e = sig * sqrt(1.0 - p->rho * p->rho);
	double kappa = strcmp(synth_assets[asset], "ETH") == 0 ? c->kappa : 0.0;
	double base_vol = p->usd_min / p->price, prev = p->price;
	int tod = first_minute(c);
	tod_profile(prof);
	rng_seed(&r, c->seed, (uint64_t)asset);
	for (size_t t = 0; t < T; t++) {
		double z = student4(&r), jz = 0.0;
		if (unif(&r) < IDIO_JUMP_P)
			jz = IDIO_JUMP_SD * student4(&r);
		double inst = sqrt(g) * prof[tod];
		double mu = kappa * hsum / (double)SYNTH_MOM_WINDOW;
		double ret = beta * market[t] + sig_e * (inst * z + jz) + mu;
		ret = ret < RET_MIN ? RET_MIN : ret > RET_MAX ? RET_MAX : ret;
		g = garch_step(g, z * z + jz * jz, IDIO_A, IDIO_B);
		size_t slot = t % SYNTH_MOM_WINDOW;
		hsum += ret - hist[slot];
		hist[slot] = ret;
		if (slot == SYNTH_MOM_WINDOW - 1) { /* re-sum exactly: no drift from +/- */
			hsum = 0.0;
			for (int k = 0; k < SYNTH_MOM_WINDOW; k++)
				hsum += hist[k];
		}
		open[t] = prev;
		close[t] = prev * (1.0 + ret);
		bar_range(&r, prev, ret, sig * inst, &high[t], &low[t]);
		double act = VOL_LEVEL_W * inst + VOL_MOVE_W * (ret < 0 ? -ret : ret) / sig;
		double noise = (0.4 + 1.2 * unif(&r)) * (0.5 + unif(&r));
		volume[t] = base_vol * act * noise;
		prev = close[t];
		if (++tod == MIN_PER_DAY)
			tod = 0;
	}
}

/* Resolve the config's asset list into breakout indices (all when empty). */
static int resolve_assets(const struct synth_config *c, int *idx, size_t *n, struct ds_error *e)
{
	if (c->n_assets == 0) {
		for (int i = 0; i < SYNTH_N_ASSETS; i++)
			idx[i] = i;
		*n = SYNTH_N_ASSETS;
		return 0;
	}
	if (c->n_assets > SYNTH_N_ASSETS)
		return ds__fail(e, DS_ERR_INPUT, 0, "at most %d assets", SYNTH_N_ASSETS), -1;
	for (size_t i = 0; i < c->n_assets; i++) {
		idx[i] = synth_asset_index(c->assets[i]);
		if (idx[i] < 0)
			return ds__fail(e, DS_ERR_INPUT, 0, "unknown asset \"%.40s\" (the synthetic market has the 29 breakout assets)", c->assets[i]), -1;
		for (size_t j = 0; j < i; j++)
			if (idx[j] == idx[i])
				return ds__fail(e, DS_ERR_INPUT, 0, "asset %s listed twice", c->assets[i]), -1;
	}
	*n = c->n_assets;
	return 0;
}

/* The manifest's "source" object for config c. */
static void source_json(const struct synth_config *c, char *out, size_t len)
{
	snprintf(out, len,
		 "{\"generator\": \"agenttest synth\", \"model\": %d, \"seed\": %llu, \"days\": %u, "
		 "\"start_ms\": %lld, \"planted_effect\": \"ETH 1-hour momentum: per-minute drift = "
		 "kappa/%d x sum of the previous %d one-minute returns\", \"kappa_e6\": %lld}",
		 SYNTH_MODEL, (unsigned long long)c->seed, c->days, (long long)c->start_ms,
		 SYNTH_MOM_WINDOW, SYNTH_MOM_WINDOW, (long long)(c->kappa * 1e6 + 0.5));
}

/* Fill the dataset layout's asset names from idx. */
static enum ds_err write_all(struct ds_writer *w, const struct synth_config *c, const int *idx, size_t n,
			     struct ds_error *e)
{
	size_t T = (size_t)c->days * MIN_PER_DAY;
	enum ds_err rc = DS_OK;
	int64_t *ts = xcalloc(T, sizeof *ts);
	double *mkt = xcalloc(T, sizeof *mkt);
	double *cols = xcalloc(xmul(T, 5), sizeof *cols);
	for (size_t t = 0; t < T; t++)
		ts[t] = c->start_ms + (int64_t)t * 60000;
	if ((rc = ds_writer_put_ts(w, ts, e)) != DS_OK)
		goto out;
	synth_market(c, mkt);
	for (size_t a = 0; a < n; a++) {
		synth_asset(c, idx[a], mkt, cols, cols + T, cols + 2 * T, cols + 3 * T, cols + 4 * T);
		for (size_t f = 0; f < 5; f++)
			if ((rc = ds_writer_put(w, a, f, cols + f * T, e)) != DS_OK)
				goto out;
	}
out:
	free(ts);
	free(mkt);
	free(cols);
	return rc;
}

enum ds_err synth_write(const char *dir, const char *version, const struct synth_config *c,
			char hash[65], struct ds_error *e)
{
	struct ds_error local;
	if (!e)
		e = &local; /* codes are read back from e */
	int idx[SYNTH_N_ASSETS];
	const char *names[SYNTH_N_ASSETS];
	char src[512];
	size_t n = 0;
	if (c->days < 1 || c->days > SYNTH_MAX_DAYS)
		return ds__fail(e, DS_ERR_INPUT, 0, "days must be 1..%d", SYNTH_MAX_DAYS);
	if (c->start_ms % 60000 != 0 || c->start_ms < 0 || c->start_ms > INT64_C(253402300799000))
		return ds__fail(e, DS_ERR_INPUT, 0, "start must be a whole minute between 1970 and 9999");
	if (!(c->kappa >= 0.0 && c->kappa < 0.9))
		return ds__fail(e, DS_ERR_INPUT, 0, "kappa must be in [0, 0.9)");
	if (resolve_assets(c, idx, &n, e))
		return e->code;
	for (size_t i = 0; i < n; i++)
		names[i] = synth_assets[idx[i]];
	source_json(c, src, sizeof src);
	struct ds_layout l = { .version = version, .n_assets = n, .assets = names,
			       .interval_ms = 60000, .bars = (size_t)c->days * MIN_PER_DAY,
			       .source_json = src };
	struct ds_writer *w = ds_writer_begin(dir, &l, e);
	if (!w)
		return e->code;
	enum ds_err rc = write_all(w, c, idx, n, e);
	if (rc != DS_OK) {
		ds_writer_abort(w);
		return rc;
	}
	return ds_writer_commit(w, hash, e);
}
