-- 015: budgets and usage of LLM agents (issue 16, docs/agents.md "Budgets").
--
-- The database is the authority for what an LLM agent and its owner have
-- spent; the egress proxy's ledger files (evaluator/runner/egress/ledger.c)
-- are only the per-turn cache of one turn's usage. Before a turn the
-- runner's agent kind (evaluator/runner/agent_job.c) reads the agent's
-- totals and the owner's totals of the UTC day from here and hands the
-- proxy what is left; when the turn ends it adds the turn's usage to the
-- agent's totals, to the owner's day and as one row of agent_llm_usage, in
-- the iteration's finishing transaction (on any runner host).
--
-- An agent's budgets: NULL means the operator's default
-- (AGENTTEST_LLM_AGENT_TOKENS, _USD, _REQUESTS; docs/configuration.md).
-- Tokens count all four kinds: input, output, cache writes, cache reads.
ALTER TABLE agents
  ADD COLUMN IF NOT EXISTS budget_tokens      BIGINT UNSIGNED NULL AFTER budget_wall_s,
  ADD COLUMN IF NOT EXISTS budget_usd         DOUBLE          NULL AFTER budget_tokens,
  ADD COLUMN IF NOT EXISTS budget_requests    BIGINT UNSIGNED NULL AFTER budget_usd,
  ADD COLUMN IF NOT EXISTS tokens_cache_write BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER tokens_output,
  ADD COLUMN IF NOT EXISTS tokens_cache_read  BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER tokens_cache_write,
  ADD COLUMN IF NOT EXISTS llm_requests       BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER tokens_cache_read;

-- One row per metered agent turn (an iteration that hit a budget and ran
-- again after a raise has two rows with the same iteration number; `job_id`
-- is the agent_iterations row that ran it). Kind 'ask' (iteration NULL) is
-- reserved for POST .../ask, which is not built yet: only 'turn' rows exist.
CREATE TABLE IF NOT EXISTS agent_llm_usage (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  agent_id    CHAR(36)        NOT NULL,
  owner_id    BIGINT UNSIGNED NOT NULL,
  kind        ENUM('turn','ask') NOT NULL DEFAULT 'turn',
  iteration   INT UNSIGNED    NULL,
  job_id      CHAR(36)        NULL,
  day         DATE            NOT NULL,            -- UTC day it was charged to
  input       BIGINT UNSIGNED NOT NULL DEFAULT 0,
  output      BIGINT UNSIGNED NOT NULL DEFAULT 0,
  cache_write BIGINT UNSIGNED NOT NULL DEFAULT 0,
  cache_read  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  requests    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  refused     BIGINT UNSIGNED NOT NULL DEFAULT 0,  -- requests the proxy refused for a budget
  usd         DOUBLE          NOT NULL DEFAULT 0,
  exhausted   VARCHAR(128)    NULL,                -- the budget that refused a request, if one did
  created_at  DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_agent_llm_usage_agent (agent_id, id),
  CONSTRAINT fk_agent_llm_usage_agent FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The owner's totals per UTC day, over all their agents on every host
-- (AGENTTEST_LLM_OWNER_DAY_*). Rows are added to with INSERT ... ON
-- DUPLICATE KEY UPDATE, so concurrent finishing writes never lose a charge.
CREATE TABLE IF NOT EXISTS llm_owner_day (
  owner_id    BIGINT UNSIGNED NOT NULL,
  day         DATE            NOT NULL,
  input       BIGINT UNSIGNED NOT NULL DEFAULT 0,
  output      BIGINT UNSIGNED NOT NULL DEFAULT 0,
  cache_write BIGINT UNSIGNED NOT NULL DEFAULT 0,
  cache_read  BIGINT UNSIGNED NOT NULL DEFAULT 0,
  requests    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  usd         DOUBLE          NOT NULL DEFAULT 0,
  PRIMARY KEY (owner_id, day)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
