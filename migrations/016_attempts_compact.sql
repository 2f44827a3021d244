-- attempts takes about 140 bytes a row instead of 240 (heap and indexes,
-- measured by freshen bench e2e), so the history costs less to keep:
--
-- * seq goes: the attempts of a model that started at the same instant
--   are ordered by uid (xids sort by their creation).
-- * The primary key on uid goes. An attempt's row is written only by the
--   transaction that holds its model (the model started, or the model
--   whose attempt_uid an end takes), so a uid has one row without an index
--   to say so. The one index, attempts_model_started (model_id,
--   started_at), serves the history of a model, the completion of a row
--   written at the start of its attempt (found by model, start and uid),
--   and both rules of retention.
-- * attempts_started goes: the age rule of retention looks at the models
--   a step at a time, as the count rule does, through
--   attempts_model_started. (A BRIN index on started_at would cost next to
--   nothing, but once retention deletes the oldest rows and new ones take
--   their place, each block range spans old and new starts, and the age
--   rule reads the whole table.)
-- * The table has 8 columns, so that a row's null bitmap fits in the
--   24-byte tuple header (from 9 columns on, the header takes 32): the
--   fields that only a failure has (its delay, decision, error kind and
--   message) are one column of the composite type attempt_failure, NULL
--   for every other outcome.
-- * outcome and decision are enums (4 bytes), which compare to and read
--   from their names as text did; delay_ns is NULL for 0.
-- * The columns are ordered so that none needs padding: the times first,
--   then the 4-byte ones, then the texts.
-- * model_id and uid compare bytewise (COLLATE "C"), as models.id does
--   since migration 11: History's condition on model_id, which the view
--   compares in the collation of models.id, is then one of the index
--   (with the database's default collation, it read the whole table).
--
-- attempt_history shows the same columns as before but seq, with outcome
-- and decision as text and delay_ns 0 where none was decided.
--
-- The table is copied whole (about 3 seconds per million rows on a 2-core
-- machine), under a lock that lets the history be read but keeps every
-- attempt from ending meanwhile.
LOCK TABLE attempts IN EXCLUSIVE MODE;

CREATE TYPE attempt_outcome AS ENUM
    ('success', 'unchanged', 'failure', 'timeout', 'snoozed', 'superseded', 'cancelled');
CREATE TYPE attempt_decision AS ENUM ('retry', 'retry_aligned', 'wait_next', 'disable');
CREATE TYPE attempt_failure AS (
    delay_ns bigint,
    decision attempt_decision,
    kind     text,
    message  text
);

CREATE TABLE attempts_compact (
    started_at  timestamptz     NOT NULL,
    deadline_at timestamptz,
    finished_at timestamptz,
    attempt_no  integer         NOT NULL,
    -- outcome is NULL while running.
    outcome     attempt_outcome,
    uid         text            COLLATE "C" NOT NULL,
    model_id    text            COLLATE "C" NOT NULL,
    -- failure is NULL unless one of its fields is set. (Mind that
    -- "failure IS NOT NULL" is true only if each field is set: ask
    -- "failure IS DISTINCT FROM NULL".)
    failure     attempt_failure
);
INSERT INTO attempts_compact (started_at, deadline_at, finished_at, attempt_no, outcome, uid, model_id, failure)
SELECT started_at, deadline_at, finished_at, attempt_no, outcome::attempt_outcome, uid, model_id,
    CASE WHEN num_nonnulls(nullif(delay_ns, 0), decision, error_kind, error_message) > 0
        THEN ROW(nullif(delay_ns, 0), decision::attempt_decision, error_kind, error_message)::attempt_failure
    END
FROM attempts;

DROP VIEW attempt_history;
DROP TABLE attempts;
ALTER TABLE attempts_compact RENAME TO attempts;
CREATE INDEX attempts_model_started ON attempts (model_id, started_at);

-- attempt_history is every attempt: the rows of attempts, and each running
-- attempt that has no row yet, read from its model (delay 0).
CREATE VIEW attempt_history AS
SELECT uid, model_id, attempt_no, started_at, deadline_at, finished_at,
    outcome::text AS outcome, (failure).kind AS error_kind, (failure).message AS error_message,
    (failure).decision::text AS decision, coalesce((failure).delay_ns, 0) AS delay_ns
FROM attempts
UNION ALL
SELECT m.attempt_uid, m.id, m.attempt_no, m.started_at, m.deadline_at, NULL,
    NULL, NULL, NULL, NULL, 0
FROM models m
WHERE m.attempt_uid IS NOT NULL
    AND NOT EXISTS (SELECT FROM attempts a
        WHERE a.model_id = m.id AND a.started_at = m.started_at AND a.uid = m.attempt_uid);

---- create above / drop below ----

-- An earlier version reads and writes the columns of migrations 2 and 4,
-- and finds its rows by uid: seq numbers the rows in the order of their
-- start (then uid).
LOCK TABLE attempts IN EXCLUSIVE MODE;
DROP VIEW attempt_history;
ALTER TABLE attempts RENAME TO attempts_compact;
ALTER INDEX attempts_model_started RENAME TO attempts_compact_model_started;

CREATE TABLE attempts (
    uid           text        PRIMARY KEY,
    model_id      text        NOT NULL,
    seq           bigint      GENERATED ALWAYS AS IDENTITY,
    attempt_no    integer     NOT NULL,
    started_at    timestamptz NOT NULL,
    deadline_at   timestamptz,
    finished_at   timestamptz,
    outcome       text,
    error_kind    text,
    error_message text,
    decision      text,
    delay_ns      bigint      NOT NULL DEFAULT 0
);
INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at, finished_at,
    outcome, error_kind, error_message, decision, delay_ns)
SELECT uid, model_id, attempt_no, started_at, deadline_at, finished_at,
    outcome::text, (failure).kind, (failure).message, (failure).decision::text,
    coalesce((failure).delay_ns, 0)
FROM attempts_compact
ORDER BY started_at, uid;
DROP TABLE attempts_compact;
DROP TYPE attempt_failure;
DROP TYPE attempt_decision;
DROP TYPE attempt_outcome;
CREATE INDEX attempts_model_started ON attempts (model_id, started_at DESC, seq DESC);
CREATE INDEX attempts_started ON attempts (started_at);

CREATE VIEW attempt_history AS
SELECT uid, model_id, seq, attempt_no, started_at, deadline_at, finished_at,
    outcome, error_kind, error_message, decision, delay_ns
FROM attempts
UNION ALL
SELECT m.attempt_uid, m.id, NULL, m.attempt_no, m.started_at, m.deadline_at, NULL,
    NULL, NULL, NULL, NULL, 0
FROM models m
WHERE m.attempt_uid IS NOT NULL
    AND NOT EXISTS (SELECT FROM attempts a WHERE a.uid = m.attempt_uid);
