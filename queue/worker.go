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
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
)

// Defaults of WorkerOptions.
const (
	DefaultBlock         = time.Second
	DefaultWorkerTimeout = 10 * time.Second
	DefaultRevokedCheck  = 500 * time.Millisecond
)

// WorkerOptions configures a Worker.
type WorkerOptions struct {
	// Prefix starts every key (default "freshen"); it must match the
	// scheduler's.
	Prefix string
	// Queue is the queue the worker takes jobs from (default "default"): 1
	// to 200 letters, digits or ._@- starting with a letter or digit (no
	// colon, which would make keys ambiguous).
	Queue string
	// Concurrency is how many jobs run at once (default 1). Jobs are taken
	// in batches of up to as many as there are idle handlers, by at most
	// two loops, each of which holds a client connection while it waits
	// for a job; with the acknowledgements, the heartbeat and the
	// revocation checks the worker uses at most six connections at once,
	// besides those of handlers posting a status.
	Concurrency int
	// ID names the worker among the workers of its queue, with the same
	// rule as Queue (default: host name, process id and a random suffix).
	// A worker that keeps its ID across restarts gives back the jobs its
	// previous life left unfinished as soon as it starts; otherwise they
	// are given back once it has not been seen for WorkerTimeout.
	ID string
	// Block is how long one taker waits on Redis for a job before it looks
	// whether Run should stop (default 1s). Shutdown takes up to Block.
	Block time.Duration
	// WorkerTimeout is the worker's lease: how long it may go unseen
	// before the other workers of its queue put its unfinished jobs back on
	// the queue (default 10s). A live worker beats every WorkerTimeout/5,
	// from a goroutine of its own, however long its jobs run. Clocks of
	// the hosts must agree to well within it.
	WorkerTimeout time.Duration
	// RevokedCheck is how often the worker asks, in one request for all
	// its running jobs, whether their attempts were revoked (default
	// 500ms); nothing is asked while no job runs.
	RevokedCheck time.Duration
	// Limits bound the jobs taken and the outcomes sent (default
	// DefaultLimits(); use the scheduler's).
	Limits Limits
	// Clock gives the time of deadlines and heartbeats (default
	// refresh.SystemClock).
	Clock refresh.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Handler runs one job. ctx is cancelled at the job's deadline, on the
// worker's clock, with context.Cause(ctx) context.DeadlineExceeded; and
// within about RevokedCheck of the attempt being revoked (superseded by a
// trigger, cancelled, or its model deleted), with a cause that matches
// ErrRevoked and one of ErrSuperseded, ErrCancelled, ErrDeleted. Returning
// nil reports success; an error reports a failure (see JobError for the
// kind, retryability and customer message); a panic reports a failure of
// kind "panic". The outcome of a revoked attempt is still sent; the
// scheduler ignores it as stale.
type Handler func(ctx context.Context, job Job) error

// ErrRevoked is the cause of a handler's context cancelled because its
// attempt is over without an outcome; the cause is one of the errors below
// (which wrap it), or for a reason unknown to this version, ErrRevoked
// wrapped with that reason.
var ErrRevoked = errors.New("attempt revoked")

// Causes of a revoked attempt, after the reasons of refresh.Revocation.
var (
	// ErrSuperseded: a trigger started a new attempt of the model.
	ErrSuperseded = fmt.Errorf("%w: %s", ErrRevoked, refresh.RevokedSuperseded)
	// ErrCancelled: the attempt was cancelled.
	ErrCancelled = fmt.Errorf("%w: %s", ErrRevoked, refresh.RevokedCancelled)
	// ErrDeleted: the model was deleted.
	ErrDeleted = fmt.Errorf("%w: %s", ErrRevoked, refresh.RevokedDeleted)
)

// revokedCause is the cause of a revocation with reason.
func revokedCause(reason string) error {
	switch reason {
	case refresh.RevokedSuperseded:
		return ErrSuperseded
	case refresh.RevokedCancelled:
		return ErrCancelled
	case refresh.RevokedDeleted:
		return ErrDeleted
	}
	return fmt.Errorf("%w: %s", ErrRevoked, truncateText(reason, 64))
}

// Job is the job a Handler runs.
type Job struct {
	refresh.Job
	w *Worker
}

// Status posts a progress message for the job (a status outcome); the
// model shows it to customers while the attempt runs. A message over the
// limit is cut (Limits.MaxMessageBytes).
func (j Job) Status(ctx context.Context, message string) error {
	if j.w == nil {
		return errors.New("queue: status: job not taken by a worker")
	}
	return j.w.postOne(ctx, refresh.Outcome{
		ModelID: j.ModelID, AttemptUID: j.AttemptUID, Type: refresh.OutcomeStatus,
		Message: cleanText(message, j.w.opt.Limits.MaxMessageBytes),
	})
}

// Worker takes jobs from one queue, runs a Handler on each and posts the
// outcomes. A job it takes is moved to a working list of its own and
// removed, atomically with pushing its outcome, once the handler returned;
// the working list of a worker that died is put back on the queue, and a
// job the worker holds without running it (a reply lost on the way) is
// given back. A job whose deadline has passed, or whose attempt was
// revoked, when it is taken is dropped unrun.
//
// It works in batches (WIRE.md, "Taking jobs in batches"): a take moves as
// many jobs as there are idle handlers in one script, their revocations
// are read in one MGET, and the outcomes of the handlers that returned
// meanwhile are pushed, and their jobs dropped from the working list, in
// one script, so that a busy worker sends a few commands per batch rather
// than several per job.
type Worker struct {
	client  redis.UniversalClient
	opt     WorkerOptions
	keys    keys
	clock   refresh.Clock
	log     *slog.Logger
	handler Handler
	running atomic.Bool

	mu sync.Mutex
	// active are the jobs taken and not yet finished with, as taken: a
	// job stays active until its outcome is posted.
	active map[*task]struct{}
	// takers counts the takes of each fetch loop: odd while one is under
	// way.
	takers []uint64
	// taken is signalled when a take ends.
	taken *sync.Cond
	// reconcile asks the reconciler to look at the working list.
	reconcile chan struct{}

	// deadlines cancels the handlers whose deadline has come.
	deadlines *deadlines

	// Set by Run for its duration.
	// slots holds a value per handler that may start.
	slots chan struct{}
	// handlers counts the handlers running.
	handlers sync.WaitGroup
	// idle hands a job to a runner waiting for one; runners counts the
	// runners, waiting or running a handler.
	idle    chan runJob
	runners sync.WaitGroup
	// runnersStarted counts the runners dispatch started.
	runnersStarted atomic.Int64
	// done carries the jobs finished with to the completer.
	done chan done

	stats struct {
		taken, succeeded, failed, snoozed, expired, revoked, stopped, dead, givenBack, recovered atomic.Int64
	}
}

// done is a job finished with: its outcome to push, if any (none for a job
// dropped unrun), and its task, whose message to drop from the working
// list.
type done struct {
	t       *task
	outcome []byte
}

// maxBatch bounds the jobs one take moves and the jobs one
// acknowledgement drops.
const maxBatch = 1000

// fetchLoops is how many loops take jobs, at most: while one waits for its
// reply, the other can take for the handlers that returned meanwhile.
const fetchLoops = 2

// task is a job taken: the message as taken and, once its handler runs,
// how to stop it.
type task struct {
	raw     string
	uid     string
	cancel  context.CancelCauseFunc
	revoked bool
}

// namePattern is the rule for queue names and worker ids: no colon, so
// that keys stay unambiguous.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$`)

const nameRule = "must be 1 to 200 letters, digits or ._@- starting with a letter or digit"

// ValidateName returns an error if name may not be a queue name or a
// worker id (WIRE.md, "Names").
func ValidateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%s, got %s", nameRule, shortText(name))
	}
	return nil
}

