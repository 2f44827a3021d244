-- models_waiting serves the scheduler's choice of the models waiting for
-- a slot that take the slots that freed: slots go by refresh_at, then id.
DROP INDEX models_waiting;
CREATE INDEX models_waiting ON models (refresh_at, id) WHERE waiting_for_slot;

---- create above / drop below ----

DROP INDEX models_waiting;
CREATE INDEX models_waiting ON models (due_at, id) WHERE waiting_for_slot;
