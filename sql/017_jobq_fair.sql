-- 017: the job queue is fair between owners (evaluator/runner/jobq_fair.c).
-- A claim asks, per kind, which owner with a queued row has the fewest
-- running jobs and was served least recently: (status, owner, seq) groups
-- the queued rows by owner and counts each owner's running ones, (owner,
-- started_at) finds when an owner was last served; both read a few index
-- entries per waiting owner, whatever the table size. Agent iterations
-- are fair between agents. Re-runnable (IF NOT EXISTS), like every migration.
ALTER TABLE runs ADD INDEX IF NOT EXISTS ix_runs_fair_queue (status, owner_id, seq);
ALTER TABLE runs ADD INDEX IF NOT EXISTS ix_runs_fair_served (owner_id, started_at);
ALTER TABLE evaluations ADD INDEX IF NOT EXISTS ix_evaluations_fair_queue (status, owner_id, seq);
ALTER TABLE evaluations ADD INDEX IF NOT EXISTS ix_evaluations_fair_served (owner_id, started_at);
ALTER TABLE data_prefetches ADD INDEX IF NOT EXISTS ix_data_prefetches_fair_queue (status, owner_id, seq);
ALTER TABLE data_prefetches ADD INDEX IF NOT EXISTS ix_data_prefetches_fair_served (owner_id, started_at);
ALTER TABLE agent_iterations ADD INDEX IF NOT EXISTS ix_agent_iterations_fair_queue (status, agent_id, seq);
ALTER TABLE agent_iterations ADD INDEX IF NOT EXISTS ix_agent_iterations_fair_served (agent_id, started_at);
