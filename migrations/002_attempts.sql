-- attempts is the history: one row per attempt, inserted when it starts and
-- completed when it ends.
CREATE TABLE attempts (
    uid           text        PRIMARY KEY,
    model_id      text        NOT NULL REFERENCES models (id) ON DELETE CASCADE,
    -- seq orders attempts that started at the same instant by insertion.
    seq           bigint      GENERATED ALWAYS AS IDENTITY,
    attempt_no    integer     NOT NULL,
    started_at    timestamptz NOT NULL,
    deadline_at   timestamptz,
    finished_at   timestamptz,
    -- outcome is NULL while running, then success, failure, timeout,
    -- superseded or cancelled.
    outcome       text,
    error_kind    text,
    error_message text,
    decision      text,
    -- delay_ns is the retry delay decided, in nanoseconds.
    delay_ns      bigint      NOT NULL DEFAULT 0
);

CREATE INDEX attempts_model_started ON attempts (model_id, started_at DESC, seq DESC);

---- create above / drop below ----

DROP TABLE attempts;
