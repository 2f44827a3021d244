package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
)

const testQueue = "thumbs"

// workerBundle is a running worker and what a test needs around it.
type workerBundle struct {
	b      backend
	clock  *refresh.VirtualClock // nil on a real clock
	now    refresh.Clock
	worker *Worker
	sched  *Redis // receives the worker's outcomes
	cancel context.CancelFunc
	done   chan error
}

// startWorker starts a worker on b's testQueue; Run stops at the test's
// end. Without opt.Clock, the worker runs on a virtual clock.
func startWorker(t *testing.T, b backend, opt WorkerOptions, h Handler) *workerBundle {
	t.Helper()
	if opt.Clock == nil {
		opt.Clock = refresh.NewVirtualClock(t0)
	}
	clock, _ := opt.Clock.(*refresh.VirtualClock)
	opt.Prefix, opt.Queue, opt.Logger = b.prefix, testQueue, quiet
	if opt.Block == 0 {
		opt.Block = 50 * time.Millisecond
	}
	w, err := NewWorker(b.client, opt, h)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wb := &workerBundle{b: b, clock: clock, now: opt.Clock, worker: w, sched: b.newRedis(t, "sched", opt.Clock), cancel: cancel, done: make(chan error, 1)}
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
	now := wb.now.Now()
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
	require.NoError(t, ValidateName(w.ID()))
	require.Equal(t, DefaultWorkerTimeout, w.opt.WorkerTimeout)
	require.Equal(t, DefaultRevokedCheck, w.opt.RevokedCheck)
	require.Equal(t, DefaultLimits(), w.opt.Limits)

	// Names that would make keys ambiguous are refused: a colon separates
	// the queue from the worker in working:<queue>:<worker>.
	for _, tc := range []struct {
		opt WorkerOptions
		err string
	}{
		{WorkerOptions{Queue: "a:b"}, `queue: queue: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "a:b"`},
		{WorkerOptions{Queue: "-a"}, `queue: queue: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "-a"`},
		{WorkerOptions{Queue: strings.Repeat("q", 201)}, `queue: queue: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "` +
			strings.Repeat("q", 49) + TruncatedMarker + `"`},
		{WorkerOptions{ID: "b:c"}, `queue: id: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "b:c"`},
		{WorkerOptions{ID: "w 1"}, `queue: id: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "w 1"`},
		{WorkerOptions{Limits: Limits{MaxMessageBytes: 1}}, "queue: limits.MaxMessageBytes: must be >= 64, got 1"},
	} {
		_, err := NewWorker(b.client, tc.opt, h)
		require.EqualError(t, err, tc.err)
	}
	for _, name := range []string{"a", "tables", "A-1.b_c@d", strings.Repeat("q", 200)} {
		require.NoError(t, ValidateName(name))
	}
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
		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		garbage := []struct{ msg, reason string }{
			{"not json", "job: invalid json: invalid character 'o' in literal null (expecting 'u')"},
			{`{"model_id":"m1"}`, "job: attempt_uid: missing"},
			{`{"model_id":"a\u0000b","attempt_uid":"x"}`, `job: model_id: must not contain NUL (\u0000)`},
			{`{"model_id":"m1","attempt_uid":"x","attempt_uid":"y"}`, "job: attempt_uid: duplicate field"},
			{`{"model_id":"m1","attempt_uid":"x","deadline_at":"soon"}`, `job: deadline_at: must be an RFC 3339 time, got "soon"`},
		}
		for _, g := range garbage {
			b.lpush(t, b.keys.jobsKey(testQueue), g.msg)
		}
		wb.push(t, wb.job("m2"))
		require.Len(t, wb.receive(t, 1), 1)
		require.Equal(t, "m2", <-ran)
		require.Empty(t, ran)
		dead := b.lrange(t, b.keys.deadKey())
		require.Len(t, dead, len(garbage))
		for i, g := range garbage {
			e := readDead(t, dead[len(dead)-1-i])
			require.Equal(t, g.reason, e.Reason)
			require.Equal(t, g.msg, e.Message)
		}
		require.EqualValues(t, len(garbage), wb.worker.Stats().DeadLettered)
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, wb.worker.ID())))
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