// NewWorker returns a worker running handler on the jobs of opt.Queue, or
// an error naming what is missing or invalid.
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
	if err := ValidateName(opt.Queue); err != nil {
		return nil, fmt.Errorf("queue: queue: %w", err)
	}
	if opt.ID == "" {
		opt.ID = defaultID()
	}
	if err := ValidateName(opt.ID); err != nil {
		return nil, fmt.Errorf("queue: id: %w", err)
	}
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	if opt.Concurrency == 0 {
		opt.Concurrency = 1
	}
	if opt.Block <= 0 {
		opt.Block = DefaultBlock
	}
	if opt.WorkerTimeout <= 0 {
		opt.WorkerTimeout = DefaultWorkerTimeout
	}
	if opt.RevokedCheck <= 0 {
		opt.RevokedCheck = DefaultRevokedCheck
	}
	var err error
	if opt.Limits, err = opt.Limits.orDefault(); err != nil {
		return nil, err
	}
	if opt.Clock == nil {
		opt.Clock = refresh.SystemClock{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	w := &Worker{
		client:    client,
		opt:       opt,
		keys:      newKeys(opt.Prefix),
		clock:     opt.Clock,
		log:       opt.Logger.With("queue", opt.Queue, "worker", opt.ID),
		handler:   handler,
		active:    map[*task]struct{}{},
		takers:    make([]uint64, min(opt.Concurrency, fetchLoops)),
		reconcile: make(chan struct{}, 1),
		deadlines: newDeadlines(opt.Clock),
	}
	w.taken = sync.NewCond(&w.mu)
	return w, nil
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.opt.ID }

// Run takes and runs jobs, up to Concurrency at once, until ctx ends. It
// first puts back on the queue the jobs a previous life of this worker (same
// ID) left unfinished, and those of dead workers. When ctx ends it stops
// taking jobs, waits for the running handlers (whose ctx shutdown does not
// cancel: they run to completion, to their deadline or to their
// revocation), posts their outcomes, puts back any job it holds unrun, and
// returns nil. A Worker runs once at a time.
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

	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	loops.Go(func() { w.beatLoop(loopCtx) })
	loops.Go(func() { w.revokedLoop(loopCtx) })
	loops.Go(func() { w.reconcileLoop(loopCtx) })
	loops.Go(func() { w.deadlines.watch(loopCtx) })

	w.slots = make(chan struct{}, w.opt.Concurrency)
	w.release(w.opt.Concurrency)
	w.done = make(chan done, w.opt.Concurrency)
	w.idle = make(chan runJob)
	completed := make(chan struct{})
	go func() {
		w.complete(context.WithoutCancel(ctx))
		close(completed)
	}()

	var fetchers sync.WaitGroup
	for i := range w.takers {
		fetchers.Go(func() { w.fetch(ctx, i) })
	}
	fetchers.Wait()
	w.handlers.Wait()
	close(w.idle)
	w.runners.Wait()
	close(w.done)
	<-completed
	stopLoops()
	loops.Wait()

	// A job whose reply was lost to shutdown may still sit in the working
	// list; give it back, and leave the set of live workers.
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
		w.stats.givenBack.Add(int64(n))
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
		w.stats.recovered.Add(int64(n))
		w.log.Info("gave back jobs of dead workers", "count", n)
	}
	if err != nil {
		return fmt.Errorf("recover jobs of dead workers: %w", err)
	}
	return nil
}

