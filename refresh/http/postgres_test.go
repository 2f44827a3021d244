package http_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// setupPostgres returns a bundle whose service runs on a PostgreSQL store,
// in a schema of its own that is dropped at the end. It skips when
// DATABASE_URL is unset: run the tests under scripts/with-servers.sh.
func setupPostgres(t *testing.T) *bundle {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	name := make([]byte, 6)
	_, _ = rand.Read(name)
	schema := "test_" + hex.EncodeToString(name)
	exec := func(sql string) {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	exec("CREATE SCHEMA " + schema)
	t.Cleanup(func() { exec("DROP SCHEMA " + schema + " CASCADE") })

	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	require.NoError(t, err)
	err = migrations.Migrate(ctx, conn)
	conn.Close(ctx)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	b := setup(t)
	b.svc = &refresh.Service{Store: postgres.New(pool), Clock: b.clock, Metrics: b.metrics, Logger: slog.New(slog.NewTextHandler(b.logs, nil))}
	b.handler = refreshhttp.NewServer(b.svc)
	return b
}

// TestPostgresBadBytes sends what PostgreSQL cannot store or compare (NUL,
// bytes that are not UTF-8) everywhere the API takes text.
func TestPostgresBadBytes(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	b.put(t, "m1", `{}`)
	for _, r := range []struct{ method, target, body, field string }{
		{"GET", "/models/a%00b", "", "id"},
		{"GET", "/models/%FF", "", "id"},
		{"DELETE", "/models/a%00", "", "id"},
		{"POST", "/models/a%00/trigger", "", "id"},
		{"GET", "/models/a%00/attempts", "", "id"},
		{"PUT", "/models/a%00", `{}`, "id"},
		{"PATCH", "/models/a%00", `{}`, "id"},
		{"GET", "/models?after=a%00", "", "after"},
		{"GET", "/models?queue=%FF", "", "queue"},
		{"PUT", "/models/m2", `{"queue": "q\u0000"}`, "queue"},
		{"PUT", "/models/m2", `{"policy": {"disabled_message": "a\u0000b"}}`, "policy"},
		{"PATCH", "/models/m1", `{"policy": {"disabled_message": "a\u0000b"}}`, "policy"},
		{"PUT", "/models/m2", "{\"payload\": \"\xff\"}", "body"},
	} {
		rec := b.raw(t, r.method, r.target, r.body)
		require.Equal(t, http.StatusBadRequest, rec.Code, "%s %s: %s", r.method, r.target, rec.Body.String())
		_, fields := errorOf(t, rec)
		require.Len(t, fields, 1, r.target)
		require.Contains(t, fields[0], r.field, r.target)
	}
	require.NotContains(t, b.logs.String(), "request failed")
}

// TestPostgresKeepsPayloadsAsWritten stores payloads that a json column
// takes but jsonb would not (a NUL escape, a lone surrogate): the API
// accepts them and hands them back unchanged.
func TestPostgresKeepsPayloadsAsWritten(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	payload := `{"nul":"a\u0000b","surrogate":"\ud800","html":"<&>"}`
	rec := b.raw(t, "PUT", "/models/m1", `{"payload": `+payload+`}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	rec = b.raw(t, "GET", "/models/m1", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), `"payload":`+payload)
	m, err := b.svc.Store.Get(context.Background(), "m1")
	require.NoError(t, err)
	require.Equal(t, payload, string(m.Payload))
}

// TestPostgresETag checks that a model's tag survives the database: the
// tag of the model a PUT returns is the tag of the model read back.
func TestPostgresETag(t *testing.T) {
	t.Parallel()
	b := setupPostgres(t)
	rec := b.raw(t, "PUT", "/models/m1", `{"queue": "q", "payload": {"v": 1}, "policy": {"schedule": "FREQ=HOURLY", "retry": {"backoff": {"strategy": "exponential", "base": "1m"}}, "disabled_message": "é {error}"}}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	tag := rec.Header().Get("ETag")
	rec = b.raw(t, "GET", "/models/m1", "")
	require.Equal(t, tag, rec.Header().Get("ETag"))
	rec = b.request(t, "PATCH", "/models/m1", `{"payload": {"v": 2}}`, "If-Match", tag)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NotEqual(t, tag, rec.Header().Get("ETag"))
	rec = b.request(t, "PATCH", "/models/m1", `{"payload": {"v": 3}}`, "If-Match", tag)
	require.Equal(t, http.StatusPreconditionFailed, rec.Code, rec.Body.String())
}
