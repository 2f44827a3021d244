package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// TestPruneLargeHistory prunes a history of 200,000 attempts (200 models,
// one attempt every 200 minutes each, over 139 days) by age (90 days) and
// by count (300 per model) while another instance keeps ending attempts
// of a model of its own: both rules hold, the attempts kept are exactly
// each model's newest within the age, and no write waits long for a lock
// (the writer's lock_timeout is a second; a machine too busy to run it
// soon does not count).
func TestPruneLargeHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("prunes 200,000 rows")
	}
	b := setup(t)
	ctx := context.Background()
	const (
		models = 200
		rows   = 200_000
		keep   = 300
		maxAge = 90 * 24 * time.Hour
	)
	now := t0
	_, err := b.pool.Exec(ctx, `INSERT INTO models (id, created_at)
		SELECT 'm' || lpad(i::text, 3, '0'), $1 FROM generate_series(0, $2 - 1) i`, now, models)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at, finished_at, outcome)
		SELECT 'a' || g, 'm' || lpad((g % $2)::text, 3, '0'), 1,
			$1::timestamptz - g * interval '1 minute', $1::timestamptz - g * interval '1 minute' + interval '1 hour',
			$1::timestamptz - g * interval '1 minute' + interval '10 seconds', 'success'
		FROM generate_series(1, $3) g`, now, models, rows)
	require.NoError(t, err)
	put(t, b.store, model("writer", time.Time{}))
	// What must stay: each model's keep newest attempts among those
	// younger than the maximum age.
	_, err = b.pool.Exec(ctx, `CREATE TABLE expected AS SELECT uid FROM (
			SELECT uid, row_number() OVER (PARTITION BY model_id ORDER BY started_at DESC, uid DESC) AS n
			FROM attempts WHERE started_at >= $1) r
		WHERE n <= $2`, now.Add(-maxAge), keep)
	require.NoError(t, err)
	var want int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM expected`).Scan(&want))
	require.Less(t, want, rows/2, "both rules must have rows to delete")
	_, err = b.pool.Exec(ctx, `ANALYZE attempts`)
	require.NoError(t, err)

	// The writer ends one attempt after another until pruning is done.
	writer := otherStore(t, b, postgres.Session{LockTimeout: time.Second})
	done := make(chan struct{})
	var wg sync.WaitGroup
	var slowest time.Duration
	writes := 0
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			err := writer.Modify(ctx, []string{"writer"}, func(found []refresh.Model) (refresh.Batch, error) {
				a := &refresh.Attempt{ModelID: "writer", UID: fmt.Sprintf("w%d", i), AttemptNo: 1,
					StartedAt: now, DeadlineAt: now.Add(time.Hour), FinishedAt: now, Outcome: "success"}
				return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Attempt: a}}}, nil
			})
			if err != nil {
				t.Errorf("write during pruning: %v", err)
				return
			}
			slowest = max(slowest, time.Since(start))
			writes++
		}
	})

	metrics := &refresh.Metrics{}
	p, err := refresh.NewPruner(refresh.PrunerConfig{Store: b.store, Clock: refresh.NewVirtualClock(now),
		MaxAge: maxAge, MaxPerModel: keep, Metrics: metrics})
	require.NoError(t, err)
	start := time.Now()
	res, err := p.RunOnce(ctx)
	took := time.Since(start)
	close(done)
	wg.Wait()
	require.NoError(t, err)
	require.False(t, res.Busy)
	t.Logf("pruned %d by age and %d by count in %d steps in %s; %d writes meanwhile, the slowest %s",
		res.ByAge, res.ByCount, res.Steps, took.Round(time.Millisecond), writes, slowest.Round(time.Millisecond))

	var left, older, overKeep, missing, extra int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE model_id <> 'writer'`).Scan(&left))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE started_at < $1`, now.Add(-maxAge)).Scan(&older))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT model_id FROM attempts
		WHERE model_id <> 'writer' GROUP BY model_id HAVING count(*) > $1) o`, keep).Scan(&overKeep))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM expected e
		WHERE NOT EXISTS (SELECT FROM attempts a WHERE a.uid = e.uid)`).Scan(&missing))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts a
		WHERE a.model_id <> 'writer' AND NOT EXISTS (SELECT FROM expected e WHERE e.uid = a.uid)`).Scan(&extra))
	require.Zero(t, older, "attempts older than the maximum age")
	require.Zero(t, overKeep, "models with more attempts than kept")
	require.Zero(t, missing, "newest attempts deleted")
	require.Zero(t, extra, "attempts that should have been deleted")
	require.Equal(t, want, left)
	var writerLeft int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE model_id = 'writer'`).Scan(&writerLeft))
	require.Equal(t, rows-want+writes-writerLeft, res.ByAge+res.ByCount, "deleted: the old rows, and the writer's beyond those kept")
	require.Positive(t, res.ByAge)
	require.Positive(t, res.ByCount)
	require.Equal(t, int64(res.ByAge), metrics.HistoryPrunedByAge.Load())
	require.Equal(t, int64(res.ByCount), metrics.HistoryPrunedByCount.Load())
	require.Positive(t, writes)

	// A second pass finds nothing more but the writer's last attempts.
	res, err = p.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, max(0, writerLeft-keep), res.ByAge+res.ByCount)
}

