-- turn is the tenant of the last start a scheduler pass made under the
-- limit ('' for none, as for the models under no tenant prefix): the
-- fair turns (docs/policy.md) start with the first tenant after it, in
-- the bytewise order of the names, wrapping around, so that the tenants
-- take turns across passes and instances.
ALTER TABLE limits ADD COLUMN turn text NOT NULL DEFAULT '';

---- create above / drop below ----

ALTER TABLE limits DROP COLUMN turn;
