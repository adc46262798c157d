-- 003: the positions engine configuration pinned on a run, and metrics that
-- are undefined for some strategy kinds.
--
-- `engine` is the canonical JSON {"fee_bps":..,"max_leverage":..} of a
-- positions run (part of its config_hash), NULL for simulate runs.
-- A metric undefined for a run is NULL, never a stand-in constant
-- (evaluator/metrics.h): liquidation_events and capital_efficiency exist for
-- positions strategies only, and any metric may be undefined on degenerate
-- curves. The leaderboard requires a score (eligible runs only).

ALTER TABLE runs ADD COLUMN IF NOT EXISTS engine TEXT NULL AFTER params;
ALTER TABLE run_metrics
  MODIFY COLUMN total_return DOUBLE NULL,
  MODIFY COLUMN cagr DOUBLE NULL,
  MODIFY COLUMN max_drawdown DOUBLE NULL,
  MODIFY COLUMN volatility DOUBLE NULL,
  MODIFY COLUMN sharpe DOUBLE NULL,
  MODIFY COLUMN liquidation_events INT NULL,
  MODIFY COLUMN capital_efficiency DOUBLE NULL,
  MODIFY COLUMN score DOUBLE NULL,
  MODIFY COLUMN runtime_s DOUBLE NULL;
