/*
 * agent_driver.h: the drivers of a research agent (agents.driver, sql/014),
 * shared by the API (which refuses a driver this build cannot run) and the
 * runner (which hands the name to the iteration harness,
 * evaluator/runner/agentloop/drivers/: one Python file per driver).
 *
 * Adding a driver: write evaluator/runner/agentloop/drivers/<name>.py with
 * the interface of drivers/__init__.py (the LLM drivers claude-code and
 * command live in agentloop/llm.py instead), then flip its `available`
 * flag in agent_driver.c.
 */
#ifndef AGENTTEST_AGENT_DRIVER_H
#define AGENTTEST_AGENT_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

struct agent_driver {
	const char *name;       /* the agents.driver ENUM value */
	bool        available;  /* this build can run it */
	const char *missing;    /* when not available: why, for the 400 */
};

/*
 * The LLM drivers' budget defaults when the operator sets none
 * (AGENTTEST_LLM_AGENT_* per agent, lifetime; AGENTTEST_LLM_OWNER_DAY_* per
 * owner and UTC day; docs/configuration.md). Tokens count input, output,
 * cache writes and cache reads. The runner enforces them
 * (evaluator/runner/agent_llm.c), the API shows them (agent detail).
 */
#define AGENT_LLM_DEFAULT_TOKENS             20000000LL
#define AGENT_LLM_DEFAULT_USD                20.0
#define AGENT_LLM_DEFAULT_REQUESTS           5000LL
#define AGENT_LLM_DEFAULT_OWNER_DAY_TOKENS   100000000LL
#define AGENT_LLM_DEFAULT_OWNER_DAY_USD      100.0
#define AGENT_LLM_DEFAULT_OWNER_DAY_REQUESTS 20000LL

/* The driver called name, or NULL when the name is not a driver at all. */
const struct agent_driver *agent_driver_lookup(const char *name);

/* "builtin, claude-code, command": every driver name, for error messages. */
const char *agent_driver_names(void);

#endif
