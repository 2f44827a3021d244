package migrations_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/migrations"
)

// schemaConfig creates an empty schema for the test, dropped at its end,
// and returns a connection config whose search_path is that schema. It
// skips the test when DATABASE_URL is unset.
func schemaConfig(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		t.Skip("DATABASE_URL is not set; run under scripts/with-servers.sh")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "test_" + hex.EncodeToString(b)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["search_path"] = schema
	return cfg
}

func connect(t *testing.T, cfg *pgx.ConnConfig) *pgx.Conn {
	t.Helper()
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func tables(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(),
		`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))

	current, latest, err := migrations.Version(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, int32(0), current)
	require.GreaterOrEqual(t, latest, int32(2))

	require.NoError(t, migrations.Migrate(ctx, conn))
	require.NoError(t, migrations.Migrate(ctx, conn))

	current, _, err = migrations.Version(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, latest, current)
	require.Equal(t, []string{"attempt_history", "attempts", "audit", "dashboard_sessions", "limit_starts", "limits", "models", "outbox", "policies", "schema_version", "webhook_deliveries"}, tables(t, conn))

	// The search_path survives tern's RESET ALL: the tables are in the
	// test's schema, and the session still sees them.
	var n int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM models").Scan(&n))
}

// Four callers at once: one applies every migration, the others wait
// and find nothing to do.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := schemaConfig(t)
	conns := make([]*pgx.Conn, 4)
	for i := range conns {
		conns[i] = connect(t, cfg)
	}

	var wg sync.WaitGroup
	applied := make([]int, len(conns))
	errs := make([]error, len(conns))
	for i, conn := range conns {
		wg.Go(func() { applied[i], errs[i] = migrations.Apply(ctx, conn) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}

	current, latest, err := migrations.Version(ctx, conns[0])
	require.NoError(t, err)
	require.Equal(t, latest, current)
	appliers := 0
	for _, n := range applied {
		if n != 0 {
			require.Equal(t, int(latest), n, "migrations applied by each caller: %v", applied)
			appliers++
		}
	}
	require.Equal(t, 1, appliers, "migrations applied by each caller: %v", applied)
	var rows int
	require.NoError(t, conns[0].QueryRow(ctx, "SELECT count(*) FROM schema_version").Scan(&rows))
	require.Equal(t, 1, rows)
}

// A caller cancelled while it applies a migration leaves it and the
// ones after it to a caller waiting for the lock, which does not wait
// for the cancelled one.
func TestMigrateTakesOverFromCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := schemaConfig(t)
	watch := connect(t, cfg)
	_, err := watch.Exec(ctx, "CREATE TABLE blocker (n int)")
	require.NoError(t, err)
	holder := connect(t, cfg)
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "LOCK TABLE blocker")
	require.NoError(t, err)

	ms := []*migrate.Migration{
		{Name: "001_a", UpSQL: "CREATE TABLE a (n int)"},
		{Name: "002_b", UpSQL: "INSERT INTO blocker VALUES (1); CREATE TABLE b (n int)"},
		{Name: "003_c", UpSQL: "CREATE TABLE c (n int)"},
	}
	type result struct {
		applied int
		err     error
	}
	// start runs a caller on a connection of its own, which it returns
	// with the channel of its result, and waits until the caller waits for
	// a lock of the kind.
	start := func(runCtx context.Context, kind string) chan result {
		conn := connect(t, cfg)
		done := make(chan result, 1)
		go func() {
			n, err := migrations.ApplyThese(runCtx, conn, ms)
			done <- result{n, err}
		}()
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, watch.QueryRow(ctx, `SELECT count(*) FROM pg_locks
				WHERE pid = $1 AND NOT granted AND locktype = $2`, conn.PgConn().PID(), kind).Scan(&n))
			return n > 0
		}, 10*time.Second, 10*time.Millisecond)
		return done
	}

	// The first caller applies 001 and waits for the table in 002; the
	// second waits for the migration lock.
	firstCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	firstDone := start(firstCtx, "relation")
	secondCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	secondDone := start(secondCtx, "advisory")

	cancel()
	r := <-firstDone
	require.Error(t, r.err)
	require.Equal(t, 1, r.applied)

	require.NoError(t, tx.Rollback(ctx))
	r = <-secondDone
	require.NoError(t, r.err)
	require.Equal(t, 2, r.applied)
	var v int
	require.NoError(t, watch.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&v))
	require.Equal(t, 3, v)
	require.Equal(t, []string{"a", "b", "blocker", "c", "schema_version"}, tables(t, watch))
}

func TestPartialIndexServesDueQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	require.NoError(t, migrations.Migrate(ctx, conn))

	// Many idle models with nothing planned, a few due, a few waiting, a
	// few with upstreams: the planner must read the partial indexes,
	// whatever the table's size.
	_, err := conn.Exec(ctx, `
		INSERT INTO models (id, created_at, refresh_at, waiting_for_slot, upstreams)
		SELECT 'm' || i, now(), CASE WHEN i % 100 = 0 THEN now() - interval '1 minute' END, i % 1000 = 0,
			CASE WHEN i % 500 = 0 THEN ARRAY['m' || (i - 1)] END
		FROM generate_series(1, 5000) AS i;
		ANALYZE models`)
	require.NoError(t, err)

	for _, q := range []struct{ query, index string }{
		{`SELECT id FROM models WHERE due_at <= now() AND NOT waiting_for_slot
			ORDER BY due_at, id LIMIT 10 FOR UPDATE SKIP LOCKED`, "models_due_at"},
		{`SELECT id FROM models WHERE waiting_for_slot AND due_at <= now()
			ORDER BY due_at, id LIMIT 10 FOR UPDATE SKIP LOCKED`, "models_waiting"},
		{`SELECT id FROM models WHERE upstreams && ARRAY['m1']`, "models_upstreams"},
	} {
		rows, err := conn.Query(ctx, `EXPLAIN (FORMAT TEXT) `+q.query)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Regexp(t, "(using|on) "+q.index+" ", strings.Join(lines, "\n"))
	}
}

// due_at is Model.DueAt: refresh_at unless paused and idle, an open
// debounce window, the overdue instant, whichever comes first.
func TestDueAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	require.NoError(t, migrations.Migrate(ctx, conn))
	_, err := conn.Exec(ctx, `
		INSERT INTO models (id, created_at, refresh_at, paused, attempt_uid, debounce_at, overdue_at) VALUES
		('plain', now(), '2026-03-02T06:00:00Z', false, NULL, NULL, NULL),
		('paused', now(), '2026-03-02T06:00:00Z', true, NULL, NULL, NULL),
		('paused-running', now(), '2026-03-02T06:00:00Z', true, 'u', NULL, NULL),
		('window', now(), '2026-03-02T06:00:00Z', true, NULL, '2026-03-02T05:00:00Z', NULL),
		('overdue', now(), '2026-03-02T06:00:00Z', false, NULL, '2026-03-02T05:00:00Z', '2026-03-02T04:00:00Z'),
		('none', now(), NULL, false, NULL, NULL, NULL)`)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, `SELECT id || ' ' || coalesce(to_char(due_at AT TIME ZONE 'UTC', 'HH24:MI'), 'null') FROM models ORDER BY id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"none null", "overdue 04:00", "paused null", "paused-running 06:00", "plain 06:00", "window 05:00"}, got)
}