// Handlers run on runners that take job after job: rounds of jobs start
// no more runners than about twice the concurrency, not one per job.
func TestWorkerReusesRunners(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		const concurrency, rounds = 4, 5
		wb := startWorker(t, b, WorkerOptions{Concurrency: concurrency}, func(ctx context.Context, job Job) error { return nil })
		for r := range rounds {
			jobs := make([]refresh.Job, concurrency)
			for i := range jobs {
				jobs[i] = wb.job(fmt.Sprintf("r%d-m%d", r, i))
			}
			wb.push(t, jobs...)
			require.Len(t, wb.receive(t, concurrency), concurrency)
		}
		started := wb.worker.runnersStarted.Load()
		require.Positive(t, started)
		require.LessOrEqual(t, started, int64(2*concurrency), "runners started for %d jobs", concurrency*rounds)
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

// A job whose attempt was revoked before it was taken is dropped unrun.
func TestWorkerDropsRevokedJob(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		old := wb.job("old")
		require.NoError(t, wb.sched.Revoke(context.Background(), []refresh.Revocation{
			{ModelID: "old", AttemptUID: old.AttemptUID, Reason: refresh.RevokedCancelled, DeadlineAt: old.DeadlineAt}}))
		wb.push(t, old, wb.job("fresh"))
		require.Equal(t, []refresh.Outcome{{ModelID: "fresh", AttemptUID: "uid-fresh", Type: "success"}}, wb.receive(t, 1))
		require.Equal(t, "fresh", <-ran)
		require.Empty(t, ran)
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, wb.worker.ID())))
		require.EqualValues(t, 1, wb.worker.Stats().Revoked)
	})
}

// A running job whose attempt is revoked has its context cancelled at the
// worker's next check, RevokedCheck after the last, with the reason as the
// cause; its outcome is still sent. The clock is virtual, so the bound is
// the check's interval, whatever else the machine is doing.
func TestWorkerStopsRevokedJob(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		for _, tc := range []struct {
			reason string
			cause  error
		}{
			{refresh.RevokedSuperseded, ErrSuperseded},
			{refresh.RevokedCancelled, ErrCancelled},
			{refresh.RevokedDeleted, ErrDeleted},
		} {
			t.Run(tc.reason, func(t *testing.T) {
				started := make(chan refresh.Job, 1)
				cause := make(chan error, 1)
				ended := make(chan struct{}) // lets the handler go if the test fails
				wb := startWorker(t, b, WorkerOptions{}, func(ctx context.Context, job Job) error {
					started <- job.Job
					select {
					case <-ctx.Done():
					case <-ended:
					}
					cause <- context.Cause(ctx)
					return ctx.Err()
				})
				t.Cleanup(func() { close(ended) })
				// The heartbeat and revocation loops sleep until the
				// clock moves, which it does only below.
				waitFor(t, func() bool { return wb.clock.Waiters() == 2 })
				wb.push(t, wb.job("m-"+tc.reason))
				job := <-started
				require.NoError(t, wb.sched.Revoke(context.Background(), []refresh.Revocation{
					{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Reason: tc.reason, DeadlineAt: job.DeadlineAt}}))
				wb.clock.Advance(DefaultRevokedCheck - time.Millisecond)
				require.Empty(t, cause, "stopped before the check")
				wb.clock.Advance(time.Millisecond)
				var got error
				select {
				case got = <-cause:
				case <-time.After(10 * time.Second):
					t.Fatal("handler not stopped at the check")
				}
				require.ErrorIs(t, got, tc.cause)
				require.ErrorIs(t, got, ErrRevoked)
				out := wb.receive(t, 1)
				require.Equal(t, refresh.OutcomeFailure, out[0].Type)
				require.Equal(t, "context canceled", out[0].Message)
				require.EqualValues(t, 1, wb.worker.Stats().Stopped)
			})
		}
	})
}

// commandCounter counts the commands a client sends, by name.
type commandCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func countCommands(c redis.UniversalClient) *commandCounter {
	cc := &commandCounter{counts: map[string]int{}}
	c.AddHook(cc)
	return cc
}