// beatLoop beats every WorkerTimeout/5 and then has the working list
// reconciled.
func (w *Worker) beatLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(w.opt.WorkerTimeout / 5):
		}
		if err := w.beat(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("heartbeat", "err", err)
		}
		w.requestReconcile()
	}
}

func (w *Worker) requestReconcile() {
	select {
	case w.reconcile <- struct{}{}:
	default:
	}
}

// reconcileLoop reconciles the working list whenever asked, until ctx ends.
func (w *Worker) reconcileLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.reconcile:
		}
		n, err := w.reconcileOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Error("reconcile working list", "err", err)
		}
		if n > 0 {
			w.log.Warn("gave back jobs held but not running", "count", n)
		}
	}
}

// reconcileOnce gives back the jobs of the working list that this worker
// does not run (their take's reply was lost, or their outcome could not be
// posted), and returns how many. A job still on its way to a taker is not
// one of them: the list is read, then the takes under way at that moment
// are waited for; what they took is then active.
func (w *Worker) reconcileOnce(ctx context.Context) (int, error) {
	working := w.keys.workingKey(w.opt.Queue, w.opt.ID)
	items, err := w.client.LRange(ctx, working, 0, -1).Result()
	if err != nil || len(items) == 0 {
		return 0, err
	}
	// The takes under way once the list is read, including those begun
	// while it was read, may have moved a job into it that is not active
	// yet: each is waited for. A take begun later moves its jobs after the
	// read.
	w.mu.Lock()
	under := map[int]uint64{}
	for i, n := range w.takers {
		if n%2 == 1 {
			under[i] = n
		}
	}
	for i, n := range under {
		for w.takers[i] == n {
			w.taken.Wait()
		}
	}
	held := make(map[string]int, len(w.active))
	for t := range w.active {
		held[t.raw]++
	}
	w.mu.Unlock()
	var stranded []any
	for _, raw := range items { // newest first
		if held[raw] > 0 {
			held[raw]--
			continue
		}
		stranded = append(stranded, raw)
	}
	if len(stranded) == 0 {
		return 0, nil
	}
	// Under the lock, so that a job given back is counted before a take
	// that gets it again can start it.
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := giveBackScript.Run(ctx, w.client, []string{working, w.keys.jobsKey(w.opt.Queue)}, stranded...).Int()
	w.stats.givenBack.Add(int64(n))
	return n, err
}

