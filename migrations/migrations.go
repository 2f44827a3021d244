// Package migrations holds Freshen's PostgreSQL schema as numbered SQL
// migrations in tern's format (NNN_name.sql, with the down step below a
// "---- create above / drop below ----" line) and applies them.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// versionTable is the table, in the connection's current schema, that
// records the version reached (tern's: one row, one column).
const versionTable = "schema_version"

// lockSQL takes the migration lock until the end of the transaction. Its
// key is the one tern's session lock used, so that an older freshen
// migrate and this one wait for each other.
const lockSQL = `SELECT pg_advisory_xact_lock(9628173550095224)`

// Migrate is Apply without the count.
func Migrate(ctx context.Context, conn *pgx.Conn) error {
	_, err := Apply(ctx, conn)
	return err
}

// Apply brings the schema of conn's current schema (the first schema of
// its search_path) up to the latest version and returns how many
// migrations it applied itself. It is safe to run again, and from several
// processes at once, directly or through a pooler in transaction mode: it
// holds no session state. Each migration is applied in a transaction of
// its own, which first takes a transaction-level advisory lock
// (pg_advisory_xact_lock) and reads the version under it, so concurrent
// callers wait for each other and never apply a migration twice.
//
// One caller applies them all and the others find nothing to do: the
// caller applying asks for the lock again with a query of its own text
// (applyingSQL), and a caller that gets the lock while a server session
// of the same database runs that text (pg_stat_activity) commits and
// waits for the lock again. Between its transactions the caller applying
// holds no lock, but its session shows that text from before its commit
// until it holds the lock again, so that no order in which the lock is
// granted lets another caller start applying. A caller killed in the
// middle leaves no lock held (its transaction ends with its connection)
// and no such session, so the next caller to get the lock goes on.
func Apply(ctx context.Context, conn *pgx.Conn) (int, error) {
	table, ms, err := load(ctx, conn)
	if err != nil {
		return 0, err
	}
	return run(ctx, conn, table, ms)
}

// applyingSQL is the text that marks the caller applying migrations to
// table while it waits for the lock.
func applyingSQL(begin string) string {
	return "-- freshen migrate: applying\nCOMMIT; " + begin
}

// run applies the migrations of ms missing from table, as Apply says.
func run(ctx context.Context, conn *pgx.Conn, table string, ms []*migrate.Migration) (int, error) {
	// A string of statements runs in the simple protocol, whatever the
	// exec mode, in one round trip: the caller is in the lock's queue
	// in the round trip that commits.
	begin := `BEGIN; ` + lockSQL + `;
		CREATE TABLE IF NOT EXISTS ` + table + ` (version int4 NOT NULL);
		INSERT INTO ` + table + ` (version) SELECT 0 WHERE NOT EXISTS (SELECT FROM ` + table + `)`
	applying := applyingSQL(begin)
	next := begin
	applied := 0
	for {
		_, err := conn.Exec(ctx, next)
		var v int32
		var other bool
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT (SELECT version FROM `+table+`),
				EXISTS (SELECT FROM pg_stat_activity
					WHERE pid <> pg_backend_pid() AND datname = current_database() AND query = $1)`,
				applying).Scan(&v, &other)
		}
		switch {
		case err != nil:
		case v < 0 || v > int32(len(ms)):
			err = fmt.Errorf("migrate: the schema is at version %d, which this build does not know (it knows 0 to %d)", v, len(ms))
		case v == int32(len(ms)):
			if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
				return applied, fmt.Errorf("migrate: commit: %w", err)
			}
			return applied, nil
		case other:
			// Another caller applies: let it go on.
			next = `COMMIT; ` + begin
			continue
		default:
			if err = apply(ctx, conn, table, ms[v], v+1); err == nil {
				applied++
				next = applying
			}
		}
		if err != nil {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
			return applied, err
		}
	}
}

// apply applies m in the open transaction and records version v.
func apply(ctx context.Context, conn *pgx.Conn, table string, m *migrate.Migration, v int32) error {
	if _, err := conn.Exec(ctx, m.UpSQL); err != nil {
		return fmt.Errorf("migrate: %s: %w", m.Name, err)
	}
	if _, err := conn.Exec(ctx, `UPDATE `+table+` SET version = $1`, v); err != nil {
		return fmt.Errorf("migrate: %s: record version: %w", m.Name, err)
	}
	return nil
}

// Version returns the version conn's current schema is at (0 before any
// migration) and the latest version known to this build. It writes
// nothing.
func Version(ctx context.Context, conn *pgx.Conn) (current, latest int32, err error) {
	table, ms, err := load(ctx, conn)
	if err != nil {
		return 0, 0, err
	}
	current, err = version(ctx, conn, table)
	return current, int32(len(ms)), err
}

// version reads the version in table, 0 if it does not exist.
func version(ctx context.Context, conn *pgx.Conn, table string) (int32, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int32
	err := conn.QueryRow(ctx, `SELECT version FROM `+table).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// load returns the version table of conn's current schema, quoted, and the
// embedded migrations in order.
func load(ctx context.Context, conn *pgx.Conn) (string, []*migrate.Migration, error) {
	var schema *string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return "", nil, fmt.Errorf("read current schema: %w", err)
	}
	if schema == nil {
		return "", nil, fmt.Errorf("migrate: no schema of the search_path exists")
	}
	table := pgx.Identifier{*schema, versionTable}.Sanitize()
	// Without a connection the migrator only loads and parses.
	m, err := migrate.NewMigrator(ctx, nil, table)
	if err != nil {
		return "", nil, fmt.Errorf("create migrator: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return "", nil, fmt.Errorf("load migrations: %w", err)
	}
	return table, m.Migrations, nil
}
