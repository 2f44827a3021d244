package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Every statement of the store, alone or in a transaction, runs with the
// session's timeouts, set for its transaction only: the server session
// keeps its own, and no connection sends them at its start (a pooler in
// transaction mode refuses that).
func TestSessionSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := postgres.Session{
		ApplicationName: "freshen/settings-test", LockTimeout: 1500 * time.Millisecond,
		StatementTimeout: 20 * time.Second, IdleInTransactionTimeout: 3 * time.Second, KeepAlive: 15 * time.Second,
	}
	b := setupSession(t, s)
	want := map[string]string{
		"lock_timeout":                        "1500ms",
		"statement_timeout":                   "20s",
		"idle_in_transaction_session_timeout": "3s",
	}
	for name, value := range want {
		alone, inTx, err := postgres.CurrentSetting(ctx, b.store, name)
		require.NoError(t, err)
		require.Equal(t, value, alone, name)
		require.Equal(t, value, inTx, name)
		var session string
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&session))
		require.Equal(t, "0", session, "%s of the server session", name)
	}
	var app string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT current_setting('application_name')").Scan(&app))
	require.Equal(t, "freshen/settings-test", app)

	cfg, err := postgres.ParseConfig(os.Getenv("DATABASE_URL"), s)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"application_name": "freshen/settings-test"}, cfg.ConnConfig.RuntimeParams,
		"the only setting sent at connection")
	require.Equal(t, pgx.QueryExecModeExec, cfg.ConnConfig.DefaultQueryExecMode, "no named prepared statement")

	// An application_name in the URL wins over the session's.
	cfg, err = postgres.ParseConfig(os.Getenv("DATABASE_URL")+"&application_name=mine", postgres.Session{ApplicationName: "freshen/x"})
	require.NoError(t, err)
	require.Equal(t, "mine", cfg.ConnConfig.RuntimeParams["application_name"])
}

// A write that waits for a lock longer than lock_timeout fails with
// EUNAVAILABLE instead of hanging.
func TestLockTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSession(t, postgres.Session{LockTimeout: 200 * time.Millisecond})
	put(t, b.store, model("held", t0))
	tx := holdRows(t, b.pool, "held")
	defer tx.Rollback(ctx) //nolint:errcheck

	begin := time.Now()
	err := b.store.Modify(ctx, []string{"held"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{}, nil
	})
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "lock timeout")
	require.Less(t, time.Since(begin), 5*time.Second)
}

// A statement that runs longer than statement_timeout (here: it waits for
// a table lock, with no lock_timeout) fails with EUNAVAILABLE.
func TestStatementTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSession(t, postgres.Session{StatementTimeout: 200 * time.Millisecond})
	put(t, b.store, model("a", t0))
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, `LOCK TABLE models IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	_, err = b.store.Get(ctx, "a")
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "statement timeout")
	_, err = b.store.List(ctx, refresh.Filter{})
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err), "%v", err)
}

// A pass that stops inside its transaction (a process stopped with SIGSTOP)
// loses its session after idle_in_transaction_session_timeout: its locks
// are released, so a write waiting on them goes through, and the stopped
// pass, when it resumes, fails with EUNAVAILABLE and writes nothing.
func TestIdleInTransactionTimeoutReleasesLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	stalled := setupSession(t, postgres.Session{IdleInTransactionTimeout: 300 * time.Millisecond})
	put(t, stalled.store, model("a", t0))
	other := otherStore(t, stalled, postgres.Session{})

	claimed := make(chan struct{})
	resume := make(chan struct{})
	passDone := make(chan error, 1)
	go func() {
		_, err := stalled.store.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			close(claimed)
			<-resume // stopped here, holding the row
			m := due[0]
			m.AttemptNo = 99
			return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
		})
		passDone <- err
	}()
	<-claimed

	// This write waits for the stalled pass's lock (no lock_timeout here)
	// until the server ends the stalled session.
	err := other.Modify(ctx, []string{"a"}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.AttemptNo = 1
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	})
	require.NoError(t, err)

	close(resume)
	err = <-passDone
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err), "%v", err)
	m, err := other.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, 1, m.AttemptNo, "the stalled pass wrote nothing")
}

// A connection lost in the middle of a transaction fails the call with
// EUNAVAILABLE; the next call gets a new connection.
func TestLostConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const name = "freshen/lost-connection-test"
	b := setupSession(t, postgres.Session{ApplicationName: name})
	put(t, b.store, model("a", t0))
	_, err := b.store.ClaimDue(ctx, t0, 10, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
		exec(t, os.Getenv("DATABASE_URL"), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = '`+name+`'`)
		m := due[0]
		m.AttemptNo = 5
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	})
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err), "%v", err)
	m, err := b.store.Get(ctx, "a")
	require.NoError(t, err)
	require.Zero(t, m.AttemptNo)

	// A database that refuses connections.
	_, err = postgres.Open(ctx, "postgres://freshen:secret@127.0.0.1:1/nothing?sslmode=disable&connect_timeout=2", postgres.Session{})
	require.Equal(t, refresh.EUNAVAILABLE, refresh.ErrorCode(err), "%v", err)
	require.NotContains(t, err.Error(), "secret")
}

