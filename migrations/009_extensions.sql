-- The state of the extensions of DESIGN.md section 6 (upstreams,
-- concurrency limits, freshness promise, debounced triggers, snooze,
-- catch-up window). A NULL stands for the zero value of the Go field, as
-- in 001.
ALTER TABLE models
    -- upstreams: the ids of the models whose changes trigger this one.
    ADD COLUMN upstreams        text[],
    -- upstreams_mode: NULL (all) or 'any'.
    ADD COLUMN upstreams_mode   text,
    ADD COLUMN last_changed_at  timestamptz,
    ADD COLUMN debounce_at      timestamptz,
    ADD COLUMN debounce_since   timestamptz,
    ADD COLUMN debounce_cause   text,
    ADD COLUMN overdue_since    timestamptz,
    -- overdue_at: the instant the model becomes overdue,
    -- (last_success_at ?? created_at) + max_age, while no freshness
    -- episode is open; NULL otherwise. Written by Freshen with the model.
    ADD COLUMN overdue_at       timestamptz,
    ADD COLUMN snoozed_since    timestamptz,
    ADD COLUMN waiting_for_slot boolean NOT NULL DEFAULT false,
    ADD COLUMN off_schedule     boolean NOT NULL DEFAULT false;

-- due_at is when the scheduler must next look at the model (Model.DueAt):
-- the earliest of refresh_at (unless paused and idle: paused models still
-- time out), debounce_at and overdue_at. least() ignores NULLs.
ALTER TABLE models ADD COLUMN due_at timestamptz GENERATED ALWAYS AS (
    least(CASE WHEN paused AND attempt_uid IS NULL THEN NULL ELSE refresh_at END, debounce_at, overdue_at)
) STORED;

-- Every success of an earlier version changed the data.
UPDATE models SET last_changed_at = last_success_at WHERE last_success_at IS NOT NULL;

-- models_due_at serves the scheduler as models_due did: "due now"
-- (due_at <= $now, in due_at order) and "next due" (min(due_at)). Models
-- waiting for a concurrency slot stay due; they have their own index, so
-- that they never hold up the others.
CREATE INDEX models_due_at ON models (due_at, id)
    WHERE due_at IS NOT NULL AND NOT waiting_for_slot;
CREATE INDEX models_waiting ON models (due_at, id) WHERE waiting_for_slot;
DROP INDEX models_due;

-- models_running serves the count of current attempts per limit.
CREATE INDEX models_running ON models (queue, id) WHERE attempt_uid IS NOT NULL;
-- models_upstreams finds the dependents of a model.
CREATE INDEX models_upstreams ON models USING gin (upstreams) WHERE upstreams IS NOT NULL;
-- models_overdue serves the overdue gauge.
CREATE INDEX models_overdue ON models (id) WHERE overdue_since IS NOT NULL;

-- limits are the concurrency limits: at most max_running current attempts
-- (models with attempt_uid set) among the models of a queue (kind
-- 'queue', key the queue name) or whose id starts with a prefix (kind
-- 'prefix').
CREATE TABLE limits (
    kind        text    NOT NULL CHECK (kind IN ('queue', 'prefix')),
    key         text    NOT NULL,
    max_running integer NOT NULL CHECK (max_running >= 0),
    PRIMARY KEY (kind, key)
);

---- create above / drop below ----

DROP TABLE limits;
CREATE INDEX models_due ON models (refresh_at, id)
    WHERE refresh_at IS NOT NULL AND (NOT paused OR attempt_uid IS NOT NULL);
DROP INDEX models_overdue;
DROP INDEX models_upstreams;
DROP INDEX models_running;
DROP INDEX models_waiting;
DROP INDEX models_due_at;
ALTER TABLE models
    DROP COLUMN due_at,
    DROP COLUMN upstreams,
    DROP COLUMN upstreams_mode,
    DROP COLUMN last_changed_at,
    DROP COLUMN debounce_at,
    DROP COLUMN debounce_since,
    DROP COLUMN debounce_cause,
    DROP COLUMN overdue_since,
    DROP COLUMN overdue_at,
    DROP COLUMN snoozed_since,
    DROP COLUMN waiting_for_slot,
    DROP COLUMN off_schedule;
