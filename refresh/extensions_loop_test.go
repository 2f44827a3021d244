package refresh_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// The loops applying the extensions of docs/policy.md on the memory
// store.

// TestSchedulerConcurrencyLimit: a queue limit of 2 starts the two
// earliest of four due models, the others wait (one wait event each, none
// on later passes), and an ended attempt frees a slot for the next one by
// refresh_at, then id.
func TestSchedulerConcurrencyLimit(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	for _, id := range []string{"d", "c", "b", "a"} {
		b.put(t, id, `{"timeout": "10m"}`, true)
	}
	_, err := b.store.PutLimit(ctx, refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxRunning: 2}, false)
	require.NoError(t, err)
	s := b.scheduler(t, refresh.SchedulerConfig{})

	res, err := s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.TickResult{Claimed: 4, Started: 2, Waiting: 2}, res)
	started := map[string]bool{}
	for _, j := range b.queue.Take("q", 10) {
		started[j.ModelID] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true}, started)
	for _, id := range []string{"c", "d"} {
		m, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		require.True(t, m.WaitingForSlot, id)
		require.Equal(t, refresh.PhaseWaitingForSlot, m.Phase())
	}
	counts, _, err := b.store.CountModels(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, int64(2), counts.WaitingForSlot)

	// A second pass writes nothing: the waits are already recorded.
	res, err = s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.TickResult{Claimed: 2, Waiting: 2}, res)

	// a succeeds: c takes its slot.
	a, err := b.store.Get(ctx, "a")
	require.NoError(t, err)
	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: a.AttemptUID, Type: refresh.OutcomeSuccess})
	_, err = b.consumer(t, b.store).RunOnce(ctx)
	require.NoError(t, err)
	res, err = s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Started)
	jobs := b.queue.Take("q", 10)
	require.Len(t, jobs, 1)
	require.Equal(t, "c", jobs[0].ModelID)

	var waits []string
	for _, e := range b.events(t) {
		if e.Type == refresh.EventWait {
			waits = append(waits, e.ModelID+": "+e.Reason)
		}
	}
	require.Equal(t, []string{`c: queue "q" (max_running 2)`, `d: queue "q" (max_running 2)`}, waits)

	// Without the limit, d starts.
	require.NoError(t, b.store.DeleteLimit(ctx, refresh.LimitQueue, "q"))
	res, err = s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Started)
}

// TestSchedulerWakesForExtensions: the scheduler's pass applies what
// DueAt makes due besides starts: the overdue instant (freshness_lost)
// and a debounce window.
func TestSchedulerWakesForExtensions(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "fresh", `{"max_age": "1h", "timeout": "10m"}`, false)
	b.put(t, "debounced", `{"trigger_debounce": {"quiet": "30s", "max_wait": "5m"}, "timeout": "10m"}`, false)
	_, _, err := b.svc.Act(ctx, "debounced", refresh.ActionTrigger)
	require.NoError(t, err)
	s := b.scheduler(t, refresh.SchedulerConfig{})

	next, ok, err := b.store.NextDue(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, t0.Add(30*time.Second), next)

	b.clock.Set(t0.Add(30 * time.Second))
	res, err := s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Started) // the debounce took effect and started

	b.clock.Set(t0.Add(time.Hour))
	_, err = s.RunOnce(ctx)
	require.NoError(t, err)
	m, err := b.store.Get(ctx, "fresh")
	require.NoError(t, err)
	require.Equal(t, t0.Add(time.Hour), m.OverdueSince)

	var got []string
	for _, e := range b.events(t) {
		switch e.Type {
		case refresh.EventTrigger, refresh.EventDebounce, refresh.EventFreshnessLost:
			got = append(got, e.Type+":"+e.ModelID+":"+e.State)
		}
	}
	require.Equal(t, []string{"trigger:debounced:", "debounce:debounced:", "freshness_lost:fresh:idle"}, got)
	// Once the episode is open, nothing is due for it.
	res, err = s.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed-res.TimedOut)
}

// TestUpstreamPropagation: a success that changed the data triggers the
// dependent whose condition holds, through the publisher, once; an
// unchanged success triggers nothing; a disabled dependent stays disabled.
func TestUpstreamPropagation(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "orders", `{"timeout": "10m"}`, true)
	b.put(t, "customers", `{"timeout": "10m"}`, false)
	put := func(id string, ups []string, mode string) {
		_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: id, Queue: "q", Policy: json.RawMessage(`{"timeout": "10m"}`), Upstreams: ups, UpstreamsMode: mode})
		require.NoError(t, err)
	}
	put("report", []string{"orders"}, "")
	put("both", []string{"orders", "customers"}, "")
	put("either", []string{"orders", "customers"}, refresh.UpstreamsAny)

	// A cycle is refused, named.
	_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: "orders", Queue: "q", Upstreams: []string{"report"}})
	require.ErrorContains(t, err, "upstreams: would make a cycle: orders → report → orders")

	s := b.scheduler(t, refresh.SchedulerConfig{})
	p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: b.queue, Clock: b.clock, PropagateFunc: b.svc.Propagate})
	require.NoError(t, err)
	succeed := func(unchanged bool) {
		t.Helper()
		_, err := s.RunOnce(ctx)
		require.NoError(t, err)
		jobs := b.queue.Take("q", 10)
		require.Len(t, jobs, 1)
		b.queue.Deliver(refresh.Outcome{ModelID: jobs[0].ModelID, AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeSuccess, Unchanged: unchanged})
		_, err = b.consumer(t, b.store).RunOnce(ctx)
		require.NoError(t, err)
		for {
			res, err := p.RunOnce(ctx)
			require.NoError(t, err)
			if res.Published == 0 {
				break
			}
		}
	}
	triggered := func() []string {
		var out []string
		for _, e := range b.queue.Events() {
			if e.Type == refresh.EventTrigger && e.Cause == refresh.CauseUpstream {
				out = append(out, e.ModelID+"<-"+e.Upstream)
			}
		}
		return out
	}

	b.clock.Advance(time.Minute)
	succeed(true) // orders, unchanged
	require.Empty(t, triggered())

	_, _, err = b.svc.Act(ctx, "orders", refresh.ActionTrigger)
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	succeed(false) // orders, changed
	require.Equal(t, []string{"either<-orders", "report<-orders"}, triggered())
	both, err := b.store.Get(ctx, "both")
	require.NoError(t, err)
	ups, err := b.store.Upstreams(ctx, both.Upstreams)
	require.NoError(t, err)
	require.Equal(t, "waiting for customers to refresh", refresh.UpstreamWaiting(both, ups))

	// The same events handled again trigger nothing more.
	n, err := b.svc.Propagate(ctx, b.queue.Events())
	require.NoError(t, err)
	require.Zero(t, n)
}

