package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
)

// Defaults of WorkerOptions.
const (
	DefaultBlock         = time.Second
	DefaultWorkerTimeout = time.Minute
)

// WorkerOptions configures a Worker.
type WorkerOptions struct {
	// Prefix starts every key (default "freshen"); it must match the
	// scheduler's.
	Prefix string
	// Queue is the queue the worker takes jobs from (default "default").
	Queue string
	// Concurrency is how many jobs run at once (default 1). Each running
	// taker holds a client connection while it waits for a job, so the
	// client's PoolSize must exceed Concurrency.
	Concurrency int
	// ID names the worker among the workers of its queue (default: host
	// name, process id and a random suffix). A worker that keeps its ID
	// across restarts gives back the jobs its previous life left unfinished
	// as soon as it starts; otherwise they are given back once it has not
	// been seen for WorkerTimeout.
	ID string
	// Block is how long one taker waits on Redis for a job before it looks
	// whether Run should stop (default 1s). Shutdown takes up to Block.
	Block time.Duration
	// WorkerTimeout is how long a worker may go unseen before the other
	// workers of its queue put its unfinished jobs back on the queue
	// (default 1m). A live worker beats every WorkerTimeout/3.
	WorkerTimeout time.Duration
	// Clock gives the time of deadlines and heartbeats (default
	// refresh.SystemClock).
	Clock refresh.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Handler runs one job. ctx is cancelled at the job's deadline, on the
// worker's clock; context.Cause(ctx) is then context.DeadlineExceeded.
// Returning nil reports success; an error reports a failure (see JobError
// for the kind, retryability and customer message); a panic reports a
// failure of kind "panic".
type Handler func(ctx context.Context, job Job) error

// Job is the job a Handler runs.
type Job struct {
	refresh.Job
	w *Worker
}

// Status posts a progress message for the job (a status outcome); the
// model shows it to customers while the attempt runs.
func (j Job) Status(ctx context.Context, message string) error {
	if j.w == nil {
		return errors.New("queue: status: job not taken by a worker")
	}
	return j.w.post(ctx, refresh.Outcome{
		ModelID: j.ModelID, AttemptUID: j.AttemptUID, Type: refresh.OutcomeStatus, Message: message,
	})
}

// Worker takes jobs from one queue, runs a Handler on each and posts the
// outcomes. A job it takes is moved to a working list of its own and
// removed, atomically with pushing its outcome, once the handler returned;
// the working list of a worker that died is put back on the queue, and a
// job whose deadline has passed when it is taken is dropped unrun.
type Worker struct {
	client  redis.UniversalClient
	opt     WorkerOptions
	keys    keys
	clock   refresh.Clock
	log     *slog.Logger
	handler Handler
	running atomic.Bool
}

// NewWorker returns a worker running handler on the jobs of opt.Queue, or
// an error naming what is missing.
func NewWorker(client redis.UniversalClient, opt WorkerOptions, handler Handler) (*Worker, error) {
	if client == nil {
		return nil, errors.New("queue: client: must not be nil")
	}
	if handler == nil {
		return nil, errors.New("queue: handler: must not be nil")
	}
	if opt.Concurrency < 0 {
		return nil, fmt.Errorf("queue: concurrency: must be >= 0, got %d", opt.Concurrency)
	}
	opt.Queue = queueName(opt.Queue)
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	if opt.Concurrency == 0 {
		opt.Concurrency = 1
	}
	if opt.ID == "" {
		opt.ID = defaultID()
	}
	if opt.Block <= 0 {
		opt.Block = DefaultBlock
	}
	if opt.WorkerTimeout <= 0 {
		opt.WorkerTimeout = DefaultWorkerTimeout
	}
	if opt.Clock == nil {
		opt.Clock = refresh.SystemClock{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Worker{
		client:  client,
		opt:     opt,
		keys:    newKeys(opt.Prefix),
		clock:   opt.Clock,
		log:     opt.Logger.With("queue", opt.Queue, "worker", opt.ID),
		handler: handler,
	}, nil
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.opt.ID }

// Run takes and runs jobs with Concurrency goroutines until ctx ends. It
// first puts back on the queue the jobs a previous life of this worker (same
// ID) left unfinished, and those of dead workers. When ctx ends it stops
// taking jobs, waits for the running handlers (whose ctx shutdown does not
// cancel: they run to completion or to their deadline), puts back any job
// it holds unrun, and returns nil. A Worker runs once at a time.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("queue: worker is already running")
	}
	defer w.running.Store(false)
	if err := w.giveBackAll(ctx); err != nil {
		return err
	}
	if err := w.beat(ctx); err != nil {
		return err
	}

	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	beaten := make(chan struct{})
	go func() {
		defer close(beaten)
		w.beatLoop(beatCtx)
	}()

	var wg sync.WaitGroup
	for range w.opt.Concurrency {
		wg.Go(func() { w.take(ctx) })
	}
	wg.Wait()
	stopBeat()
	<-beaten

	// A job whose BLMOVE reply was lost to shutdown may still sit in the
	// working list; give it back, and leave the set of live workers.
	if err := w.giveBackAll(context.WithoutCancel(ctx)); err != nil {
		w.log.Error("give back jobs at shutdown", "err", err)
	}
	return nil
}

// giveBackAll puts this worker's whole working list back on the queue.
func (w *Worker) giveBackAll(ctx context.Context) error {
	n, err := requeue(ctx, w.client, w.keys.workingKey(w.opt.Queue, w.opt.ID), w.keys.jobsKey(w.opt.Queue),
		w.keys.workersKey(w.opt.Queue), w.opt.ID, time.Time{})
	if err != nil {
		return fmt.Errorf("give back unfinished jobs: %w", err)
	}
	if n > 0 {
		w.log.Info("gave back unfinished jobs", "count", n)
	}
	return nil
}

// beat records that the worker is alive and gives back the jobs of the
// workers of its queue that are not.
func (w *Worker) beat(ctx context.Context) error {
	now := w.clock.Now()
	err := w.client.ZAdd(ctx, w.keys.workersKey(w.opt.Queue), redis.Z{Score: float64(now.UnixMilli()), Member: w.opt.ID}).Err()
	if err != nil {
		return fmt.Errorf("worker heartbeat: %w", err)
	}
	n, err := recoverDead(ctx, w.client, w.keys.workersKey(w.opt.Queue), w.keys.jobsKey(w.opt.Queue),
		func(id string) string { return w.keys.workingKey(w.opt.Queue, id) }, w.opt.ID, now.Add(-w.opt.WorkerTimeout))
	if n > 0 {
		w.log.Info("gave back jobs of dead workers", "count", n)
	}
	if err != nil {
		return fmt.Errorf("recover jobs of dead workers: %w", err)
	}
	return nil
}

func (w *Worker) beatLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(w.opt.WorkerTimeout / 3):
		}
		if err := w.beat(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("heartbeat", "err", err)
		}
	}
}

