package refresh_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The loops of several schedulers on one store under rate limits, on a
// manual clock.

// passAll runs rounds passes of each scheduler, the schedulers at once.
func passAll(t *testing.T, schedulers []*refresh.Scheduler, rounds int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(schedulers)*rounds)
	for _, s := range schedulers {
		wg.Go(func() {
			for range rounds {
				if _, err := s.RunOnce(context.Background()); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// mostInWindow returns the most starts among ats in any window [t, t+w).
func mostInWindow(ats []time.Time, w time.Duration) int {
	most := 0
	for _, from := range ats {
		n := 0
		for _, at := range ats {
			if !at.Before(from) && at.Before(from.Add(w)) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// Three schedulers on one store start at most max_starts models in any
// window of per, and at most burst in any burst window, over a run of
// many passes; and they start as many as the limit admits.
func TestRateLimitAcrossSchedulers(t *testing.T) {
	b := setup(t)
	rate := refresh.Limit{Kind: refresh.LimitRateKey, Key: "api.example.com", MaxStarts: 10, Per: refresh.Duration(3 * time.Second), Burst: 4}
	b.putLimit(t, rate)
	const models = 120
	for i := range models {
		b.putDue(t, fmt.Sprintf("m%03d", i), rate.Key, t0.Add(time.Duration(i)*50*time.Millisecond))
	}
	var schedulers []*refresh.Scheduler
	for range 3 {
		schedulers = append(schedulers, b.scheduler(t, refresh.SchedulerConfig{BatchSize: 16}))
	}
	var ats []time.Time
	for step := range 400 { // 400 steps of 137ms: 54.8s
		b.clock.Set(t0.Add(time.Duration(step) * 137 * time.Millisecond))
		passAll(t, schedulers, 2)
		for _, j := range b.queue.Take("q", 1000) {
			ats = append(ats, j.StartedAt)
		}
	}
	require.Len(t, ats, models, "each model started once")
	require.Equal(t, rate.MaxStarts, mostInWindow(ats, time.Duration(rate.Per)), "at most max_starts in any window of per")
	require.Equal(t, rate.Burst, mostInWindow(ats, 1200*time.Millisecond), "at most burst in any window of per*burst/max_starts")
	// The limit was used: 120 starts at 10 per 3s take 36s.
	last := ats[0]
	for _, at := range ats {
		if at.After(last) {
			last = at
		}
	}
	require.Less(t, last.Sub(t0), 38*time.Second, "the last start came at %s", last.Sub(t0))
}

// Tenant A has many due models and tenant B 10: under a rate limit, B's
// all start in the first turn round that sees them, not after A's.
func TestRateLimitFairTenants(t *testing.T) {
	b := setup(t)
	rate := refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxStarts: 20, Per: refresh.Duration(time.Second)}
	b.putLimit(t, rate)
	for i := range 500 {
		b.putDue(t, fmt.Sprintf("a-%03d", i), "", t0)
	}
	for i := range 10 {
		b.putDue(t, fmt.Sprintf("b-%d", i), "", t0)
	}
	tenants := func() []string { return []string{"a-", "b-"} }
	var schedulers []*refresh.Scheduler
	for range 3 {
		schedulers = append(schedulers, b.scheduler(t, refresh.SchedulerConfig{BatchSize: 100, TenantsFunc: tenants}))
	}
	startedAt := map[string]time.Time{}
	var order []string
	for step := range 30 {
		b.clock.Set(t0.Add(time.Duration(step) * time.Second))
		passAll(t, schedulers, 3)
		for _, j := range b.queue.Take("q", 1000) {
			startedAt[j.ModelID] = j.StartedAt
			order = append(order, j.ModelID)
		}
	}
	require.Len(t, startedAt, 510)
	// At t0 the passes see A's models first (by id) and start 20 of them;
	// B's wait from the last passes of t0 on. At t0+1s the 20 starts go
	// to both tenants in turn, starting after A, which took the last
	// start: B's 10 all start.
	for i := range 10 {
		id := fmt.Sprintf("b-%d", i)
		requireTime(t, t0.Add(time.Second), startedAt[id], id)
	}
	require.Equal(t, []string{"b-0", "a-020", "b-1"}, order[20:23], "the first turn of t0+1s is B's")
	// A is not slowed: 20 starts every second until its models are done.
	for step := range 25 {
		n := 0
		for _, at := range startedAt {
			if at.Equal(t0.Add(time.Duration(step) * time.Second)) {
				n++
			}
		}
		require.Equal(t, 20, n, "starts at t0+%ds", step)
	}
}
