package main

// The end-to-end tests again, with every freshen process connected
// through PgBouncer in transaction mode (POOLED_DATABASE_URL of
// scripts/with-servers.sh), and what only a pooler shows: concurrent
// migrations, LISTEN, refused settings. The test's own checks read the
// server directly (env.db).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pooled holds the tests (*testing.T) whose env goes through the pooler.
var pooled sync.Map

// runPooled runs test as a subtest of t named name, with its env's
// freshen processes connected through the pooler.
func runPooled(t *testing.T, name string, test func(*testing.T)) {
	t.Run(name, func(t *testing.T) {
		pooled.Store(t, true)
		t.Cleanup(func() { pooled.Delete(t) })
		test(t)
	})
}

// usePooler points dbURL at database path through the pooler when t runs
// pooled, keeping the direct URL in directURL.
func (e *env) usePooler(t *testing.T, path string) {
	if _, ok := pooled.Load(t); !ok {
		return
	}
	u, err := url.Parse(poolerURL(t))
	require.NoError(t, err)
	u.Path = path
	e.directURL, e.dbURL = e.dbURL, u.String()
}

// poolerURL returns POOLED_DATABASE_URL, or skips t without it.
func poolerURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("POOLED_DATABASE_URL")
	if u == "" {
		t.Skip("POOLED_DATABASE_URL is not set; run under scripts/with-servers.sh with pgbouncer installed")
	}
	return u
}

// TestE2EPooled runs the tests of exactly-once starts, of SIGKILL and of a
// stalled instance through PgBouncer in transaction mode: each
// transaction may run on another server session, so they pass only if
// nothing depends on one (named prepared statements, session settings
// and locks), and the stalled instance's rows are freed only if its
// transaction set idle_in_transaction_session_timeout itself.
func TestE2EPooled(t *testing.T) {
	t.Parallel()
	poolerURL(t)
	runPooled(t, "ExactlyOnceThreeInstances", TestE2EExactlyOnceThreeInstances)
	runPooled(t, "Sigkill", TestE2ESigkill)
	runPooled(t, "StalledInstance", TestE2EStalledInstance)
}

// Four freshen migrate at once through the pooler: all succeed, one
// applies every migration and the others say the schema is up to date,
// and no advisory lock is left held.
func TestE2EPooledConcurrentMigrate(t *testing.T) {
	t.Parallel()
	poolerURL(t)
	runPooled(t, "run", func(t *testing.T) {
		e := newUnmigratedEnv(t)
		outs := make([]string, 4)
		errs := make([]error, len(outs))
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() {
				out, err := exec.Command(e.bin, "migrate", "--database-url", e.dbURL).CombinedOutput()
				outs[i], errs[i] = string(out), err
			})
		}
		wg.Wait()
		migrated := regexp.MustCompile(`^schema at version (\d+), (?:migrated from version (\d+)|up to date)\n$`)
		latest, applied, appliers := -1, 0, 0
		for i, out := range outs {
			require.NoError(t, errs[i], out)
			m := migrated.FindStringSubmatch(out)
			require.NotNil(t, m, out)
			v, _ := strconv.Atoi(m[1])
			require.True(t, latest == -1 || latest == v, "versions %d and %d", latest, v)
			latest = v
			if m[2] != "" {
				from, _ := strconv.Atoi(m[2])
				applied += v - from
				appliers++
			}
		}
		t.Logf("%d of %d runs applied migrations: %q", appliers, len(outs), outs)
		require.Equal(t, latest, applied, "each migration applied once")
		require.Equal(t, 1, appliers, "one run applies, the others find nothing to do: %q", outs)
		require.Equal(t, latest, e.count(`SELECT version FROM schema_version`))
		require.Zero(t, e.count(`SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`),
			"advisory locks left held")
	})
}

// A freshen migrate killed (SIGKILL) through the pooler while it applies
// the second migration leaves it and the rest to a run that was waiting,
// which applies them all: the test creates the table of migration 002 in
// a transaction it keeps open, so the first run waits in 002.
func TestE2EPooledMigrateKilled(t *testing.T) {
	t.Parallel()
	poolerURL(t)
	runPooled(t, "run", func(t *testing.T) {
		e := newUnmigratedEnv(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tx, err := e.db.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.Background()) }()
		_, err = tx.Exec(ctx, `CREATE TABLE attempts (n int)`)
		require.NoError(t, err)
		// waiting says whether a session of the database waits for a lock
		// of the kind.
		waiting := func(kind string) func() bool {
			return func() bool {
				return e.count(`SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = $1
					AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database())`, kind) > 0
			}
		}

		first := exec.CommandContext(ctx, e.bin, "migrate", "--database-url", e.dbURL)
		require.NoError(t, first.Start())
		require.Eventually(t, waiting("transactionid"), 30*time.Second, 10*time.Millisecond)
		require.Equal(t, 1, e.count(`SELECT version FROM schema_version`))

		var out []byte
		done := make(chan error, 1)
		second := exec.CommandContext(ctx, e.bin, "migrate", "--database-url", e.dbURL)
		go func() {
			var err error
			out, err = second.CombinedOutput()
			done <- err
		}()
		require.Eventually(t, waiting("advisory"), 30*time.Second, 10*time.Millisecond)

		require.NoError(t, first.Process.Kill())
		require.Error(t, first.Wait())
		require.NoError(t, tx.Rollback(ctx))
		require.NoError(t, <-done, string(out))
		latest := latestMigration(t)
		require.Equal(t, fmt.Sprintf("schema at version %d, migrated from version 1\n", latest), string(out))
		require.Equal(t, latest, e.count(`SELECT version FROM schema_version`))
		require.Zero(t, e.count(`SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`),
			"advisory locks left held")
	})
}

