package refresh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/xid"
)

// DefaultBatchSize is how many models a scheduler pass claims, and how
// many outcomes a consumer pass applies, unless configured. With 750
// rather than 1000, freshen serve's peak RSS over 100,000 models due at
// once is about 61 MB rather than 68, with the same throughput (freshen
// bench e2e, alternated runs).
const DefaultBatchSize = 750

// SchedulerConfig configures a Scheduler. Store, Queue and Clock are
// required; the rest have defaults.
type SchedulerConfig struct {
	Store Store
	Queue Queue
	Clock Clock
	// BatchSize is how many due models one pass claims (default
	// DefaultBatchSize).
	BatchSize int
	// Loops is how many passes Start runs at once while models are due by
	// the batch (default 1): while one pass waits on the database or the
	// queue, another computes. Each holds a database connection. One more
	// runs beside a pass that claims a full batch or stalls (StallAfter).
	Loops int
	// MaxSleep is the longest the loop sleeps without looking at the store,
	// so that models written by other instances are seen (default 1m).
	MaxSleep time.Duration
	Logger   *slog.Logger
	Metrics  *Metrics
	// SlotPoll is the longest the loop sleeps while claimed models wait
	// for a concurrency slot (default 1s); Wake ends the sleep sooner.
	SlotPoll time.Duration
	// PushTimeout bounds the push of a pass's jobs, during which the pass
	// holds its models locked (default 5s).
	PushTimeout time.Duration
	// StallAfter is how long a pass that claimed less than a full batch
	// may take before a helper loop runs a pass beside it (default 20ms;
	// also with Loops 1): models that fall
	// due while a pass waits on the database (a commit slowed by a
	// checkpoint) start without waiting for it. Passes claim with SKIP
	// LOCKED, so each model is still started by one pass.
	StallAfter time.Duration
	// NewUIDFunc makes attempt uids (default: xid).
	NewUIDFunc func() string
	// EventsFunc, if set, is called after a pass that wrote events commits
	// (the Publisher's Wake).
	EventsFunc func()
	// TickedFunc, if set, is called after every pass; tests wait on it.
	TickedFunc func(TickResult, error)
	// TenantsFunc, if set, returns tenant prefixes beside the keys of the
	// prefix limits (serve passes the prefixes of the prefixed tokens):
	// each model's tenant is the longest of them its id starts with
	// (Tenant), and the tenants take turns for the starts a pass with
	// limits hands out. It is called once per pass that has limits.
	TenantsFunc func() []string
}

func (c *SchedulerConfig) validate() error {
	if c.Store == nil || c.Queue == nil || c.Clock == nil {
		return errors.New("scheduler: Store, Queue and Clock are required")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Loops <= 0 {
		c.Loops = 1
	}
	if c.MaxSleep <= 0 {
		c.MaxSleep = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = &Metrics{}
	}
	if c.SlotPoll <= 0 {
		c.SlotPoll = time.Second
	}
	if c.PushTimeout <= 0 {
		c.PushTimeout = 5 * time.Second
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 20 * time.Millisecond
	}
	if c.NewUIDFunc == nil {
		c.NewUIDFunc = func() string { return xid.New().String() }
	}
	return nil
}

// Scheduler is the tick loop: it claims due models and applies TickAll to
// each (timeouts, debounced triggers, freshness_lost, catch-up skips, slot
// waits, starts), writes the steps and pushes the jobs of the starts.
type Scheduler struct {
	cfg  SchedulerConfig
	wake chan struct{}
	// more wakes the helper loops of Start: a pass claimed a full batch.
	more chan struct{}
	// ended hears that a helper loop's pass ended.
	ended chan struct{}
	// failing is set once a pass has failed, until one succeeds: the
	// passes meanwhile push their jobs only once their batch is written.
	failing atomic.Bool
	// held are the models whose jobs the passes under way have pushed and
	// not yet committed (Holds).
	heldMu sync.Mutex
	held   map[string]struct{}
}

// TickResult is what one pass did.
type TickResult struct {
	Claimed  int
	Started  int
	TimedOut int
	// Waiting counts the claimed models that wait for a slot after the
	// pass.
	Waiting int
	// NextAdmit is the earliest instant a rate limit that held a start
	// back in the pass admits a start again; zero if none held one back.
	NextAdmit time.Time
}

// NewScheduler returns a scheduler, or an error if cfg lacks a required part.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Scheduler{cfg: cfg, wake: make(chan struct{}, 1), more: make(chan struct{}, max(cfg.Loops, 2)),
		ended: make(chan struct{}, 1), held: map[string]struct{}{}}, nil
}

