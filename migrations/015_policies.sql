-- policies holds each distinct policy once; a model refers to its own by
-- policy_id. Models mostly share a few policies, and a policy repeated on
-- every row was about 300 bytes of each (docs/deployment.md). A row is
-- found by digest, the SHA-256 of the policy's text as jsonb writes it
-- (the same for equal policies). A row never changes, so a reader may keep
-- what it read of an id for as long as it likes; ids are never reused.
--
-- The retention loop deletes the policies no model uses, in two passes:
-- the first marks them (orphaned_at), a later one at least a minute after
-- deletes those still unused, so that a reader that read a model just
-- before its policy changed still finds the old policy. It holds the
-- advisory lock freshen_policies exclusively meanwhile, and
-- freshen_policy_id shared, so that no write can refer to a policy that
-- the deletion does not see used.
CREATE TABLE policies (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest      bytea       NOT NULL UNIQUE,
    policy      jsonb       NOT NULL,
    orphaned_at timestamptz
);

-- freshen_policy_id returns the id of policy p, adding its row if there
-- is none. A row another transaction adds meanwhile is waited for and
-- read once it commits (each statement of the function reads what has
-- committed when it starts).
CREATE FUNCTION freshen_policy_id(p jsonb) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    d bytea := sha256(convert_to(p::text, 'UTF8'));
    r bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext(current_schema() || '.freshen_policies'));
    SELECT id INTO r FROM policies WHERE digest = d;
    IF r IS NULL THEN
        INSERT INTO policies (digest, policy) VALUES (d, p)
            ON CONFLICT (digest) DO NOTHING RETURNING id INTO r;
        IF r IS NULL THEN
            SELECT id INTO r FROM policies WHERE digest = d;
        END IF;
    END IF;
    RETURN r;
END
$$;

INSERT INTO policies (digest, policy)
SELECT sha256(convert_to(p::text, 'UTF8')), p FROM (SELECT DISTINCT policy AS p FROM models) AS d;
ALTER TABLE models
    ADD COLUMN policy_id bigint,
    ALTER COLUMN policy DROP NOT NULL,
    ALTER COLUMN policy DROP DEFAULT;
UPDATE models m SET policy_id = p.id, policy = NULL FROM policies p
WHERE p.digest = sha256(convert_to(m.policy::text, 'UTF8'));
ALTER TABLE models
    ALTER COLUMN policy_id SET NOT NULL,
    ALTER COLUMN policy_id SET DEFAULT freshen_policy_id('{}');

-- models.policy stays for SQL written before this version: a policy it
-- inserts or sets there is stored in policies, the row gets its id, and
-- the column is left NULL (it always reads NULL). The trigger fires only
-- for such writes, never for Freshen's own.
CREATE FUNCTION freshen_models_policy() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.policy_id := freshen_policy_id(NEW.policy);
    NEW.policy := NULL;
    RETURN NEW;
END
$$;
CREATE TRIGGER models_policy BEFORE INSERT OR UPDATE OF policy ON models
    FOR EACH ROW WHEN (NEW.policy IS NOT NULL) EXECUTE FUNCTION freshen_models_policy();

---- create above / drop below ----

DROP TRIGGER models_policy ON models;
DROP FUNCTION freshen_models_policy();
UPDATE models m SET policy = p.policy FROM policies p WHERE p.id = m.policy_id;
ALTER TABLE models
    ALTER COLUMN policy SET DEFAULT '{}',
    ALTER COLUMN policy SET NOT NULL,
    DROP COLUMN policy_id;
DROP FUNCTION freshen_policy_id(jsonb);
DROP TABLE policies;
