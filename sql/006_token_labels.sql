-- 006: an optional label on API tokens (POST /api/tokens {label}), so a
-- user can tell their tokens apart ("laptop", "ci", "agent-7") in the
-- dashboard's settings. Re-runnable (IF NOT EXISTS), like every migration.
ALTER TABLE api_tokens ADD COLUMN IF NOT EXISTS label VARCHAR(64) NULL DEFAULT NULL AFTER prefix;
