-- 019_paper: paper trading of the promoted default of a market-data window
-- (docs/paper-trading.md; evaluator/runner/paper_job.c).
--
-- paper_accounts: one per promotion of a default on a window label
-- (default_promotions.dataset_version = the label, e.g. binance-1m-60d),
-- created by POST /defaults/promote. It starts flat at the last bar the
-- label held at promotion (start_ts) and is advanced one bar at a time by
-- the paper job; its engine state (equity, held position, the decision
-- pending for the next bar, last price, fees, turnover, exposure) is the
-- engine_state of evaluator/engine.h, written in the transaction that
-- writes the bars it covers, so a restart resumes from the last written
-- bar: never a lost or a doubled one. A newer promotion of the label
-- retires the older account (state 'retired'); a gap in the data pauses it
-- (state 'paused', pause_reason). backtest: the whole-series backtest over
-- the same forward bars (little-endian float64, one per point), rewritten
-- at every step: the drift next to the paper curve.
CREATE TABLE IF NOT EXISTS paper_accounts (
  id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  promotion_id        BIGINT UNSIGNED NOT NULL,
  label               VARCHAR(64)     NOT NULL,
  strategy_version_id BIGINT UNSIGNED NOT NULL,
  run_id              CHAR(36)        NOT NULL,       -- the qualifying run: params, asset, engine
  kind                ENUM('simulate','positions') NOT NULL,
  asset               VARCHAR(64)     NOT NULL,
  fee_bps             DOUBLE          NOT NULL,
  max_leverage        DOUBLE          NOT NULL,
  state               ENUM('active','paused','retired') NOT NULL DEFAULT 'active',
  pause_reason        TEXT            NULL,
  start_ts            BIGINT          NOT NULL,       -- ms open time of the start bar (equity 1, flat)
  last_ts             BIGINT          NOT NULL,       -- the last bar advanced over (start_ts at first)
  n_bars              BIGINT UNSIGNED NOT NULL DEFAULT 0,  -- forward bars advanced
  decided             TINYINT(1)      NOT NULL DEFAULT 0,  -- pending holds the decision at last_ts
  equity              DOUBLE          NOT NULL DEFAULT 1,
  held                DOUBLE          NOT NULL DEFAULT 0,
  pending             DOUBLE          NOT NULL DEFAULT 0,  -- positions: w decided at last_ts
  last_price          DOUBLE          NULL,
  turnover            DOUBLE          NOT NULL DEFAULT 0,
  fees                DOUBLE          NOT NULL DEFAULT 0,
  exposure            DOUBLE          NOT NULL DEFAULT 0,
  wiped               TINYINT(1)      NOT NULL DEFAULT 0,
  sim_last            DOUBLE          NULL,           -- simulate: the strategy's E at last_ts
  sim_growth          DOUBLE          NULL,           -- simulate: its published growth into last_ts
  violations          INT UNSIGNED    NOT NULL DEFAULT 0,  -- simulate: published points the re-run changed
  first_violation_ts  BIGINT          NULL,
  backtest            LONGBLOB        NULL,
  backtest_start_ts   BIGINT          NULL,           -- the bar of backtest[0] (start_ts unless the window moved past it)
  backtest_dataset    VARCHAR(64)     NULL,           -- the version the backtest ran on
  created_at          DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at          DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_paper_promotion (promotion_id),
  KEY ix_paper_label (label, state, id),
  CONSTRAINT fk_paper_promotion FOREIGN KEY (promotion_id) REFERENCES default_promotions (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per forward bar: the equity after the bar, the position held
-- over it, the decision taken at its close, its price.
CREATE TABLE IF NOT EXISTS paper_points (
  account_id BIGINT UNSIGNED NOT NULL,
  ts         BIGINT          NOT NULL,
  equity     DOUBLE          NOT NULL,
  held       DOUBLE          NULL,
  decided    DOUBLE          NULL,
  price      DOUBLE          NOT NULL,
  PRIMARY KEY (account_id, ts),
  CONSTRAINT fk_paper_points_account FOREIGN KEY (account_id) REFERENCES paper_accounts (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A fill: the position changed at the open of bar ts (positions kind).
CREATE TABLE IF NOT EXISTS paper_fills (
  account_id BIGINT UNSIGNED NOT NULL,
  ts         BIGINT          NOT NULL,
  from_pos   DOUBLE          NOT NULL,
  to_pos     DOUBLE          NOT NULL,
  price      DOUBLE          NOT NULL,
  fee        DOUBLE          NOT NULL,   -- in units of the initial capital
  PRIMARY KEY (account_id, ts),
  CONSTRAINT fk_paper_fills_account FOREIGN KEY (account_id) REFERENCES paper_accounts (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- paper_steps: the paper job kind of the runner's one queue (the queue
-- columns of jobq.h). Queued when a prefetch moves a label that has an
-- active account, and by a promotion; an INSERT is skipped while a step of
-- the label is queued (it will see the newest version). Two steps of one
-- label are harmless: the write of a step is guarded by the account's
-- n_bars, and a step that finds the account advanced by another writes
-- nothing and queues a new step. (No UNIQUE key on queued steps: the
-- reaper's move back to 'queued' must never collide.)
CREATE TABLE IF NOT EXISTS paper_steps (
  id               CHAR(36)        NOT NULL PRIMARY KEY,
  seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  label            VARCHAR(64)     NOT NULL,
  status           ENUM('queued','running','completed','failed','cancelled') NOT NULL DEFAULT 'queued',
  cancel_requested TINYINT(1)      NOT NULL DEFAULT 0,
  lease_owner      VARCHAR(128)    NULL,
  lease_expires_at DATETIME(6)     NULL,
  attempts         INT UNSIGNED    NOT NULL DEFAULT 0,
  max_attempts     INT UNSIGNED    NOT NULL DEFAULT 3,
  error_code       VARCHAR(32)     NULL,
  error_message    TEXT            NULL,
  account_id       BIGINT UNSIGNED NULL,
  bars_advanced    INT UNSIGNED    NULL,
  queued_at        DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at       DATETIME(6)     NULL,
  completed_at     DATETIME(6)     NULL,
  runtime_s        DOUBLE          NULL,
  UNIQUE KEY uq_paper_steps_seq (seq),
  KEY ix_paper_steps_label (label, status),
  KEY ix_paper_steps_queue (status, seq),
  KEY ix_paper_steps_lease (status, lease_expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
