-- webhook_deliveries holds the lifecycle events due to webhook endpoints:
-- one row per event and endpoint, inserted in the transaction that takes
-- the event out of the outbox, so that none is lost if the process stops
-- before sending it. The dispatcher claims due rows (state pending,
-- next_at <= now) with FOR UPDATE SKIP LOCKED and moves next_at past the
-- request's timeout (a lease: a dispatcher that dies mid-send leaves the
-- row due again later); it then marks the row delivered, plans a retry, or
-- marks it failed. Delivered and failed rows are deleted after their
-- retention.
CREATE TABLE webhook_deliveries (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint     text        NOT NULL,
    model_id     text        NOT NULL,
    event        text        NOT NULL,
    -- idempotency_key is sent as the Idempotency-Key header of every send.
    idempotency_key text     NOT NULL,
    payload      text        NOT NULL,
    -- state is pending, delivered or failed.
    state        text        NOT NULL DEFAULT 'pending',
    -- created_at is the event's time; next_at when the row is next due
    -- (while pending), or when it was delivered or failed.
    created_at   timestamptz NOT NULL,
    next_at      timestamptz NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0,
    -- claim is the token of the dispatcher pass that last claimed the row.
    claim        text,
    last_status  integer,
    last_error   text
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint, next_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (state, next_at) WHERE state <> 'pending';

---- create above / drop below ----

DROP TABLE webhook_deliveries;