// Holds reports whether a pass of s under way has pushed the job of the
// model and not yet committed: the pass holds the model locked, so an
// outcome of the job cannot be applied before the pass ends (the consumer
// keeps it until then without asking the store; serve wires it in).
func (s *Scheduler) Holds(modelID string) bool {
	s.heldMu.Lock()
	_, ok := s.held[modelID]
	s.heldMu.Unlock()
	return ok
}

// hold adds the models of jobs to those Holds reports, or removes them.
func (s *Scheduler) hold(jobs []Job, on bool) {
	s.heldMu.Lock()
	for _, j := range jobs {
		if on {
			s.held[j.ModelID] = struct{}{}
		} else {
			delete(s.held, j.ModelID)
		}
	}
	s.heldMu.Unlock()
}

// Wake makes a sleeping Start loop look at the store at once; call it when
// a model becomes due earlier than planned (created, triggered, resumed).
func (s *Scheduler) Wake() {
	signal(s.wake)
}

// signal sends on ch unless its buffer is full: whoever receives it has
// not heard yet, or will.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Start runs passes until ctx ends. After a pass that claimed models
// other than waiting ones, it runs the next at once (after the small first
// pass after a wait, once a helper it woke has ended a pass). Otherwise it
// sleeps until the earliest DueAt (at most MaxSleep, at most SlotPoll while
// models wait for a slot, at most until a rate limit that held a start
// back admits one again, TickResult.NextAdmit) or a Wake. A failed pass
// is logged and retried with backoff. While passes claim full batches,
// Loops-1 helpers run passes beside it, and one more beside a full or
// stalled pass. It returns nil when ctx ends.
func (s *Scheduler) Start(ctx context.Context) error {
	var helpers sync.WaitGroup
	// Loops-1 helpers, and one more for a full or stalled pass.
	for range s.cfg.Loops {
		helpers.Go(func() { s.help(ctx) })
	}
	defer helpers.Wait()
	backoff := time.Duration(0)
	// After a wait, the first pass claims a smaller batch: the first jobs
	// of a crowd of due models reach workers sooner, so that workers and
	// outcomes get going while the next batches are claimed. If it is
	// full, every helper claims a whole batch beside it at once, and the
	// passes after them claim whole batches: a crowd due at one second
	// (models sharing a schedule) is claimed in as few passes as it
	// takes, since each model's start is the instant its pass began.
	limit := s.firstBatch()
	for ctx.Err() == nil {
		if limit < s.cfg.BatchSize {
			// Only the helpers' passes that begin after this one count.
			select {
			case <-s.ended:
			default:
			}
		}
		res, err := s.pass(ctx, limit)
		if ctx.Err() != nil {
			return nil
		}
		wait := s.cfg.MaxSleep
		switch {
		case err != nil:
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			s.cfg.Logger.Error("scheduler pass failed", "err", err, "retry_in", backoff.String())
			wait = backoff
		case full(res, limit):
			backoff = 0
			if limit < s.cfg.BatchSize {
				// The small first pass woke every helper, whose batches
				// hold the rest of a crowd of up to Loops batches: a pass
				// of this loop now would only take part of that crowd from
				// them, and start it later than they do. It joins once one
				// of them has ended its pass.
				select {
				case <-ctx.Done():
				case <-s.ended:
				}
			}
			limit = s.cfg.BatchSize
			continue
		case res.Claimed > res.Waiting && res.NextAdmit.IsZero():
			// The pass started models, fewer than a batch: under a steady
			// load more are due by the time it ends, and the next pass finds
			// them as fast as NextDue would say so (both read the head of
			// the due models). Once a pass starts none, NextDue says how
			// long to sleep.
			backoff = 0
			continue
		default:
			backoff = 0
			next, ok, err := s.cfg.Store.NextDue(ctx)
			if err != nil {
				s.cfg.Logger.Error("scheduler: next due", "err", err)
			} else if ok {
				wait = min(next.Sub(s.cfg.Clock.Now()), s.cfg.MaxSleep)
			}
			if res.Waiting > 0 {
				// Models wait for a slot: an attempt that ends, here or in
				// another instance, frees one.
				wait = min(wait, s.cfg.SlotPoll)
			}
			if !res.NextAdmit.IsZero() {
				// A rate limit admits a start again then.
				wait = min(wait, res.NextAdmit.Sub(s.cfg.Clock.Now()))
			}
		}
		limit = s.firstBatch()
		if wait <= 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-s.cfg.Clock.After(wait):
		}
	}
	return nil
}

// firstBatch is the limit of the first pass after a wait: an eighth of
// BatchSize.
func (s *Scheduler) firstBatch() int { return max(1, s.cfg.BatchSize/8) }

