-- 016 (issue 17): what the dashboard shows next to a run and an evaluation.
--
-- run_equity.benchmark: buy-and-hold of the run's asset over the same bars,
-- computed by the runner (trusted side) from the dataset's close prices:
-- close[t] / close[first finite bar], carrying the last finite value over
-- gaps and 1.0 before the first finite close; n little-endian float64
-- values like `data`, NULL for runs completed before this migration.
--
-- evaluations.name / evaluations.note: the submitter's label for an
-- evaluation (leaderboard rows and lists show it) and a free note; NULL
-- when not given. The API bounds them (docs/api.md).
-- Re-runnable (IF NOT EXISTS), like every migration.
ALTER TABLE run_equity ADD COLUMN IF NOT EXISTS benchmark LONGBLOB NULL AFTER data;
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS name VARCHAR(128) NULL AFTER owner_id;
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS note VARCHAR(1024) NULL AFTER name;
