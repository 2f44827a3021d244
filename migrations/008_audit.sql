-- audit holds one row per audited write of the API (docs/policy.md):
-- who (the token's name, "anonymous" without tokens), when (the service's
-- clock), what (create, replace, patch, delete or an action), the caller's
-- reason and, for a write of the definition, the fields it changed with
-- their values before and after. A row is written in the transaction of
-- its change. Rows are kept after their model is deleted (the delete is
-- the model's last row), so there is no foreign key.
CREATE TABLE audit (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    model_id  text        NOT NULL,
    at        timestamptz NOT NULL,
    actor     text        NOT NULL,
    action    text        NOT NULL,
    -- reason is NULL when the caller gave none.
    reason    text,
    -- bulk marks an action applied by a bulk action.
    bulk      boolean     NOT NULL DEFAULT false,
    -- triggered marks a write of the definition with trigger: true.
    triggered boolean     NOT NULL DEFAULT false,
    -- changes is a JSON array of {"field", "before", "after", "cut"}, as
    -- written (json, not jsonb: a payload's bytes are kept); NULL for none.
    changes   json
);

-- audit_model_at serves GET /models/{id}/audit: a model's rows, newest
-- first, one page at a time.
CREATE INDEX audit_model_at ON audit (model_id, at, id);

---- create above / drop below ----

DROP TABLE audit;
