/*
 * synth: the embedded default market, a deterministic synthetic crypto
 * market of the 29 MANTIS breakout assets at 1-minute bars.
 *
 * Model (docs/datasets.md has every parameter): a common market factor and
 * one idiosyncratic component per asset, each with GARCH(1,1) volatility
 * clustering and Student-t(4) shocks, an intraday volatility profile, jumps,
 * per-asset betas, volume tied to absolute returns, OHLC from an intra-bar
 * Brownian-bridge path, and one planted weak effect: ETH's per-minute drift
 * is SYNTH_ETH_KAPPA / 60 times its own return over the previous 60 minutes
 * (weak 1-hour momentum). No other asset has any predictable component.
 *
 * Determinism: xoshiro256** streams seeded through splitmix64, one per asset
 * (keyed by the asset's index in the breakout list, so a subset generates
 * the same columns as the full market) plus one for the market factor; the
 * arithmetic uses only +, -, *, / and sqrt (exactly rounded in IEEE 754), no
 * libm transcendental functions, and FMA contraction is off in synth.c, so
 * the bytes are identical on every conforming IEEE 754 machine.
 */
#ifndef AGENTTEST_EVALUATOR_SYNTH_H
#define AGENTTEST_EVALUATOR_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "evaluator/dataset.h"

#define SYNTH_N_ASSETS   29
#define SYNTH_MAX_DAYS   1000
#define SYNTH_MODEL      1          /* model revision, recorded in the manifest */
#define SYNTH_ETH_KAPPA  0.25       /* planted momentum loading (see above) */
#define SYNTH_MOM_WINDOW 60         /* minutes of past return the drift uses */

/* The MANTIS BREAKOUT_ASSETS in their canonical order. */
extern const char *const synth_assets[SYNTH_N_ASSETS];

struct synth_config {
	uint64_t           seed;
	unsigned           days;       /* 1..SYNTH_MAX_DAYS */
	int64_t            start_ms;   /* first bar's open time, minute aligned */
	size_t             n_assets;   /* 0: all 29 */
	const char *const *assets;     /* names from synth_assets, any order */
	double             kappa;      /* ETH momentum loading; use SYNTH_ETH_KAPPA */
};

/* Index of `name` in synth_assets, or -1. */
int synth_asset_index(const char *name);

/*
 * Generate the bars of one asset (index into synth_assets) for config c:
 * T = days * 1440 values into each of the five arrays. `market` is the
 * market factor from synth_market() for the same config.
 */
void synth_asset(const struct synth_config *c, int asset, const double *market,
		 double *open, double *high, double *low, double *close, double *volume);
/* The market factor's per-minute returns (T values) for config c. */
void synth_market(const struct synth_config *c, double *market);

/*
 * Generate and write the dataset into dir with version label `version`
 * (ds_writer: atomic). Fills hash (65 bytes) with the dataset hash.
 */
enum ds_err synth_write(const char *dir, const char *version, const struct synth_config *c,
			char hash[65], struct ds_error *e);

#endif