// migrateDown migrates the schema of conn down to version with the down
// steps of the files.
func migrateDown(t *testing.T, conn *pgx.Conn, version int32) {
	t.Helper()
	ctx := context.Background()
	var schema string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema))
	m, err := migrate.NewMigrator(ctx, conn, pgx.Identifier{schema, "schema_version"}.Sanitize())
	require.NoError(t, err)
	require.NoError(t, m.LoadMigrations(os.DirFS(".")))
	require.NoError(t, m.MigrateTo(ctx, version))
}

// Going back below version 4 writes the rows an earlier version expects:
// one for each running attempt, and none for a deleted model; the foreign
// key is back.
func TestAttemptsAtEndDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	require.NoError(t, migrations.Migrate(ctx, conn))
	_, err := conn.Exec(ctx, `
		INSERT INTO models (id, created_at, attempt_no, attempt_uid, started_at, deadline_at)
		VALUES ('running', now(), 2, 'u2', now(), now() + interval '1 hour'), ('idle', now(), 0, NULL, NULL, NULL);
		INSERT INTO attempts (uid, model_id, attempt_no, started_at, finished_at, outcome)
		VALUES ('u1', 'running', 1, now() - interval '1 hour', now(), 'failure'),
			('gone', 'deleted', 1, now(), now(), 'success')`)
	require.NoError(t, err)

	migrateDown(t, conn, 3)

	rows, err := conn.Query(ctx, `SELECT uid || ':' || model_id || ':' || attempt_no || ':' || coalesce(outcome, 'running')
		FROM attempts ORDER BY uid`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"u1:running:1:failure", "u2:running:2:running"}, got)
	_, err = conn.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at) VALUES ('x', 'nope', 1, now())`)
	require.ErrorContains(t, err, "attempts_model_id_fkey")

	require.NoError(t, migrations.Migrate(ctx, conn))
}

// The outbox compresses its events with lz4 if the server supports it,
// else with the default.
func TestOutboxCompression(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	require.NoError(t, migrations.Migrate(ctx, conn))
	want := "l"
	if _, err := conn.Exec(ctx, `SET default_toast_compression = lz4`); err != nil {
		want = "" // the column keeps the default
	}
	var method string
	require.NoError(t, conn.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute
		WHERE attrelid = 'outbox'::regclass AND attname = 'events'`).Scan(&method))
	require.Equal(t, want, method)
}

