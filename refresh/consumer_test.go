package refresh_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// lockingStore reports the models in held as locked by another transaction
// (TryModify passes them as busy), and refuses, as a database would, any
// batch that writes a NUL byte.
type lockingStore struct {
	refresh.Store
	mu     sync.Mutex
	held   map[string]bool
	writes int // TryModify calls that reached the store
}

func (s *lockingStore) hold(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = map[string]bool{}
	for _, id := range ids {
		s.held[id] = true
	}
}

func (s *lockingStore) TryModify(ctx context.Context, ids []string, fn func([]refresh.Model, []string) (refresh.Batch, error)) error {
	s.mu.Lock()
	held := s.held
	s.writes++
	s.mu.Unlock()
	var free []string
	for _, id := range ids {
		if !held[id] {
			free = append(free, id)
		}
	}
	var refused error
	err := s.Store.TryModify(ctx, free, func(found []refresh.Model, _ []string) (refresh.Batch, error) {
		var busy []string
		for _, id := range ids {
			if held[id] {
				busy = append(busy, id)
			}
		}
		b, err := fn(found, busy)
		if err != nil {
			return b, err
		}
		for _, c := range b.Changes {
			if strings.ContainsRune(c.Model.StatusMessage, 0) {
				refused = refresh.Errorf(refresh.EINVALID, "invalid byte sequence for encoding \"UTF8\": 0x00")
				return refresh.Batch{}, refused
			}
		}
		return b, nil
	})
	return err
}

// started puts models ids through one scheduler pass and returns their jobs.
func (b bundle) started(t *testing.T, ids ...string) map[string]refresh.Job {
	t.Helper()
	for _, id := range ids {
		b.put(t, id, `{"timeout": "10m"}`, true)
	}
	_, err := b.scheduler(t, refresh.SchedulerConfig{}).RunOnce(context.Background())
	require.NoError(t, err)
	jobs := map[string]refresh.Job{}
	for _, j := range b.queue.Take("q", 100) {
		jobs[j.ModelID] = j
	}
	require.Len(t, jobs, len(ids))
	b.events(t)
	return jobs
}

func TestConsumerDefersLockedModels(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	jobs := b.started(t, "a", "b")
	b.clock.Advance(time.Minute)
	store := &lockingStore{Store: b.store}
	store.hold("a")
	c := b.consumer(t, store)

	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeStatus, Message: "first"})
	b.queue.Deliver(refresh.Outcome{ModelID: "b", AttemptUID: jobs["b"].AttemptUID, Type: refresh.OutcomeSuccess})
	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeSuccess})
	arrival := b.clock.Now()
	r, err := c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 3, Applied: 1, Deferred: 2}, r, "b applies although a is locked")
	require.Equal(t, []string{"success:b"}, types(b.events(t)))

	// A new outcome of a locked model waits behind the older ones.
	b.clock.Advance(9 * time.Minute) // past a's deadline: the outcomes arrived before it
	r, err = c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 2, Deferred: 2}, r)

	store.hold()
	r, err = c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 2, Applied: 2}, r, "once free, a's outcomes apply, in order")
	require.Equal(t, []string{"status:a", "success:a"}, types(b.events(t)))
	a, err := b.store.Get(ctx, "a")
	require.NoError(t, err)
	requireTime(t, arrival, a.LastSuccessAt, "judged at its arrival, not at the write after the deadline")
	require.EqualValues(t, 4, b.metrics.Deferred.Load())
}

// The outcomes of a model a pass of the process holds wait, in order,
// without the store being asked for it; the others apply.
func TestConsumerKeepsOutcomesOfHeldModels(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	jobs := b.started(t, "a", "b")
	b.clock.Advance(time.Minute)
	store := &lockingStore{Store: b.store}
	var mu sync.Mutex
	held := map[string]bool{"a": true}
	c, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: b.queue, Clock: b.clock, Metrics: b.metrics,
		HeldFunc: func(id string) bool {
			mu.Lock()
			defer mu.Unlock()
			return held[id]
		}})
	require.NoError(t, err)

	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeStatus, Message: "first"})
	b.queue.Deliver(refresh.Outcome{ModelID: "b", AttemptUID: jobs["b"].AttemptUID, Type: refresh.OutcomeSuccess})
	r, err := c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 2, Applied: 1, Deferred: 1}, r)
	require.Equal(t, []string{"success:b"}, types(b.events(t)))
	require.Equal(t, 1, store.writes)

	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeSuccess})
	r, err = c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 2, Deferred: 2}, r)
	require.Equal(t, 1, store.writes, "nothing but held models: the store is not asked")

	mu.Lock()
	held["a"] = false
	mu.Unlock()
	r, err = c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 2, Applied: 2}, r)
	require.Equal(t, []string{"status:a", "success:a"}, types(b.events(t)), "in order, once released")
	require.EqualValues(t, 3, b.metrics.Deferred.Load())
}

