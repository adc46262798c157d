-- 005: a change counter per dataset version for the leaderboard.
--
-- The runner bumps `gen` in the same transaction that adds an eligible run
-- (the only thing that changes a leaderboard), so an API worker can keep a
-- rendered leaderboard and serve it again for as long as `gen` has not
-- moved: one primary-key read instead of the ordered join.
CREATE TABLE IF NOT EXISTS leaderboard_gen (
  dataset_version VARCHAR(64)     NOT NULL PRIMARY KEY,
  gen             BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
