-- waiting_limit names the concurrency limit a model waiting for a slot
-- waits for, as kind:key (e.g. 'prefix:acme-'); NULL when it does not
-- wait. The scheduler offers each limit's free slots to the models
-- waiting for it, by refresh_at then id (models_waiting_limit), and
-- fills the rest of a batch with waiting models by refresh_at
-- (models_waiting). Models that waited before this migration have none:
-- the scheduler looks at them again, as it does at the models waiting
-- for a limit that was removed.
ALTER TABLE models ADD COLUMN waiting_limit text;
DROP INDEX models_waiting;
CREATE INDEX models_waiting ON models (refresh_at, id) WHERE waiting_for_slot;
CREATE INDEX models_waiting_limit ON models (waiting_limit, refresh_at, id) WHERE waiting_for_slot;

---- create above / drop below ----

DROP INDEX models_waiting_limit;
DROP INDEX models_waiting;
CREATE INDEX models_waiting ON models (due_at, id) WHERE waiting_for_slot;
ALTER TABLE models DROP COLUMN waiting_limit;
