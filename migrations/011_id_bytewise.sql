-- The ids of models compare bytewise (the "C" collation), whatever the
-- locale the database was created with: the ids that start with a prefix
-- (those a token limited to it owns) are then one range of the primary
-- key, [prefix, successor of prefix), which a page or a count of a tenant
-- reads without looking at any other row; and ORDER BY id is the order of
-- the in-memory store and of Go's strings. Under a locale such as
-- en_US.UTF-8, '-' and '.' weigh nothing at first: 'acme1' < 'acme-2' <
-- 'acme3', and the ids of 'acme-' would be scattered over the index.
--
-- It rebuilds the indexes that hold id (the table itself is not written
-- again), holding an exclusive lock on models meanwhile: about 5 seconds
-- per million models on a 2-core machine. The view attempt_history (migration 4) reads the column,
-- so it is made again, the same.
DROP VIEW attempt_history;
ALTER TABLE models ALTER COLUMN id TYPE text COLLATE "C";
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

---- create above / drop below ----

DROP VIEW attempt_history;
ALTER TABLE models ALTER COLUMN id TYPE text COLLATE "default";
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