// revokedLoop checks every RevokedCheck whether the attempts of the running
// jobs were revoked, and stops those that were, until ctx ends.
func (w *Worker) revokedLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(w.opt.RevokedCheck):
		}
		if err := w.checkRevoked(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("check revoked attempts", "err", err)
		}
	}
}

// checkRevoked reads the revocation keys of all running jobs in one MGET
// and cancels the handlers of those revoked. It asks nothing if no job
// runs.
func (w *Worker) checkRevoked(ctx context.Context) error {
	w.mu.Lock()
	var tasks []*task
	var keys []string
	for t := range w.active {
		if t.cancel != nil && !t.revoked {
			tasks = append(tasks, t)
			keys = append(keys, w.keys.revokedKey(t.uid))
		}
	}
	w.mu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	vals, err := w.client.MGet(ctx, keys...).Result()
	if err != nil {
		return err
	}
	for i, v := range vals {
		reason, ok := v.(string)
		if !ok {
			continue
		}
		t := tasks[i]
		w.mu.Lock()
		t.revoked = true
		w.mu.Unlock()
		w.stats.stopped.Add(1)
		w.log.Info("stopping job: attempt revoked", "attempt_uid", t.uid, "reason", reason)
		t.cancel(revokedCause(reason))
	}
	return nil
}

// acquire waits until a handler may start and returns how many may (at
// most maxBatch), having taken their slots; 0 if ctx ended first.
func (w *Worker) acquire(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-w.slots:
	}
	n := 1
	for n < maxBatch {
		select {
		case <-w.slots:
			n++
		default:
			return n
		}
	}
	return n
}

// release frees n handler slots.
func (w *Worker) release(n int) {
	for range n {
		w.slots <- struct{}{}
	}
}

// fetch is fetch loop i: whenever handlers are idle, it takes as many jobs
// and starts them, until ctx ends.
func (w *Worker) fetch(ctx context.Context, i int) {
	for {
		n := w.acquire(ctx)
		if n == 0 {
			return
		}
		tasks, err := w.takeJobs(ctx, i, n)
		w.release(n - len(tasks))
		w.stats.taken.Add(int64(len(tasks)))
		if ctx.Err() != nil {
			// Taken while shutting down: Run gives them back.
			for _, t := range tasks {
				w.finish(t)
			}
			w.release(len(tasks))
			return
		}
		w.start(ctx, tasks)
		if err != nil {
			// Jobs may have moved without our hearing of it.
			w.log.Error("take jobs", "err", err)
			w.requestReconcile()
			select {
			case <-ctx.Done():
				return
			case <-w.clock.After(w.opt.Block):
			}
		}
	}
}

