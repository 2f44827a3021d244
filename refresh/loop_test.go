package refresh_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

var t0 = time.Date(2026, 3, 2, 4, 30, 0, 0, time.UTC)

const hourly = `{"schedule": "DTSTART:20260302T000000Z\nRRULE:FREQ=HOURLY", "timeout": "10m", "retry": {"delays": ["0s", "1m"]}}`

type bundle struct {
	clock   *refresh.VirtualClock
	store   *memory.Store
	queue   *memory.Queue
	svc     *refresh.Service
	metrics *refresh.Metrics
}

func setup(t *testing.T) bundle {
	t.Helper()
	clock := refresh.NewVirtualClock(t0)
	b := bundle{clock: clock, store: memory.NewStore(), queue: memory.NewQueue(clock), metrics: &refresh.Metrics{}}
	b.svc = &refresh.Service{Store: b.store, Clock: clock, Limits: refresh.DefaultLimits(), Metrics: b.metrics}
	return b
}

// events publishes the events written so far and returns them.
func (b bundle) events(t *testing.T) []refresh.Event {
	t.Helper()
	p, err := refresh.NewPublisher(refresh.PublisherConfig{Store: b.store, Queue: b.queue, Clock: b.clock})
	require.NoError(t, err)
	for {
		res, err := p.RunOnce(context.Background())
		require.NoError(t, err)
		if res.Published == 0 {
			return b.queue.Events()
		}
	}
}

func (b bundle) put(t *testing.T, id, policy string, trigger bool) refresh.Model {
	t.Helper()
	m, _, err := b.svc.Put(context.Background(), refresh.PutRequest{ID: id, Queue: "q", Policy: json.RawMessage(policy), Trigger: trigger})
	require.NoError(t, err)
	return m
}

func (b bundle) scheduler(t *testing.T, cfg refresh.SchedulerConfig) *refresh.Scheduler {
	t.Helper()
	cfg.Store, cfg.Queue, cfg.Clock, cfg.Metrics = b.store, b.queue, b.clock, b.metrics
	s, err := refresh.NewScheduler(cfg)
	require.NoError(t, err)
	return s
}

func (b bundle) consumer(t *testing.T, store refresh.Store) *refresh.Consumer {
	t.Helper()
	c, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: b.queue, Clock: b.clock, Metrics: b.metrics})
	require.NoError(t, err)
	return c
}

func types(events []refresh.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type+":"+e.ModelID)
	}
	return out
}

// firstClaimStore records the limit of its first claim and how many
// models it claimed (Start's first pass: the helpers begin only once it
// has claimed).
type firstClaimStore struct {
	refresh.Store
	once  sync.Once
	first [2]int
}

func (s *firstClaimStore) ClaimDue(ctx context.Context, now time.Time, limit int, fn func([]refresh.Model, refresh.Slots) (refresh.Batch, error)) (int, error) {
	first := false
	s.once.Do(func() { first = true })
	n, err := s.Store.ClaimDue(ctx, now, limit, fn)
	if first {
		s.first = [2]int{limit, n}
	}
	return n, err
}

// TestSchedulerStartSleepsUntilDue drives Start on the virtual clock: it
// sleeps until the earliest refresh_at, starts the model then, and wakes
// at once when a model is triggered.
func TestSchedulerStartSleepsUntilDue(t *testing.T) {
	b := setup(t)
	b.put(t, "hourly", hourly, false) // first run at 05:00
	ticks := make(chan refresh.TickResult, 10)
	// MaxSleep beyond the half hour to 05:00, so that the loop's one timer
	// is for 05:00 (with the default minute, the timer for 04:31 would
	// fire at 04:59:59 below, and that pass could read the clock before
	// it reaches 05:00).
	s := b.scheduler(t, refresh.SchedulerConfig{MaxSleep: time.Hour, TickedFunc: func(r refresh.TickResult, err error) {
		require.NoError(t, err)
		ticks <- r
	}})
	b.svc.WakeFunc = s.Wake
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()

	require.Equal(t, refresh.TickResult{}, <-ticks, "nothing due at 04:30")
	waitFor(t, func() bool { return b.clock.Waiters() == 1 })
	b.clock.Set(time.Date(2026, 3, 2, 4, 59, 59, 0, time.UTC))
	// The loop's timer is for 05:00; nothing ticks before it (Set fires
	// a due timer before it returns, and the waiter goes with it).
	require.Equal(t, 1, b.clock.Waiters(), "the loop's timer fired before 05:00")
	select {
	case r := <-ticks:
		t.Fatalf("ticked early: %+v", r)
	default:
	}
	b.clock.Set(time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC))
	require.Equal(t, 1, (<-ticks).Started)
	jobs := b.queue.Take("q", 10)
	require.Len(t, jobs, 1)
	require.Equal(t, "hourly", jobs[0].ModelID)
	require.Equal(t, 1, jobs[0].AttemptNo)

	b.put(t, "thumb", `{"timeout": "1m"}`, true) // wakes the loop: no clock move needed
	r := <-ticks
	for r.Started == 0 {
		r = <-ticks
	}
	require.Equal(t, 1, r.Started)
	require.Len(t, b.queue.Take("q", 10), 1)

	cancel()
	require.NoError(t, <-done)
}

