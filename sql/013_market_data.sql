-- 013_market_data: the secret store of common/secret_store.h.
--
-- secrets: third-party API keys (kind 'anthropic' or 'coinglass') sealed
-- with XChaCha20-Poly1305 under a key derived from the server secret; the
-- owner and kind are bound as associated data, so a row copied to another
-- owner or kind does not open. owner_id 0 is the admin-set default; other
-- owners are users.id (no foreign key, because 0 is not a user).
-- Re-runnable: every statement is IF NOT EXISTS.

CREATE TABLE IF NOT EXISTS secrets (
  owner_id   BIGINT UNSIGNED NOT NULL,
  kind       VARCHAR(16) CHARACTER SET ascii NOT NULL,
  nonce      BINARY(24) NOT NULL,
  ciphertext VARBINARY(4112) NOT NULL,
  created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (owner_id, kind)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- data_prefetches: market-data prefetches, a job kind of the runner's one
-- queue (evaluator/runner/prefetch_job.c; the queue columns of jobq.h),
-- queued by POST /api/data-cache/prefetch. At most one prefetch per window
-- is queued or running at a time: active_window is the window while the
-- row is queued or running and NULL afterwards, and its UNIQUE key makes a
-- second INSERT for the same window fail in whichever pool worker tries
-- (409), with no in-memory lock. Progress (assets done, candles fetched,
-- the current step) is written by the runner as it goes; the result is the
-- dataset version it stored and registered.
CREATE TABLE IF NOT EXISTS data_prefetches (
  id               CHAR(36)        NOT NULL PRIMARY KEY,
  seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  owner_id         BIGINT UNSIGNED NOT NULL,
  window_label     VARCHAR(64)     NOT NULL,        -- binance-1m-<days_back>d
  days_back        INT UNSIGNED    NOT NULL,
  bar_interval     VARCHAR(8)      NOT NULL DEFAULT '1m',
  assets           TEXT            NOT NULL,        -- JSON array of asset names
  status           ENUM('queued','running','completed','failed','cancelled') NOT NULL DEFAULT 'queued',
  cancel_requested TINYINT(1)      NOT NULL DEFAULT 0,
  active_window    VARCHAR(64) AS (IF(status IN ('queued','running'), window_label, NULL)) PERSISTENT,
  lease_owner      VARCHAR(128)    NULL,
  lease_expires_at DATETIME(6)     NULL,
  attempts         INT UNSIGNED    NOT NULL DEFAULT 0,
  max_attempts     INT UNSIGNED    NOT NULL DEFAULT 3,
  error_code       VARCHAR(32)     NULL,
  error_message    TEXT            NULL,
  assets_done      INT UNSIGNED    NOT NULL DEFAULT 0,
  total_assets     INT UNSIGNED    NOT NULL DEFAULT 0,
  rows_fetched     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  step             VARCHAR(160)    NULL,
  dataset_id       BIGINT UNSIGNED NULL,
  dataset_version  VARCHAR(64)     NULL,
  dataset_hash     CHAR(64)        NULL,
  queued_at        DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at       DATETIME(6)     NULL,
  completed_at     DATETIME(6)     NULL,
  runtime_s        DOUBLE          NULL,
  UNIQUE KEY uq_data_prefetches_seq (seq),
  UNIQUE KEY uq_data_prefetches_active (active_window),
  KEY ix_data_prefetches_queue (status, seq),
  KEY ix_data_prefetches_lease (status, lease_expires_at),
  KEY ix_data_prefetches_window (window_label, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- dataset_labels: the moving label of a market-data window
-- (binance-1m-<D>d) -> its newest registered version, moved by the prefetch
-- job in its finishing transaction. POST /runs and POST /api/evaluations
-- accept the label as dataset_version and pin the version it points at
-- (its own label and hash are stored on the run), so a later prefetch never
-- changes what a run scored.
CREATE TABLE IF NOT EXISTS dataset_labels (
  label      VARCHAR(64)     NOT NULL PRIMARY KEY,
  dataset_id BIGINT UNSIGNED NOT NULL,
  updated_at DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  CONSTRAINT fk_dataset_labels_dataset FOREIGN KEY (dataset_id) REFERENCES datasets (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
