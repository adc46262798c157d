-- 027_run_artifacts_error (issue 11, item 18): a completed run whose
-- artifact file could not be written (disk full, no inodes, permission,
-- I/O error) says so instead of silently having no artifact. The text is
-- the reason without any server path ("equity.csv: No space left on
-- device"); NULL when the artifact was written or none was due. The run's
-- results stay in run_metrics/run_equity: the file is a convenience copy.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS artifacts_error VARCHAR(512) NULL AFTER artifacts_dir;
