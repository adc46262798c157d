-- 008: one job queue for every kind (evaluator/runner/jobq.h). Every job
-- table carries the same queue columns; evaluations lacked the cancel flag
-- (POST /api/evaluations/{id}/cancel sets it on a running evaluation, its
-- runner kills the sandbox within a tick).
ALTER TABLE evaluations ADD COLUMN IF NOT EXISTS cancel_requested TINYINT(1) NOT NULL DEFAULT 0 AFTER status;