// pass runs one pass for Start, reports it, and wakes the helpers if it
// claimed a full batch.
func (s *Scheduler) pass(ctx context.Context, limit int) (TickResult, error) {
	// A pass that claimed less than its limit has claimed every model due
	// at its start: if it stalls, a helper starts those due since. A full
	// pass leaves the next batch to the loop that runs it, or to the
	// helpers it wakes (Loops); one more pass would only compete with it.
	var partial atomic.Bool
	stop := func() bool { return false }
	if c, ok := s.cfg.Clock.(funcClock); ok {
		stop = c.AfterFunc(s.cfg.StallAfter, func() {
			if partial.Load() {
				s.wakeHelper()
			}
		})
	}
	res, err := s.runOnce(ctx, limit, &partial)
	// The pass is over: its stall timer goes before anyone hears of it
	// (TickedFunc), so that it never outlives the pass.
	stop()
	if ctx.Err() != nil {
		return res, err
	}
	if err != nil {
		s.cfg.Metrics.Errors.Add(1)
	}
	if s.cfg.TickedFunc != nil {
		s.cfg.TickedFunc(res, err)
	}
	if err == nil && full(res, limit) && limit == s.cfg.BatchSize {
		for range s.cfg.Loops - 1 {
			s.wakeHelper()
		}
	}
	return res, err
}

// wakeHelper wakes one helper loop, if one sleeps.
func (s *Scheduler) wakeHelper() {
	signal(s.more)
}

// full reports whether a pass of limit models claimed a full batch of
// which some did more than wait for a limit: more may be due at once. A
// batch of waiting models (the store looks at them again every pass) is
// not.
func full(res TickResult, limit int) bool {
	return res.Claimed == limit && res.Waiting < res.Claimed
}

// help is a helper loop of Start: once woken (a pass claimed a full batch,
// or takes longer than StallAfter), it runs passes until one is not full
// or fails, then waits to be woken again.
func (s *Scheduler) help(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.more:
		}
		for ctx.Err() == nil {
			res, err := s.pass(ctx, s.cfg.BatchSize)
			signal(s.ended)
			if err != nil || !full(res, s.cfg.BatchSize) {
				break
			}
		}
	}
}

// RunOnce does one pass in one store transaction: it claims up to BatchSize
// due models, applies TickAll to each under the concurrency limits the
// store counted, writes the steps and pushes the jobs of the starts before
// the transaction commits (a push
// that fails rolls the pass back). Its lifecycle events commit with it.
func (s *Scheduler) RunOnce(ctx context.Context) (TickResult, error) {
	return s.runOnce(ctx, s.cfg.BatchSize, nil)
}

// runOnce is RunOnce claiming up to limit models; it sets partial, if
// not nil, once it has claimed fewer.
func (s *Scheduler) runOnce(ctx context.Context, limit int, partial *atomic.Bool) (TickResult, error) {
	var res TickResult
	var c *changes
	defer func() { putChanges(c) }()
	now := s.cfg.Clock.Now()
	// obs is what the metrics observe once the pass commits.
	var obs passObs
	// pushed are the jobs pushed, their models held until the pass ends.
	var pushed []Job
	claimed, err := s.cfg.Store.ClaimDue(ctx, now, limit, func(due []Model, slots Slots) (Batch, error) {
		if partial != nil && len(due) < limit {
			partial.Store(true)
		}
		putChanges(c)
		c = getChanges(len(due))
		res = TickResult{}
		obs.reset()
		jobs := s.tick(c, due, slots, now, &res, &obs)
		if partial != nil && len(due) == limit && res.Waiting < limit {
			// More may be due: a helper claims the next batch while this
			// pass pushes, writes and commits its own (SKIP LOCKED keeps
			// the batches apart), so that a crowd due at one instant
			// starts sooner. The small first pass after a wait wakes
			// every helper: a crowd may need several batches, and each
			// model's start is the instant its pass began.
			helpers := 1
			if limit < s.cfg.BatchSize {
				helpers = s.cfg.Loops
			}
			for range helpers {
				s.wakeHelper()
			}
		}
		if len(jobs) > 0 {
			// Pushed as soon as the batch is known, before it is written
			// (the writes and the commit then go in one round trip), so
			// that the jobs reach workers sooner; an outcome that finds
			// its model still locked is applied once the pass commits. A
			// pass that fails after its push leaves jobs of attempts that
			// were never recorded: they run, and their outcomes are stale.
			// So once a pass has failed, the next ones push only once
			// their batch is written, until one succeeds: a database that
			// refuses writes for a while does not have the same models'
			// jobs pushed at every try.
			c.HookBeforeWrite = !s.failing.Load()
			c.BeforeCommitFunc = func(ctx context.Context) error {
				pushCtx, cancel := context.WithTimeout(ctx, s.cfg.PushTimeout)
				defer cancel()
				s.hold(jobs, true)
				pushed = append(pushed, jobs...)
				if err := s.cfg.Queue.Push(pushCtx, jobs); err != nil {
					return fmt.Errorf("push %d jobs: %w", len(jobs), err)
				}
				return nil
			}
		}
		return c.Batch, nil
	})
	// Released before EventsFunc, which wakes the consumer for them.
	s.hold(pushed, false)
	res.Claimed = claimed
	s.cfg.Metrics.Ticks.Add(1)
	s.failing.Store(err != nil)
	if err != nil {
		return res, fmt.Errorf("claim due models: %w", err)
	}
	if c != nil {
		report(s.cfg.Metrics, s.cfg.Logger, c.Events, s.cfg.EventsFunc)
	}
	for _, d := range obs.late {
		s.cfg.Metrics.observeLateness(d)
	}
	s.cfg.Metrics.observeLimits(obs.held, obs.waits)
	if claimed > 0 {
		s.cfg.Metrics.observePass(LoopScheduler, s.cfg.Clock.Now().Sub(now))
	}
	return res, nil
}