func TestConsumerSetsAsideWhatTheStoreRefuses(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	jobs := b.started(t, "a", "b", "c", "d", "e", "f")
	b.clock.Advance(time.Minute)
	store := &lockingStore{Store: b.store}
	c := b.consumer(t, store)
	// A status of a model with no later outcome in the batch: an outcome
	// that ends the attempt would clear the status again.
	poison := refresh.Outcome{ModelID: "f", AttemptUID: jobs["f"].AttemptUID, Type: refresh.OutcomeStatus, Message: "a\x00b"}
	for _, id := range []string{"a", "b"} {
		b.queue.Deliver(refresh.Outcome{ModelID: id, AttemptUID: jobs[id].AttemptUID, Type: refresh.OutcomeSuccess})
	}
	b.queue.Deliver(poison)
	for _, id := range []string{"c", "d", "e"} {
		b.queue.Deliver(refresh.Outcome{ModelID: id, AttemptUID: jobs[id].AttemptUID, Type: refresh.OutcomeSuccess})
	}
	r, err := c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 6, Applied: 5, DeadLettered: 1}, r)
	dead := b.queue.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, poison.Message, dead[0].Outcome.Message)
	require.Contains(t, dead[0].Reason, "0x00")
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		m, err := b.store.Get(ctx, id)
		require.NoError(t, err)
		require.False(t, m.LastSuccessAt.IsZero(), "%s applied", id)
	}
	require.LessOrEqual(t, store.writes, 7, "bisected: about 2·log2(6) writes, not one per outcome")
	require.EqualValues(t, 1, b.metrics.DeadLettered.Load())

	// The next pass is not stuck on it.
	r, err = c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{}, r)
}

// Start holds the outcomes of locked models without waiting on the
// outcomes list; Wake has them tried again at once, before BusyWait.
func TestConsumerWakeRetriesLockedModels(t *testing.T) {
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	jobs := b.started(t, "a")
	store := &lockingStore{Store: b.store}
	store.hold("a")
	passes := make(chan refresh.ConsumeResult, 100)
	c, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: b.queue, Clock: b.clock, BusyWait: time.Hour,
		AppliedFunc: func(r refresh.ConsumeResult, err error) {
			require.NoError(t, err)
			passes <- r
		}})
	require.NoError(t, err)
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	waitFor(t, func() bool { return b.clock.Waiters() == 1 }) // waiting for outcomes

	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeSuccess})
	r := <-passes
	for r.Received == 0 {
		r = <-passes
	}
	require.Equal(t, refresh.ConsumeResult{Received: 1, Deferred: 1}, r)
	// It waits on the clock for BusyWait (beside the first Receive's
	// wait, still registered) rather than passing again.
	waitFor(t, func() bool { return b.clock.Waiters() == 2 })
	require.Empty(t, passes)

	store.hold()
	c.Wake()
	require.Equal(t, refresh.ConsumeResult{Received: 1, Applied: 1}, <-passes, "applied without the clock moving")
	cancel()
	require.NoError(t, <-done)
}

// A pass counts the outcomes that leave their model due at once, for
// whoever wakes the scheduler.
func TestConsumerCountsDue(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "retry", `{"timeout": "10m", "retry": {"delays": ["0s"]}}`, true)
	b.put(t, "later", `{"timeout": "10m", "retry": {"delays": ["1m"]}}`, true)
	b.put(t, "ok", `{"timeout": "10m"}`, true)
	_, err := b.scheduler(t, refresh.SchedulerConfig{}).RunOnce(ctx)
	require.NoError(t, err)
	jobs := map[string]refresh.Job{}
	for _, j := range b.queue.Take("q", 10) {
		jobs[j.ModelID] = j
	}
	for _, id := range []string{"retry", "later"} {
		b.queue.Deliver(refresh.Outcome{ModelID: id, AttemptUID: jobs[id].AttemptUID, Type: refresh.OutcomeFailure, Kind: "boom"})
	}
	b.queue.Deliver(refresh.Outcome{ModelID: "ok", AttemptUID: jobs["ok"].AttemptUID, Type: refresh.OutcomeSuccess})
	r, err := b.consumer(t, b.store).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 3, Applied: 3, Due: 1}, r)
}
