-- 031_eval_progress (issue 17, fix 4): how far a running evaluation is
-- (docs/runner.md "Progress", docs/api.md GET /api/evaluations/{id}).
--
-- progress_done / progress_total: predict calls answered out of those the
-- evaluation streams, written by the runner's heartbeat (at most once a
-- second, in the UPDATE that renews the lease; evaluator/runner/jobq.c)
-- and cleared when an attempt is claimed. NULL until the stream starts.
-- The API reports them only while the evaluation is running.
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS progress_done BIGINT UNSIGNED NULL AFTER runtime_s;
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS progress_total BIGINT UNSIGNED NULL AFTER progress_done;
