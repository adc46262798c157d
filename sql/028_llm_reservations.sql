-- 028: reservations against the owner's LLM budget of the UTC day (issue 16,
-- docs/agents.md "How budgets are counted").
--
-- Before a request goes to the model API, the egress proxy (on whatever
-- runner host) and the API's ask reserve an estimate of what it can cost
-- (common/llm_reserve.c): one row here, written in a short transaction that
-- holds the owner's llm_owner_day row locked and refuses when the day's use
-- plus every live reservation plus this estimate would pass a budget. When
-- the answer's usage is known the reservation is settled: its row deleted
-- and the real usage added to llm_owner_day, in one transaction. A
-- reservation whose proxy died is never settled: it stops counting at
-- expires_at, and the next reservation of that owner deletes it (a sweep).
-- No foreign key to agents: reserving must never lock the agent's row,
-- which the iteration's finishing transaction updates.
CREATE TABLE IF NOT EXISTS llm_reservations (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  owner_id    BIGINT UNSIGNED NOT NULL,
  day         DATE            NOT NULL,            -- the UTC day it counts against
  agent_id    CHAR(36)        NULL,
  kind        ENUM('turn','ask') NOT NULL DEFAULT 'turn',
  tokens      BIGINT UNSIGNED NOT NULL DEFAULT 0,  -- estimated tokens (all four kinds)
  usd         DOUBLE          NOT NULL DEFAULT 0,  -- estimated cost
  expires_at  DATETIME(6)     NOT NULL,            -- UTC; after it the row counts for nothing
  created_at  DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_llm_reservations_owner_day (owner_id, day, expires_at),
  KEY ix_llm_reservations_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
