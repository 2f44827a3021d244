-- policies_released counts the statements after which a stored policy may
-- be unused: deletes of models, updates that give a model another policy
-- (they name policy or policy_id), and additions of policies (one added for
-- a write that then gave it to no model). The retention loop looks for
-- unused policies, a scan of models, only when the count has moved since
-- its last pass, or while policies are marked unused. The trigger takes the
-- advisory lock freshen_policies shared, as freshen_policy_id does, so that
-- a pass, which holds it exclusively, reads the count once every statement
-- counted before it has committed. (A TRUNCATE of models is not counted:
-- the policies it leaves unused are found by the first pass of the next
-- process, or after the next counted statement.)
CREATE SEQUENCE policies_released;

CREATE FUNCTION freshen_policies_released() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext(current_schema() || '.freshen_policies'));
    PERFORM nextval('policies_released');
    RETURN NULL;
END
$$;
CREATE TRIGGER models_policies_released AFTER DELETE OR UPDATE OF policy, policy_id ON models
    FOR EACH STATEMENT EXECUTE FUNCTION freshen_policies_released();
CREATE TRIGGER policies_added AFTER INSERT ON policies
    FOR EACH STATEMENT EXECUTE FUNCTION freshen_policies_released();

---- create above / drop below ----

DROP TRIGGER policies_added ON policies;
DROP TRIGGER models_policies_released ON models;
DROP FUNCTION freshen_policies_released();
DROP SEQUENCE policies_released;