func (cc *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (cc *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		cc.mu.Lock()
		cc.counts[cmd.Name()]++
		cc.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (cc *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		cc.mu.Lock()
		for _, cmd := range cmds {
			cc.counts[cmd.Name()]++
		}
		cc.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (cc *commandCounter) total() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	n := 0
	for _, c := range cc.counts {
		n += c
	}
	return n
}

func (cc *commandCounter) reset() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.counts = map[string]int{}
}

// The revocation check asks nothing while no job runs, and one MGET for
// all the running jobs.
func TestWorkerRevokedCheckCost(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		w, err := NewWorker(b.client, WorkerOptions{Prefix: b.prefix, Queue: testQueue, Logger: quiet},
			func(context.Context, Job) error { return nil })
		require.NoError(t, err)
		require.NoError(t, b.client.Ping(ctx).Err()) // connect before counting
		cc := countCommands(b.client)
		require.NoError(t, w.checkRevoked(ctx))
		require.Zero(t, cc.total())

		causes := map[string]error{}
		for _, uid := range []string{"u1", "u2", "u3"} {
			tk := &task{raw: uid, uid: uid, cancel: func(err error) { causes[uid] = err }}
			w.active[tk] = struct{}{}
		}
		r := b.newRedis(t, "s", refresh.NewVirtualClock(t0))
		require.NoError(t, r.Revoke(ctx, []refresh.Revocation{{AttemptUID: "u2", Reason: refresh.RevokedSuperseded, DeadlineAt: t0.Add(time.Hour)}}))
		cc.reset()
		require.NoError(t, w.checkRevoked(ctx))
		require.Equal(t, map[string]int{"mget": 1}, cc.counts)
		require.Equal(t, map[string]error{"u2": ErrSuperseded}, causes)
		// A job stopped is not asked about again.
		cc.reset()
		require.NoError(t, w.checkRevoked(ctx))
		require.Equal(t, map[string]int{"mget": 1}, cc.counts)
		require.Len(t, causes, 1)
	})
}

// lostReplies makes the first n BLMOVEs that took a job fail as if their
// reply had been lost on the way (a worker stopped for longer than its
// read timeout).
type lostReplies struct{ n atomic.Int32 }

func (l *lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && cmd.Name() == "blmove" && l.n.Add(-1) >= 0 {
			err = errors.New("read tcp: i/o timeout")
			cmd.SetErr(err)
		}
		return err
	}
}

func (l *lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A job moved to the working list by a take whose reply was lost is given
// back and runs, once.
func TestWorkerGivesBackJobOfLostReply(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		lost := &lostReplies{}
		lost.n.Store(1)
		b.client.AddHook(lost)
		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{Concurrency: 2}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		wb.push(t, wb.job("m1"))
		require.Equal(t, []refresh.Outcome{{ModelID: "m1", AttemptUID: "uid-m1", Type: "success"}}, wb.receive(t, 1))
		require.Equal(t, "m1", <-ran)
		require.Empty(t, ran)
		require.EqualValues(t, 1, wb.worker.Stats().GivenBack)
		require.Empty(t, b.lrange(t, b.keys.workingKey(testQueue, wb.worker.ID())))
	})
}

// waitFor waits until cond holds, yielding in between.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}

// A live worker notices a job in its working list that it does not run,
// however it got there, and gives it back at its next heartbeat.
func TestWorkerGivesBackStrandedJob(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{Concurrency: 2}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		// The heartbeat and revocation loops sleep.
		waitFor(t, func() bool { return wb.clock.Waiters() == 2 })
		raw, err := json.Marshal(wb.job("stranded"))
		require.NoError(t, err)
		b.lpush(t, b.keys.workingKey(testQueue, wb.worker.ID()), string(raw))
		wb.clock.Advance(DefaultWorkerTimeout / 5)
		require.Equal(t, []refresh.Outcome{{ModelID: "stranded", AttemptUID: "uid-stranded", Type: "success"}}, wb.receive(t, 1))
		require.Equal(t, "stranded", <-ran)
		require.EqualValues(t, 1, wb.worker.Stats().GivenBack)
	})
}

// Reconciliation leaves alone a job whose take is still under way: it waits
// for the take to end, and the job is then running.
func TestReconcileWaitsForTakes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		w, err := NewWorker(b.client, WorkerOptions{Prefix: b.prefix, Queue: testQueue, Concurrency: 2, Logger: quiet},
			func(context.Context, Job) error { return nil })
		require.NoError(t, err)
		working := b.keys.workingKey(testQueue, w.ID())
		b.lpush(t, working, "in flight")
		w.takers[1] = 1 // a take is under way

		listed := make(chan struct{})
		b.client.AddHook(onCommand{name: "lrange", f: func() { close(listed) }})
		done := make(chan int)
		go func() {
			n, err := w.reconcileOnce(ctx)
			require.NoError(t, err)
			done <- n
		}()
		<-listed
		// The take ends with the job it moved.
		w.mu.Lock()
		w.active[&task{raw: "in flight"}] = struct{}{}
		w.takers[1]++
		w.taken.Broadcast()
		w.mu.Unlock()
		require.Zero(t, <-done)
		require.Equal(t, []string{"in flight"}, b.lrange(t, working))
	})
}

// onCommand calls f after the first command named name.
type onCommand struct {
	name string
	f    func()
}

func (o onCommand) DialHook(next redis.DialHook) redis.DialHook { return next }

func (o onCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	var once sync.Once
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == o.name {
			once.Do(o.f)
		}
		return err
	}
}

