-- 030_paper_pin (issue 18): a paper account pins the dataset version it
-- reads (docs/paper-trading.md, "Dataset versions and retention").
--
-- paper_accounts.dataset_id: the version the account's steps read, moved by
-- each step when it loads (evaluator/runner/paper_job.c, in one statement
-- with reading the label) and cleared when the account leaves 'active'
-- (paused or retired accounts never read again). Retention and the
-- data-cache delete (common/dsretire.c) keep a pinned version: the NOT
-- EXISTS there and this foreign key (no ON DELETE: a pinned row cannot go)
-- decide atomically against a step pinning it at the same moment.
--
-- paper_steps.dataset_version: the version a step read, recorded with its
-- outcome (a step that finds its version retired or missing on disk fails
-- with error_code dataset_retired / dataset_missing and is retried on the
-- label's newest version).
ALTER TABLE paper_accounts ADD COLUMN IF NOT EXISTS dataset_id BIGINT UNSIGNED NULL AFTER run_id;
ALTER TABLE paper_accounts ADD CONSTRAINT fk_paper_dataset FOREIGN KEY IF NOT EXISTS (dataset_id)
  REFERENCES datasets (id);
ALTER TABLE paper_steps ADD COLUMN IF NOT EXISTS dataset_version VARCHAR(64) NULL AFTER account_id;

-- the active accounts of an existing installation pin what their label points at now
UPDATE paper_accounts a JOIN dataset_labels l ON l.label = a.label SET a.dataset_id = l.dataset_id
 WHERE a.state = 'active' AND a.dataset_id IS NULL;
