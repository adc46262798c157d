-- 024_updater (issue 18, docs/paper-trading.md "The default-strategy
-- updater"): a per-label rule that proposes, and promotes automatically or
-- after an admin's approval, a candidate that beat the label's default on
-- the forward period.
--
-- paper_accounts.role: 'default' (the account of a promotion, as in 019)
-- or 'shadow' (a candidate nominated by POST /defaults/candidates: advanced
-- by the same paper job over the same bars as the default, with no
-- promotion behind it, promotion_id NULL). A promoted candidate's shadow
-- account becomes the default account (role, promotion_id set), so its
-- forward curve continues.
ALTER TABLE paper_accounts ADD COLUMN IF NOT EXISTS role ENUM('default','shadow') NOT NULL DEFAULT 'default' AFTER label;
ALTER TABLE paper_accounts MODIFY COLUMN promotion_id BIGINT UNSIGNED NULL;
ALTER TABLE paper_accounts ADD INDEX IF NOT EXISTS ix_paper_role (label, role, state, id);

-- paper_steps.account_id is also set when a step is queued: one step per
-- active account of the label (the default and its shadows); a step queued
-- with none (before 024) advances the label's default account.

-- updater_rules: one per label, set by an admin (PUT /defaults/rules).
-- A shadow is decided once per default promotion, at the first step where
-- all of: its strategy version was submitted at least min_age_days ago,
-- its qualifying run passed the audit, and the common forward period with
-- the default holds at least min_bars bars. It is proposed when its
-- forward return over that period exceeds the default's by more than
-- margin, refused otherwise.
CREATE TABLE IF NOT EXISTS updater_rules (
  label         VARCHAR(64)     NOT NULL PRIMARY KEY,
  min_age_days  DOUBLE          NOT NULL,
  margin        DOUBLE          NOT NULL,
  min_bars      INT UNSIGNED    NOT NULL,
  auto_promote  TINYINT(1)      NOT NULL DEFAULT 0,
  enabled       TINYINT(1)      NOT NULL DEFAULT 1,
  updated_by    BIGINT UNSIGNED NOT NULL,        -- the promoter of an automatic promotion
  updated_at    DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  CONSTRAINT fk_updater_rules_user FOREIGN KEY (updated_by) REFERENCES users (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- updater_proposals: every decision of the updater, never deleted (the
-- Prometheus counters count them by status). status: 'refused' (did not
-- beat the default), 'proposed' (beat it, awaiting an admin), 'approved'
-- and 'rejected' (an admin's answer), 'promoted' (promoted automatically),
-- 'superseded' (the default changed before an admin answered). reason and
-- numbers (a JSON object: the returns, the period, the rule) are what it
-- was decided on.
CREATE TABLE IF NOT EXISTS updater_proposals (
  id                   BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  label                VARCHAR(64)     NOT NULL,
  shadow_account_id    BIGINT UNSIGNED NOT NULL,
  default_promotion_id BIGINT UNSIGNED NOT NULL,   -- the default it was compared with
  default_account_id   BIGINT UNSIGNED NOT NULL,
  strategy_version_id  BIGINT UNSIGNED NOT NULL,
  run_id               CHAR(36)        NOT NULL,
  status               ENUM('refused','proposed','approved','rejected','promoted','superseded') NOT NULL,
  reason               TEXT            NOT NULL,
  numbers              TEXT            NOT NULL,
  promotion_id         BIGINT UNSIGNED NULL,       -- the promotion it led to
  decided_by           BIGINT UNSIGNED NULL,       -- the admin who approved or rejected
  created_at           DATETIME(6)     NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  decided_at           DATETIME(6)     NULL,
  UNIQUE KEY uq_updater_pair (shadow_account_id, default_promotion_id),
  KEY ix_updater_label (label, status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- default_promotions: the reason and the numbers of a promotion (manual:
-- reason 'manual', numbers NULL; by the updater: the proposal's).
ALTER TABLE default_promotions ADD COLUMN IF NOT EXISTS proposal_id BIGINT UNSIGNED NULL;
ALTER TABLE default_promotions ADD COLUMN IF NOT EXISTS reason TEXT NULL;
ALTER TABLE default_promotions ADD COLUMN IF NOT EXISTS numbers TEXT NULL;