func (o onCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A busy worker takes as many jobs as it has idle handlers with one BLMOVE,
// one script and one MGET, and keeps each in its working list until its
// outcome is pushed.
func TestWorkerTakesInBatches(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		const n = 10
		arrived := make(chan string, n)
		release := make(chan struct{})
		jobs := make([]refresh.Job, n)
		clock := refresh.NewVirtualClock(t0)
		for i := range jobs {
			jobs[i] = refresh.Job{ModelID: fmt.Sprintf("m%d", i), AttemptUID: fmt.Sprintf("uid-%d", i), Queue: testQueue,
				StartedAt: t0, DeadlineAt: t0.Add(time.Hour)}
		}
		// Pushed before the worker starts, so its first take finds them.
		sched := b.newRedis(t, "pusher", clock)
		require.NoError(t, sched.Push(context.Background(), jobs))
		jobsKey := b.keys.jobsKey(testQueue)
		cc := countCommands(b.client)
		takes := &countScripts{key: jobsKey}
		b.client.AddHook(takes)
		wb := startWorker(t, b, WorkerOptions{Concurrency: n, Clock: clock}, func(ctx context.Context, job Job) error {
			arrived <- job.ModelID
			<-release
			return nil
		})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		got := map[string]bool{}
		for range n {
			got[<-arrived] = true
		}
		require.Len(t, got, n)
		cc.mu.Lock()
		require.Equal(t, 1, cc.counts["blmove"], "one BLMOVE for the first job")
		require.Equal(t, 1, cc.counts["mget"], "one MGET for their revocations")
		cc.mu.Unlock()
		require.EqualValues(t, 1, takes.n.Load(), "one script for the others")
		// Running: all held in the working list.
		working := b.keys.workingKey(testQueue, wb.worker.ID())
		require.Len(t, b.lrange(t, working), n)

		once.Do(func() { close(release) })
		outs := wb.receive(t, n)
		ids := make([]string, len(outs))
		for i, o := range outs {
			ids[i] = o.ModelID
		}
		require.ElementsMatch(t, []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, ids)
		waitFor(t, func() bool { return len(b.lrange(t, working)) == 0 })
		require.EqualValues(t, n, wb.worker.Stats().Taken)
		require.EqualValues(t, n, wb.worker.Stats().Succeeded)
	})
}

// An outcome that cannot be pushed leaves its job in the working list, and
// the job is given back and runs again once pushing works.
func TestWorkerKeepsJobOfUnpostedOutcome(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		const id = "w1"
		working := b.keys.workingKey(testQueue, id)
		failing := &failAcks{working: working}
		failing.on.Store(true)
		b.client.AddHook(failing)
		ran := make(chan string, 10)
		wb := startWorker(t, b, WorkerOptions{ID: id, Concurrency: 2, Clock: refresh.SystemClock{}}, func(ctx context.Context, job Job) error {
			ran <- job.ModelID
			return nil
		})
		wb.push(t, wb.job("m1"))
		require.Equal(t, "m1", <-ran)
		// Five tries, 100ms to 800ms apart: the job stays held meanwhile
		// (and while a heartbeat's attempt to give it back fails too).
		waitFor(t, func() bool { return failing.failed.Load() >= 5 })
		require.Len(t, b.lrange(t, working), 1)
		failing.on.Store(false)
		// The reconciler gives it back; it runs again and is answered.
		require.Equal(t, "m1", <-ran)
		require.Equal(t, []refresh.Outcome{{ModelID: "m1", AttemptUID: "uid-m1", Type: "success"}}, wb.receive(t, 1))
		require.EqualValues(t, 1, wb.worker.Stats().GivenBack)
	})
}

// failAcks makes the acknowledgements of a worker (the transactions that
// remove jobs from its working list) fail while on is set.
type failAcks struct {
	working string
	on      atomic.Bool
	failed  atomic.Int32
}

func (f *failAcks) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failAcks) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (f *failAcks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if args := cmd.Args(); cmd.Name() == "lrem" && len(args) > 1 && args[1] == f.working && f.on.Load() {
				f.failed.Add(1)
				err := errors.New("connection reset by peer")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// countScripts counts the scripts run with success whose first key is key.
type countScripts struct {
	key string
	n   atomic.Int32
}

func (c *countScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *countScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if name := cmd.Name(); err == nil && (name == "evalsha" || name == "eval") && len(args) > 3 && args[3] == c.key {
			c.n.Add(1) // a NOSCRIPT answer, which EVAL follows, does not count
		}
		return err
	}
}

func (c *countScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
