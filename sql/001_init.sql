-- 001_init: users, API tokens and the migrations table.
--
-- MariaDB commits DDL implicitly, so every statement here is re-runnable
-- (IF NOT EXISTS): a migration that stopped half way is simply applied again.
-- Tokens are never stored: only BLAKE2b-256 of the token text keyed with the
-- server secret (token_hash), plus a short prefix for display.
-- Two built-in admin users own what is created without a personal token:
-- `local` (loopback clients admitted without a token) and `mantis-admin`
-- (requests that present MANTIS_AUTH_TOKEN).

CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INT UNSIGNED NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL,
  checksum   CHAR(64) CHARACTER SET ascii NOT NULL,
  applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS users (
  id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name       VARCHAR(64) NOT NULL,
  role       ENUM('admin', 'user') NOT NULL DEFAULT 'user',
  created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY users_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS api_tokens (
  id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  user_id      BIGINT UNSIGNED NOT NULL,
  token_hash   BINARY(32) NOT NULL,
  prefix       VARCHAR(16) CHARACTER SET ascii NOT NULL,
  created_at   TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  last_used_at TIMESTAMP(3) NULL DEFAULT NULL,
  revoked_at   TIMESTAMP(3) NULL DEFAULT NULL,
  UNIQUE KEY api_tokens_hash (token_hash),
  KEY api_tokens_user (user_id),
  CONSTRAINT api_tokens_user_fk FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

INSERT IGNORE INTO users (name, role) VALUES ('local', 'admin'), ('mantis-admin', 'admin');