// take is one taker: it runs jobs one after the other until ctx ends.
func (w *Worker) take(ctx context.Context) {
	jobs, working := w.keys.jobsKey(w.opt.Queue), w.keys.workingKey(w.opt.Queue, w.opt.ID)
	for ctx.Err() == nil {
		raw, err := blmove(ctx, w.client, jobs, working, w.opt.Block)
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Error("take job", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-w.clock.After(w.opt.Block):
			}
			continue
		}
		if ctx.Err() != nil {
			// Taken while shutting down: Run gives it back.
			return
		}
		w.process(context.WithoutCancel(ctx), raw)
	}
}

// process runs the job raw and posts its outcome.
func (w *Worker) process(ctx context.Context, raw string) {
	working := w.keys.workingKey(w.opt.Queue, w.opt.ID)
	var job refresh.Job
	reason := ""
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		reason = "job: invalid json: " + err.Error()
	} else if job.ModelID == "" {
		reason = "job: missing model_id"
	} else if job.AttemptUID == "" {
		reason = "job: missing attempt_uid"
	}
	if reason != "" {
		b, _ := json.Marshal(deadLetter{Reason: reason, Message: raw, At: w.clock.Now().UTC()})
		_, err := w.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.LPush(ctx, w.keys.deadKey(), b)
			p.LRem(ctx, working, 1, raw)
			return nil
		})
		w.log.Warn("dead-lettered job", "reason", reason, "message", truncate(raw, 200), "err", err)
		return
	}
	log := w.log.With("model_id", job.ModelID, "attempt_uid", job.AttemptUID)
	if !job.DeadlineAt.IsZero() && !w.clock.Now().Before(job.DeadlineAt) {
		err := w.client.LRem(ctx, working, 1, raw).Err()
		log.Info("dropped job past its deadline", "deadline_at", job.DeadlineAt, "err", err)
		return
	}

	jctx, cancel := w.jobContext(ctx, job.DeadlineAt)
	err := w.call(jctx, job)
	cancel()
	out := outcomeOf(job, err)
	if err != nil {
		log.Info("job failed", "kind", out.Kind, "err", err)
	}
	b, _ := json.Marshal(out)
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		_, err := w.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.LPush(ctx, w.keys.outcomesKey(), b)
			p.LRem(ctx, working, 1, raw)
			return nil
		})
		if err == nil {
			return
		}
		if try == 5 {
			// The job stays in the working list: it is given back at
			// shutdown or when this worker is found dead, and runs again.
			log.Error("post outcome: giving up", "err", err)
			return
		}
		log.Error("post outcome", "err", err, "retry_in", backoff)
		<-w.clock.After(backoff)
		backoff *= 2
	}
}

// jobContext returns a context that is cancelled, with cause
// context.DeadlineExceeded, when the clock reaches deadline.
func (w *Worker) jobContext(parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	if !deadline.IsZero() {
		fired := w.clock.After(deadline.Sub(w.clock.Now()))
		go func() {
			select {
			case <-fired:
				cancel(context.DeadlineExceeded)
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() { cancel(context.Canceled) }
}

// call runs the handler, turning a panic into a failure of kind "panic".
func (w *Worker) call(ctx context.Context, job refresh.Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("handler panicked", "model_id", job.ModelID, "panic", p, "stack", string(debug.Stack()))
			err = &JobError{Kind: KindPanic, Message: fmt.Sprintf("panic: %v", p)}
		}
	}()
	return w.handler(ctx, Job{Job: job, w: w})
}

// post pushes one outcome.
func (w *Worker) post(ctx context.Context, o refresh.Outcome) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode outcome: %w", err)
	}
	if err := w.client.LPush(ctx, w.keys.outcomesKey(), b).Err(); err != nil {
		return fmt.Errorf("post %s outcome: %w", o.Type, err)
	}
	return nil
}

// outcomeOf is the outcome of job whose handler returned err.
func outcomeOf(job refresh.Job, err error) refresh.Outcome {
	o := refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess}
	if err == nil {
		return o
	}
	o.Type, o.Kind, o.Message = refresh.OutcomeFailure, KindError, err.Error()
	var je *JobError
	if errors.As(err, &je) {
		if je.Kind != "" {
			o.Kind = je.Kind
		}
		if je.Permanent {
			no := false
			o.Retryable = &no
		}
		o.UserMessage = je.UserMessage
	}
	return o
}

func defaultID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "worker"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
