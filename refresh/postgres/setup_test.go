package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// bundle is what a test of this package works with.
type bundle struct {
	store *postgres.Store
	pool  *pgxpool.Pool
	// schema is the test's own schema, the pool's search_path.
	schema string
}

// setup creates a schema of its own for the test (tb), migrates it, and
// returns a store whose pool works in it; both are dropped at the end. It
// skips when DATABASE_URL is unset: run the tests under
// scripts/with-servers.sh.
func setup(tb testing.TB) bundle { return setupSession(tb, postgres.Session{}) }

// setupSession is setup with the session settings s on the pool's
// connections.
func setupSession(tb testing.TB, s postgres.Session) bundle {
	tb.Helper()
	return setupURL(tb, os.Getenv("DATABASE_URL"), s)
}

// setupURL is setupSession on the server of url, with url's parameters.
func setupURL(tb testing.TB, url string, s postgres.Session) bundle {
	tb.Helper()
	if url == "" {
		tb.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "test_" + hex.EncodeToString(b)
	exec(tb, url, "CREATE SCHEMA "+schema)
	tb.Cleanup(func() { exec(tb, url, "DROP SCHEMA "+schema+" CASCADE") })

	cfg, err := postgres.ParseConfig(url, s)
	require.NoError(tb, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	// Migrated without the session's timeouts, as serve does: a short
	// idle-in-transaction timeout would end a migration on a busy machine.
	migrateCfg, err := postgres.ParseConfig(url, postgres.Session{})
	require.NoError(tb, err)
	migrateCfg.ConnConfig.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, migrateCfg.ConnConfig)
	require.NoError(tb, err)
	err = migrations.Migrate(ctx, conn)
	conn.Close(ctx)
	require.NoError(tb, err)

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(tb, err)
	tb.Cleanup(pool.Close)
	store := postgres.New(pool)
	store.SetSession(s)
	return bundle{store: store, pool: pool, schema: schema}
}

// exec runs one statement on a connection of its own.
func exec(tb testing.TB, url, sql string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(tb, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(tb, err)
}
