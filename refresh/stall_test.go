package refresh_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

// slowStore holds the first pass after its writes, as a commit slowed by
// a checkpoint would, until released.
type slowStore struct {
	refresh.Store
	passes  atomic.Int32
	held    chan struct{}
	release chan struct{}
}

func (s *slowStore) ClaimDue(ctx context.Context, now time.Time, limit int, fn func([]refresh.Model, refresh.Slots) (refresh.Batch, error)) (int, error) {
	n, err := s.Store.ClaimDue(ctx, now, limit, fn)
	if s.passes.Add(1) == 1 {
		close(s.held)
		<-s.release
	}
	return n, err
}

// A model that falls due while a pass is held starts in a helper's pass
// once the held one has taken StallAfter, not when it ends, whatever
// Loops.
func TestSchedulerPassesBesideAStalledOne(t *testing.T) {
	for _, loops := range []int{1, 2} {
		b := setup(t)
		b.put(t, "first", `{"timeout": "10m"}`, true)
		store := &slowStore{Store: b.store, held: make(chan struct{}), release: make(chan struct{})}
		starts := make(chan string, 10)
		s, err := refresh.NewScheduler(refresh.SchedulerConfig{
			Store: store, Queue: b.queue, Clock: b.clock, Metrics: b.metrics, Loops: loops,
			StallAfter: 20 * time.Millisecond,
			TickedFunc: func(r refresh.TickResult, err error) {
				require.NoError(t, err)
				if r.Started > 0 {
					starts <- "started"
				}
			},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Start(ctx) }()
		<-store.held
		// The held pass started "first"; "second" falls due while it is held.
		b.put(t, "second", `{"timeout": "10m"}`, true)
		b.clock.Advance(20 * time.Millisecond)
		require.Equal(t, "started", <-starts, "a helper started the model due meanwhile")
		jobs := b.queue.Take("q", 10)
		require.Len(t, jobs, 2)
		require.Equal(t, "second", jobs[1].ModelID)
		close(store.release)
		cancel()
		require.NoError(t, <-done)
	}
}

// A pass that claims a full batch has a helper claim the next one beside
// it, whatever Loops: a crowd due at one instant starts without waiting
// for each pass to push, write and commit.
func TestSchedulerFullPassHasAHelper(t *testing.T) {
	for _, loops := range []int{1, 2} {
		b := setup(t)
		b.put(t, "first", `{"timeout": "10m"}`, true)
		b.put(t, "second", `{"timeout": "10m"}`, true)
		store := &slowStore{Store: b.store, held: make(chan struct{}), release: make(chan struct{})}
		started := make(chan int, 10)
		// BatchSize 8: the first pass claims at most 1, and claims 1.
		s, err := refresh.NewScheduler(refresh.SchedulerConfig{
			Store: store, Queue: b.queue, Clock: b.clock, Metrics: b.metrics, BatchSize: 8, Loops: loops,
			StallAfter: time.Hour,
			TickedFunc: func(r refresh.TickResult, err error) {
				require.NoError(t, err)
				started <- r.Started
			},
		})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Start(ctx) }()
		<-store.held
		// Each helper woken runs one pass (neither claims a full batch);
		// the one that finds nothing may end first.
		n := 0
		for range loops {
			if n = <-started; n == 1 {
				break
			}
		}
		require.Equal(t, 1, n, "a helper started the second model while the first pass is held")
		jobs := b.queue.Take("q", 10)
		require.Len(t, jobs, 2)
		require.Equal(t, []string{"first", "second"}, []string{jobs[0].ModelID, jobs[1].ModelID})
		close(store.release)
		cancel()
		require.NoError(t, <-done)
	}
}

// gateStore holds the first pass after its writes (unless firstGoes), and
// every later pass before it claims, until released; passes counts the
// passes begun.
type gateStore struct {
	refresh.Store
	passes    atomic.Int32
	release   chan struct{}
	firstGoes bool
}

func (s *gateStore) ClaimDue(ctx context.Context, now time.Time, limit int, fn func([]refresh.Model, refresh.Slots) (refresh.Batch, error)) (int, error) {
	if s.passes.Add(1) > 1 {
		<-s.release
		return s.Store.ClaimDue(ctx, now, limit, fn)
	}
	n, err := s.Store.ClaimDue(ctx, now, limit, fn)
	if !s.firstGoes {
		<-s.release
	}
	return n, err
}

