package queue

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
)

func TestNewLease(t *testing.T) {
	t.Parallel()
	b := newMini(t)
	r, err := New(b.client, Options{Consumer: "c"})
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, r.opt.ConsumerTimeout)
	require.Equal(t, time.Second, r.opt.Heartbeat)
	r, err = New(b.client, Options{Consumer: "c", ConsumerTimeout: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 400*time.Millisecond, r.opt.Heartbeat)
	for _, tc := range []struct {
		opt Options
		err string
	}{
		{Options{Consumer: "c", Heartbeat: 3 * time.Second}, "queue: heartbeat: must be > 0 and at most half the consumer timeout (5s), got 3s"},
		{Options{Consumer: "c", Heartbeat: -time.Second}, "queue: heartbeat: must be > 0 and at most half the consumer timeout (5s), got -1s"},
		{Options{Consumer: "c", ConsumerTimeout: -time.Second}, "queue: consumer timeout: must be > 0, got -1s"},
		{Options{Consumer: "c", Limits: Limits{MaxKindBytes: -1}}, "queue: limits.MaxKindBytes: must be >= 1, got -1"},
	} {
		_, err := New(b.client, tc.opt)
		require.EqualError(t, err, tc.err)
	}
}

// sleeping waits until the virtual clock has n waiters: the loops on it
// have gone round and sleep.
func sleeping(t *testing.T, clock *refresh.VirtualClock, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clock.Waiters() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", clock.Waiters(), n)
		}
		runtime.Gosched()
	}
}

// The heartbeat keeps a consumer's lease however long it holds outcomes;
// once it stops, the lease ends ConsumerTimeout after the last beat.
func TestHeartbeatKeepsLease(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		a, other := b.newRedis(t, "a", clock), b.newRedis(t, "b", clock)
		o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		got, err := a.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, got, 1)

		// A pass that lasts ten seconds: only the heartbeat runs.
		hbCtx, stop := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- a.Heartbeat(hbCtx) }()
		sleeping(t, clock, 1)
		for range 10 {
			clock.Advance(time.Second)
			sleeping(t, clock, 1)
		}
		n, err := other.Recover(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		stop()
		require.NoError(t, <-done)

		clock.Advance(DefaultConsumerTimeout - time.Millisecond)
		n, err = other.Recover(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		clock.Advance(time.Millisecond)
		n, err = other.Recover(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})
}

// The heartbeat gives back the outcomes of a dead consumer within
// ConsumerTimeout and a half, with no Receive.
func TestHeartbeatRecovers(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		dead, alive := b.newRedis(t, "dead", clock), b.newRedis(t, "alive", clock)
		o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		_, err := dead.Receive(ctx, 10, 0)
		require.NoError(t, err)

		hbCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() { _ = alive.Heartbeat(hbCtx) }()
		sleeping(t, clock, 1)
		for range 7 { // 7s <= 5s + 2.5s
			clock.Advance(time.Second)
			sleeping(t, clock, 1)
		}
		require.Empty(t, b.lrange(t, b.keys.processingKey("dead")))
		require.Equal(t, []string{outcomeJSON(t, o)}, b.lrange(t, b.keys.outcomesKey()))
		require.EqualValues(t, 1, alive.Stats().Recovered)
	})
}

// A consumer taken for dead while it held outcomes, that comes back: its
// Ack acknowledges nothing another consumer took back and keeps nothing it
// no longer holds.
func TestConsumerComesBack(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		a, other := b.newRedis(t, "a", clock), b.newRedis(t, "b", clock)
		o1 := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		o2 := refresh.Outcome{ModelID: "m2", AttemptUID: "u2", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o1), outcomeJSON(t, o2))
		held, err := a.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Len(t, held, 2)

		clock.Advance(DefaultConsumerTimeout)
		n, err := other.Recover(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)

		// a comes back and keeps o2 (its model was busy): it is not put
		// back, since b has it.
		require.NoError(t, a.Ack(ctx, held[1:]))
		require.Empty(t, b.lrange(t, b.keys.processingKey("a")))
		require.Zero(t, a.Stats().Acked)
		// b has both, once.
		got, err := other.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o1, o2}, bare(t, got))
		require.NoError(t, other.Ack(ctx, nil))
		require.EqualValues(t, 2, other.Stats().Acked)

		// a goes on as before: its lease is renewed, what it receives next
		// is its own.
		o3 := refresh.Outcome{ModelID: "m3", AttemptUID: "u3", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o3))
		got, err = a.Receive(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, []refresh.Outcome{o3}, bare(t, slices.Clone(got)))
		require.NoError(t, a.DeadLetter(ctx, got[0], "refused"))
		require.NoError(t, a.Ack(ctx, held[1:])) // still holding o2
		require.Empty(t, b.lrange(t, b.keys.processingKey("a")))
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))
		require.Len(t, b.lrange(t, b.keys.deadKey()), 1)
		require.Zero(t, a.Stats().Acked)
		require.EqualValues(t, 1, a.Stats().DeadLettered)

		// A dead letter of an outcome taken back is left to its new holder.
		require.NoError(t, a.DeadLetter(ctx, held[0], "refused"))
		require.Len(t, b.lrange(t, b.keys.deadKey()), 1)
	})
}