// Going back below version 13 keeps the concurrency limits of queues and
// prefixes, without their rates, and drops the others with the logs of
// starts; going up again works.
func TestRateLimitsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	require.NoError(t, migrations.Migrate(ctx, conn))
	_, err := conn.Exec(ctx, `
		INSERT INTO limits (kind, key, max_running, max_starts, per, burst) VALUES
			('queue', 'both', 3, 10, 60000000, 2), ('queue', 'rated', NULL, 10, 1000000, NULL),
			('rate_key', 'api.example.com', 1, NULL, NULL, NULL), ('prefix', 'acme-', 2, NULL, NULL, NULL);
		INSERT INTO limit_starts (kind, key, at, n) VALUES ('queue', 'rated', now(), 3);
		INSERT INTO models (id, created_at, rate_key, waiting_for_slot, waiting_limit, waiting_until, waiting_tenant)
		VALUES ('m', now(), 'api.example.com', true, 'queue:rated', now(), 'acme-')`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO limits (kind, key) VALUES ('queue', 'none')`)
	require.ErrorContains(t, err, "limits_bound")

	migrateDown(t, conn, 12)
	rows, err := conn.Query(ctx, `SELECT kind || ':' || key || ':' || max_running FROM limits ORDER BY kind, key`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"prefix:acme-:2", "queue:both:3"}, got)
	require.NotContains(t, tables(t, conn), "limit_starts")

	require.NoError(t, migrations.Migrate(ctx, conn))
}

// Version 14 keeps each limit's turn (the tenant of its last start), the
// empty string for the limits that had none; going back below it drops
// the turns and keeps the limits; going up again works.
func TestLimitTurnsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	migrateDown(t, conn, 13)
	_, err := conn.Exec(ctx, `INSERT INTO limits (kind, key, max_running) VALUES ('queue', 'old', 2)`)
	require.NoError(t, err)
	require.NoError(t, migrations.Migrate(ctx, conn))
	_, err = conn.Exec(ctx, `INSERT INTO limits (kind, key, max_running, turn) VALUES ('prefix', 'acme-', 1, 'acme-')`)
	require.NoError(t, err)
	rows, err := conn.Query(ctx, `SELECT kind || ':' || key || ':' || turn FROM limits ORDER BY kind, key`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"prefix:acme-:acme-", "queue:old:"}, got)

	migrateDown(t, conn, 13)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM limits`).Scan(&n))
	require.Equal(t, 2, n)
	_, err = conn.Exec(ctx, `SELECT turn FROM limits`)
	require.ErrorContains(t, err, "turn")
	require.NoError(t, migrations.Migrate(ctx, conn))
}

