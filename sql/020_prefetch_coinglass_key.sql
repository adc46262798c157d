-- A CoinGlass key given in the body of POST /api/data-cache/prefetch is
-- for that prefetch: the pool seals it (common/secret_store.h,
-- secret_store_seal_job: XChaCha20-Poly1305 under the server secret, the
-- job id bound as associated data) into these two columns; the runner
-- opens it for the job and the job's finish sets both to NULL (a row ended
-- by the reaper or a cancel is wiped by the next prefetch the runner
-- claims). The plaintext is never stored.
ALTER TABLE data_prefetches
  ADD COLUMN IF NOT EXISTS coinglass_nonce  VARBINARY(24)  NULL,
  ADD COLUMN IF NOT EXISTS coinglass_sealed VARBINARY(528) NULL;
