package refresh_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The scheduler under rate limits and fair turns (scheduler.go,
// passlimits.go), on the memory store.

// putDue writes a model of queue q due at refreshAt, with rate key key.
func (b bundle) putDue(t *testing.T, id, key string, refreshAt time.Time) {
	t.Helper()
	m := refresh.Model{ID: id, Queue: "q", RateKey: key, Policy: mustPolicy(t, `{"timeout": "10m"}`), CreatedAt: t0,
		State: refresh.State{RefreshAt: refreshAt}}
	require.NoError(t, b.store.Modify(context.Background(), []string{id}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
}

func (b bundle) putLimit(t *testing.T, l refresh.Limit) {
	t.Helper()
	_, err := b.store.PutLimit(context.Background(), l, false)
	require.NoError(t, err)
}

func (b bundle) get(t *testing.T, id string) refresh.Model {
	t.Helper()
	m, err := b.store.Get(context.Background(), id)
	require.NoError(t, err)
	return m
}

// runAt runs one pass of s at now.
func (b bundle) runAt(t *testing.T, s *refresh.Scheduler, now time.Time) refresh.TickResult {
	t.Helper()
	b.clock.Set(now)
	res, err := s.RunOnce(context.Background())
	require.NoError(t, err)
	return res
}

// startedIDs returns the ids of the jobs pushed since the last call, in
// order.
func (b bundle) startedIDs() []string {
	var ids []string
	for _, j := range b.queue.Take("q", 1000) {
		ids = append(ids, j.ModelID)
	}
	return ids
}

// A rate limit admits max_starts starts per window: the others wait, with
// waiting_until, one wait event each, and start once the window moves.
func TestSchedulerRateLimit(t *testing.T) {
	b := setup(t)
	rate := refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 3, Per: refresh.Duration(time.Minute)}
	b.putLimit(t, rate)
	for i := range 5 {
		b.putDue(t, fmt.Sprintf("m%d", i+1), rate.Key, t0.Add(time.Duration(i-5)*time.Second))
	}
	b.putDue(t, "free", "other.example.com", t0) // not covered
	s := b.scheduler(t, refresh.SchedulerConfig{})

	res := b.runAt(t, s, t0)
	require.Equal(t, 4, res.Started)
	require.Equal(t, 2, res.Waiting)
	requireTime(t, t0.Add(time.Minute), res.NextAdmit)
	require.Equal(t, []string{"m1", "m2", "m3", "free"}, b.startedIDs())
	m4 := b.get(t, "m4")
	require.True(t, m4.WaitingForSlot)
	require.Equal(t, "rate_key:api.example.com", m4.WaitingLimit)
	requireTime(t, t0.Add(time.Minute), m4.WaitingUntil)
	require.Zero(t, m4.AttemptNo, "a wait is no attempt")

	res = b.runAt(t, s, t0.Add(30*time.Second))
	require.Equal(t, 0, res.Started)
	require.Equal(t, 2, res.Waiting)
	requireTime(t, t0.Add(time.Minute), res.NextAdmit)
	require.Equal(t, []refresh.LimitStat{{Limit: rate.Name(), Held: 2, Wait: 32 * time.Second}}, b.metrics.LimitStats(),
		"held once per wait; m4 has waited since t0-2s")

	res = b.runAt(t, s, t0.Add(time.Minute))
	require.Equal(t, 2, res.Started)
	require.Zero(t, res.Waiting)
	require.True(t, res.NextAdmit.IsZero(), "no limit held a start back")
	require.Equal(t, []string{"m4", "m5"}, b.startedIDs())
	require.Equal(t, []refresh.LimitStat{{Limit: rate.Name(), Held: 2}}, b.metrics.LimitStats())
	requireWaitCleared(t, b.get(t, "m5"))

	var waits []string
	for _, e := range b.events(t) {
		if e.Type == refresh.EventWait {
			waits = append(waits, e.ModelID+": "+e.Reason)
		}
	}
	require.Equal(t, []string{
		`m4: rate_key "api.example.com" (max_starts 3 per 1m)`,
		`m5: rate_key "api.example.com" (max_starts 3 per 1m)`,
	}, waits)

	// The log holds the starts of the window: those of t0 have left it.
	b.putDue(t, "m6", rate.Key, t0.Add(time.Minute))
	_, err := b.store.ClaimDue(context.Background(), t0.Add(time.Minute), 10, func(_ []refresh.Model, slots refresh.Slots) (refresh.Batch, error) {
		require.Equal(t, []refresh.Limit{rate}, slots.Limits)
		require.Equal(t, [][]refresh.RateStarts{{{At: t0.Add(time.Minute), N: 2}}}, slots.Rates)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
}

// A limit of both kinds holds a start back by either; a start that
// supersedes the model's own attempt (a debounce) takes over its slot but
// counts as a start.
func TestSchedulerLimitBothKinds(t *testing.T) {
	b := setup(t)
	both := refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxRunning: 1, MaxStarts: 1, Per: refresh.Duration(time.Hour)}
	b.putLimit(t, both)
	// "deb" runs and a debounce window of its ends now; "idle" is due.
	deb := refresh.Model{ID: "deb", Queue: "q", CreatedAt: t0,
		Policy: mustPolicy(t, `{"timeout": "1h", "trigger_debounce": {"quiet": "30s", "max_wait": "5m"}}`)}
	deb = runningAttempt(t, deb, "u1", 1, t0.Add(-time.Minute))
	deb, _ = refresh.Trigger(deb, t0.Add(-30*time.Second))
	require.NoError(t, b.store.Modify(context.Background(), []string{"deb"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: deb}}}, nil
	}))
	b.putDue(t, "idle", "", t0.Add(-time.Second))
	s := b.scheduler(t, refresh.SchedulerConfig{})

	res := b.runAt(t, s, t0)
	require.Equal(t, 1, res.Started)
	require.Equal(t, []string{"deb"}, b.startedIDs())
	idle := b.get(t, "idle")
	require.True(t, idle.WaitingForSlot)
	require.Equal(t, "queue:q", idle.WaitingLimit)
	require.True(t, idle.WaitingUntil.IsZero(), "held back by the slot, the first rule checked")

	// The slot frees (the attempt times out at t0+1h); the starts of the
	// hour are used up by the supersession.
	b.clock.Set(t0.Add(59 * time.Minute))
	m := b.get(t, "deb")
	m, _ = refresh.Cancel(m, t0.Add(59*time.Minute))
	require.NoError(t, b.store.Modify(context.Background(), []string{"deb"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	res = b.runAt(t, s, t0.Add(59*time.Minute))
	require.Zero(t, res.Started)
	requireTime(t, t0.Add(time.Hour), res.NextAdmit)
	res = b.runAt(t, s, t0.Add(time.Hour))
	require.Equal(t, 1, res.Started)
	require.Equal(t, []string{"idle"}, b.startedIDs())
}

// With limits, the starts of a pass go to the tenants in turn: the
// tenants are the keys of the prefix limits and those of TenantsFunc; the
// models under none share one turn.
func TestSchedulerFairTurns(t *testing.T) {
	b := setup(t)
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 7, Per: refresh.Duration(time.Minute)})
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitPrefix, Key: "b-", MaxRunning: 100})
	for i := range 6 { // a- is due first
		b.putDue(t, fmt.Sprintf("a-%d", i+1), "", t0.Add(time.Duration(i-20)*time.Second))
	}
	b.putDue(t, "b-1", "", t0.Add(-10*time.Second))
	b.putDue(t, "b-2", "", t0.Add(-9*time.Second))
	b.putDue(t, "z-1", "", t0.Add(-3*time.Second))
	b.putDue(t, "z-2", "", t0.Add(-2*time.Second))
	s := b.scheduler(t, refresh.SchedulerConfig{TenantsFunc: func() []string { return []string{"a-"} }})
	res := b.runAt(t, s, t0)
	require.Equal(t, 7, res.Started)
	require.Equal(t, []string{"a-1", "b-1", "z-1", "a-2", "b-2", "z-2", "a-3"}, b.startedIDs())
	w := b.get(t, "a-4")
	require.Equal(t, "a-", w.WaitingTenant)
	requireTime(t, t0.Add(time.Minute), w.WaitingUntil)
}