// Data the database refuses for its content is EINVALID: retrying it cannot
// help, so the consumer sets the outcome at fault aside.
func TestRefusedDataIsInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	tests := []struct {
		name   string
		change func(m *refresh.Model)
		want   string
	}{
		{"NUL in a text column", func(m *refresh.Model) { m.StatusMessage = "half\x00way" },
			`invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`},
		{"NUL in the jsonb policy", func(m *refresh.Model) { m.Policy.DisabledMessage = "off\x00" },
			"unsupported Unicode escape sequence (SQLSTATE 22P05)"},
		{"an id too long for the index", func(m *refresh.Model) { m.ID = randomText(t, 10000) },
			"SQLSTATE 54000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := model("m-"+tt.name, t0)
			tt.change(&m)
			err := b.store.Modify(ctx, []string{m.ID}, func([]refresh.Model) (refresh.Batch, error) {
				return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
			})
			require.Equal(t, refresh.EINVALID, refresh.ErrorCode(err), "%v", err)
			require.Contains(t, err.Error(), tt.want)
			_, err = b.store.Get(ctx, m.ID)
			require.Equal(t, refresh.ENOTFOUND, refresh.ErrorCode(err), "nothing was written: %v", err)
		})
	}
}

// On real PostgreSQL, the consumer applies a batch in which one outcome
// carries bytes the database refuses: it bisects the batch, applies the
// others and dead-letters that one.
func TestConsumerDeadLettersRefusedOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	running := func(id string) refresh.Model {
		m := model(id, t0.Add(time.Hour))
		m.AttemptNo, m.AttemptUID, m.StartedAt, m.DeadlineAt = 1, "uid-"+id, t0, t0.Add(time.Hour)
		return m
	}
	put(t, b.store, running("a"), running("b"), running("c"), running("d"))
	clock := refresh.NewVirtualClock(t0.Add(time.Minute))
	q := memory.NewQueue(clock)
	for _, id := range []string{"a", "b", "c", "d"} {
		o := refresh.Outcome{ModelID: id, AttemptUID: "uid-" + id, Type: refresh.OutcomeSuccess}
		if id == "c" {
			o.Type, o.Kind, o.Message = refresh.OutcomeFailure, "http_500", "body: \x00\x01"
		}
		q.Deliver(o)
	}
	cons, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: b.store, Outcomes: q, Clock: clock})
	require.NoError(t, err)
	res, err := cons.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, res.Applied)
	require.Equal(t, 1, res.DeadLettered)
	dead := q.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, "c", dead[0].Outcome.ModelID)
	require.Contains(t, dead[0].Reason, "0x00")
	for id, succeeded := range map[string]bool{"a": true, "b": true, "c": false, "d": true} {
		m, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, succeeded, !m.LastSuccessAt.IsZero(), id)
		require.Equal(t, !succeeded, m.Running(), id)
	}
}

