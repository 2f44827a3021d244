-- The ids of models compare bytewise (the "C" collation), whatever the
-- locale the database was created with: the ids that start with a prefix
-- (those a token limited to it owns) are then one range of the primary
-- key, [prefix, successor of prefix), which a page or a count of a tenant
-- reads without looking at any other row; and ORDER BY id is the order of
-- the in-memory store and of Go's strings. Under a locale such as
-- en_US.UTF-8, '-' and '.' weigh nothing at first: 'acme1' < 'acme-2' <
-- 'acme3', and the ids of 'acme-' would be scattered over the index.
--
-- It rebuilds the indexes that hold id (the table itself is not written
-- again), holding an exclusive lock on models meanwhile: about a second per
-- million models.
ALTER TABLE models ALTER COLUMN id TYPE text COLLATE "C";

---- create above / drop below ----

ALTER TABLE models ALTER COLUMN id TYPE text COLLATE "default";
