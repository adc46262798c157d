/*
 * ch_table: the challenge table (the original's CHALLENGES list), lookup,
 * names of types and modes, error strings and the catalogue object served as
 * GET /api/challenges.
 */
#include <math.h>
#include <string.h>

#include "xalloc.h"

#include "evaluator/challenges/challenges.h"

/* Column order of MULTI-BREAKOUT and XSEC-RANK embeddings. */
static const char *const ch_breakout_assets[] = {
	"BTC", "ETH", "XRP", "SOL", "TRX", "DOGE", "ADA", "BCH", "XMR", "LINK",
	"XLM", "ZEC", "SUI", "LTC", "AVAX", "HBAR", "SHIB", "TON", "CRO", "DOT",
	"UNI", "MNT", "TAO", "AAVE", "PEPE", "NEAR", "ICP", "ETC", "ONDO",
};
/* Column order of FUNDING-XSEC embeddings. */
static const char *const ch_funding_assets[] = {
	"BTC", "ETH", "SOL", "XRP", "DOGE", "ADA", "AVAX", "LINK", "DOT", "SUI",
	"NEAR", "AAVE", "UNI", "LTC", "HBAR", "PEPE", "TRX", "SHIB", "TAO", "ONDO",
};
static const char *const ch_eth[] = { "ETH" };
static const char *const ch_btc[] = { "BTC" };

#define NB (sizeof ch_breakout_assets / sizeof ch_breakout_assets[0])
#define NF (sizeof ch_funding_assets / sizeof ch_funding_assets[0])

static const struct ch_def ch_table[] = {
	{ "ETH-1H-BINARY", CH_BINARY, "ETH", ch_eth, 1, 2, 60, 1.0, 0, 0, 25.0, 1.0, 0, NULL,
	  "ETH up or down over the next hour",
	  "[p_up, p_down], ~sum 1; scored: ROC-AUC of p_up vs close[t+60] > close[t]" },
	{ "ETH-HITFIRST-100M", CH_HITFIRST, "ETH", ch_eth, 1, 3, 100, 2.5, 7200, 0, 25.0, 1.0, 0, NULL,
	  "ETH: which 1-sigma barrier is touched first within 100 minutes",
	  "[p_up_first, p_down_first, p_neither]; scored: 3-class log loss, up/down AUC" },
	{ "ETH-LBFGS", CH_LBFGS, "ETH", ch_eth, 1, 17, 60, 3.5, 3600, 0, 25.0, 1.0, 0, NULL,
	  "ETH 1-hour return bucket in units of its volatility",
	  "[bucket_0..4, qpath_0..11]: 5 bucket probabilities (z <= -2, (-2,-1), [-1,1], (1,2), >= 2) + 12 q-path probabilities; scored: balanced accuracy of the bucket argmax" },
	{ "BTC-LBFGS-6H", CH_LBFGS, "BTC", ch_btc, 1, 17, 360, 2.875, 3600, 0, 25.0, 1.0, 0, NULL,
	  "BTC 6-hour return bucket in units of its volatility",
	  "[bucket_0..4, qpath_0..11]: 5 bucket probabilities + 12 q-path probabilities; scored: balanced accuracy of the bucket argmax" },
	{ "MULTI-BREAKOUT", CH_BREAKOUT, "BTC", ch_breakout_assets, NB, 2 * NB, 0, 5.0, 0, 5760, 25.0, 1.0, 43200, NULL,
	  "29 assets: does a 4-day range breakout continue or reverse",
	  "[asset_0_cont, asset_0_rev, asset_1_cont, ...] in MULTI-BREAKOUT asset order; scored: ROC-AUC of the continuation probability at the trigger bar" },
	{ "XSEC-RANK", CH_XSEC_RANK, "BTC", ch_breakout_assets, NB, NB, 240, 3.0, 0, 0, 25.0, 1.0, 0, NULL,
	  "29 assets: rank the 4-hour returns across assets",
	  "[asset_0_score, ...] in XSEC-RANK asset order, higher = outperform; scored: Spearman rank correlation with the 4-hour returns" },
	{ "FUNDING-XSEC", CH_FUNDING_XSEC, "BTC", ch_funding_assets, NF, NF, 480, 4.0, 0, 0, 25.0, 1.0, 0, "funding_1h",
	  "20 assets: rank the 8-hour change of the funding rate",
	  "[asset_0_score, ...] in FUNDING-XSEC asset order, higher = funding change above median; scored: Spearman rank correlation with the 8-hour funding change" },
};
#define CH_N (sizeof ch_table / sizeof ch_table[0])

/* Per-type metadata of the original's UI (primary metric and its direction). */
static const struct {
	const char *primary, *all, *direction, *label;
	double baseline;
} ch_meta[CH_TYPE__MAX] = {
	[CH_BINARY]       = { "mean_auc", "mean_auc", "higher", "AUC", 0.5 },
	[CH_HITFIRST]     = { "direct_log_loss", "direct_log_loss,up_auc,dn_auc", "lower", "Log Loss", 0.0 },
	[CH_LBFGS]        = { "mean_balanced_accuracy", "mean_balanced_accuracy,mean_lift", "higher", "Bal Acc", 0.2 },
	[CH_BREAKOUT]     = { "mean_auc", "mean_auc", "higher", "AUC", 0.5 },
	[CH_XSEC_RANK]    = { "mean_spearman", "mean_spearman", "higher", "Spearman", 0.0 },
	[CH_FUNDING_XSEC] = { "mean_spearman", "mean_spearman", "higher", "Spearman", 0.0 },
};

