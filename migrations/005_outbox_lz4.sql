-- A transaction's events take a few hundred kilobytes of text in the
-- outbox; lz4 compresses them several times faster than pglz, PostgreSQL's
-- default. A server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE outbox ALTER COLUMN events SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not supported: the outbox keeps the default compression';
END
$$;

---- create above / drop below ----

ALTER TABLE outbox ALTER COLUMN events SET COMPRESSION default;
