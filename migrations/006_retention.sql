---- tern: disable-tx ----
-- attempts_started finds the attempts past the history's maximum age
-- (freshen serve --history-max-age). It is built CONCURRENTLY, so that
-- writes to a large history go on while it builds (outside a transaction:
-- this file holds one statement).
CREATE INDEX CONCURRENTLY IF NOT EXISTS attempts_started ON attempts (started_at);

---- create above / drop below ----
---- tern: disable-tx ----

DROP INDEX CONCURRENTLY IF EXISTS attempts_started;