// pausedOutcomes stops a consumer between receiving and applying, as a
// SIGSTOP would.
type pausedOutcomes struct {
	*Redis
	received chan struct{}
	resume   chan struct{}
}

func (p pausedOutcomes) Receive(ctx context.Context, max int, block time.Duration) ([]refresh.Outcome, error) {
	outs, err := p.Redis.Receive(ctx, max, block)
	close(p.received)
	<-p.resume
	return outs, err
}

// A consumer stopped with a batch in hand is taken for dead; another one
// applies the batch; the first comes back and applies it again, which the
// attempt uid fencing makes stale; nothing is lost or acknowledged twice.
func TestConsumerBatchAppliedTwice(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		store := memory.NewStore()
		qa, qb := b.newRedis(t, "a", clock), b.newRedis(t, "b", clock)
		svc := &refresh.Service{Store: store, Clock: clock}
		_, _, err := svc.Put(ctx, refresh.PutRequest{ID: "m1", Queue: "q", Trigger: true})
		require.NoError(t, err)
		sched, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: qa, Clock: clock})
		require.NoError(t, err)
		_, err = sched.RunOnce(ctx)
		require.NoError(t, err)
		jobs := b.lrange(t, b.keys.jobsKey("q"))
		require.Len(t, jobs, 1)
		var job refresh.Job
		require.NoError(t, json.Unmarshal([]byte(jobs[0]), &job))
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, refresh.Outcome{ModelID: "m1", AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess}))

		paused := pausedOutcomes{Redis: qa, received: make(chan struct{}), resume: make(chan struct{})}
		ca, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: paused, Clock: clock})
		require.NoError(t, err)
		resA := make(chan refresh.ConsumeResult, 1)
		go func() {
			res, err := ca.RunOnce(ctx)
			require.NoError(t, err)
			resA <- res
		}()
		<-paused.received

		clock.Advance(DefaultConsumerTimeout)
		n, err := qb.Recover(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		cb, err := refresh.NewConsumer(refresh.ConsumerConfig{Store: store, Outcomes: qb, Clock: clock})
		require.NoError(t, err)
		res, err := cb.RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, refresh.ConsumeResult{Received: 1, Applied: 1}, res)

		close(paused.resume)
		require.Equal(t, refresh.ConsumeResult{Received: 1, Stale: 1}, <-resA)

		m, err := store.Get(ctx, "m1")
		require.NoError(t, err)
		require.Empty(t, m.AttemptUID)
		require.True(t, m.LastSuccessAt.Equal(t0.Add(DefaultConsumerTimeout)), "applied once, by b")
		require.Empty(t, b.lrange(t, b.keys.processingKey("a")))
		require.Empty(t, b.lrange(t, b.keys.processingKey("b")))
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))
		require.Zero(t, qa.Stats().Acked)
		require.EqualValues(t, 1, qb.Stats().Acked)
	})
}

// Consumers waiting for outcomes hold nothing: one of them takes what
// comes, the other returns empty.
func TestReceiveWaitersTakeNothing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		type result struct {
			outs []refresh.Outcome
			err  error
		}
		results := make(chan result, 2)
		for _, c := range []string{"a", "b"} {
			r := b.newRedis(t, c, clock)
			_, err := r.Receive(ctx, 10, 0) // registered, nothing to take
			require.NoError(t, err)
			go func() {
				outs, err := r.Receive(ctx, 10, time.Second)
				results <- result{outs, err}
			}()
		}
		o := refresh.Outcome{ModelID: "m1", AttemptUID: "u1", Type: refresh.OutcomeSuccess}
		b.lpush(t, b.keys.outcomesKey(), outcomeJSON(t, o))
		var got []refresh.Outcome
		for range 2 {
			res := <-results
			require.NoError(t, res.err)
			got = append(got, res.outs...)
		}
		require.Equal(t, []refresh.Outcome{o}, bare(t, got))
		require.Len(t, append(b.lrange(t, b.keys.processingKey("a")), b.lrange(t, b.keys.processingKey("b"))...), 1)
		require.Empty(t, b.lrange(t, b.keys.outcomesKey()))
	})
}
