-- 025 (issue 17): the trades of a completed `positions` run, written by the
-- runner (trusted side, evaluator/fills.h) in the same finishing
-- transaction as its metrics and equity, so exactly once with the result.
--
-- fills:     n_fills records of 64 bytes (struct fill: int64 bar, int64
--            ts_ms, then float64 quantity, price, fee, position, units,
--            equity; little-endian), in bar order. At most FILLS_STORE_MAX
--            (65,536) are kept: fills_total says how many the run made, so
--            a run that traded more than that says it was truncated.
-- positions: n_bars little-endian float64, the exposure held after each
--            bar's close (the engine's clamped target).
-- Bounded by the run: 8 bytes per bar plus 64 per fill (a 10,080-bar run
-- trading every bar: 0.7 MB). simulate runs have no row (they return only
-- their equity). Re-runnable (IF NOT EXISTS), like every migration.
CREATE TABLE IF NOT EXISTS run_trades (
  run_id      CHAR(36)     NOT NULL PRIMARY KEY,
  n_bars      INT UNSIGNED NOT NULL,
  n_fills     INT UNSIGNED NOT NULL,
  fills_total INT UNSIGNED NOT NULL,
  fills       LONGBLOB     NOT NULL,
  positions   LONGBLOB     NOT NULL,
  CONSTRAINT fk_trades_run FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