// With --listen-database-url a direct connection, a model made due
// through another client starts within a second, by notification (the
// scheduler would otherwise sleep for a minute). Without it, serve says
// once in the log and in /readyz's detail that notifications do not
// arrive, and polls: the model still starts within a second.
func TestE2EPooledNotifications(t *testing.T) {
	t.Parallel()
	poolerURL(t)
	dueStart := func(t *testing.T, e *env, p *proc) time.Duration {
		t.Helper()
		e.insertDue(1, "notify")
		var took time.Duration
		waitFor(t, 10*time.Second, "the model to start", func() bool {
			var d float64
			err := e.db.QueryRow(context.Background(), `SELECT extract(epoch FROM a.started_at - d.due_at)
				FROM attempt_history a JOIN due d ON d.id = a.model_id`).Scan(&d)
			took = time.Duration(d * float64(time.Second))
			return err == nil
		})
		return took
	}
	runPooled(t, "ListenURL", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		p := e.serve("listen", "--max-sleep", "1m", "--listen-database-url", e.directURL)
		waitFor(t, 10*time.Second, "its own notification", func() bool { return strings.Contains(p.log.String(), "notifications arrive") })
		took := dueStart(t, e, p)
		t.Logf("started %s after it was made due", took.Round(time.Millisecond))
		require.Less(t, took, time.Second)
		require.NotContains(t, p.log.String(), "hears no notification")
	})
	runPooled(t, "Polling", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		p := e.serve("poll", "--max-sleep", "1m")
		waitFor(t, 15*time.Second, "serve to say that notifications do not arrive", func() bool {
			return strings.Contains(p.log.String(), "hears no notification")
		})
		resp, err := http.Get(p.base + "/readyz")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "serve is ready: it polls")
		var ready struct{ Detail []string }
		require.NoError(t, json.Unmarshal(body, &ready))
		require.Contains(t, strings.Join(ready.Detail, "\n"), "notifications: LISTEN on the database URL hears no notification")

		took := dueStart(t, e, p)
		t.Logf("started %s after it was made due, by polling", took.Round(time.Millisecond))
		require.Less(t, took, time.Second+pollInterval)
		// (/readyz logs its detail when it changes, as a line of its own.)
		require.Equal(t, 1, strings.Count(p.log.String(), `"msg":"notifications: LISTEN`), "said once in the log")
	})
}

// A setting in the database URL that the pooler refuses at connection
// ends serve at once, naming it, instead of a retry until
// --connect-timeout.
func TestE2EPooledRefusedSetting(t *testing.T) {
	t.Parallel()
	poolerURL(t)
	runPooled(t, "run", func(t *testing.T) {
		e := newEnv(t)
		e.dbURL += "&search_path=public"
		begin := time.Now()
		p := e.start("refused", "--connect-timeout", "1m")
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("serve still runs after 20s:\n%s", p.log.tail(10))
		}
		t.Logf("serve ended after %s", time.Since(begin).Round(time.Millisecond))
		require.Contains(t, p.log.String(), `refuses the setting "search_path" at connection`)
	})
}

// A pooler that loses server connections in the middle of transactions
// (their backends are ended, over and over, while models cycle) costs
// retries, never a half-applied pass: every model still starts exactly
// once and completes, and no two attempts overlap.
func TestE2EPooledDroppedConnections(t *testing.T) {
	t.Parallel()
	poolerURL(t)
	runPooled(t, "run", func(t *testing.T) {
		const n = 500
		e := newEnv(t)
		p := e.serve("drops", "--batch-size", "50", "--log-level", "warn")
		w := e.startWorker("drops", 16)
		e.insertDue(n, "drops")
		ctx, cancel := context.WithCancel(context.Background())
		ended := 0
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				var k int
				if e.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
					WHERE datname = current_database() AND application_name = 'freshen/drops' AND state <> 'idle') t`).Scan(&k) == nil {
					ended += k
				}
			}
		})
		waitFor(t, 120*time.Second, "every model to succeed", func() bool {
			return e.count(`SELECT count(*) FROM models WHERE last_success_at IS NOT NULL AND attempt_uid IS NULL`) == n
		})
		cancel()
		wg.Wait()
		t.Logf("%d server sessions ended in the middle of their work", ended)
		require.Positive(t, ended)
		require.Equal(t, n, e.count(`SELECT count(*) FROM attempt_history`), "one attempt per model")
		require.Equal(t, n, e.count(`SELECT count(DISTINCT model_id) FROM attempt_history WHERE outcome = 'success'`))
		e.checkNoOverlap()
		w.stop()
		p.stop()
	})
}
