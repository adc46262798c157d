/*
 * llm_prices.h: USD per million tokens of the Anthropic models, by
 * model-name prefix (llm_prices.c). The egress proxy prices every metered
 * request of an LLM agent with it, the API every ask.
 */
#ifndef AGENTTEST_LLM_PRICES_H
#define AGENTTEST_LLM_PRICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct llm_price {
	char   prefix[64];
	double input, output, cache_write, cache_read; /* USD per 1e6 tokens */
};

struct llm_prices {
	struct llm_price *v;
	size_t n;
};

/* The built-in table (Anthropic's list prices). */
void llm_prices_default(struct llm_prices *p);
/*
 * Load a table from a JSON file {"<model prefix>": {"input": x, "output": y,
 * "cache_write": z, "cache_read": w}, ...}, replacing *p. False with a
 * message in err on any malformed entry (nothing is replaced then).
 */
bool llm_prices_load(struct llm_prices *p, const char *path, struct buf *err);
/* The entry with the longest prefix of model; NULL when none matches. */
const struct llm_price *llm_price_for(const struct llm_prices *p, const char *model);
/* The price of a usage (token counts of the four kinds) under an entry, in USD. */
double llm_price_cost(const struct llm_price *pr, int64_t input, int64_t output, int64_t cache_write,
		      int64_t cache_read);
/* Free the table. */
void llm_prices_free(struct llm_prices *p);

#endif
