package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// limitsE2EModels is how many models TestE2ELimitThreeInstances makes due:
// FRESHEN_LIMITS_E2E_N, or 5,000.
func limitsE2EModels(t *testing.T) int {
	t.Helper()
	s := os.Getenv("FRESHEN_LIMITS_E2E_N")
	if s == "" {
		return 5000
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "FRESHEN_LIMITS_E2E_N")
	require.GreaterOrEqual(t, n, 100, "FRESHEN_LIMITS_E2E_N: must be >= 100")
	return n
}

// TestE2ELimitThreeInstances runs three freshen serve on one database and
// one Redis with the prefix limit acme- max_running 7 (seeded by each
// instance's --max-running), and makes 5,000 models of one queue due at
// once: four in five named acme-..., the others (every fifth in due order)
// not covered by the limit. Two workers of 32 handlers each run the jobs,
// each in a short random time, until every model has one successful
// attempt.
//
// Never more than 7 acme- jobs run at once: neither as the workers see
// them nor as the database counts current attempts, sampled from a
// goroutine throughout. Every model runs exactly once. The uncovered
// models are not held back: they all finish before half the acme- models
// have. A model over the limit shows waiting_for_slot (in SQL and in the
// API) while it waits and is never running then; it has at most one wait
// event, naming the limit, before its start. The acme- models start in
// due order, across the three instances.
func TestE2ELimitThreeInstances(t *testing.T) {
	t.Parallel()
	const (
		limit  = 7
		prefix = "acme-"
		q      = "lim"
	)
	n := limitsE2EModels(t)
	e := newEnv(t)
	ctx := context.Background()

	// --max-sleep 100ms: a slot freed by an outcome is taken by the next
	// pass that looks at the waiting models, at most that long after.
	var procs []*proc
	for i := range 3 {
		procs = append(procs, e.serve(fmt.Sprintf("inst-%d", i), "--batch-size", "200", "--log-level", "warn",
			"--max-sleep", "100ms", "--max-running", "prefix:"+prefix+"="+strconv.Itoa(limit)))
	}
	code, limits := request(t, "GET", procs[2].base+"/limits", "")
	require.Equal(t, http.StatusOK, code, limits)
	require.Equal(t, []any{map[string]any{"kind": "prefix", "key": prefix, "max_running": float64(limit)}}, limits["limits"])

	// The workers count the acme- jobs that run at the same time: a job
	// counts from the handler's start to its return, which comes before
	// its outcome is posted, so before its slot is free in the database.
	var running, maxRunning atomic.Int64
	var mu sync.Mutex
	answered := map[string]int{} // model id -> jobs run
	handler := func(ctx context.Context, job queue.Job) error {
		if strings.HasPrefix(job.ModelID, prefix) {
			now := running.Add(1)
			defer running.Add(-1)
			for {
				seen := maxRunning.Load()
				if now <= seen || maxRunning.CompareAndSwap(seen, now) {
					break
				}
			}
		}
		// The job's work: 2 to 12ms.
		select {
		case <-time.After(time.Duration(2000+rand.IntN(10_000)) * time.Microsecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		mu.Lock()
		answered[job.ModelID]++
		mu.Unlock()
		return nil
	}
	for i := range 2 {
		worker, err := queue.NewWorker(e.rdb, queue.WorkerOptions{
			Prefix: e.prefix, Queue: q, Concurrency: 32, ID: fmt.Sprintf("w%d", i), Block: 200 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler),
		}, handler)
		require.NoError(t, err)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- worker.Run(wctx) }()
		t.Cleanup(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}

	// The database's view, sampled every 10ms until the end: the current
	// attempts of acme- models, the models waiting for a slot, and those
	// of them that are not acme- or that run.
	type sample struct{ running, waiting, badWaiting int }
	var samples []sample
	var sampleErr error
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			var s sample
			if err := e.db.QueryRow(ctx, `SELECT
					count(*) FILTER (WHERE id LIKE 'acme-%' AND attempt_uid IS NOT NULL),
					count(*) FILTER (WHERE waiting_for_slot),
					count(*) FILTER (WHERE waiting_for_slot AND (id NOT LIKE 'acme-%' OR attempt_uid IS NOT NULL))
				FROM models`).Scan(&s.running, &s.waiting, &s.badWaiting); err != nil {
				sampleErr = err
				return
			}
			samples = append(samples, s)
		}
	}()
	stopSamplers := sync.OnceFunc(func() {
		close(stopSampling)
		<-sampled
	})
	t.Cleanup(stopSamplers)

	// n on-demand models, due now in the order of their number: every
	// fifth is other-NNNNN, the rest acme-NNNNN.
	policy, err := refresh.ParsePolicy([]byte(`{"timeout": "10m"}`), refresh.Limits{})
	require.NoError(t, err)
	stored, err := json.Marshal(policy)
	require.NoError(t, err)
	_, err = e.db.Exec(ctx, `CREATE TABLE due (id text PRIMARY KEY, due_at timestamptz NOT NULL, rank int NOT NULL)`)
	require.NoError(t, err)
	begin := time.Now()
	_, err = e.db.Exec(ctx, `WITH m AS (
			INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
			SELECT CASE WHEN i % 5 = 0 THEN 'other-' ELSE 'acme-' END || lpad(i::text, 5, '0'),
				$1, '{}', (SELECT freshen_policy_id($2::jsonb)), now(), now() - ($3::int - i) * interval '1 microsecond'
			FROM generate_series(1, $3::int) AS i
			RETURNING id, refresh_at
		)
		INSERT INTO due SELECT id, refresh_at, row_number() OVER (ORDER BY refresh_at, id) FROM m`, q, string(stored), n)
	require.NoError(t, err)
	_, err = e.db.Exec(ctx, `SELECT pg_notify($1, current_schema())`, postgres.NotifyChannel)
	require.NoError(t, err)
	acmeN := e.count(`SELECT count(*) FROM due WHERE id LIKE 'acme-%'`)
	otherN := n - acmeN

	// The last acme- model in due order waits for a slot almost to the
	// end: the API shows it waiting, and not running. A snapshot of the
	// waiting models is kept to find their wait events.
	last := e.count(`SELECT max(rank) FROM due WHERE id LIKE 'acme-%'`)
	lastID := fmt.Sprintf("acme-%05d", last)
	var view map[string]any
	waitFor(t, 60*time.Second, lastID+" to wait for a slot", func() bool {
		code, view = request(t, "GET", procs[0].base+"/models/"+lastID, "")
		require.Equal(t, http.StatusOK, code, view)
		return view["waiting_for_slot"] == true
	})
	require.Equal(t, "waiting_for_slot", view["state"], view)
	require.Equal(t, "prefix:"+prefix, view["waiting_limit"], view)
	require.Nil(t, view["attempt_uid"], view)
	var waitingSnapshot []string
	rows, err := e.db.Query(ctx, `SELECT id FROM models WHERE waiting_for_slot ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		waitingSnapshot = append(waitingSnapshot, id)
	}
	require.NoError(t, rows.Err())
	require.Contains(t, waitingSnapshot, lastID)

	waitFor(t, 5*time.Minute, "every model to finish one attempt", func() bool {
		return e.count(`SELECT count(*) FROM attempt_history WHERE outcome IS NOT NULL`) >= n
	})
	took := time.Since(begin)
	stopSamplers()
	require.NoError(t, sampleErr)

	// Never more than the limit, as the workers saw it and as the database
	// counted it.
	sqlMax, waitingMax := 0, 0
	for i, s := range samples {
		require.LessOrEqual(t, s.running, limit, "sample %d: current attempts of acme- models", i)
		require.Zero(t, s.badWaiting, "sample %d: models waiting for a slot that are not acme- or that run", i)
		sqlMax, waitingMax = max(sqlMax, s.running), max(waitingMax, s.waiting)
	}
	workerMax := int(maxRunning.Load())
	t.Logf("%d models (%d acme-, %d other) done in %s: %.0f acme- starts/s; acme- jobs at once: at most %d seen by the workers, %d in %d SQL samples; at most %d models waiting",
		n, acmeN, otherN, took.Round(time.Millisecond), float64(acmeN)/took.Seconds(), workerMax, sqlMax, len(samples), waitingMax)
	require.LessOrEqual(t, workerMax, limit, "acme- jobs running at once, seen by the workers")
	require.Equal(t, limit, sqlMax, "the limit was reached: the acme- models queued for its slots")

	// Every model ran exactly once, at or after its due time.
	require.Equal(t, n, e.count(`SELECT count(*) FROM attempt_history`))
	require.Equal(t, n, e.count(`SELECT count(*) FROM attempt_history a JOIN due d ON d.id = a.model_id
		WHERE a.outcome = 'success' AND a.attempt_no = 1 AND a.started_at >= d.due_at`))
	require.Equal(t, n, e.count(`SELECT count(*) FROM models
		WHERE last_success_at IS NOT NULL AND attempt_uid IS NULL AND refresh_at IS NULL AND NOT waiting_for_slot`))
	e.checkNoOverlap()
	mu.Lock()
	require.Len(t, answered, n)
	for id, jobs := range answered {
		require.Equal(t, 1, jobs, "jobs of model %s", id)
	}
	mu.Unlock()

	// The uncovered models were not held back by the waiting ones: the
	// last of them finished before half the acme- models had.
	var otherLast time.Time
	require.NoError(t, e.db.QueryRow(ctx, `SELECT max(finished_at) FROM attempt_history WHERE model_id LIKE 'other-%'`).Scan(&otherLast))
	acmeBefore := e.count(`SELECT count(*) FROM attempt_history WHERE model_id LIKE 'acme-%' AND finished_at <= $1`, otherLast)
	var otherP99, acmeP99 float64
	require.NoError(t, e.db.QueryRow(ctx, `SELECT
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - d.due_at)) FILTER (WHERE d.id LIKE 'other-%'),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM a.started_at - d.due_at)) FILTER (WHERE d.id LIKE 'acme-%')
		FROM attempt_history a JOIN due d ON d.id = a.model_id`).Scan(&otherP99, &acmeP99))
	t.Logf("start lateness p99: other %.2fs, acme- %.2fs; the last other model finished %s after the insert, when %d acme- models had",
		otherP99, acmeP99, otherLast.Sub(begin).Round(time.Millisecond), acmeBefore)
	require.Less(t, acmeBefore, acmeN/2, "acme- models finished before the last uncovered one")

	// The events stream: a wait event is published once per wait, for
	// acme- models only, naming the limit, before the model's start; every
	// model seen waiting has one.
	var events [][3]string
	waitFor(t, 30*time.Second, "every success to be published", func() bool {
		events = streamEvents(t, e.rdb, e.key("events"))
		succeeded := 0
		for _, ev := range events {
			if ev[0] == refresh.LifecycleSucceeded {
				succeeded++
			}
		}
		return succeeded >= n
	})
	waits := map[string]int{}
	// Each event is published once: the publishers of the three
	// instances take turns, and none publishes what another published.
	seen := map[[3]string]bool{}
	for _, ev := range events {
		require.False(t, seen[ev], "event published twice: %s", ev)
		seen[ev] = true
	}
	startAt := map[string]time.Time{}
	for _, ev := range events {
		typ, id := ev[0], ev[1]
		var body refresh.Event
		require.NoError(t, json.Unmarshal([]byte(ev[2]), &body))
		switch typ {
		case refresh.EventWait:
			require.True(t, strings.HasPrefix(id, prefix), "wait event of %s", id)
			_, started := startAt[id]
			require.False(t, started, "wait event of %s after its start", id)
			require.Equal(t, fmt.Sprintf("prefix %q (max_running %d)", prefix, limit), body.Reason, ev[2])
			waits[id]++
		case refresh.LifecycleStarted:
			startAt[id] = body.At
		}
	}
	require.Len(t, startAt, n)
	for id, k := range waits {
		require.Equal(t, 1, k, "wait events of %s", id)
	}
	for _, id := range waitingSnapshot {
		require.Equal(t, 1, waits[id], "wait events of %s, seen waiting", id)
	}
	t.Logf("%d wait events; %d models waiting in the snapshot", len(waits), len(waitingSnapshot))
	require.True(t, slices.ContainsFunc(events, func(ev [3]string) bool { return ev[0] == refresh.EventWait && ev[1] == lastID }))

	// Slots by due order, across the instances: the acme- models started
	// in the order of their due time, as the events stream (in commit
	// order) shows their starts.
	rank := map[string]int{}
	rows, err = e.db.Query(ctx, `SELECT id, rank FROM due WHERE id LIKE 'acme-%'`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var r int
		require.NoError(t, rows.Scan(&id, &r))
		rank[id] = r
	}
	require.NoError(t, rows.Err())
	outOfTurn, prev, prevID := 0, 0, ""
	for _, ev := range events {
		if ev[0] != refresh.LifecycleStarted || !strings.HasPrefix(ev[1], prefix) {
			continue
		}
		if r := rank[ev[1]]; r < prev {
			if outOfTurn == 0 {
				t.Errorf("%s (due rank %d) started after %s (due rank %d)", ev[1], r, prevID, prev)
			}
			outOfTurn++
		} else {
			prev, prevID = r, ev[1]
		}
	}
	require.Zero(t, outOfTurn, "acme- models started out of due order")

	for _, p := range procs {
		p.stop()
	}
}