// Errors the store's statements do not provoke in these tests are
// classified too, checked on errors a real server returns.
func TestErrorClassification(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.pool.Exec(ctx, `CREATE TABLE pair (id int PRIMARY KEY, v int); INSERT INTO pair VALUES (1, 0), (2, 0)`)
	require.NoError(t, err)

	// serialization_failure: two serializable transactions that each read
	// what the other writes.
	serialization := func() error {
		t1, t2 := begin(t, b.pool, pgx.Serializable), begin(t, b.pool, pgx.Serializable)
		defer t1.Rollback(ctx) //nolint:errcheck
		defer t2.Rollback(ctx) //nolint:errcheck
		for _, q := range []struct {
			tx  pgx.Tx
			sql string
		}{
			{t1, `SELECT sum(v) FROM pair`}, {t2, `SELECT sum(v) FROM pair`},
			{t1, `UPDATE pair SET v = 1 WHERE id = 1`}, {t2, `UPDATE pair SET v = 1 WHERE id = 2`},
		} {
			if _, err := q.tx.Exec(ctx, q.sql); err != nil {
				return err
			}
		}
		if err := t1.Commit(ctx); err != nil {
			return err
		}
		return t2.Commit(ctx)
	}
	// deadlock_detected: two transactions lock two rows in opposite orders.
	deadlock := func() error {
		t1, t2 := begin(t, b.pool, pgx.ReadCommitted), begin(t, b.pool, pgx.ReadCommitted)
		defer t1.Rollback(ctx) //nolint:errcheck
		defer t2.Rollback(ctx) //nolint:errcheck
		_, err := t1.Exec(ctx, `SELECT * FROM pair WHERE id = 1 FOR UPDATE`)
		require.NoError(t, err)
		_, err = t2.Exec(ctx, `SELECT * FROM pair WHERE id = 2 FOR UPDATE`)
		require.NoError(t, err)
		errs := make(chan error, 2)
		go func() {
			_, err := t1.Exec(ctx, `SELECT * FROM pair WHERE id = 2 FOR UPDATE`)
			errs <- err
		}()
		_, err = t2.Exec(ctx, `SELECT * FROM pair WHERE id = 1 FOR UPDATE`)
		if err == nil {
			_ = t2.Rollback(ctx) // t1 was chosen as the victim; let it report
			return <-errs
		}
		_ = t2.Rollback(ctx)
		<-errs
		return err
	}
	query := func(sql string) func() error {
		return func() error {
			_, err := b.pool.Exec(ctx, sql)
			return err
		}
	}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"serialization failure", serialization, refresh.EUNAVAILABLE},
		{"deadlock", deadlock, refresh.EUNAVAILABLE},
		{"lock not available", func() error {
			tx := holdRows(t, b.pool)
			defer tx.Rollback(ctx) //nolint:errcheck
			_, err := b.pool.Exec(ctx, `BEGIN; LOCK TABLE models NOWAIT; COMMIT`)
			return err
		}, refresh.EUNAVAILABLE},
		{"division by zero (class 22)", query(`SELECT 1 / 0`), refresh.EINVALID},
		{"value out of range (class 22)", query(`SELECT 2147483647::int + 1`), refresh.EINVALID},
		{"requested length too large (class 54)", query(`SELECT repeat('xx', 1073741824)`), refresh.EINVALID},
		{"syntax error", query(`SELEKT 1`), refresh.EINTERNAL},
		{"no rows", func() error { return b.pool.QueryRow(ctx, `SELECT 1 WHERE false`).Scan(new(int)) }, refresh.EINTERNAL},
		{"deadline", func() error {
			c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := b.pool.Exec(c, `SELECT pg_sleep(5)`)
			return err
		}, refresh.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.run()
			require.Error(t, raw)
			err := postgres.StoreError("doing it", raw)
			require.Equal(t, tt.want, refresh.ErrorCode(err), "%v", raw)
			require.True(t, strings.HasPrefix(err.Error(), "doing it: "), err.Error())
			if tt.name == "no rows" {
				require.True(t, errors.Is(err, pgx.ErrNoRows), "ErrNoRows stays visible for ENOTFOUND")
			}
		})
	}
}

// holdRows opens a transaction on pool that locks the models ids (all of
// them when ids is empty) and returns it.
func holdRows(t *testing.T, pool *pgxpool.Pool, ids ...string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	if len(ids) == 0 {
		_, err = tx.Exec(ctx, `SELECT 1 FROM models FOR UPDATE`)
	} else {
		_, err = tx.Exec(ctx, `SELECT 1 FROM models WHERE id = ANY($1) FOR UPDATE`, ids)
	}
	require.NoError(t, err)
	return tx
}

func begin(t *testing.T, pool *pgxpool.Pool, iso pgx.TxIsoLevel) pgx.Tx {
	t.Helper()
	tx, err := pool.BeginTx(context.Background(), pgx.TxOptions{IsoLevel: iso})
	require.NoError(t, err)
	return tx
}

// otherStore returns a second store, with the session settings s, on the
// schema of b: another instance.
func otherStore(t *testing.T, b bundle, s postgres.Session) *postgres.Store {
	t.Helper()
	cfg, err := postgres.ParseConfig(os.Getenv("DATABASE_URL"), s)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["search_path"] = b.schema
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := postgres.New(pool)
	store.SetSession(s)
	return store
}

// randomText returns n bytes of random hex, text that hardly compresses,
// so that PostgreSQL cannot shrink an index entry made of it.
func randomText(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, (n+1)/2)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)[:n]
}
