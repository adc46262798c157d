-- 002: strategy registry, dataset registry, the run queue, metrics,
-- leaderboard index and default promotions (issue 5).
--
-- The `runs` table IS the work queue: the API inserts rows with status
-- 'queued', runners claim them with SELECT ... FOR UPDATE SKIP LOCKED in a
-- short transaction, hold a lease (lease_owner, lease_expires_at) that they
-- renew while the sandbox runs, and write the outcome with one UPDATE guarded
-- by (lease_owner, attempts) so that a runner that lost its lease can never
-- write. See docs/runner.md.

-- Registered dataset versions. A label is immutable: the UNIQUE key on
-- `version` plus the registration code (same label, other hash -> refused)
-- bind a label to exactly one content hash.
CREATE TABLE IF NOT EXISTS datasets (
  id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  version       VARCHAR(64)     NOT NULL,
  dataset_hash  CHAR(64)        NOT NULL,
  path          VARCHAR(1024)   NOT NULL,
  assets        TEXT            NOT NULL,          -- JSON array of asset names, manifest order
  interval_ms   BIGINT          NOT NULL,
  bars          BIGINT UNSIGNED NOT NULL,
  first_ts      BIGINT          NOT NULL,
  last_ts       BIGINT          NOT NULL,
  created_at    DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_datasets_version (version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A strategy is (owner, name); new code under the same name is a new version.
CREATE TABLE IF NOT EXISTS strategies (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  owner_id    BIGINT UNSIGNED NOT NULL,
  name        VARCHAR(200)    NOT NULL,
  created_at  DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_strategies_owner_name (owner_id, name),
  CONSTRAINT fk_strategies_owner FOREIGN KEY (owner_id) REFERENCES users (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per distinct code of a strategy. The code itself lives here (the
-- file under STRATEGIES_DIR is a content-addressed copy for operators).
CREATE TABLE IF NOT EXISTS strategy_versions (
  id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  strategy_id    BIGINT UNSIGNED NOT NULL,
  code_hash      CHAR(64)        NOT NULL,
  kind           ENUM('simulate','positions','signal') NOT NULL,
  code           MEDIUMTEXT      NOT NULL,
  strategy_path  VARCHAR(1024)   NULL,             -- content-addressed copy, or the trusted file
  source         ENUM('submit','path') NOT NULL DEFAULT 'submit',
  params         TEXT            NOT NULL,         -- canonical JSON of the params given at submission
  created_at     DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_versions_strategy_hash (strategy_id, code_hash),
  KEY ix_versions_hash (code_hash),
  CONSTRAINT fk_versions_strategy FOREIGN KEY (strategy_id) REFERENCES strategies (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The run registry and the queue. `seq` orders the queue (FIFO) and is the
-- cursor of GET /runs; `id` is the public UUID.
CREATE TABLE IF NOT EXISTS runs (
  id                  CHAR(36)        NOT NULL PRIMARY KEY,
  seq                 BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  owner_id            BIGINT UNSIGNED NOT NULL,
  strategy_version_id BIGINT UNSIGNED NOT NULL,
  dataset_id          BIGINT UNSIGNED NOT NULL,
  dataset_version     VARCHAR(64)     NOT NULL,
  dataset_hash        CHAR(64)        NOT NULL,      -- pinned at queue time
  code_hash           CHAR(64)        NOT NULL,      -- pinned at queue time
  config_hash         CHAR(64)        NOT NULL,      -- pinned at queue time
  params              TEXT            NOT NULL,      -- canonical JSON
  asset               VARCHAR(64)     NULL,
  audit               TINYINT(1)      NOT NULL DEFAULT 1,   -- causality audit requested
  verify_of           CHAR(36)        NULL,          -- set on a verification re-execution
  status              ENUM('queued','running','completed','failed','cancelled') NOT NULL DEFAULT 'queued',
  cancel_requested    TINYINT(1)      NOT NULL DEFAULT 0,
  lease_owner         VARCHAR(128)    NULL,
  lease_expires_at    DATETIME(6)     NULL,
  attempts            INT UNSIGNED    NOT NULL DEFAULT 0,
  max_attempts        INT UNSIGNED    NOT NULL DEFAULT 3,
  error_code          VARCHAR(32)     NULL,
  error_message       TEXT            NULL,
  error_log_tail      TEXT            NULL,
  audit_result        TEXT            NULL,          -- JSON object, NULL until known
  audit_passed        TINYINT(1)      NULL,
  resources           TEXT            NULL,          -- JSON: verdict, cpu_s, wall_s, peak memory, limits
  artifacts_dir       VARCHAR(1024)   NULL,
  verification        TEXT            NULL,          -- JSON: result of the last POST /runs/{id}/verify
  queued_at           DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at          DATETIME(6)     NULL,
  completed_at        DATETIME(6)     NULL,
  runtime_s           DOUBLE          NULL,
  UNIQUE KEY uq_runs_seq (seq),
  KEY ix_runs_queue (status, seq),
  KEY ix_runs_lease (status, lease_expires_at),
  KEY ix_runs_owner (owner_id, status, seq),
  KEY ix_runs_version (strategy_version_id, seq),
  KEY ix_runs_dataset (dataset_version, seq),
  CONSTRAINT fk_runs_version FOREIGN KEY (strategy_version_id) REFERENCES strategy_versions (id),
  CONSTRAINT fk_runs_dataset FOREIGN KEY (dataset_id) REFERENCES datasets (id),
  CONSTRAINT fk_runs_owner FOREIGN KEY (owner_id) REFERENCES users (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Metrics of a completed run, computed by the trusted evaluator. Only finite
-- values are ever written (a non-finite metric fails the run with
-- non_finite_metric). Columns are denormalised from `runs` so that the
-- leaderboard reads one index.
CREATE TABLE IF NOT EXISTS run_metrics (
  run_id              CHAR(36)        NOT NULL PRIMARY KEY,
  run_seq             BIGINT UNSIGNED NOT NULL,
  strategy_version_id BIGINT UNSIGNED NOT NULL,
  dataset_version     VARCHAR(64)     NOT NULL,
  total_return        DOUBLE          NOT NULL,
  cagr                DOUBLE          NOT NULL,
  max_drawdown        DOUBLE          NOT NULL,
  volatility          DOUBLE          NOT NULL,
  sharpe              DOUBLE          NOT NULL,
  liquidation_events  INT             NOT NULL,
  capital_efficiency  DOUBLE          NOT NULL,
  score               DOUBLE          NOT NULL,
  runtime_s           DOUBLE          NOT NULL,
  extra               TEXT            NULL,          -- JSON: every further metric of the evaluator
  eligible            TINYINT(1)      NOT NULL,      -- completed, finite, audit passed, not a verification
  completed_at        DATETIME(6)     NOT NULL,
  KEY ix_metrics_board (dataset_version, eligible, score, completed_at, run_seq),
  KEY ix_metrics_version (strategy_version_id, dataset_version, score),
  CONSTRAINT fk_metrics_run FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The best eligible run per (dataset version, strategy version), maintained
-- by the runner in the same transaction that completes a run, so the default
-- leaderboard is one ordered index range scan.
CREATE TABLE IF NOT EXISTS leaderboard_best (
  dataset_version     VARCHAR(64)     NOT NULL,
  strategy_version_id BIGINT UNSIGNED NOT NULL,
  run_id              CHAR(36)        NOT NULL,
  run_seq             BIGINT UNSIGNED NOT NULL,
  score               DOUBLE          NOT NULL,
  completed_at        DATETIME(6)     NOT NULL,
  PRIMARY KEY (dataset_version, strategy_version_id),
  KEY ix_best_order (dataset_version, score, completed_at, run_seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Equity curve of a completed run: T little-endian float64 values.
CREATE TABLE IF NOT EXISTS run_equity (
  run_id  CHAR(36)     NOT NULL PRIMARY KEY,
  n       INT UNSIGNED NOT NULL,
  data    LONGBLOB     NOT NULL,
  CONSTRAINT fk_equity_run FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Promotion history; the current default of a dataset version is its latest row.
CREATE TABLE IF NOT EXISTS default_promotions (
  id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  dataset_version     VARCHAR(64)     NOT NULL,
  strategy_version_id BIGINT UNSIGNED NOT NULL,
  run_id              CHAR(36)        NOT NULL,      -- the qualifying run
  promoted_by         BIGINT UNSIGNED NOT NULL,
  promoted_at         DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_promotions_dataset (dataset_version, id),
  CONSTRAINT fk_promotions_version FOREIGN KEY (strategy_version_id) REFERENCES strategy_versions (id),
  CONSTRAINT fk_promotions_user FOREIGN KEY (promoted_by) REFERENCES users (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