// The turns go round across passes: with a limit that admits 1 start a
// pass (a rate limit, or a concurrency limit whose one attempt ends
// between the passes), tenant B's 2 models start in turn with A's, not
// after A's whole backlog, though A's have waited longer.
func TestSchedulerFairTurnsAcrossPasses(t *testing.T) {
	for _, l := range []refresh.Limit{
		{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 1, Per: refresh.Duration(time.Second)},
		{Kind: refresh.LimitQueue, Key: "q", MaxRunning: 1},
	} {
		t.Run(l.String(), func(t *testing.T) {
			b := setup(t)
			b.putLimit(t, l)
			for i := range 6 { // a- is due first
				b.putDue(t, fmt.Sprintf("a-%d", i+1), "", t0.Add(time.Duration(i-20)*time.Second))
			}
			b.putDue(t, "b-1", "", t0.Add(-10*time.Second))
			b.putDue(t, "b-2", "", t0.Add(-9*time.Second))
			s := b.scheduler(t, refresh.SchedulerConfig{TenantsFunc: func() []string { return []string{"a-", "b-"} }})
			var order []string
			for step := range 8 {
				require.Equal(t, 1, b.runAt(t, s, t0.Add(time.Duration(step)*time.Second)).Started, "step %d", step)
				id := b.startedIDs()[0]
				order = append(order, id)
				// The attempt ends: the model is idle until next week.
				m := b.get(t, id)
				m.AttemptUID, m.StartedAt, m.DeadlineAt, m.RefreshAt = "", time.Time{}, time.Time{}, t0.Add(7*24*time.Hour)
				require.NoError(t, b.store.Modify(context.Background(), []string{id}, func([]refresh.Model) (refresh.Batch, error) {
					return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
				}))
			}
			require.Equal(t, []string{"a-1", "b-1", "a-2", "b-2", "a-3", "a-4", "a-5", "a-6"}, order)
		})
	}
}

