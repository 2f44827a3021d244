-- models holds one row per refreshable model: what to run, its policy and
-- where it stands (docs/transitions.md). A NULL timestamp stands for the
-- zero time.Time of the Go field; a NULL text for "".
CREATE TABLE models (
    id                   text        PRIMARY KEY,
    queue                text        NOT NULL DEFAULT '',
    -- payload is handed to workers unchanged, so it is json (kept as
    -- written), not jsonb (normalised).
    payload              json,
    policy               jsonb       NOT NULL DEFAULT '{}',
    created_at           timestamptz NOT NULL,
    -- refresh_at: the next start or, while an attempt runs, its deadline.
    refresh_at           timestamptz,
    deadline_at          timestamptz,
    attempt_no           integer     NOT NULL DEFAULT 0,
    attempt_uid          text,
    started_at           timestamptz,
    consecutive_failures integer     NOT NULL DEFAULT 0,
    failing_since        timestamptz,
    last_success_at      timestamptz,
    -- last_error_kind is NULL when there is no last error.
    last_error_kind      text,
    last_error_message   text,
    last_error_at        timestamptz,
    disabled_at          timestamptz,
    disabled_reason      text,
    paused               boolean     NOT NULL DEFAULT false,
    status_message       text,
    -- updated_at is the database's commit clock, for operators only.
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- models_due serves the scheduler: "due now" (refresh_at <= $now, in
-- refresh_at order) and "next due" (min(refresh_at)) read only the models
-- that can become due, so their cost grows with the due models, not with
-- the table. Paused models stay in it while an attempt runs: they still
-- time out.
CREATE INDEX models_due ON models (refresh_at, id)
    WHERE refresh_at IS NOT NULL AND (NOT paused OR attempt_uid IS NOT NULL);

---- create above / drop below ----

DROP TABLE models;
