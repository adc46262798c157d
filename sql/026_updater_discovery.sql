-- 026_updater_discovery (issue 18, docs/paper-trading.md "Finding
-- candidates"): the updater opens shadow paper accounts by itself.
--
-- updater_rules.max_shadows: the most active shadow accounts of the label
-- the updater keeps by itself (0: none, candidates are nominated only).
-- Every strategy version that qualifies (a positions or simulate strategy
-- with a completed, audit-passed run on a version of the label, created at
-- least min_age_days ago, without an active or paused account on the
-- label) is a candidate; while fewer than max_shadows shadows are active,
-- the best by backtest score (its best eligible run on the label; ties:
-- the older version first) get one. An admin's nomination (POST
-- /defaults/candidates) is not bounded by it and counts towards it.
ALTER TABLE updater_rules ADD COLUMN IF NOT EXISTS max_shadows INT UNSIGNED NOT NULL DEFAULT 0 AFTER min_bars;

-- paper_accounts.origin: who opened a shadow: 'admin' (a nomination, or a
-- promotion's default account) or 'updater' (found by the rule).
ALTER TABLE paper_accounts ADD COLUMN IF NOT EXISTS origin ENUM('admin','updater') NOT NULL DEFAULT 'admin' AFTER role;
