/*
 * llm_upstream.h: the rule for AGENTTEST_ANTHROPIC_UPSTREAM, shared by the
 * egress proxy (evaluator/runner/egress/main.c) and the API's ask
 * (fcgi/handlers/agents_ask.c), so both refuse the same URLs.
 */
#ifndef AGENTTEST_LLM_UPSTREAM_H
#define AGENTTEST_LLM_UPSTREAM_H

#include <stdbool.h>

#define LLM_UPSTREAM_DEFAULT "https://api.anthropic.com"

/*
 * Whether url may be the model API's upstream: https://<anything>, or
 * plain http only to a loopback address with a port (the tests' stand-in).
 */
bool llm_upstream_ok(const char *url);

#endif