// startGated starts a scheduler (BatchSize 8: the first pass claims 1,
// then each helper 8; Loops 2) on 17 due models through a gateStore, and
// returns the store and a function that releases it.
func startGated(t *testing.T, firstGoes bool, ticked func(refresh.TickResult, error)) (bundle, *gateStore, func()) {
	b := setup(t)
	for i := range 17 {
		b.put(t, fmt.Sprintf("m%02d", i), `{"timeout": "10m"}`, true)
	}
	store := &gateStore{Store: b.store, release: make(chan struct{}), firstGoes: firstGoes}
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{
		Store: store, Queue: b.queue, Clock: b.clock, Metrics: b.metrics, BatchSize: 8, Loops: 2,
		StallAfter: time.Hour, TickedFunc: ticked,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	var once sync.Once
	release := func() { once.Do(func() { close(store.release) }) }
	t.Cleanup(func() {
		release()
		cancel()
		require.NoError(t, <-done)
	})
	return b, store, release
}

// takeAll waits until n jobs have been pushed, taking them.
func takeAll(t *testing.T, b bundle, n int) {
	t.Helper()
	taken := 0
	waitFor(t, func() bool {
		taken += len(b.queue.Take("q", n))
		return taken == n
	})
}

// The small first pass after a wait, when full, has every helper begin a
// pass beside it at once: a crowd due at one instant that takes several
// batches is claimed by passes that begin together, not each once the
// one before it has claimed its batch.
func TestSchedulerFullFirstPassWakesEveryHelper(t *testing.T) {
	b, store, release := startGated(t, false, nil)
	// The first pass is held; both helpers have begun theirs.
	waitFor(t, func() bool { return store.passes.Load() == 3 })
	release()
	takeAll(t, b, 17)
}

// After the small first pass woke every helper, the main loop begins no
// pass of its own until one of theirs has ended: the helpers' batches hold
// the rest of a crowd of up to Loops batches, and a pass beside them would
// only take part of it later than they do.
func TestSchedulerMainLoopLetsTheHelpersTakeTheCrowd(t *testing.T) {
	var ticks atomic.Int32
	b, store, release := startGated(t, true, func(r refresh.TickResult, err error) {
		require.NoError(t, err)
		ticks.Add(1)
	})
	// The first pass has ended; both helpers have begun theirs.
	waitFor(t, func() bool { return ticks.Load() == 1 && store.passes.Load() == 3 })
	// Give a main loop that would begin a pass every chance to show it.
	for range 100_000 {
		runtimeGosched()
	}
	require.EqualValues(t, 3, store.passes.Load(), "the main loop began a pass beside the helpers")
	release()
	takeAll(t, b, 17)
}

// A full batch of models that only wait for a limit does not keep the
// helper loops running passes: they stop, as the main loop goes to sleep.
func TestSchedulerHelpersStopOnWaitingBatches(t *testing.T) {
	b := setup(t)
	_, err := b.store.PutLimit(context.Background(), refresh.Limit{Kind: refresh.LimitQueue, Key: "q", MaxRunning: 20}, false)
	require.NoError(t, err)
	for i := range 60 {
		b.put(t, fmt.Sprintf("m%02d", i), `{"timeout": "10m"}`, true)
	}
	var passes atomic.Int32
	s := b.scheduler(t, refresh.SchedulerConfig{BatchSize: 8, Loops: 3, TickedFunc: func(r refresh.TickResult, err error) {
		require.NoError(t, err)
		passes.Add(1)
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	waitFor(t, func() bool { return passes.Load() > 0 && b.clock.Waiters() == 1 })
	asleep := passes.Load()
	// Give a helper that would still be running every chance to show it.
	for range 100_000 {
		runtimeGosched()
	}
	cancel()
	require.NoError(t, <-done)
	// Each of the 3 helpers may have been ending its last pass, and may
	// run one more for each of the 3 wakes left in their channel.
	require.LessOrEqual(t, passes.Load(), asleep+6, "passes ran while every model waited")
	require.Len(t, b.queue.Take("q", 100), 20)
}

// nextDueStore reports each call of NextDue on events.
type nextDueStore struct {
	refresh.Store
	events chan string
}

func (s *nextDueStore) NextDue(ctx context.Context) (time.Time, bool, error) {
	s.events <- "next due"
	return s.Store.NextDue(ctx)
}

// A pass that started models runs the next at once, without asking when
// the next model is due; a pass that started none asks.
func TestSchedulerPassAfterStarts(t *testing.T) {
	b := setup(t)
	b.put(t, "first", `{"timeout": "10m"}`, true)
	b.put(t, "second", `{"timeout": "10m"}`, true)
	store := &nextDueStore{Store: b.store, events: make(chan string, 10)}
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{
		Store: store, Queue: b.queue, Clock: b.clock, Metrics: b.metrics, BatchSize: 64,
		TickedFunc: func(r refresh.TickResult, err error) {
			require.NoError(t, err)
			store.events <- fmt.Sprintf("started %d", r.Started)
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	require.Equal(t, "started 2", <-store.events)
	require.Equal(t, "started 0", <-store.events, "the next pass runs at once")
	require.Equal(t, "next due", <-store.events, "asked after the pass that started none")
	cancel()
	require.NoError(t, <-done)
}
