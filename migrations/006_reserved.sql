-- Version 6 is reserved for a migration of another change; this
-- placeholder, which changes nothing, keeps the numbering whole until it
-- lands (tern refuses a gap). Replace it with that migration.
SELECT 1;

---- create above / drop below ----

SELECT 1;
