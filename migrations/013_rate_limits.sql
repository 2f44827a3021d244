-- Rate limits (docs/policy.md): a limit may bound the starts per period
-- (max_starts per per, with an optional burst) beside or instead of the
-- current attempts (max_running, now optional), and may cover the models
-- whose rate_key equals its key (kind 'rate_key'). per is in
-- microseconds, the precision of the times stored.
ALTER TABLE limits
    DROP CONSTRAINT limits_kind_check,
    ADD CONSTRAINT limits_kind_check CHECK (kind IN ('queue', 'prefix', 'rate_key')),
    ALTER COLUMN max_running DROP NOT NULL,
    ADD COLUMN max_starts integer CHECK (max_starts >= 1),
    ADD COLUMN per bigint CHECK (per >= 1),
    ADD COLUMN burst integer CHECK (burst >= 1),
    ADD CONSTRAINT limits_bound CHECK (max_running IS NOT NULL OR max_starts IS NOT NULL),
    ADD CONSTRAINT limits_rate CHECK ((max_starts IS NULL) = (per IS NULL) AND (burst IS NULL OR max_starts IS NOT NULL));

-- limit_starts is the log of each rate limit's starts within its per: one
-- row per instant at which scheduler passes started n models under it
-- (the instant rounded up to the microsecond, so that no window counts
-- fewer starts than were made). A pass appends its starts and deletes the
-- rows older than per; deleting a limit deletes its log. The primary key
-- serves the pass's read of a limit's log.
CREATE TABLE limit_starts (
    kind text        NOT NULL,
    key  text        NOT NULL,
    at   timestamptz NOT NULL,
    n    integer     NOT NULL CHECK (n >= 1),
    PRIMARY KEY (kind, key, at)
);

-- rate_key is the key of the rate_key limits that cover the model (NULL
-- for none). While a model waits, waiting_until is when the rate limit it
-- waits for admits a start, as known when the wait began (NULL for a wait
-- for a concurrency slot), and waiting_tenant its tenant ('' for the
-- models under no tenant prefix): the scheduler offers a limit's free
-- starts and slots to the tenants waiting for it in turn, the first
-- waiting model of each, then the second..., through models_waiting_limit.
-- wait_too_long marks a wait that has lasted longer than the policy's
-- max_lateness, once its event is published.
ALTER TABLE models
    ADD COLUMN rate_key text,
    ADD COLUMN waiting_until timestamptz,
    ADD COLUMN waiting_tenant text NOT NULL DEFAULT '',
    ADD COLUMN wait_too_long boolean NOT NULL DEFAULT false;
DROP INDEX models_waiting_limit;
CREATE INDEX models_waiting_limit ON models (waiting_limit, waiting_tenant, refresh_at, id) WHERE waiting_for_slot;

---- create above / drop below ----

DROP INDEX models_waiting_limit;
CREATE INDEX models_waiting_limit ON models (waiting_limit, refresh_at, id) WHERE waiting_for_slot;
ALTER TABLE models
    DROP COLUMN wait_too_long,
    DROP COLUMN waiting_tenant,
    DROP COLUMN waiting_until,
    DROP COLUMN rate_key;
DROP TABLE limit_starts;
-- An earlier version knows concurrency limits of queues and prefixes
-- only: the others go, and so does the rate of those that stay.
DELETE FROM limits WHERE kind = 'rate_key' OR max_running IS NULL;
ALTER TABLE limits
    DROP CONSTRAINT limits_rate,
    DROP CONSTRAINT limits_bound,
    DROP COLUMN burst,
    DROP COLUMN per,
    DROP COLUMN max_starts,
    ALTER COLUMN max_running SET NOT NULL,
    DROP CONSTRAINT limits_kind_check,
    ADD CONSTRAINT limits_kind_check CHECK (kind IN ('queue', 'prefix'));