// While models wait for a rate limit, Start sleeps until the limit admits
// a start again, sooner than SlotPoll.
func TestSchedulerSleepsUntilAdmitted(t *testing.T) {
	b := setup(t)
	b.putLimit(t, refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 1, Per: refresh.Duration(2 * time.Second)})
	b.putDue(t, "m1", "", t0)
	b.putDue(t, "m2", "", t0)
	ticks := make(chan refresh.TickResult, 10)
	s := b.scheduler(t, refresh.SchedulerConfig{SlotPoll: 10 * time.Second, TickedFunc: func(r refresh.TickResult, err error) {
		require.NoError(t, err)
		ticks <- r
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	r := <-ticks
	require.Equal(t, 1, r.Started)
	requireTime(t, t0.Add(2*time.Second), r.NextAdmit)
	waitFor(t, func() bool { return b.clock.Waiters() == 1 })
	b.clock.Set(t0.Add(2*time.Second - time.Nanosecond))
	select {
	case r := <-ticks:
		t.Fatalf("ticked early: %+v", r)
	default:
	}
	b.clock.Set(t0.Add(2 * time.Second))
	waitFor(t, func() bool { return len(ticks) > 0 }) // not at SlotPoll: the clock does not move on
	require.Equal(t, 1, (<-ticks).Started)
	require.Equal(t, []string{"m1", "m2"}, b.startedIDs())
	cancel()
	require.NoError(t, <-done)
}

// A pass whose models no limit covers writes no starts: those of an
// earlier pass are not counted again.
func TestSchedulerStartsCountedOnce(t *testing.T) {
	b := setup(t)
	rate := refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 5, Per: refresh.Duration(time.Minute)}
	b.putLimit(t, rate)
	s := b.scheduler(t, refresh.SchedulerConfig{})
	b.putDue(t, "a", "", t0)
	require.Equal(t, 1, b.runAt(t, s, t0).Started)
	other := refresh.Model{ID: "b", Queue: "other", Policy: mustPolicy(t, `{"timeout": "10m"}`), CreatedAt: t0,
		State: refresh.State{RefreshAt: t0.Add(time.Second)}}
	require.NoError(t, b.store.Modify(context.Background(), []string{"b"}, func([]refresh.Model) (refresh.Batch, error) {
		return refresh.Batch{Changes: []refresh.Change{{Model: other}}}, nil
	}))
	require.Equal(t, 1, b.runAt(t, s, t0.Add(time.Second)).Started)
	b.putDue(t, "c", "", t0.Add(2*time.Second))
	_, err := b.store.ClaimDue(context.Background(), t0.Add(2*time.Second), 10, func(_ []refresh.Model, slots refresh.Slots) (refresh.Batch, error) {
		require.Equal(t, [][]refresh.RateStarts{{{At: t0, N: 1}}}, slots.Rates)
		return refresh.Batch{}, nil
	})
	require.NoError(t, err)
}
