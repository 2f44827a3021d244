// Package migrations holds Freshen's PostgreSQL schema as numbered SQL
// migrations in tern's format (NNN_name.sql, with the down step below a
// "---- create above / drop below ----" line) and applies them.
package migrations

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// versionTable is the table, in the connection's current schema, that
// records the version reached.
const versionTable = "schema_version"

// Migrate brings the schema of conn's current schema (the first schema of
// its search_path) up to the latest version. It is safe to run again, and
// from several processes at once: tern holds a session advisory lock while
// it reads the version and applies what is missing, so concurrent callers
// wait for each other and the later ones find nothing to do.
//
// Set the search_path in the connection's configuration, not with SET: tern
// runs RESET ALL after each migration.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return err
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Version returns the version conn's current schema is at (0 before any
// migration) and the latest version known to this build.
func Version(ctx context.Context, conn *pgx.Conn) (current, latest int32, err error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return 0, 0, err
	}
	current, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	return current, int32(len(m.Migrations)), nil
}

// newMigrator returns a migrator with the embedded migrations loaded. It
// creates the version table if it is missing.
func newMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	var schema *string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return nil, fmt.Errorf("migrate: no schema of the search_path exists")
	}
	table := pgx.Identifier{*schema, versionTable}.Sanitize()
	m, err := migrate.NewMigrator(ctx, conn, table)
	if err != nil {
		return nil, fmt.Errorf("create migrator: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return m, nil
}
