/*
 * llm_prices.c: the per-model price table that turns metered tokens into USD,
 * shared by the egress proxy (evaluator/runner/egress/forward.c) and the
 * API's ask (fcgi/handlers/agents_ask.c).
 *
 * Entries match by the longest model-name prefix, so "claude-sonnet-4"
 * prices claude-sonnet-4-5 and claude-sonnet-4-6 alike while
 * "claude-opus-4-5" can differ from older Opus 4 releases. A model no entry
 * matches is refused by the proxy (its cost could not be budgeted).
 * Defaults are Anthropic's list prices (USD per million tokens; a cache
 * write costs 1.25x and a cache read 0.1x the input price); an operator
 * replaces the whole table with AGENTTEST_LLM_PRICES (docs/agents.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "llm_prices.h"
#include "xalloc.h"

static const struct llm_price defaults[] = {
	{ "claude-opus-4-5",   5.0, 25.0,  6.25, 0.50 },
	{ "claude-opus-4-6",   5.0, 25.0,  6.25, 0.50 },
	{ "claude-opus-4",    15.0, 75.0, 18.75, 1.50 },
	{ "claude-sonnet-4",   3.0, 15.0,  3.75, 0.30 },
	{ "claude-3-7-sonnet", 3.0, 15.0,  3.75, 0.30 },
	{ "claude-haiku-4",    1.0,  5.0,  1.25, 0.10 },
	{ "claude-3-5-haiku",  0.8,  4.0,  1.00, 0.08 },
};

void llm_prices_default(struct llm_prices *p)
{
	p->n = sizeof defaults / sizeof defaults[0];
	p->v = xcalloc(p->n, sizeof *p->v);
	memcpy(p->v, defaults, sizeof defaults);
}

/* A price field: a finite number in [0, 10000]. */
static bool price_field(struct json_object *o, const char *k, double *out)
{
	struct json_object *v;
	if (!json_object_object_get_ex(o, k, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return false;
	double x = json_object_get_double(v);
	if (!(x >= 0.0 && x <= 10000.0))
		return false;
	*out = x;
	return true;
}

bool llm_prices_load(struct llm_prices *p, const char *path, struct buf *err)
{
	struct json_object *root = json_object_from_file(path);
	if (!root || !json_object_is_type(root, json_type_object)) {
		buf_printf(err, "%s: not a JSON object", path);
		json_object_put(root);
		return false;
	}
	size_t n = (size_t)json_object_object_length(root), i = 0;
	struct llm_price *v = xcalloc(n ? n : 1, sizeof *v);
	bool ok = n > 0;
	if (!ok)
		buf_printf(err, "%s: empty price table", path);
	json_object_object_foreach(root, key, val) {
		if (!ok)
			break;
		struct llm_price *e = &v[i++];
		if (strlen(key) == 0 || strlen(key) >= sizeof e->prefix || !json_object_is_type(val, json_type_object) ||
		    !price_field(val, "input", &e->input) || !price_field(val, "output", &e->output) ||
		    !price_field(val, "cache_write", &e->cache_write) || !price_field(val, "cache_read", &e->cache_read)) {
			buf_printf(err, "%s: entry \"%.64s\" needs input, output, cache_write, cache_read in 0..10000", path, key);
			ok = false;
			break;
		}
		memcpy(e->prefix, key, strlen(key) + 1);
	}
	json_object_put(root);
	if (!ok) {
		free(v);
		return false;
	}
	llm_prices_free(p);
	p->v = v;
	p->n = n;
	return true;
}

const struct llm_price *llm_price_for(const struct llm_prices *p, const char *model)
{
	const struct llm_price *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; model && i < p->n; i++) {
		size_t k = strlen(p->v[i].prefix);
		if (k > best_len && strncmp(model, p->v[i].prefix, k) == 0) {
			best = &p->v[i];
			best_len = k;
		}
	}
	return best;
}

double llm_price_cost(const struct llm_price *pr, int64_t input, int64_t output, int64_t cache_write, int64_t cache_read)
{
	return ((double)input * pr->input + (double)output * pr->output + (double)cache_write * pr->cache_write +
		(double)cache_read * pr->cache_read) / 1e6;
}

void llm_prices_free(struct llm_prices *p)
{
	free(p->v);
	p->v = NULL;
	p->n = 0;
}
