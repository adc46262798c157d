-- 012: the code-check result cache (issue 19). A check is a function of
-- the code and of the checker, so its verdict is kept under (code_hash,
-- checker): re-submitting code already checked costs no sandbox. `checker`
-- is CHECK_CHECKER_VERSION (evaluator/runner/check_service.h), bumped with
-- every change of the strategy host's check (a unit test pins check.py),
-- so a new checker never sees an old verdict. `verdict` is the reduced
-- answer the API acts on ({"ok":true,"kind":...} or the error with its
-- message, line and column); answers that depend on the load (a check
-- killed by a limit) are never stored. Rows are never updated.
-- Re-runnable (IF NOT EXISTS), like every migration.
CREATE TABLE IF NOT EXISTS code_checks (
  code_hash  CHAR(64)     NOT NULL,
  checker    VARCHAR(32)  NOT NULL,
  verdict    VARCHAR(2048) NOT NULL,
  created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (code_hash, checker)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
