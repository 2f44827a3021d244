-- outbox holds the lifecycle events of committed transactions until they
-- are published: each transaction that writes events adds one row with all
-- of them (a JSON array), so an event is published after its change commits
-- even if the process stops or Redis is down meanwhile. The publisher reads
-- rows in id order and deletes what it published.
CREATE TABLE outbox (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    events     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE outbox;
