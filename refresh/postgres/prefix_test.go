package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// TestPrefixUnderLocale lists by prefix in a database whose default
// collation is ICU's en-US, which compares case last ('acme-0' < 'ACME-1'
// < 'acme-2'): the ids of a prefix are those that start with it all the
// same, in byte order (migration 11).
func TestPrefixUnderLocale(t *testing.T) {
	t.Parallel()
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "test_locale_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'")
	conn.Close(ctx)
	if err != nil && strings.Contains(err.Error(), "ICU") {
		t.Skipf("this PostgreSQL has no ICU: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { exec(t, base, "DROP DATABASE "+name+" WITH (FORCE)") })
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path = "/" + name
	conn, err = pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	var before bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT 'acme-0' < 'ACME-1' AND 'ACME-1' < 'acme-2'").Scan(&before))
	require.True(t, before, "the database's collation is not bytewise")
	err = migrations.Migrate(ctx, conn)
	conn.Close(ctx)
	require.NoError(t, err)
	pool, err := pgxpool.New(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := postgres.New(pool)

	all := []string{"acme", "acme-1", "acme-2", "acme.", "acme.0", "acme0", "acme1", "acme3", "acmeZ", "acme_x", "acmf", "ACME-1", "b"}
	var changes []refresh.Change
	for _, id := range all {
		changes = append(changes, refresh.Change{Model: refresh.Model{ID: id, Payload: json.RawMessage(`{}`), CreatedAt: t0}})
	}
	require.NoError(t, s.Modify(ctx, nil, func([]refresh.Model) (refresh.Batch, error) { return refresh.Batch{Changes: changes}, nil }))
	slices.Sort(all) // bytewise
	for _, prefix := range []string{"", "acme-", "acme", "acme.", "A"} {
		var want []string
		for _, id := range all {
			if strings.HasPrefix(id, prefix) {
				want = append(want, id)
			}
		}
		got, err := s.List(ctx, refresh.Filter{Prefix: prefix})
		require.NoError(t, err)
		var ids []string
		for _, m := range got {
			ids = append(ids, m.ID)
		}
		require.Equal(t, want, ids, "prefix %q", prefix)
	}
}

// TestPrefixReadsItsRange: the list of a prefix reads the rows of its
// range of the primary key and no other, among 20,000 models of others on
// both sides of it, whatever the after.
func TestPrefixReadsItsRange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `INSERT INTO models (id, created_at)
		SELECT p || lpad(i::text, 5, '0'), now() FROM generate_series(1, 10000) i, unnest(array['acma-', 'acmf-']) p
		UNION ALL SELECT 'acme-' || i, now() FROM generate_series(1, 3) i`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, "ANALYZE models")
	require.NoError(t, err)
	for _, after := range []string{"", "acma-05000", "acme-1", "acmf-00001"} {
		where, args := postgres.FilterSQL(refresh.Filter{Prefix: "acme-", After: after})
		var plan []map[string]any
		require.NoError(t, b.pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) SELECT id FROM models WHERE `+where+` ORDER BY id LIMIT 101`, args...).Scan(&plan))
		scan := plan[0]["Plan"].(map[string]any)["Plans"].([]any)[0].(map[string]any)
		require.Contains(t, scan["Node Type"], "Index", "after %q: %v", after, scan)
		require.Equal(t, "models_pkey", scan["Index Name"], "after %q", after)
		require.LessOrEqual(t, scan["Actual Rows"], 3.0, "after %q", after)
		require.Nil(t, scan["Rows Removed by Filter"], "after %q: the range is the index condition", after)
	}
}
