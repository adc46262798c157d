-- 007: GET /runs is a keyset scan that reads O(limit) rows whatever the
-- table size. A user's newest runs come from (owner_id, seq) in index
-- order; the older (owner_id, status, seq) only serves a status filter, and
-- without a status it left a filesort over every run of the owner.
-- The per-user, per-challenge limit of POST /api/evaluations reads
-- (owner_id, challenge, dataset_id, status). Re-runnable (IF NOT EXISTS), like every migration.
ALTER TABLE runs ADD INDEX IF NOT EXISTS ix_runs_owner_seq (owner_id, seq);
ALTER TABLE evaluations ADD INDEX IF NOT EXISTS ix_evaluations_owner_challenge (owner_id, challenge, dataset_id, status);