// TestPruneOneAtATime: while another transaction prunes (holds the
// advisory lock), PruneHistory answers Busy at once and deletes nothing.
func TestPruneOneAtATime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	put(t, b.store, model("m1", time.Time{}))
	_, err := b.pool.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at) VALUES ('a1', 'm1', 1, $1)`, t0.Add(-time.Hour))
	require.NoError(t, err)
	req := refresh.PruneRequest{Before: t0, Models: 10, Limit: 10}

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.freshen_prune'))`)
	require.NoError(t, err)
	res, err := b.store.PruneHistory(ctx, req)
	require.NoError(t, err)
	require.Equal(t, refresh.PruneResult{Busy: true}, res)
	require.NoError(t, tx.Rollback(ctx))

	res, err = b.store.PruneHistory(ctx, req)
	require.NoError(t, err)
	require.Equal(t, refresh.PruneResult{ByAge: 1, Done: true}, res)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts`).Scan(&n))
	require.Zero(t, n)
}

// The count rule keeps a model's newest attempts as History orders them:
// among those that started at the same instant, the greatest uids; it
// deletes the others of that instant and the older ones, however many a
// step may delete.
func TestPruneCountTies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	put(t, b.store, model("m", time.Time{}))
	put(t, b.store, model("n", time.Time{}))
	_, err := b.pool.Exec(ctx, `INSERT INTO attempts (uid, model_id, attempt_no, started_at, finished_at, outcome)
		SELECT u, m, 1, $1::timestamptz + at * interval '1 minute', $1, 'success'
		FROM (VALUES ('old', 'm', -1), ('t1', 'm', 0), ('t2', 'm', 0), ('t3', 'm', 0), ('t4', 'm', 0), ('t5', 'm', 0),
			('new1', 'm', 1), ('new2', 'm', 2), ('n1', 'n', 0), ('n2', 'n', 0), ('n3', 'n', 0)) v(u, m, at)`, t0)
	require.NoError(t, err)

	for _, limit := range []int{1, 10} {
		res, err := b.store.PruneHistory(ctx, refresh.PruneRequest{Keep: 4, Models: 10, Limit: limit})
		require.NoError(t, err)
		if limit == 1 {
			require.Equal(t, refresh.PruneResult{ByCount: 1}, res, "a step that deleted its limit looks at the same models again")
		} else {
			require.Equal(t, refresh.PruneResult{ByCount: 3, Done: true}, res)
		}
	}
	h, err := b.store.History(ctx, "m", time.Time{}, 0)
	require.NoError(t, err)
	var uids []string
	for _, a := range h {
		uids = append(uids, a.UID)
	}
	require.Equal(t, []string{"new2", "new1", "t5", "t4"}, uids)
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM attempts WHERE model_id = 'n'`).Scan(&n))
	require.Equal(t, 3, n, "a model with fewer attempts than kept keeps them all")
}
