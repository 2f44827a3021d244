package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// TestE2EStalledInstance stops one of two freshen serve with SIGSTOP while
// it is inside a transaction holding rows (checked in pg_stat_activity and
// pg_locks), for stallFor, with models due every second and a worker
// answering. The other instance goes on: the server ends the stalled
// session after the idle-in-transaction timeout, which releases its rows;
// their outcomes are applied within 10s; the outcomes list stays near empty;
// a trigger of a held model answers (200, or 503 with Retry-After) instead of
// hanging. After SIGCONT nothing is lost: every model's state agrees with
// its history, every outcome of a committed attempt was applied, and no two
// attempts of a model overlap.
func TestE2EStalledInstance(t *testing.T) {
	t.Parallel()
	const (
		n        = 500 // models, each due every second
		stallFor = 15 * time.Second
	)
	e := newEnv(t)
	ctx := context.Background()
	flags := []string{"--batch-size", "25", "--log-level", "warn"}
	a := e.serve("a", flags...)
	b := e.serve("b", flags...)
	w := e.startWorker("tick", 16)

	policy, err := refresh.ParsePolicy([]byte(`{"schedule": "FREQ=SECONDLY", "timeout": "1m"}`), refresh.Limits{MinInterval: time.Second})
	require.NoError(t, err)
	stored, err := json.Marshal(policy)
	require.NoError(t, err)
	_, err = e.db.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
		SELECT 'm-' || lpad(i::text, 4, '0'), 'tick', '{}', (SELECT freshen_policy_id($1::jsonb)), now(), now()
		FROM generate_series(1, $2::int) AS i`, string(stored), n)
	require.NoError(t, err)
	finished := func() int { return e.count(`SELECT count(*) FROM attempt_history WHERE outcome IS NOT NULL`) }
	waitFor(t, 30*time.Second, "two rounds of attempts", func() bool { return finished() >= 2*n })

	// Stop a, until it is caught inside a transaction that holds rows.
	var held []string
	for try := 1; held == nil; try++ {
		require.LessOrEqual(t, try, 200, "serve a was never caught holding rows")
		require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
		if e.stalledInTransaction("freshen/a") {
			held = e.lockedModels()
		}
		if held == nil {
			require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
			// Let it run a few passes before the next try.
			<-time.After(time.Duration(20+rand.IntN(60)) * time.Millisecond)
		}
	}
	stoppedAt := time.Now()
	// The held models that were idle: a's stalled pass was claiming them.
	// (The others were running: a was applying their outcomes, which stay
	// in its processing list until it resumes.)
	var claimed []string
	rows, err := e.db.Query(ctx, `SELECT id FROM models WHERE id = ANY($1) AND attempt_uid IS NULL ORDER BY id`, held)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		claimed = append(claimed, id)
	}
	require.NoError(t, rows.Err())
	t.Logf("serve a stopped inside a transaction holding %d models, %d of them idle (claimed for a start)", len(held), len(claimed))
	stalled := true
	t.Cleanup(func() {
		if stalled {
			_ = a.cmd.Process.Signal(syscall.SIGCONT)
		}
	})

	// A trigger of a held model, on b, answers: once the server has ended
	// a's session (the idle-in-transaction timeout is below the lock
	// timeout), or with 503 and Retry-After, never by hanging.
	client := &http.Client{Timeout: 30 * time.Second}
	begin := time.Now()
	resp, err := client.Post(b.base+"/models/"+held[0]+"/trigger", "application/json", strings.NewReader(""))
	require.NoError(t, err)
	resp.Body.Close()
	took := time.Since(begin)
	t.Logf("trigger of held model %s on b: %d after %s", held[0], resp.StatusCode, took.Round(time.Millisecond))
	require.True(t, resp.StatusCode == http.StatusOK || (resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != ""),
		"trigger answered %d", resp.StatusCode)
	require.Less(t, took, 12*time.Second)

	// The server ends a's sessions and its rows are free, within 10s: b
	// starts and completes the models a was claiming. (a may have been
	// stopped inside more than one transaction, each ended by its own
	// timeout: the wait is for all of them.)
	waitFor(t, 10*time.Second-time.Since(stoppedAt), "a's rows to be free and its claimed models applied by b", func() bool {
		return !slices.ContainsFunc(e.lockedModels(), func(id string) bool { return slices.Contains(held, id) }) &&
			e.count(`SELECT count(DISTINCT model_id) FROM attempt_history
				WHERE model_id = ANY($1) AND finished_at > $2 AND outcome = 'success'`, claimed, stoppedAt) == len(claimed) &&
			!e.stalledInTransaction("freshen/a")
	})
	t.Logf("a's rows free and its claimed models applied %s after the stop", time.Since(stoppedAt).Round(time.Millisecond))

	// For the rest of the stall, b keeps the outcomes list near empty and
	// the models cycling.
	doneBefore := finished()
	var lens []int64
	tick := time.NewTicker(250 * time.Millisecond)
	for time.Since(stoppedAt) < stallFor {
		<-tick.C
		l, err := e.rdb.LLen(ctx, e.key("outcomes")).Result()
		require.NoError(t, err)
		lens = append(lens, l)
	}
	tick.Stop()
	applied := finished() - doneBefore
	slices.Sort(lens)
	median, maxLen := lens[len(lens)/2], lens[len(lens)-1]
	t.Logf("rest of the stall: %d attempts finished, outcomes list %d long at the median, at most %d", applied, median, maxLen)
	// A model starts again only once its outcome is applied, so a blocked
	// consumer shows as a list of about n outcomes all the time; a working
	// one keeps it to what arrives between two passes (more, now and then,
	// on a busy machine).
	require.Less(t, median, int64(n/4), "outcomes pile up")
	require.Greater(t, applied, n, "the models go on cycling on b")

	// a resumes: its transaction is gone, its passes fail once and go on.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	stalled = false
	var succeeded float64
	waitFor(t, 10*time.Second, "a to answer again", func() bool {
		resp, err := http.Get(a.base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		succeeded = a.metric("freshen_attempts_succeeded_total")
		return resp.StatusCode == http.StatusOK
	})
	waitFor(t, 20*time.Second, "a to apply outcomes again", func() bool {
		l, err := e.rdb.LLen(ctx, e.key("processing:a")).Result()
		require.NoError(t, err)
		return l == 0 && a.metric("freshen_attempts_succeeded_total") > succeeded
	})

	// Wind down: the worker stops, the outcomes in flight are applied, the
	// instances stop.
	w.stop()
	waitFor(t, 20*time.Second, "the outcomes in flight to be applied", func() bool {
		total := int64(0)
		for _, k := range []string{"outcomes", "processing:a", "processing:b"} {
			l, err := e.rdb.LLen(ctx, e.key(k)).Result()
			require.NoError(t, err)
			total += l
		}
		return total == 0
	})
	a.stop()
	b.stop()

	// Every model's state agrees with its history: a model runs an attempt
	// exactly when its attempt_uid names an unfinished history row, and no
	// other row is unfinished.
	require.Zero(t, e.count(`SELECT count(*) FROM models m
		WHERE (m.attempt_uid IS NOT NULL) <> EXISTS (
			SELECT 1 FROM attempt_history a WHERE a.uid = m.attempt_uid AND a.finished_at IS NULL)`))
	require.Zero(t, e.count(`SELECT count(*) FROM attempt_history a JOIN models m ON m.id = a.model_id
		WHERE a.finished_at IS NULL AND a.uid IS DISTINCT FROM m.attempt_uid`))
	require.Zero(t, e.count(`SELECT count(*) FROM models WHERE disabled_at IS NOT NULL OR consecutive_failures > 0`))
	e.checkNoOverlap()
	dead, err := e.rdb.LLen(ctx, e.key("dead")).Result()
	require.NoError(t, err)
	require.Zero(t, dead, "dead letters")

	// Nothing lost: the outcome of every committed attempt the worker
	// answered was applied (success), unless the trigger superseded it.
	// Answers to attempts never committed (jobs pushed by a's stalled pass,
	// whose transaction the server ended) are the stale ones.
	committed := map[string]string{} // uid -> outcome
	rows, err = e.db.Query(ctx, `SELECT uid, coalesce(outcome, '') FROM attempt_history`)
	require.NoError(t, err)
	for rows.Next() {
		var uid, outcome string
		require.NoError(t, rows.Scan(&uid, &outcome))
		committed[uid] = outcome
	}
	require.NoError(t, rows.Err())
	answered, stale := 0, 0
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, uids := range w.answered {
		for _, uid := range uids {
			answered++
			outcome, ok := committed[uid]
			if !ok {
				stale++
				continue
			}
			if outcome == refresh.AttemptSuperseded && id == held[0] {
				continue
			}
			require.Equal(t, "success", outcome, "attempt %s of %s", uid, id)
		}
	}
	t.Logf("%d outcomes: %d applied, %d for attempts never committed", answered, answered-stale, stale)
}

// stalledInTransaction reports whether the connections named app hold a
// transaction open, idle, with a lock on models: a process stopped in the
// middle of a pass. It looks for up to 300ms (a statement under way when
// the process stopped finishes first).
func (e *env) stalledInTransaction(app string) bool {
	e.t.Helper()
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		n := e.count(`SELECT count(*) FROM pg_stat_activity s
			WHERE s.application_name = $1 AND s.state = 'idle in transaction'
			  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = s.pid AND l.relation = 'models'::regclass)`, app)
		if n > 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-time.After(20 * time.Millisecond)
	}
}

// lockedModels returns the ids of the models that another transaction has
// held locked for a while (seen locked twice, 100ms apart), or nil.
func (e *env) lockedModels() []string {
	e.t.Helper()
	sample := func() []string {
		ctx := context.Background()
		tx, err := e.db.Begin(ctx)
		require.NoError(e.t, err)
		defer tx.Rollback(ctx) //nolint:errcheck
		rows, err := tx.Query(ctx, `SELECT id FROM models
			EXCEPT SELECT id FROM (SELECT id FROM models FOR UPDATE SKIP LOCKED) free
			ORDER BY 1`)
		require.NoError(e.t, err)
		var ids []string
		for rows.Next() {
			var id string
			require.NoError(e.t, rows.Scan(&id))
			ids = append(ids, id)
		}
		require.NoError(e.t, rows.Err())
		return ids
	}
	first := sample()
	<-time.After(100 * time.Millisecond)
	var both []string
	for _, id := range sample() {
		if slices.Contains(first, id) {
			both = append(both, id)
		}
	}
	if len(both) == 0 {
		return nil
	}
	return both
}
