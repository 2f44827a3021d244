package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// latestMigration is the version of the last migration in migrations/.
func latestMigration(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("../../migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return len(files)
}

func migrateCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = runMigrate(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMigrateUsage(t *testing.T) {
	t.Setenv("FRESHEN_DATABASE_URL", "")
	t.Setenv("DATABASE_URL", "")

	code, _, stderr := migrateCmd()
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "no database")

	code, _, _ = migrateCmd("--database-url", "postgres://x", "extra")
	require.Equal(t, 2, code)

	code, _, _ = migrateCmd("--bogus")
	require.Equal(t, 2, code)

	code, _, stderr = migrateCmd("-h")
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "usage: freshen migrate")
}

func TestMigrateUnreachable(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1.
	code, _, stderr := migrateCmd("--database-url", "postgres://freshen@127.0.0.1:1/freshen?sslmode=disable&connect_timeout=5")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "connect to database")
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "test_" + hex.EncodeToString(b)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	defer func() {
		_, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
		require.NoError(t, err)
	}()

	// Unknown URL parameters become run-time settings of the connection.
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	schemaURL := url + sep + "search_path=" + schema

	code, stdout, stderr := migrateCmd("--database-url", schemaURL)
	require.Equal(t, 0, code, stderr)
	latest := latestMigration(t)
	require.Equal(t, fmt.Sprintf("schema at version %d, migrated from version 0\n", latest), stdout)

	code, stdout, stderr = migrateCmd("--database-url", schemaURL)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, fmt.Sprintf("schema at version %d, up to date\n", latest), stdout)

	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".models").Scan(&n))
}
