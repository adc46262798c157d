-- MANTIS challenge evaluations (issue 6): a queue row per POST /api/evaluations,
-- executed by agenttest-runner (evaluator/runner/eval_job.c) with the same
-- lease discipline as runs; the result dictionary is stored as JSON and the
-- headline (primary) metric is copied into `score` for the leaderboards.
CREATE TABLE IF NOT EXISTS evaluations (
  id               CHAR(36)        NOT NULL PRIMARY KEY,
  seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  owner_id         BIGINT UNSIGNED NOT NULL,
  challenge        VARCHAR(64)     NOT NULL,
  mode             ENUM('strict','mantis') NOT NULL DEFAULT 'strict',
  dataset_id       BIGINT UNSIGNED NOT NULL,
  dataset_version  VARCHAR(64)     NOT NULL,
  dataset_hash     CHAR(64)        NOT NULL,      -- pinned at queue time
  code_hash        CHAR(64)        NOT NULL,
  code             MEDIUMTEXT      NOT NULL,
  days_back        DOUBLE          NOT NULL,
  holdout_days     DOUBLE          NOT NULL,
  dev_only         TINYINT(1)      NOT NULL DEFAULT 0,
  status           ENUM('queued','running','completed','failed','cancelled') NOT NULL DEFAULT 'queued',
  lease_owner      VARCHAR(128)    NULL,
  lease_expires_at DATETIME(6)     NULL,
  attempts         INT UNSIGNED    NOT NULL DEFAULT 0,
  max_attempts     INT UNSIGNED    NOT NULL DEFAULT 2,
  error_code       VARCHAR(32)     NULL,
  error_message    TEXT            NULL,
  result           MEDIUMTEXT      NULL,          -- JSON: the result dictionary, or the error object
  metric           VARCHAR(32)     NULL,          -- name of the primary metric
  score            DOUBLE          NULL,          -- its value (NULL unless finite)
  queued_at        DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at       DATETIME(6)     NULL,
  completed_at     DATETIME(6)     NULL,
  runtime_s        DOUBLE          NULL,
  UNIQUE KEY uq_evaluations_seq (seq),
  KEY ix_evaluations_queue (status, seq),
  KEY ix_evaluations_lease (status, lease_expires_at),
  KEY ix_evaluations_board (challenge, mode, dataset_version, status, score),
  KEY ix_evaluations_owner (owner_id, seq),
  CONSTRAINT fk_evaluations_dataset FOREIGN KEY (dataset_id) REFERENCES datasets (id),
  CONSTRAINT fk_evaluations_owner FOREIGN KEY (owner_id) REFERENCES users (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