// waitFor waits for cond, which another goroutine makes true; it yields
// instead of sleeping and gives up after many rounds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if cond() {
			return
		}
		runtimeGosched()
	}
	t.Fatal("condition never held")
}

func TestSchedulerBatchesAndTimesOut(t *testing.T) {
	b := setup(t)
	for i := range 25 {
		b.put(t, fmt.Sprintf("m%02d", i), `{"timeout": "10m"}`, true)
	}
	s := b.scheduler(t, refresh.SchedulerConfig{BatchSize: 10})
	ctx := context.Background()
	for _, want := range []int{10, 10, 5, 0} {
		r, err := s.RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, want, r.Started)
	}
	require.Len(t, b.queue.Take("q", 100), 25)
	require.EqualValues(t, 25, b.metrics.Started.Load())

	b.clock.Advance(10*time.Minute - time.Nanosecond)
	r, err := s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.TickResult{}, r, "deadline not reached")

	b.clock.Advance(time.Nanosecond)
	b.events(t)
	timedOut, started := 0, 0
	for {
		r, err := s.RunOnce(ctx)
		require.NoError(t, err)
		if r.Claimed == 0 {
			break
		}
		timedOut += r.TimedOut
		started += r.Started
	}
	require.Equal(t, 25, timedOut)
	require.Equal(t, 25, started, "each timeout planned a retry after 0s, started at the same instant")
	m, err := b.store.Get(ctx, "m00")
	require.NoError(t, err)
	require.Equal(t, 2, m.AttemptNo)
	require.Equal(t, 1, m.ConsecutiveFailures)
	require.Equal(t, "timeout", m.LastError.Kind)
	require.EqualValues(t, 25, b.metrics.TimedOut.Load())
}

// failingQueue fails every Push.
type failingQueue struct{ *memory.Queue }

func (failingQueue) Push(context.Context, []refresh.Job) error { return errors.New("redis down") }

func TestSchedulerPushFailureWritesNothing(t *testing.T) {
	b := setup(t)
	b.put(t, "m", `{"timeout": "10m"}`, true)
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: b.store, Queue: failingQueue{b.queue}, Clock: b.clock})
	require.NoError(t, err)
	_, err = s.RunOnce(context.Background())
	require.ErrorContains(t, err, "redis down")
	m, err := b.store.Get(context.Background(), "m")
	require.NoError(t, err)
	require.False(t, m.Running(), "the start was not committed")
	require.True(t, m.CanStart(b.clock.Now()), "still due")
}

// writeFailStore records whether each claim's batch asks for its hook
// before the writes, and fails the writes of the claims numbered in fail
// (from 1), after the hook where the batch asks for it first.
type writeFailStore struct {
	refresh.Store
	fail  map[int]bool
	early []bool
}

func (s *writeFailStore) ClaimDue(ctx context.Context, now time.Time, limit int, fn func([]refresh.Model, refresh.Slots) (refresh.Batch, error)) (int, error) {
	s.early = append(s.early, false)
	n := len(s.early)
	return s.Store.ClaimDue(ctx, now, limit, func(due []refresh.Model, slots refresh.Slots) (refresh.Batch, error) {
		b, err := fn(due, slots)
		s.early[n-1] = b.HookBeforeWrite
		if err != nil || !s.fail[n] {
			return b, err
		}
		if b.HookBeforeWrite && b.BeforeCommitFunc != nil {
			if err := b.BeforeCommitFunc(ctx); err != nil {
				return b, err
			}
		}
		return b, errors.New("write refused")
	})
}