// Migration 15 stores each distinct policy once, the models keeping theirs;
// going back puts every policy on its models again.
func TestPoliciesDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	migrateDown(t, conn, 14)
	_, err := conn.Exec(ctx, `INSERT INTO models (id, created_at, policy) VALUES
		('a', now(), '{"timeout": "1h"}'), ('b', now(), '{"timeout":"1h"}'), ('c', now(), '{"timeout": "2h"}'), ('d', now(), DEFAULT)`)
	require.NoError(t, err)
	require.NoError(t, migrations.Migrate(ctx, conn))

	policies := func(query string) []string {
		rows, err := conn.Query(ctx, query)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []string{`{"timeout": "1h"}`, `{"timeout": "2h"}`, `{}`},
		policies(`SELECT policy::text FROM policies ORDER BY policy::text`), "equal policies share a row")
	_, err = conn.Exec(ctx, `INSERT INTO models (id, created_at) VALUES ('e', now())`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO models (id, created_at, policy_id) VALUES ('f', now(), freshen_policy_id('{"timeout": "3h"}'))`)
	require.NoError(t, err)
	want := []string{`a {"timeout": "1h"}`, `b {"timeout": "1h"}`, `c {"timeout": "2h"}`, `d {}`, `e {}`, `f {"timeout": "3h"}`}
	require.Equal(t, want, policies(`SELECT m.id || ' ' || p.policy::text FROM models m JOIN policies p ON p.id = m.policy_id ORDER BY m.id`))
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM policies`).Scan(&n))
	require.Equal(t, 4, n)

	// SQL written for version 14 still inserts and sets models.policy:
	// the policy is stored once, the column left NULL.
	_, err = conn.Exec(ctx, `INSERT INTO models (id, created_at, policy) VALUES ('g', now(), '{"timeout": "2h"}')`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `UPDATE models SET policy = '{"timeout": "4h"}' WHERE id = 'e'`)
	require.NoError(t, err)
	want = []string{`a {"timeout": "1h"}`, `b {"timeout": "1h"}`, `c {"timeout": "2h"}`, `d {}`, `e {"timeout": "4h"}`,
		`f {"timeout": "3h"}`, `g {"timeout": "2h"}`}
	require.Equal(t, want, policies(`SELECT m.id || ' ' || p.policy::text FROM models m JOIN policies p ON p.id = m.policy_id ORDER BY m.id`))
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM models WHERE policy IS NOT NULL`).Scan(&n))
	require.Zero(t, n, "models.policy is left NULL")
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM policies`).Scan(&n))
	require.Equal(t, 5, n)

	migrateDown(t, conn, 14)
	require.Equal(t, want, policies(`SELECT id || ' ' || policy::text FROM models ORDER BY id`))
	require.NotContains(t, tables(t, conn), "policies")
	require.NoError(t, migrations.Migrate(ctx, conn))
}

