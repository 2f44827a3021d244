package queue

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
)

const testQueue = "thumbs"

// workerBundle is a running worker and what a test needs around it.
type workerBundle struct {
	b      backend
	clock  *refresh.VirtualClock
	worker *Worker
	sched  *Redis // receives the worker's outcomes
	cancel context.CancelFunc
	done   chan error
}

// startWorker starts a worker on b's testQueue; Run stops at the test's end.
func startWorker(t *testing.T, b backend, opt WorkerOptions, h Handler) *workerBundle {
	t.Helper()
	clock, _ := opt.Clock.(*refresh.VirtualClock)
	if clock == nil {
		clock = refresh.NewVirtualClock(t0)
	}
	opt.Prefix, opt.Queue, opt.Clock, opt.Logger = b.prefix, testQueue, clock, quiet
	if opt.Block == 0 {
		opt.Block = 50 * time.Millisecond
	}
	w, err := NewWorker(b.client, opt, h)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wb := &workerBundle{b: b, clock: clock, worker: w, sched: b.newRedis(t, "sched", clock), cancel: cancel, done: make(chan error, 1)}
	go func() { wb.done <- w.Run(ctx) }()
	t.Cleanup(func() { wb.stop(t) })
	return wb
}

// stop shuts the worker down and waits for Run to return.
func (wb *workerBundle) stop(t *testing.T) {
	wb.cancel()
	if wb.done != nil {
		require.NoError(t, <-wb.done)
		wb.done = nil
	}
}

// job returns a job of model id due at the clock's time plus an hour.
func (wb *workerBundle) job(id string) refresh.Job {
	now := wb.clock.Now()
	return refresh.Job{ModelID: id, AttemptUID: "uid-" + id, AttemptNo: 1, Queue: testQueue, StartedAt: now, DeadlineAt: now.Add(time.Hour)}
}

func (wb *workerBundle) push(t *testing.T, jobs ...refresh.Job) {
	require.NoError(t, wb.sched.Push(context.Background(), jobs))
}

// receive waits for n outcomes.
func (wb *workerBundle) receive(t *testing.T, n int) []refresh.Outcome {
	t.Helper()
	var got []refresh.Outcome
	for len(got) < n {
		outs, err := wb.sched.Receive(context.Background(), n-len(got), 10*time.Second)
		require.NoError(t, err)
		require.NotEmpty(t, outs, "no outcome within 10s; have %v", got)
		got = append(got, outs...)
	}
	require.NoError(t, wb.sched.Ack(context.Background(), nil))
	return bare(t, got)
}

// bare drops what the transport adds to outcomes (arrival time, raw
// message), leaving what the worker sent.
func bare(t *testing.T, outs []refresh.Outcome) []refresh.Outcome {
	for i := range outs {
		require.False(t, outs[i].ArrivedAt.IsZero(), "Receive stamps the arrival")
		outs[i].ArrivedAt, outs[i].Raw = time.Time{}, ""
	}
	return outs
}

func TestNewWorker(t *testing.T) {
	t.Parallel()
	b := newMini(t)
	h := func(context.Context, Job) error { return nil }
	_, err := NewWorker(b.client, WorkerOptions{}, nil)
	require.EqualError(t, err, "queue: handler: must not be nil")
	_, err = NewWorker(b.client, WorkerOptions{Concurrency: -1}, h)
	require.EqualError(t, err, "queue: concurrency: must be >= 0, got -1")
	w, err := NewWorker(b.client, WorkerOptions{}, h)
	require.NoError(t, err)
	require.Equal(t, DefaultQueue, w.opt.Queue)
	require.Equal(t, 1, w.opt.Concurrency)
	require.NotEmpty(t, w.ID())
}

func TestWorkerOutcomes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		var mu sync.Mutex
		seen := map[string]refresh.Job{}
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
			mu.Lock()
			seen[job.ModelID] = job.Job
			mu.Unlock()
			switch job.ModelID {
			case "plain":
				return errors.New("boom")
			case "typed":
				return fmt.Errorf("fetch: %w", Fail("http_503", "upstream 503"))
			case "permanent":
				return UserMessage(Permanent(Fail("validation", "row 3: no date")), "Row 3 has no date.")
			case "panic":
				panic("nil map")
			}
			return nil
		})
		ids := []string{"ok", "plain", "typed", "permanent", "panic"}
		jobs := make([]refresh.Job, len(ids))
		for i, id := range ids {
			jobs[i] = wb.job(id)
		}
		jobs[0].Payload = json.RawMessage(`{"input_url":"https://example.com/a.csv"}`)
		wb.push(t, jobs...)

		no := false
		want := []refresh.Outcome{
			{ModelID: "ok", AttemptUID: "uid-ok", Type: "success"},
			{ModelID: "plain", AttemptUID: "uid-plain", Type: "failure", Kind: "error", Message: "boom"},
			{ModelID: "typed", AttemptUID: "uid-typed", Type: "failure", Kind: "http_503", Message: "fetch: upstream 503"},
			{ModelID: "permanent", AttemptUID: "uid-permanent", Type: "failure", Kind: "validation", Message: "row 3: no date", Retryable: &no, UserMessage: "Row 3 has no date."},
			{ModelID: "panic", AttemptUID: "uid-panic", Type: "failure", Kind: "panic", Message: "panic: nil map"},
		}
		require.Equal(t, want, wb.receive(t, len(want))) // one taker: in push order
		mu.Lock()
		require.Equal(t, jobs[0], seen["ok"])
		mu.Unlock()
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, wb.worker.ID())))
	})
}