// takeJobs moves up to n jobs to the working list, waiting up to Block for
// the first, and returns them as active tasks, oldest first.
// Jobs it returns with an error were taken before the error.
func (w *Worker) takeJobs(ctx context.Context, i, n int) ([]*task, error) {
	jobs, working := w.keys.jobsKey(w.opt.Queue), w.keys.workingKey(w.opt.Queue, w.opt.ID)
	w.mu.Lock()
	w.takers[i]++
	w.mu.Unlock()
	// The first job with BLMOVE, which waits for one; the others, if
	// there are any at once, with one script.
	var raws []string
	raw, err := blmove(ctx, w.client, jobs, working, "LEFT", w.opt.Block)
	switch {
	case errors.Is(err, redis.Nil):
		err = nil
	case err == nil:
		raws = append(raws, raw)
		if n > 1 {
			var more []string
			more, err = takeBatch(ctx, w.client, jobs, working, n-1, w.opt.Limits.batchBytes())
			raws = append(raws, more...)
		}
	}
	w.mu.Lock()
	tasks := make([]*task, len(raws))
	for j, raw := range raws {
		tasks[j] = &task{raw: raw}
		w.active[tasks[j]] = struct{}{}
	}
	w.takers[i]++
	w.taken.Broadcast()
	w.mu.Unlock()
	return tasks, err
}

// takeBatch moves up to n jobs from the right of jobs to the left of
// working, atomically, while they add up to at most bytes (the first one
// whatever its size), and returns them oldest first.
func takeBatch(ctx context.Context, c redis.Scripter, jobs, working string, n, bytes int) ([]string, error) {
	raws, err := moveScript.Run(ctx, c, []string{jobs, working}, n, bytes).StringSlice()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return raws, err
}

// finish forgets t.
func (w *Worker) finish(t *task) {
	w.mu.Lock()
	delete(w.active, t)
	w.mu.Unlock()
}

// start decides the fate of the tasks taken: a job that cannot be decoded
// is dead-lettered, one whose deadline has passed or whose attempt was
// revoked (one MGET for them all) is dropped unrun, and each other one runs
// on a runner (dispatch). Each holds a handler slot, which it frees.
func (w *Worker) start(ctx context.Context, tasks []*task) {
	if len(tasks) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	now := w.clock.Now()
	run := make([]*task, 0, len(tasks))
	jobs := make([]refresh.Job, 0, len(tasks))
	keys := make([]string, 0, len(tasks))
	for _, t := range tasks {
		job, reason := decodeJob(t.raw, w.opt.Limits)
		if reason != "" {
			w.deadLetter(ctx, t, "job: "+reason)
			continue
		}
		t.uid = job.AttemptUID
		if !job.DeadlineAt.IsZero() && !now.Before(job.DeadlineAt) {
			w.stats.expired.Add(1)
			w.log.Info("dropped job past its deadline", "model_id", job.ModelID, "attempt_uid", job.AttemptUID, "deadline_at", job.DeadlineAt)
			w.drop(t)
			continue
		}
		run, jobs = append(run, t), append(jobs, job)
		keys = append(keys, w.keys.revokedKey(job.AttemptUID))
	}
	if len(keys) == 0 {
		return
	}
	vals, err := w.client.MGet(ctx, keys...).Result()
	if err != nil {
		// Run them: a revocation is seen while they run.
		w.log.Error("check whether the attempts were revoked", "count", len(keys), "err", err)
		vals = nil
	}
	for i, t := range run {
		if i < len(vals) {
			if reason, ok := vals[i].(string); ok {
				w.stats.revoked.Add(1)
				w.log.Info("dropped job: attempt revoked", "model_id", jobs[i].ModelID, "attempt_uid", t.uid, "reason", reason)
				w.drop(t)
				continue
			}
		}
		w.handlers.Add(1)
		w.dispatch(runJob{ctx: ctx, t: t, job: jobs[i]})
	}
}

// runJob is a job for a runner to run.
type runJob struct {
	ctx context.Context
	t   *task
	job refresh.Job
}

// dispatch has j run by a runner: one waiting for a job if there is one,
// else a new one. A runner runs job after job and waits for the next one
// until Run returns, so a job costs neither starting a goroutine nor
// growing a fresh goroutine's stack. There are at most about twice as many
// runners as handler slots: a new one starts only when none waits, and
// all but those finishing a job then hold a slot.
func (w *Worker) dispatch(j runJob) {
	select {
	case w.idle <- j:
	default:
		w.runners.Add(1)
		w.runnersStarted.Add(1)
		go w.runner(j)
	}
}

