-- attempts_started finds the attempts past the history's maximum age
-- (freshen serve --history-max-age). Building it blocks writes to attempts
-- (the end of every attempt) while it runs: on a large history, create it
-- beforehand without blocking, with
--   CREATE INDEX CONCURRENTLY attempts_started ON attempts (started_at);
-- and this migration finds it there.
CREATE INDEX IF NOT EXISTS attempts_started ON attempts (started_at);

---- create above / drop below ----

DROP INDEX IF EXISTS attempts_started;