// modifyCounter is a store that records how many models each Modify
// locks.
type modifyCounter struct {
	refresh.Store
	sizes []int
}

func (s *modifyCounter) Modify(ctx context.Context, ids []string, fn func([]refresh.Model) (refresh.Batch, error)) error {
	s.sizes = append(s.sizes, len(ids))
	return s.Store.Modify(ctx, ids, fn)
}

// TestPropagateManyDependents: the dependents of a success are triggered
// in transactions of at most PropagateBatch models, every one of them once.
func TestPropagateManyDependents(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "hub", `{"timeout": "10m"}`, false)
	n := 2*refresh.PropagateBatch + 1
	for i := range n {
		_, _, err := b.svc.Put(ctx, refresh.PutRequest{ID: fmt.Sprintf("dep-%03d", i), Queue: "q", Policy: json.RawMessage(`{"timeout": "10m"}`), Upstreams: []string{"hub"}})
		require.NoError(t, err)
	}
	b.clock.Advance(time.Minute)
	// The hub succeeds, and its data changed.
	require.NoError(t, b.store.Modify(ctx, []string{"hub"}, func(found []refresh.Model) (refresh.Batch, error) {
		m := found[0]
		m.LastSuccessAt, m.LastChangedAt = b.clock.Now(), b.clock.Now()
		return refresh.Batch{Changes: []refresh.Change{{Model: m}}}, nil
	}))
	success := []refresh.Event{{At: b.clock.Now(), ModelID: "hub", Type: refresh.EventSuccess}}
	counter := &modifyCounter{Store: b.store}
	svc := *b.svc
	svc.Store = counter
	got, err := svc.Propagate(ctx, success)
	require.NoError(t, err)
	require.Equal(t, n, got, "every dependent is triggered")
	require.Equal(t, []int{refresh.PropagateBatch, refresh.PropagateBatch, 1}, counter.sizes)
	for i := range n {
		m, err := b.store.Get(ctx, fmt.Sprintf("dep-%03d", i))
		require.NoError(t, err)
		require.False(t, m.RefreshAt.After(b.clock.Now()), "dep-%03d is due", i)
	}
	got, err = svc.Propagate(ctx, success)
	require.NoError(t, err)
	require.Zero(t, got, "handled again, the events trigger nothing more")
}

// TestSnoozeThroughConsumer: a snooze outcome ends the attempt without a
// failure and plans the next try at until.
func TestSnoozeThroughConsumer(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "m", `{"timeout": "10m"}`, true)
	s := b.scheduler(t, refresh.SchedulerConfig{})
	_, err := s.RunOnce(ctx)
	require.NoError(t, err)
	jobs := b.queue.Take("q", 1)
	require.Len(t, jobs, 1)
	b.queue.Deliver(refresh.Outcome{ModelID: "m", AttemptUID: jobs[0].AttemptUID, Type: refresh.OutcomeSnooze, For: refresh.Duration(5 * time.Minute)})
	_, err = b.consumer(t, b.store).RunOnce(ctx)
	require.NoError(t, err)
	m, err := b.store.Get(ctx, "m")
	require.NoError(t, err)
	require.False(t, m.Running())
	require.Equal(t, 0, m.AttemptNo)
	require.Equal(t, 0, m.ConsecutiveFailures)
	require.Equal(t, t0.Add(5*time.Minute), m.RefreshAt)
	require.Equal(t, t0, m.SnoozedSince)
	require.Equal(t, int64(1), b.metrics.Snoozed.Load())
}

// TestTimeoutAndRetryInOnePass: a timeout whose retry starts at once, in
// the same pass, keeps the history row of the attempt that timed out.
func TestTimeoutAndRetryInOnePass(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "m", `{"timeout": "10m", "retry": {"delays": ["0s"]}}`, true)
	s := b.scheduler(t, refresh.SchedulerConfig{})
	_, err := s.RunOnce(ctx)
	require.NoError(t, err)
	b.clock.Advance(10 * time.Minute)
	res, err := s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.TimedOut)
	require.Equal(t, 1, res.Started)
	history, err := b.store.History(ctx, "m", time.Time{}, 10)
	require.NoError(t, err)
	require.Len(t, history, 2)
	require.Equal(t, "", history[0].Outcome)
	require.Equal(t, 2, history[0].AttemptNo)
	require.Equal(t, refresh.EventTimeout, history[1].Outcome)
}
