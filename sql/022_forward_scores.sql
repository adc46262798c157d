-- 022_forward_scores (issue 18, docs/forward-scores.md): scores on the bars
-- that arrived after an evaluation or an agent iteration was submitted.
--
-- datasets.window_label: the market-data window (binance-1m-<D>d) a version
-- belongs to, set by the prefetch job when it registers the version; the
-- versions a window's label ever pointed at are its history, and the
-- forward scorer finds the evaluations and iterations to score by it.
-- Existing label targets are back-filled here.
ALTER TABLE datasets ADD COLUMN IF NOT EXISTS window_label VARCHAR(64) NULL AFTER version;
ALTER TABLE datasets ADD INDEX IF NOT EXISTS ix_datasets_window (window_label, last_ts);
UPDATE datasets d JOIN dataset_labels l ON l.dataset_id = d.id SET d.window_label = l.label
 WHERE d.window_label IS NULL;

-- agents.best_by: how the agent's best iteration is judged. 'holdout' (the
-- default, the original's rule: the sealed holdout score) or 'forward' (the
-- iteration's forward score once it has one; iterations without one are
-- judged on nothing, so the best stays NULL until a forward score exists).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS best_by ENUM('holdout','forward') NOT NULL DEFAULT 'holdout'
 AFTER best_score;

-- forward_jobs: a job kind of the runner's one queue (the queue columns of
-- evaluator/runner/jobq.h), queued by the prefetch job's finishing
-- transaction each time it moves a window's label to a new version. One
-- job scores every evaluation and agent iteration of the window that has
-- no final forward score yet, on the newest version at the time it runs:
-- while one is queued no second one is added for the window (the queued
-- one will see the newer version anyway), so a burst of new data costs one
-- batch, not one per version.
CREATE TABLE IF NOT EXISTS forward_jobs (
  id               CHAR(36)        NOT NULL PRIMARY KEY,
  seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  window_label     VARCHAR(64)     NOT NULL,
  status           ENUM('queued','running','completed','failed','cancelled') NOT NULL DEFAULT 'queued',
  cancel_requested TINYINT(1)      NOT NULL DEFAULT 0,
  lease_owner      VARCHAR(128)    NULL,
  lease_expires_at DATETIME(6)     NULL,
  attempts         INT UNSIGNED    NOT NULL DEFAULT 0,
  max_attempts     INT UNSIGNED    NOT NULL DEFAULT 3,
  error_code       VARCHAR(32)     NULL,
  error_message    TEXT            NULL,
  dataset_id       BIGINT UNSIGNED NULL,            -- the version scored on
  subjects         INT UNSIGNED    NOT NULL DEFAULT 0, -- evaluations + iterations considered
  scored           INT UNSIGNED    NOT NULL DEFAULT 0, -- forward scores written
  skipped          INT UNSIGNED    NOT NULL DEFAULT 0, -- trusted-side failures, left for the next job
  queued_at        DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at       DATETIME(6)     NULL,
  completed_at     DATETIME(6)     NULL,
  runtime_s        DOUBLE          NULL,
  UNIQUE KEY uq_forward_jobs_seq (seq),
  KEY ix_forward_jobs_queue (status, seq),
  KEY ix_forward_jobs_lease (status, lease_expires_at),
  KEY ix_forward_jobs_window (window_label, status)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- forward_scores: one row per scored evaluation or agent iteration, the
-- latest forward score (recomputed on each new version while provisional,
-- never again once final). cutoff_ts is the newest bar of the window that
-- existed when the subject was submitted: the forward period is the bars
-- after it in dataset_version (first_ts .. last_ts, `bars` of them).
-- A strategy that fails on the forward bars has score NULL and its error.
CREATE TABLE IF NOT EXISTS forward_scores (
  subject          ENUM('evaluation','iteration') NOT NULL,
  subject_id       CHAR(36)        NOT NULL,
  window_label     VARCHAR(64)     NOT NULL,
  challenge        VARCHAR(64)     NOT NULL,
  mode             VARCHAR(8)      NOT NULL,
  state            ENUM('provisional','final') NOT NULL,
  cutoff_ts        BIGINT          NOT NULL,
  first_ts         BIGINT          NOT NULL,
  last_ts          BIGINT          NOT NULL,
  bars             BIGINT UNSIGNED NOT NULL,
  forward_days     DOUBLE          NOT NULL,
  final_days       DOUBLE          NOT NULL,
  dataset_id       BIGINT UNSIGNED NOT NULL,
  dataset_version  VARCHAR(64)     NOT NULL,
  metric           VARCHAR(32)     NULL,
  score            DOUBLE          NULL,
  result           MEDIUMTEXT      NULL,            -- the result dictionary, or the error object
  error_code       VARCHAR(32)     NULL,
  error_message    TEXT            NULL,
  job_id           CHAR(36)        NOT NULL,        -- the forward job that wrote it
  updated_at       DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (subject, subject_id),
  KEY ix_forward_scores_board (challenge, mode, window_label, state, score)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