// A pass pushes its jobs before its batch is written; once a pass has
// failed, the passes push only after the write, until one succeeds.
func TestSchedulerPushesBeforeTheWriteUnlessFailing(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "m", `{"timeout": "10m"}`, true)
	store := &writeFailStore{Store: b.store, fail: map[int]bool{1: true, 2: true}}
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: b.queue, Clock: b.clock})
	require.NoError(t, err)
	for range 2 {
		_, err := s.RunOnce(ctx)
		require.ErrorContains(t, err, "write refused")
	}
	_, err = s.RunOnce(ctx)
	require.NoError(t, err)
	b.put(t, "n", `{"timeout": "10m"}`, true)
	_, err = s.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, false, true}, store.early)
	// The first pass pushed before its write failed, the second did not
	// push: two jobs of m, of which the first was never recorded.
	jobs := b.queue.Take("q", 10)
	require.Len(t, jobs, 3)
	m, err := b.store.Get(ctx, "m")
	require.NoError(t, err)
	require.Equal(t, []string{"m", "m", "n"}, []string{jobs[0].ModelID, jobs[1].ModelID, jobs[2].ModelID})
	require.NotEqual(t, m.AttemptUID, jobs[0].AttemptUID)
	require.Equal(t, m.AttemptUID, jobs[1].AttemptUID)
}

// holdsQueue records, at each push, whether the scheduler holds the
// models of the jobs pushed.
type holdsQueue struct {
	refresh.Queue
	s    *refresh.Scheduler
	held []bool
}

func (q *holdsQueue) Push(ctx context.Context, jobs []refresh.Job) error {
	for _, j := range jobs {
		q.held = append(q.held, q.s.Holds(j.ModelID))
	}
	return q.Queue.Push(ctx, jobs)
}

// A pass holds the models of the jobs it pushed until it ends, whether it
// pushed before its write or after it, and whether it commits or fails.
func TestSchedulerHoldsPushedModelsUntilThePassEnds(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "m", `{"timeout": "10m"}`, true)
	store := &writeFailStore{Store: b.store, fail: map[int]bool{1: true}}
	q := &holdsQueue{Queue: b.queue}
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: q, Clock: b.clock})
	require.NoError(t, err)
	q.s = s
	require.False(t, s.Holds("m"))
	_, err = s.RunOnce(ctx)
	require.ErrorContains(t, err, "write refused")
	require.False(t, s.Holds("m"), "released by the pass that failed")
	_, err = s.RunOnce(ctx)
	require.NoError(t, err)
	require.False(t, s.Holds("m"), "released by the pass that committed")
	require.Equal(t, []bool{true, false}, store.early)
	require.Equal(t, []bool{true, true}, q.held, "held while each pass pushed")
}

func TestConsumerFencesAndApplies(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "a", `{"timeout": "10m"}`, true)
	b.put(t, "b", `{"timeout": "10m", "retry": {"delays": []}, "disabled_message": "{attempts}: {error}"}`, true)
	s := b.scheduler(t, refresh.SchedulerConfig{})
	_, err := s.RunOnce(ctx)
	require.NoError(t, err)
	jobs := map[string]refresh.Job{}
	for _, j := range b.queue.Take("q", 10) {
		jobs[j.ModelID] = j
	}
	b.events(t)
	b.clock.Advance(time.Minute)

	success := refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeSuccess}
	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: jobs["a"].AttemptUID, Type: refresh.OutcomeStatus, Message: "half way"})
	b.queue.Deliver(success)
	b.queue.Deliver(success) // duplicate
	b.queue.Deliver(refresh.Outcome{ModelID: "b", AttemptUID: "not-the-uid", Type: refresh.OutcomeSuccess})
	b.queue.Deliver(refresh.Outcome{ModelID: "b", AttemptUID: jobs["b"].AttemptUID, Type: refresh.OutcomeFailure, Kind: "boom", Message: "it broke"})
	b.queue.Deliver(refresh.Outcome{ModelID: "ghost", AttemptUID: "x", Type: refresh.OutcomeSuccess})

	c := b.consumer(t, b.store)
	r, err := c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, refresh.ConsumeResult{Received: 6, Applied: 3, Stale: 3}, r)
	require.Equal(t, []string{"status:a", "success:a", "stale:a", "stale:b", "failure:b", "stale:ghost"}, types(b.events(t)))
	require.EqualValues(t, 3, b.metrics.Stale.Load())

	a, err := b.store.Get(ctx, "a")
	require.NoError(t, err)
	require.True(t, a.LastSuccessAt.Equal(b.clock.Now()))
	require.Empty(t, a.StatusMessage, "the progress text ends with its attempt")
	bm, err := b.store.Get(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, "1: it broke", bm.DisabledReason)

	h, err := b.store.History(ctx, "b", time.Time{}, 10)
	require.NoError(t, err)
	require.Len(t, h, 1)
	require.Equal(t, []string{"failure", "boom", "disable"}, []string{h[0].Outcome, h[0].ErrorKind, h[0].Decision})
}