static const char *const ch_type_names[CH_TYPE__MAX] = {
	"binary", "hitfirst", "lbfgs", "breakout", "xsec_rank", "funding_xsec",
};

/* Number of table rows. */
size_t ch_count(void)
{
	return CH_N;
}

/* Row i or NULL. */
const struct ch_def *ch_at(size_t i)
{
	return i < CH_N ? &ch_table[i] : NULL;
}

/* Row named `name` or NULL. */
const struct ch_def *ch_lookup(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < CH_N; i++)
		if (strcmp(ch_table[i].name, name) == 0)
			return &ch_table[i];
	return NULL;
}

/* Type name as the original spells it. */
const char *ch_type_name(enum ch_type t)
{
	return (unsigned)t < CH_TYPE__MAX ? ch_type_names[t] : "unknown";
}

/* Mode name. */
const char *ch_mode_name(enum ch_mode m)
{
	return m == CH_MODE_MANTIS ? "mantis" : "strict";
}

/* Parse "strict"/"mantis"; -1 otherwise. */
int ch_mode_parse(const char *s)
{
	if (s == NULL)
		return -1;
	if (strcmp(s, "strict") == 0)
		return CH_MODE_STRICT;
	if (strcmp(s, "mantis") == 0)
		return CH_MODE_MANTIS;
	return -1;
}

/* Human text for an error class. */
const char *ch_strerror(enum ch_err e)
{
	switch (e) {
	case CH_OK: return "ok";
	case CH_ERR_INPUT: return "invalid scoring input";
	case CH_ERR_EVAL: return "evaluation refused";
	case CH_ERR_PREDICTION: return "invalid predictions";
	default: return "unknown error";
	}
}

/* Machine code of an error class (docs/development.md codes). */
const char *ch_errcode(enum ch_err e)
{
	switch (e) {
	case CH_OK: return "ok";
	case CH_ERR_INPUT: return "bad_request";
	case CH_ERR_EVAL: return "bad_request";
	case CH_ERR_PREDICTION: return "bad_output";
	default: return "internal";
	}
}

/* One catalogue entry. */
static json_object *ch_catalog_entry(const struct ch_def *d)
{
	json_object *o = json_object_new_object();
	json_object *mi = json_object_new_object();
	json_object *all = json_object_new_array();
	json_object *assets = json_object_new_array();
	const char *p = ch_meta[d->type].all;

	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		json_object_array_add(all, json_object_new_string_len(p, (int)n));
		p += n;
		if (*p == ',')
			p++;
	}
	for (size_t i = 0; i < d->n_assets; i++)
		json_object_array_add(assets, json_object_new_string(d->assets[i]));
	json_object_object_add(o, "type", json_object_new_string(ch_type_name(d->type)));
	json_object_object_add(o, "short", json_object_new_string(d->short_desc));
	json_object_object_add(o, "desc", json_object_new_string(d->desc));
	json_object_object_add(o, "asset", json_object_new_string(d->primary_asset));
	json_object_object_add(o, "metric", json_object_new_string(ch_meta[d->type].primary));
	json_object_object_add(mi, "primary", json_object_new_string(ch_meta[d->type].primary));
	json_object_object_add(mi, "all", all);
	json_object_object_add(mi, "direction", json_object_new_string(ch_meta[d->type].direction));
	json_object_object_add(mi, "label", json_object_new_string(ch_meta[d->type].label));
	/* 3-class uniform log loss is ln 3 (the original's UI says 0.693, a bug). */
	json_object_object_add(mi, "baseline", json_object_new_double(
	    d->type == CH_HITFIRST ? log(3.0) : ch_meta[d->type].baseline));
	json_object_object_add(o, "metric_info", mi);
	json_object_object_add(o, "embedding_dim", json_object_new_int64((int64_t)d->emb_dim));
	json_object_object_add(o, "horizon", json_object_new_int64((int64_t)d->horizon));
	json_object_object_add(o, "weight", json_object_new_double(d->weight));
	json_object_object_add(o, "assets", assets);
	return o;
}

/* Catalogue object; field-dependent challenges only when has_field says so. */
json_object *ch_catalog(int (*has_field)(const char *field, void *ctx), void *ctx)
{
	json_object *o = json_object_new_object();

	for (size_t i = 0; i < CH_N; i++) {
		const struct ch_def *d = &ch_table[i];
		if (d->field != NULL && (has_field == NULL || !has_field(d->field, ctx)))
			continue;
		json_object_object_add(o, d->name, ch_catalog_entry(d));
	}
	return o;
}

struct ch_fieldset {
	const char *const *v;
	size_t n;
};

/* has_field over a list of names. */
static int ch_in_fieldset(const char *field, void *ctx)
{
	const struct ch_fieldset *fs = ctx;
	for (size_t i = 0; i < fs->n; i++)
		if (fs->v[i] != NULL && strcmp(fs->v[i], field) == 0)
			return 1;
	return 0;
}

/* Catalogue text for ctypes callers. */
char *ch_catalog_json(const char *const *fields, size_t n)
{
	struct ch_fieldset fs = { fields, fields != NULL ? n : 0 };
	json_object *o = ch_catalog(ch_in_fieldset, &fs);
	char *s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}
