-- 014: research agents (issue 15, docs/agents.md). An agent is a row of
-- `agents`; each of its iterations is a job of the runner's one queue
-- (evaluator/runner/jobq.h: the queue columns of agent_iterations are the
-- common ones), so any runner takes the next iteration, an iteration whose
-- runner died is reclaimed when its lease expires, and an agent resumes
-- after any restart (its state is here, its workspace on disk under
-- MANTIS_DATA_DIR/agents/<id>/). Chat and inbox messages are rows that are
-- marked delivered by the finishing write of the iteration that read them,
-- so a message sent during an iteration reaches the next one. Every goal
-- edit is a version (agent_goals); `goal_version` is the ETag of the goal.
-- agent_events feeds GET /api/agents/{id}/events (server-sent events).
CREATE TABLE IF NOT EXISTS agents (
  id               CHAR(36)        NOT NULL PRIMARY KEY,
  seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  owner_id         BIGINT UNSIGNED NOT NULL,
  challenge        VARCHAR(64)     NOT NULL,
  goal             TEXT            NOT NULL,          -- the current goal (agent_goals: every version)
  goal_version     INT UNSIGNED    NOT NULL DEFAULT 1,
  model            VARCHAR(16)     NOT NULL DEFAULT 'sonnet',
  driver           ENUM('builtin','claude-code','command') NOT NULL DEFAULT 'builtin',
  min_iterations   INT UNSIGNED    NOT NULL DEFAULT 5,
  max_iterations   INT UNSIGNED    NOT NULL DEFAULT 20,
  days_back        INT UNSIGNED    NOT NULL DEFAULT 60,
  seed             BIGINT UNSIGNED NOT NULL DEFAULT 1,
  budget_wall_s    DOUBLE          NULL,              -- NULL: no wall-time budget
  dataset_id       BIGINT UNSIGNED NOT NULL,
  dataset_version  VARCHAR(64)     NOT NULL,
  dataset_hash     CHAR(64)        NOT NULL,          -- pinned at creation
  status           ENUM('starting','running','paused','stopped','crashed','completed',
                        'max_iterations_reached','error') NOT NULL DEFAULT 'starting',
  paused_at        DATETIME(6)     NULL,              -- pause requested (between iterations); auto-resume after MANTIS_PAUSE_TIMEOUT
  status_detail    TEXT            NULL,              -- why it stopped (budget, error)
  iterations_done  INT UNSIGNED    NOT NULL DEFAULT 0,
  wall_s_used      DOUBLE          NOT NULL DEFAULT 0,
  tokens_input     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  tokens_output    BIGINT UNSIGNED NOT NULL DEFAULT 0,
  cost_usd         DOUBLE          NOT NULL DEFAULT 0,
  best_iteration   INT UNSIGNED    NULL,              -- by the sealed holdout score (the original's rule)
  best_score       DOUBLE          NULL,
  cloned_from      CHAR(36)        NULL,
  fork_iteration   INT UNSIGNED    NULL,
  imported         TINYINT(1)      NOT NULL DEFAULT 0,
  state_md         MEDIUMTEXT      NULL,              -- STATE.md after the last iteration
  notes            MEDIUMTEXT      NULL,              -- notes.txt after the last iteration
  stdout_tail      MEDIUMTEXT      NULL,              -- the last 2 MiB of stdout.log
  deleted_at       DATETIME(6)     NULL,              -- deleted: hidden; the runner removes row and workspace
  created_at       DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at       DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  UNIQUE KEY uq_agents_seq (seq),
  KEY ix_agents_owner (owner_id, seq),
  KEY ix_agents_status (status, paused_at),
  CONSTRAINT fk_agents_owner FOREIGN KEY (owner_id) REFERENCES users (id),
  CONSTRAINT fk_agents_dataset FOREIGN KEY (dataset_id) REFERENCES datasets (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One row per iteration: a job of the shared queue while queued/running,
-- then the recorded entry. UNIQUE (agent_id, iteration): an iteration is
-- never doubled, whatever runner crashed.
CREATE TABLE IF NOT EXISTS agent_iterations (
  id               CHAR(36)        NOT NULL PRIMARY KEY,
  seq              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  agent_id         CHAR(36)        NOT NULL,
  iteration        INT UNSIGNED    NOT NULL,
  status           ENUM('queued','running','completed','failed','cancelled') NOT NULL DEFAULT 'queued',
  cancel_requested TINYINT(1)      NOT NULL DEFAULT 0,
  lease_owner      VARCHAR(128)    NULL,
  lease_expires_at DATETIME(6)     NULL,
  attempts         INT UNSIGNED    NOT NULL DEFAULT 0,
  max_attempts     INT UNSIGNED    NOT NULL DEFAULT 3,
  error_code       VARCHAR(32)     NULL,
  error_message    TEXT            NULL,
  queued_at        DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  started_at       DATETIME(6)     NULL,
  completed_at     DATETIME(6)     NULL,
  runtime_s        DOUBLE          NULL,
  goal_version     INT UNSIGNED    NULL,              -- the goal this iteration was given
  metrics          MEDIUMTEXT      NULL,              -- JSON: dev walk-forward (what the agent sees)
  holdout_metrics  MEDIUMTEXT      NULL,              -- JSON: sealed holdout (owner only)
  analysis         MEDIUMTEXT      NULL,              -- JSON: iteration_N_analysis.json
  has_error        TINYINT(1)      NOT NULL DEFAULT 0,
  error            TEXT            NULL,              -- the dev-side error (the agent sees it)
  holdout_error    TEXT            NULL,              -- sealed
  agent_s          DOUBLE          NULL,
  score_s          DOUBLE          NULL,
  elapsed_s        DOUBLE          NULL,
  tokens           TEXT            NULL,              -- JSON {input, output, cost}
  code_hash        CHAR(64)        NULL,
  code             MEDIUMTEXT      NULL,              -- iteration_N.py as scored
  done_signal      TINYINT(1)      NOT NULL DEFAULT 0,
  timed_out        TINYINT(1)      NOT NULL DEFAULT 0,
  score            DOUBLE          NULL,              -- primary metric, dev
  holdout_score    DOUBLE          NULL,              -- primary metric, sealed holdout
  UNIQUE KEY uq_agent_iterations_seq (seq),
  UNIQUE KEY uq_agent_iterations_n (agent_id, iteration),
  KEY ix_agent_iterations_queue (status, seq),
  KEY ix_agent_iterations_lease (status, lease_expires_at),
  CONSTRAINT fk_agent_iterations_agent FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Chat: operator messages (role user, type message: delivered to the
-- agent's INBOX.md), inbox overwrites (type inbox), answers (role
-- assistant, issue 16) and system notes. delivered_iteration is set by the
-- finishing write of the iteration that was given the message; a message
-- is never deleted unread (an inbox overwrite marks the older pending ones
-- superseded, keeping them).
CREATE TABLE IF NOT EXISTS agent_messages (
  id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  agent_id            CHAR(36)        NOT NULL,
  role                ENUM('user','assistant','system') NOT NULL,
  type                ENUM('message','inbox','ask','answer','note') NOT NULL DEFAULT 'message',
  text                MEDIUMTEXT      NOT NULL,
  created_at          DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  delivered_iteration INT UNSIGNED    NULL,
  superseded          TINYINT(1)      NOT NULL DEFAULT 0,
  KEY ix_agent_messages_agent (agent_id, id),
  CONSTRAINT fk_agent_messages_agent FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS agent_goals (
  agent_id   CHAR(36)        NOT NULL,
  version    INT UNSIGNED    NOT NULL,
  goal       TEXT            NOT NULL,
  author_id  BIGINT UNSIGNED NULL,
  created_at DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (agent_id, version),
  CONSTRAINT fk_agent_goals_agent FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The change feed of one agent: iteration_started, iteration_scored,
-- status (and chat); `seq` is the SSE event id (Last-Event-ID resumes).
CREATE TABLE IF NOT EXISTS agent_events (
  seq        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  agent_id   CHAR(36)        NOT NULL,
  type       VARCHAR(32)     NOT NULL,
  data       TEXT            NOT NULL,              -- JSON object
  created_at DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY ix_agent_events_agent (agent_id, seq),
  CONSTRAINT fk_agent_events_agent FOREIGN KEY (agent_id) REFERENCES agents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