// flakyStore fails TryModify a given number of times.
type flakyStore struct {
	refresh.Store
	failures int
}

func (s *flakyStore) TryModify(ctx context.Context, ids []string, fn func([]refresh.Model, []string) (refresh.Batch, error)) error {
	if s.failures > 0 {
		s.failures--
		return errors.New("connection reset")
	}
	return s.Store.TryModify(ctx, ids, fn)
}

func TestConsumerKeepsOutcomesWhenTheStoreFails(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.put(t, "a", `{"timeout": "10m"}`, true)
	_, err := b.scheduler(t, refresh.SchedulerConfig{}).RunOnce(ctx)
	require.NoError(t, err)
	job := b.queue.Take("q", 1)[0]
	b.queue.Deliver(refresh.Outcome{ModelID: "a", AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess})

	c := b.consumer(t, &flakyStore{Store: b.store, failures: 2})
	for range 2 {
		_, err := c.RunOnce(ctx)
		require.ErrorContains(t, err, "connection reset")
	}
	r, err := c.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, r.Applied, "the outcome received before the failures is applied, not lost")
	m, err := b.store.Get(ctx, "a")
	require.NoError(t, err)
	require.False(t, m.LastSuccessAt.IsZero())
}

// With several loops, Start's helpers join in while passes claim full
// batches; every due model still starts once.
func TestSchedulerLoops(t *testing.T) {
	b := setup(t)
	for i := range 23 {
		b.put(t, fmt.Sprintf("m%02d", i), `{"timeout": "10m"}`, true)
	}
	ticks := make(chan refresh.TickResult, 100)
	s := b.scheduler(t, refresh.SchedulerConfig{BatchSize: 5, Loops: 3, TickedFunc: func(r refresh.TickResult, err error) {
		require.NoError(t, err)
		ticks <- r
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	started := 0
	for started < 23 {
		started += (<-ticks).Started
	}
	// The main loop sleeps; the helpers wait to be woken.
	waitFor(t, func() bool { return b.clock.Waiters() == 1 })
	cancel()
	require.NoError(t, <-done)
	close(ticks)
	for r := range ticks {
		started += r.Started
	}
	require.Equal(t, 23, started, "each model started once")
	jobs := b.queue.Take("q", 100)
	seen := map[string]bool{}
	for _, j := range jobs {
		require.False(t, seen[j.ModelID], "model %s started twice", j.ModelID)
		seen[j.ModelID] = true
	}
	require.Len(t, seen, 23)
}

// After a wait, Start's first pass claims an eighth of BatchSize and the
// passes after a full one claim BatchSize; a full pass also has a helper
// claim a batch of BatchSize beside it.
func TestSchedulerRampsUp(t *testing.T) {
	b := setup(t)
	for i := range 40 {
		b.put(t, fmt.Sprintf("m%02d", i), `{"timeout": "10m"}`, true)
	}
	ticks := make(chan refresh.TickResult, 100)
	store := &firstClaimStore{Store: b.store}
	s, err := refresh.NewScheduler(refresh.SchedulerConfig{
		Store: store, Queue: b.queue, Clock: b.clock, Metrics: b.metrics, BatchSize: 16,
		TickedFunc: func(r refresh.TickResult, err error) {
			require.NoError(t, err)
			ticks <- r
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Start(ctx) }()
	var claimed []int
	for total := 0; total < 40; {
		r := <-ticks
		claimed = append(claimed, r.Claimed)
		total += r.Claimed
	}
	// The helper the first pass wakes may end its pass before it: the
	// first pass is the store's first claim, not the first tick.
	require.Equal(t, [2]int{2, 2}, store.first, "the first pass claims an eighth of BatchSize")
	require.Contains(t, claimed, 16, "the next passes claim whole batches")
	for _, n := range claimed {
		require.LessOrEqual(t, n, 16)
	}
	seen := map[string]bool{}
	for _, j := range b.queue.Take("q", 100) {
		require.False(t, seen[j.ModelID], "model %s started twice", j.ModelID)
		seen[j.ModelID] = true
	}
	require.Len(t, seen, 40)
	waitFor(t, func() bool { return b.clock.Waiters() == 1 })
	cancel()
	require.NoError(t, <-done)
}