func TestWorkerStatus(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
			return job.Status(ctx, "half done")
		})
		wb.push(t, wb.job("m1"))
		require.Equal(t, []refresh.Outcome{
			{ModelID: "m1", AttemptUID: "uid-m1", Type: "status", Message: "half done"},
			{ModelID: "m1", AttemptUID: "uid-m1", Type: "success"},
		}, wb.receive(t, 2))
		require.Error(t, Job{}.Status(context.Background(), "x"))
	})
}

func TestWorkerDeadline(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		started := make(chan struct{})
		cause := make(chan error, 1)
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
		wb.push(t, wb.job("m1"))
		<-started
		wb.clock.Advance(time.Hour)
		require.ErrorIs(t, <-cause, context.DeadlineExceeded)
		got := wb.receive(t, 1)
		require.Equal(t, refresh.OutcomeFailure, got[0].Type)
	})
}

func TestWorkerDropsExpiredJob(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		expired := wb.job("expired")
		expired.DeadlineAt = wb.clock.Now() // a deadline reached is past
		wb.push(t, expired, wb.job("fresh"))
		require.Equal(t, []refresh.Outcome{{ModelID: "fresh", AttemptUID: "uid-fresh", Type: "success"}}, wb.receive(t, 1))
		require.Equal(t, "fresh", <-ran)
		require.Empty(t, ran)
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, wb.worker.ID())))
		require.Empty(t, b.lrange(t, b.keys.jobsKey(testQueue)))
	})
}

func TestWorkerDeadLettersGarbage(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error { return nil })
		b.lpush(t, b.keys.jobsKey(testQueue), "not json", `{"model_id":"m1"}`)
		wb.push(t, wb.job("m2"))
		require.Len(t, wb.receive(t, 1), 1)
		dead := b.lrange(t, b.keys.deadKey())
		require.Len(t, dead, 2)
		var e deadLetter
		require.NoError(t, json.Unmarshal([]byte(dead[0]), &e))
		require.Equal(t, "job: attempt_uid: missing", e.Reason)
		require.Equal(t, `{"model_id":"m1"}`, e.Message)
	})
}

func TestWorkerConcurrency(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		arrived := make(chan string)
		release := make(chan struct{})
		wb := startWorker(t, b, WorkerOptions{Concurrency: 3}, func(ctx context.Context, job Job) error {
			arrived <- job.ModelID
			<-release
			return nil
		})
		wb.push(t, wb.job("a"), wb.job("b"), wb.job("c"))
		got := map[string]bool{}
		for range 3 { // all three run at once
			got[<-arrived] = true
		}
		require.Len(t, got, 3)
		close(release)
		require.Len(t, wb.receive(t, 3), 3)
	})
}

func TestWorkerGracefulShutdown(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		started := make(chan struct{})
		release := make(chan struct{})
		ctxErr := make(chan error, 1)
		wb := startWorker(t, b, WorkerOptions{Concurrency: 2}, func(ctx context.Context, job Job) error {
			close(started)
			<-release
			ctxErr <- ctx.Err()
			return nil
		})
		wb.push(t, wb.job("m1"))
		<-started
		wb.cancel()
		select {
		case <-wb.done:
			t.Fatal("Run returned while a handler was running")
		default:
		}
		close(release)
		require.NoError(t, <-wb.done)
		wb.done = nil
		require.NoError(t, <-ctxErr) // shutdown did not cancel the handler
		require.Equal(t, []refresh.Outcome{{ModelID: "m1", AttemptUID: "uid-m1", Type: "success"}}, wb.receive(t, 1))

		// Stopped: nothing is taken any more, nothing is held, and the
		// worker has left the set of live workers.
		wb.push(t, wb.job("m2"))
		require.Len(t, b.lrange(t, b.keys.jobsKey(testQueue)), 1)
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, wb.worker.ID())))
		n, err := b.client.ZCard(context.Background(), b.keys.workersKey(testQueue)).Result()
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

func TestWorkerRecovers(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		clock := refresh.NewVirtualClock(t0)
		enc := func(id string) string {
			j := refresh.Job{ModelID: id, AttemptUID: "uid-" + id, Queue: testQueue, StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}
			raw, err := json.Marshal(j)
			require.NoError(t, err)
			return string(raw)
		}
		// A previous life of w1 left a job; a worker unseen for two
		// minutes left another; a live one holds a third.
		b.lpush(t, b.keys.workingKey(testQueue, "w1"), enc("own"))
		b.lpush(t, b.keys.workingKey(testQueue, "dead"), enc("dead"))
		b.lpush(t, b.keys.workingKey(testQueue, "alive"), enc("alive"))
		require.NoError(t, b.client.ZAdd(ctx, b.keys.workersKey(testQueue),
			redisZ(t0.Add(-2*time.Minute), "dead"), redisZ(t0, "alive")).Err())

		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{ID: "w1", Clock: clock}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		got := wb.receive(t, 2)
		require.ElementsMatch(t, []string{"own", "dead"}, []string{got[0].ModelID, got[1].ModelID})
		require.Len(t, b.lrange(t, b.keys.workingKey(testQueue, "alive")), 1)
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, "dead")))
		require.Len(t, ran, 2)
	})
}