// Version 16 keeps every attempt as attempt_history shows it (but seq):
// failures with their kind, message, decision and delay, a row written at
// the start of a running attempt (shown once), a running attempt without a
// row. Going back below it gives the rows their seq in the order of their
// start, and the primary key on uid; going up again works.
func TestAttemptsCompactDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := connect(t, schemaConfig(t))
	migrateDown(t, conn, 15)
	_, err := conn.Exec(ctx, `
		INSERT INTO models (id, created_at, attempt_no, attempt_uid, started_at, deadline_at) VALUES
			('m', now(), 1, 'u5', '2026-03-02T05:00:00Z', '2026-03-02T06:00:00Z'),
			('n', now(), 3, 'v3', '2026-03-02T04:00:00Z', '2026-03-02T05:00:00Z');
		INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at, finished_at,
			outcome, error_kind, error_message, decision, delay_ns) VALUES
			('u1', 'm', 1, '2026-03-02T01:00:00Z', '2026-03-02T02:00:00Z', '2026-03-02T01:01:00Z', 'failure', 'exit_1', 'boom', 'retry', 5000000000),
			('u2', 'm', 2, '2026-03-02T02:00:00Z', '2026-03-02T03:00:00Z', '2026-03-02T03:00:00Z', 'timeout', 'timeout', NULL, 'wait_next', 0),
			('u4', 'm', 1, '2026-03-02T03:00:00Z', NULL, '2026-03-02T03:00:01Z', 'superseded', NULL, NULL, NULL, 0),
			('u3', 'm', 1, '2026-03-02T03:00:00Z', '2026-03-02T04:00:00Z', '2026-03-02T03:00:00Z', 'success', NULL, NULL, NULL, 0),
			('u5', 'm', 1, '2026-03-02T05:00:00Z', '2026-03-02T06:00:00Z', NULL, NULL, NULL, NULL, NULL, 0),
			('v1', 'n', 1, '2026-03-02T02:00:00Z', NULL, '2026-03-02T02:00:00Z', 'failure', NULL, NULL, 'disable', 0)`)
	require.NoError(t, err)
	history := func() []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT concat_ws(' ', uid, model_id, attempt_no, to_char(started_at AT TIME ZONE 'UTC', 'HH24:MI'),
				coalesce(to_char(deadline_at AT TIME ZONE 'UTC', 'HH24:MI'), '-'), coalesce(to_char(finished_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), '-'),
				coalesce(outcome, '-'), coalesce(error_kind, '-'), coalesce(error_message, '-'), coalesce(decision, '-'), delay_ns)
			FROM attempt_history ORDER BY model_id, started_at, uid`)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return got
	}
	want := []string{
		"u1 m 1 01:00 02:00 01:01:00 failure exit_1 boom retry 5000000000",
		"u2 m 2 02:00 03:00 03:00:00 timeout timeout - wait_next 0",
		"u3 m 1 03:00 04:00 03:00:00 success - - - 0",
		"u4 m 1 03:00 - 03:00:01 superseded - - - 0",
		"u5 m 1 05:00 06:00 - - - - - 0",
		"v1 n 1 02:00 - 02:00:00 failure - - disable 0",
		"v3 n 3 04:00 05:00 - - - - - 0",
	}
	require.Equal(t, want, history())

	require.NoError(t, migrations.Migrate(ctx, conn))
	require.Equal(t, want, history())
	var columns int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_attribute
		WHERE attrelid = 'attempts'::regclass AND attnum > 0`).Scan(&columns))
	require.Equal(t, 8, columns, "no dropped column left in the rows")
	var withFailure int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE failure IS DISTINCT FROM NULL`).Scan(&withFailure))
	require.Equal(t, 3, withFailure, "a failure only where one of its fields is set")

	migrateDown(t, conn, 15)
	require.Equal(t, want, history())
	rows, err := conn.Query(ctx, `SELECT uid FROM attempts ORDER BY seq`)
	require.NoError(t, err)
	bySeq, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"u1", "u2", "v1", "u3", "u4", "u5"}, bySeq)
	_, err = conn.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at) VALUES ('u1', 'm', 1, now())`)
	require.ErrorContains(t, err, "attempts_pkey")

	require.NoError(t, migrations.Migrate(ctx, conn))
	require.Equal(t, want, history())
}