// runner runs j, then the jobs dispatch hands it, until Run closes idle.
// It lets go of each job before it waits for the next: a message may be
// as large as Limits.MaxBytes, and a waiting runner keeps none.
func (w *Worker) runner(j runJob) {
	defer w.runners.Done()
	for ok := true; ok; j, ok = <-w.idle {
		w.run(j.ctx, j.t, j.job)
		j = runJob{}
	}
}

// deadLetter sets t aside with reason and frees its slot.
func (w *Worker) deadLetter(ctx context.Context, t *task, reason string) {
	defer w.release(1)
	defer w.finish(t)
	working := w.keys.workingKey(w.opt.Queue, w.opt.ID)
	entry := deadEntry(reason, t.raw, w.clock.Now().UTC(), w.opt.Limits)
	// The list's bound is the scheduler's (Options.MaxDeadLetters).
	n, _, err := setAside(ctx, w.client, working, w.keys.deadKey(), 0, []any{t.raw, entry})
	w.stats.dead.Add(int64(n))
	w.log.Warn("dead-lettered job", "reason", reason, "message", truncateText(t.raw, 200), "err", err)
}

// drop has t removed from the working list without an outcome, and frees
// its slot.
func (w *Worker) drop(t *task) {
	w.done <- done{t: t}
	w.release(1)
}

// run runs the handler on job, hands its outcome to the completer and
// frees its slot.
func (w *Worker) run(ctx context.Context, t *task, job refresh.Job) {
	defer w.handlers.Done()
	jctx, cancel := w.jobContext(ctx, job.DeadlineAt)
	w.mu.Lock()
	t.cancel = cancel
	w.mu.Unlock()
	err := w.call(jctx, job)
	cancel(context.Canceled)
	w.mu.Lock()
	t.cancel = nil // no revocation to look for any more
	w.mu.Unlock()
	out := outcomeOf(job, err, w.opt.Limits)
	switch {
	case out.Type == refresh.OutcomeSnooze:
		w.stats.snoozed.Add(1)
	case out.Type == refresh.OutcomeSuccess:
		w.stats.succeeded.Add(1)
	default:
		w.stats.failed.Add(1)
		w.log.Info("job failed", "model_id", job.ModelID, "attempt_uid", job.AttemptUID, "kind", out.Kind, "err", err)
	}
	w.done <- done{t: t, outcome: appendOutcome(nil, &out)}
	w.release(1)
}

// complete posts what it receives on w.done until the channel closes: each
// time, everything that has arrived meanwhile (up to maxBatch jobs) in one
// transaction.
func (w *Worker) complete(ctx context.Context) {
	batch := make([]done, 0, maxBatch)
	for d := range w.done {
		batch = append(batch[:0], d)
	gather:
		for len(batch) < maxBatch {
			select {
			case d, ok := <-w.done:
				if !ok {
					break gather
				}
				batch = append(batch, d)
			default:
				break gather
			}
		}
		w.post(ctx, batch)
	}
}

// post pushes the outcomes of batch and drops its jobs from the working
// list, in one transaction (MULTI, LPUSH, LREM..., EXEC), retrying a few
// times; then it forgets the jobs. A job whose outcome could not be posted
// stays in the working list: the reconciler gives it back, and it runs
// again.
func (w *Worker) post(ctx context.Context, batch []done) {
	outcomes := make([]any, 0, len(batch))
	for _, d := range batch {
		if d.outcome != nil {
			outcomes = append(outcomes, d.outcome)
		}
	}
	outcomesKey, working := w.keys.outcomesKey(), w.keys.workingKey(w.opt.Queue, w.opt.ID)
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		_, err := w.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if len(outcomes) > 0 {
				p.LPush(ctx, outcomesKey, outcomes...)
			}
			for _, d := range batch {
				// From the right (oldest) end, where jobs done with mostly are.
				p.LRem(ctx, working, -1, d.t.raw)
			}
			return nil
		})
		if err == nil {
			break
		}
		if try == 5 {
			w.log.Error("post outcomes: giving up", "count", len(batch), "err", err)
			w.requestReconcile()
			break
		}
		w.log.Error("post outcomes", "count", len(batch), "err", err, "retry_in", backoff)
		<-w.clock.After(backoff)
		backoff *= 2
	}
	w.mu.Lock()
	for _, d := range batch {
		delete(w.active, d.t)
	}
	w.mu.Unlock()
}

