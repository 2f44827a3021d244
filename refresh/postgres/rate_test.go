package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// maxInWindow returns the most starts of at that fall in one window of
// length w (a start at t counts in [t, t+w)); at is sorted.
func maxInWindow(at []time.Time, w time.Duration) int {
	most := 0
	for i := range at {
		j := i
		for j < len(at) && at[j].Before(at[i].Add(w)) {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// Three instances (each its own pool, store and scheduler) pass at the
// same instants of one clock over models due at once, under a rate limit
// of the queue (10 per 10s, burst 4: at most 4 in any 4s) and a rate_key
// limit on some of them (3 per 5s). The started_at of the attempts show
// at most N starts in any window of per (and of the burst's window), and
// every model starts exactly once, as soon as the windows allow. The
// models of tenant beta-, due after all of acme-'s, start in the first
// turns: the limit's free starts go to the tenants in turn.
func TestRateLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	queue := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 10, Per: refresh.Duration(10 * time.Second), Burst: 4}
	key := refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 3, Per: refresh.Duration(5 * time.Second)}
	for _, l := range []refresh.Limit{queue, key} {
		_, err := b.store.PutLimit(ctx, l, false)
		require.NoError(t, err)
	}
	const acme, beta = 45, 5
	var ms []refresh.Model
	for i := range acme {
		m := model(fmt.Sprintf("acme-%02d", i), t0)
		if i%3 == 0 { // under the rate_key limit only
			m.Queue, m.RateKey = "exports", key.Key
		}
		ms = append(ms, m)
	}
	for i := range beta {
		ms = append(ms, model(fmt.Sprintf("beta-%d", i), t0))
	}
	put(t, b.store, ms...)

	clock := refresh.NewVirtualClock(t0)
	var schedulers []*refresh.Scheduler
	for range 3 {
		pool, err := pgxpool.NewWithConfig(ctx, b.pool.Config())
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		s, err := refresh.NewScheduler(refresh.SchedulerConfig{
			Store: postgres.New(pool), Queue: memory.NewQueue(clock), Clock: clock, BatchSize: 7,
			TenantsFunc: func() []string { return []string{"acme-", "beta-"} },
		})
		require.NoError(t, err)
		schedulers = append(schedulers, s)
	}
	// Steps of uneven lengths, so that the instants of the passes fall
	// anywhere in the windows.
	steps := []time.Duration{137 * time.Millisecond, 311 * time.Millisecond, 89 * time.Millisecond, 502 * time.Millisecond}
	for i := 0; clock.Now().Before(t0.Add(70 * time.Second)); i++ {
		var wg sync.WaitGroup
		errs := make([]error, len(schedulers))
		for j, s := range schedulers {
			wg.Go(func() { _, errs[j] = s.RunOnce(ctx) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		clock.Advance(steps[i%len(steps)])
	}

	var all, queued, keyed, betas []time.Time
	for _, m := range ms {
		got, err := b.store.Get(ctx, m.ID)
		require.NoError(t, err)
		require.True(t, got.Running(), "%s started: %+v", m.ID, got.State)
		require.Equal(t, 1, got.AttemptNo, "%s started once", m.ID)
		require.False(t, got.WaitingForSlot, m.ID)
		history, err := b.store.History(ctx, m.ID, time.Time{}, 0)
		require.NoError(t, err)
		require.Len(t, history, 1, "%s has one attempt", m.ID)
		all = append(all, got.StartedAt)
		if m.RateKey != "" {
			keyed = append(keyed, got.StartedAt)
		} else {
			queued = append(queued, got.StartedAt)
		}
		if got.ID[:5] == "beta-" {
			betas = append(betas, got.StartedAt)
		}
	}
	for _, at := range [][]time.Time{all, queued, keyed, betas} {
		slices.SortFunc(at, time.Time.Compare)
	}
	require.Equal(t, 10, maxInWindow(queued, 10*time.Second), "queue: at most 10 in any 10s, and 10 when models wait")
	require.Equal(t, 4, maxInWindow(queued, 4*time.Second), "queue: at most 4 in any 4s (burst)")
	require.Equal(t, 3, maxInWindow(keyed, 5*time.Second), "rate_key: at most 3 in any 5s, and 3 when models wait")
	t.Logf("queue: last start %s; rate_key: last start %s; beta-: last start %s",
		queued[len(queued)-1].Sub(t0), keyed[len(keyed)-1].Sub(t0), betas[len(betas)-1].Sub(t0))
	// 35 starts at 4 per 4s and 10 per 10s, 15 at 3 per 5s: no window
	// is wasted.
	require.Less(t, queued[len(queued)-1].Sub(t0), 40*time.Second, "the queue's last start")
	require.Less(t, keyed[len(keyed)-1].Sub(t0), 25*time.Second, "the rate_key's last start")
	// Fair turns: beta-'s models, behind 45 of acme-'s, start within the
	// first 20 starts, not last.
	require.Less(t, betas[len(betas)-1].Sub(t0), 20*time.Second, "beta-'s last start")
}

// While a rate limit admits no start, a claim leaves out the due models
// it covers whose tenant already waits for it, so that the models due
// after them (of another tenant) are claimed at once; NextDue counts them
// from when the limit admits again. Once it does, they are claimed. A
// timeout or a debounced trigger is never held.
func TestClaimLeavesOutHeldBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	l := refresh.Limit{Kind: refresh.LimitQueue, Key: "tables", MaxStarts: 2, Per: refresh.Duration(time.Minute)}
	_, err := b.store.PutLimit(ctx, l, false)
	require.NoError(t, err)
	waiting := model("a-00", t0.Add(-time.Hour))
	waiting.WaitingForSlot, waiting.WaitingLimit, waiting.WaitingTenant = true, l.Name(), "a-"
	ms := []refresh.Model{waiting, model("b-1", t0.Add(-time.Minute))}
	for i := 1; i <= 10; i++ {
		ms = append(ms, model(fmt.Sprintf("a-%02d", i), t0.Add(-10*time.Minute+time.Duration(i)*time.Second)))
	}
	put(t, b.store, ms...)
	// The limit's 2 starts of the minute were made at t0.
	_, err = b.pool.Exec(ctx, `INSERT INTO limit_starts (kind, key, at, n) VALUES ('queue', 'tables', $1, 2)`, t0)
	require.NoError(t, err)

	claim := func(now time.Time) []string {
		var got []string
		_, err := b.store.ClaimDue(ctx, now, 3, func(due []refresh.Model, _ refresh.Slots) (refresh.Batch, error) {
			got = ids(due)
			return refresh.Batch{}, nil
		})
		require.NoError(t, err)
		return got
	}
	nextDue := func() time.Time {
		t.Helper()
		next, ok, err := b.store.NextDue(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		return next
	}
	remove := func(id string) {
		t.Helper()
		require.NoError(t, b.store.Modify(ctx, []string{id}, func(found []refresh.Model) (refresh.Batch, error) {
			return refresh.Batch{Changes: []refresh.Change{{Model: found[0], Delete: true}}}, nil
		}))
	}
	// a-'s backlog is left out: b-1 and a-run's timeout are claimed, then
	// the waiting model is looked at again.
	run := model("a-run", t0.Add(-30*time.Second))
	run.AttemptUID, run.AttemptNo, run.StartedAt, run.DeadlineAt = "u1", 1, t0.Add(-time.Hour), t0.Add(-30*time.Second)
	put(t, b.store, run)
	require.ElementsMatch(t, []string{"b-1", "a-run", "a-00"}, claim(t0.Add(time.Second)))
	require.Equal(t, t0.Add(-time.Minute), nextDue(), "b-1 is due")
	remove("b-1")
	remove("a-run")
	require.Equal(t, t0.Add(time.Minute), nextDue(), "a-'s backlog counts from when the limit admits again")

	// A debounced trigger of a model held for its start is not held.
	deb := model("a-deb", t0.Add(-5*time.Minute))
	deb.DebounceAt, deb.DebounceSince, deb.DebounceCause = t0.Add(30*time.Second), t0, "api"
	put(t, b.store, deb)
	require.Equal(t, t0.Add(30*time.Second), nextDue(), "a-deb's debounced trigger")
	require.ElementsMatch(t, []string{"a-deb", "a-00"}, claim(t0.Add(30*time.Second)))
	remove("a-deb")

	// The limit admits again: the backlog is claimed, the waiting model
	// offered.
	require.ElementsMatch(t, []string{"a-01", "a-02", "a-03", "a-00"}, claim(t0.Add(time.Minute)))
	require.Equal(t, t0.Add(-10*time.Minute+time.Second), nextDue())
}

// Without limits, a scheduler pass sends the statements it sent before
// the rate limits: whether limits exist (at most once a second), then the
// claim, the writes, the check of the claim floor (sent with the writes)
// and the commit; nothing of the slots lock, the held models or the logs
// of starts.
func TestPassWithoutLimitsStatements(t *testing.T) {
	t.Parallel()
	b := setup(t)
	put(t, b.store, model("a", t0), model("b", t0))
	st := &statements{keep: true}
	clock := refresh.NewVirtualClock(t0)
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: tracedStore(t, b, st), Queue: memory.NewQueue(clock), Clock: clock})
	require.NoError(t, err)
	res, err := s.RunOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, res.Started)
	var got []string
	for _, sql := range st.text {
		words := strings.Fields(sql)
		got = append(got, strings.Join(words[:min(3, len(words))], " "))
	}
	// The store is new: the models' policy is read once, after the claim.
	require.Equal(t, []string{"SELECT EXISTS (SELECT", "BEGIN", "SELECT ctid, id,", "SELECT id, policy", "UPDATE models AS", "INSERT INTO outbox", "SELECT (SELECT due_at", "COMMIT"}, got)
}