// passObs is what a pass observes for the metrics, once it commits.
type passObs struct {
	late  []time.Duration // the lateness of the starts
	held  []string        // the limit of each wait begun
	waits []LimitWait     // the longest wait for each limit of the pass
}

func (o *passObs) reset() { o.late, o.held, o.waits = o.late[:0], o.held[:0], nil }

// tick applies TickAll to each claimed model, records the steps in c and
// returns the jobs of the starts. slots are the limits that match the
// batch with their current attempts and rate logs. Without limits the
// models go in the store's order; with limits, in the fair turns of the
// tenants (FairOrder, the tenants being the keys of the prefix limits
// and those of TenantsFunc, each limit's turns starting after the tenant
// of its last start), so that the starts go to the earliest of each
// tenant in turn: a start that a limit holds back waits, a start
// counts in the pass's tally of each limit that covers it (its current
// attempts, and its starts for a rate limit, a supersession included),
// and an attempt that ends in the pass (a timeout) frees its slot for the
// models after it. The starts under limits, with the tenant of the last
// start under each, go to c.Starts.
func (s *Scheduler) tick(c *changes, due []Model, slots Slots, now time.Time, res *TickResult, obs *passObs) []Job {
	var jobs []Job
	var limits *passLimits
	if len(slots.Limits) > 0 {
		tenants := slots.Tenants
		if s.cfg.TenantsFunc != nil {
			tenants = append(slices.Clip(tenants), s.cfg.TenantsFunc()...)
		}
		limits = newPassLimits(slots, tenants, now)
		due = limits.order(due)
	}
	var steps []Step // reused: each step is copied into c
	for _, m := range due {
		in := TickInput{UID: s.cfg.NewUIDFunc()}
		held := -1
		if limits != nil {
			held = limits.hold(m, &in)
		}
		steps = appendTickAll(steps[:0], m, in, now)
		before := m
		started := false
		for _, st := range steps {
			c.add(before, st.Model, st.Decision, now)
			switch st.Decision.Event {
			case EventStart:
				started = true
				res.Started++
				jobs = append(jobs, JobFor(st.Model))
				obs.late = append(obs.late, now.Sub(before.RefreshAt))
			case EventTimeout:
				res.TimedOut++
			case EventWait:
				obs.held = append(obs.held, in.FullLimit.Name())
			}
			before = st.Model
		}
		if before.WaitingForSlot {
			res.Waiting++
		}
		if limits != nil {
			limits.record(held, !in.Until.IsZero(), m, before, started, in.Tenant)
		}
	}
	if limits != nil {
		c.Starts = limits.starts()
		res.NextAdmit = limits.wakeAt()
		obs.waits = limits.waits()
	}
	return jobs
}

// JobFor returns the job of m's running attempt.
func JobFor(m Model) Job {
	return Job{
		ModelID: m.ID, AttemptUID: m.AttemptUID, AttemptNo: m.AttemptNo, Queue: m.Queue,
		Payload: m.Payload, StartedAt: m.StartedAt, DeadlineAt: m.DeadlineAt,
	}
}

// report counts and logs the events of a committed batch, and calls
// written, if set, when there are any (they wait in the store for the
// Publisher).
func report(metrics *Metrics, log *slog.Logger, events []Event, written func()) {
	if len(events) == 0 {
		return
	}
	for _, e := range events {
		metrics.count(e)
		switch e.Type {
		case EventStart, EventStatus:
			log.Debug("model "+e.Type, "model", e.ModelID, "attempt_no", e.AttemptNo, "uid", e.AttemptUID)
		case EventStale:
			log.Info("model "+e.Type, "model", e.ModelID, "uid", e.AttemptUID, "reason", e.Reason)
		default:
			log.Info("model "+e.Type, "model", e.ModelID, "decision", e.Decision, "kind", e.Kind,
				"message", e.Message, "reason", e.Reason, "attempt_no", e.AttemptNo, "refresh_at", ts(e.RefreshAt))
		}
	}
	if written != nil {
		written()
	}
}
