-- From this version on, an attempt's history row is written when the
-- attempt ends, in the transaction that ends it; while it runs, the
-- attempt is the model's own (models.attempt_uid, attempt_no, started_at,
-- deadline_at), which the history shows. Rows written at the start of
-- attempts by earlier versions are completed at their end, as before.
--
-- The foreign key is dropped: its check ran once per row inserted, and a
-- row is now only written by a transaction that holds its model locked.
-- Deleting a model deletes its history in the same transaction.
ALTER TABLE attempts DROP CONSTRAINT attempts_model_id_fkey;

-- attempt_history is every attempt: the rows of attempts, and each running
-- attempt that has no row yet, read from its model (seq NULL, delay 0).
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

-- An earlier version expects a row for every attempt, running ones
-- included.
DELETE FROM attempts a WHERE NOT EXISTS (SELECT FROM models m WHERE m.id = a.model_id);
INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at)
SELECT attempt_uid, id, attempt_no, started_at, deadline_at FROM models
WHERE attempt_uid IS NOT NULL
ON CONFLICT (uid) DO NOTHING;
ALTER TABLE attempts ADD CONSTRAINT attempts_model_id_fkey
    FOREIGN KEY (model_id) REFERENCES models (id) ON DELETE CASCADE;