// jobContext returns a context that is cancelled, with cause
// context.DeadlineExceeded, when the clock reaches deadline, and the
// function that cancels it with another cause, which also forgets the
// deadline.
func (w *Worker) jobContext(parent context.Context, deadline time.Time) (context.Context, context.CancelCauseFunc) {
	ctx := &handlerContext{parent: parent}
	if deadline.IsZero() {
		return ctx, ctx.cancelWith
	}
	d := w.deadlines.add(deadline, ctx.cancelWith)
	return ctx, func(cause error) {
		w.deadlines.remove(d)
		ctx.cancelWith(cause)
	}
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

// postOne pushes one outcome.
func (w *Worker) postOne(ctx context.Context, o refresh.Outcome) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode outcome: %w", err)
	}
	if err := w.client.LPush(ctx, w.keys.outcomesKey(), b).Err(); err != nil {
		return fmt.Errorf("post %s outcome: %w", o.Type, err)
	}
	return nil
}

// WorkerStats counts what a Worker has done since it was made.
type WorkerStats struct {
	Taken        int64 // jobs taken from the queue
	Succeeded    int64 // handlers that returned nil
	Failed       int64 // handlers that returned an error or panicked
	Snoozed      int64 // handlers that returned a snooze
	Expired      int64 // jobs dropped unrun: their deadline had passed
	Revoked      int64 // jobs dropped unrun: their attempt was revoked
	Stopped      int64 // running handlers cancelled: their attempt was revoked
	DeadLettered int64 // jobs set aside as undecodable
	GivenBack    int64 // jobs held but not running, given back to the queue
	Recovered    int64 // jobs of dead workers given back to the queue
}

// Stats returns the counters.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{
		Taken:        w.stats.taken.Load(),
		Succeeded:    w.stats.succeeded.Load(),
		Failed:       w.stats.failed.Load(),
		Snoozed:      w.stats.snoozed.Load(),
		Expired:      w.stats.expired.Load(),
		Revoked:      w.stats.revoked.Load(),
		Stopped:      w.stats.stopped.Load(),
		DeadLettered: w.stats.dead.Load(),
		GivenBack:    w.stats.givenBack.Load(),
		Recovered:    w.stats.recovered.Load(),
	}
}

// outcomeOf is the outcome of job whose handler returned err, within lim:
// texts are made valid UTF-8 without NUL and cut to their limit, and a kind
// the wire format would refuse is sent as KindError.
func outcomeOf(job refresh.Job, err error, lim Limits) refresh.Outcome {
	o := refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess}
	if err == nil {
		return o
	}
	var r *Result
	if errors.As(err, &r) {
		switch {
		case r.Snooze:
			o.Type, o.Until, o.For = refresh.OutcomeSnooze, r.Until, refresh.Duration(r.For)
		case r.Unchanged:
			o.Unchanged = true
		}
		return o
	}
	o.Type, o.Kind, o.Message = refresh.OutcomeFailure, KindError, cleanText(err.Error(), lim.MaxMessageBytes)
	var je *JobError
	if errors.As(err, &je) {
		if validKind(je.Kind, lim) {
			o.Kind = je.Kind
		}
		if je.Permanent {
			no := false
			o.Retryable = &no
		}
		o.UserMessage = cleanText(je.UserMessage, lim.MaxMessageBytes)
	}
	return o
}

// validKind reports whether kind can be sent as it is.
func validKind(kind string, lim Limits) bool {
	return kind != "" && len(kind) <= lim.MaxKindBytes && utf8.ValidString(kind) && strings.IndexByte(kind, 0) < 0
}

// cleanText makes s a text the scheduler accepts: invalid UTF-8 and NUL
// become U+FFFD, and it is cut to max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	return truncateText(s, max)
}

// defaultID is host-pid-random, with the host name reduced to the
// characters a worker id may hold.
func defaultID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && namePattern.MatchString("a"+string(r)) {
			return r
		}
		return '-'
	}, host)
	if len(host) > 100 {
		host = host[:100]
	}
	if host == "" || !namePattern.MatchString(host[:1]) {
		host = "worker" + host
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
