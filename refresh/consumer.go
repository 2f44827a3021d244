package refresh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ConsumerConfig configures a Consumer. Store, Outcomes and Clock are
// required.
type ConsumerConfig struct {
	Store    Store
	Outcomes Outcomes
	Clock    Clock
	// BatchSize is how many outcomes one pass applies (default
	// DefaultBatchSize).
	BatchSize int
	// Block is how long Receive waits for an outcome in Start (default 1s).
	Block time.Duration
	// BusyWait is how long Start waits, when all the outcomes it holds
	// are of models another transaction holds locked, before it looks for
	// new outcomes and tries them again (default 100ms); Wake ends the wait
	// at once.
	BusyWait time.Duration
	Logger   *slog.Logger
	Metrics  *Metrics
	// EventsFunc, if set, is called after a pass that wrote events commits
	// (the Publisher's Wake).
	EventsFunc func()
	// AppliedFunc, if set, is called after every pass; tests wait on it.
	AppliedFunc func(ConsumeResult, error)
	// HeldFunc, if set, reports whether a pass of this process holds the
	// model locked until it commits (serve passes Scheduler.Holds): the
	// outcomes of such a model are kept for a later pass without asking
	// the store, like those of a model another transaction holds, and the
	// pass's commit wakes the consumer for them.
	HeldFunc func(modelID string) bool
}

func (c *ConsumerConfig) validate() error {
	if c.Store == nil || c.Outcomes == nil || c.Clock == nil {
		return errors.New("consumer: Store, Outcomes and Clock are required")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Block <= 0 {
		c.Block = time.Second
	}
	if c.BusyWait <= 0 {
		c.BusyWait = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = &Metrics{}
	}
	return nil
}

// Consumer is the outcome loop: it receives workers' outcomes, applies them
// fenced by attempt uid, and acknowledges them once written.
//
// It never waits on a model that another transaction holds (a stalled
// instance in the middle of a pass): the outcomes of such a model are kept,
// in order, and tried again on the next passes, while the outcomes of every
// other model are applied. A batch the store refuses for its content (bytes
// the database cannot take) is split until the outcome at fault is found and
// set aside as a dead letter; a batch that fails for any other reason (the
// store is down) is kept whole and retried.
type Consumer struct {
	cfg  ConsumerConfig
	wake chan struct{}
	// held are outcomes received but not applied: of busy models, or of a
	// batch whose write failed. They come before newer ones.
	held []Outcome
	// failed is set when the last pass failed to write; the held outcomes
	// are then retried before anything new is received.
	failed bool
	// took are the durations of the attempts the last write ended, for
	// the Observer once it commits.
	took []time.Duration
	// models holds the models of a write as its outcomes change them; its
	// room is reused from pass to pass.
	models []Model
}

// ConsumeResult is what one pass did.
type ConsumeResult struct {
	Received int
	Applied  int
	Stale    int
	// Deferred counts outcomes kept for a later pass because their model
	// was locked by another transaction.
	Deferred int
	// DeadLettered counts outcomes set aside because the store refused them.
	DeadLettered int
	// Due counts the applied outcomes that left their model due at once
	// (a retry without delay): the scheduler has work.
	Due int
}

// NewConsumer returns a consumer, or an error if cfg lacks a required part.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, wake: make(chan struct{}, 1)}, nil
}

// Wake makes a Start loop waiting on models locked by another transaction
// try their outcomes again at once; call it when a transaction that may
// hold them ends (a scheduler pass commits).
func (c *Consumer) Wake() {
	signal(c.wake)
}

// Start runs passes until ctx ends, waiting up to Block for outcomes. While
// it holds outcomes of models locked by another transaction it does not
// wait on Redis; after a pass that applied nothing it waits up to BusyWait,
// or until Wake, before the next one. A failed pass keeps its outcomes and
// is retried with backoff. It returns nil when ctx ends.
func (c *Consumer) Start(ctx context.Context) error {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		block := c.cfg.Block
		if len(c.held) > 0 {
			block = 0
		}
		res, err := c.runOnce(ctx, block)
		if c.cfg.AppliedFunc != nil {
			c.cfg.AppliedFunc(res, err)
		}
		if err == nil || ctx.Err() != nil {
			backoff = 0
			if len(c.held) > 0 && res.Applied+res.Stale+res.DeadLettered == 0 {
				select {
				case <-ctx.Done():
				case <-c.wake:
				case <-c.cfg.Clock.After(c.cfg.BusyWait):
				}
			}
			continue
		}
		c.cfg.Metrics.Errors.Add(1)
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		c.cfg.Logger.Error("outcome pass failed", "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
		case <-c.cfg.Clock.After(backoff):
		}
	}
	return nil
}

// RunOnce applies the outcomes available now (it does not wait for more).
func (c *Consumer) RunOnce(ctx context.Context) (ConsumeResult, error) {
	return c.runOnce(ctx, 0)
}

// runOnce receives a batch (unless the last write failed), applies it,
// acknowledges what it applied and reports the events.
func (c *Consumer) runOnce(ctx context.Context, block time.Duration) (ConsumeResult, error) {
	var res ConsumeResult
	if !c.failed && len(c.held) < c.cfg.BatchSize {
		outs, err := c.cfg.Outcomes.Receive(ctx, c.cfg.BatchSize-len(c.held), block)
		if err != nil && len(c.held) == 0 {
			return res, fmt.Errorf("receive outcomes: %w", err)
		}
		if err != nil {
			c.cfg.Logger.Error("receive outcomes", "err", err)
		}
		c.cfg.Metrics.Outcomes.Add(int64(len(outs)))
		c.held = append(c.held, outs...)
	}
	if len(c.held) == 0 {
		return res, nil
	}
	begin := c.cfg.Clock.Now()
	defer func() { c.cfg.Metrics.observePass(LoopConsumer, c.cfg.Clock.Now().Sub(begin)) }()
	res.Received = len(c.held)
	var events []Event
	keep, err := c.apply(ctx, c.held, map[string]bool{}, &events, &res)
	if err != nil {
		c.failed = true
		return res, fmt.Errorf("apply %d outcomes: %w", len(c.held), err)
	}
	c.failed = false
	if err := c.cfg.Outcomes.Ack(ctx, keep); err != nil {
		// The state is written; a redelivery is fenced off as stale.
		c.cfg.Logger.Error("ack outcomes", "err", err)
	}
	c.held = keep
	res.Deferred = len(keep)
	c.cfg.Metrics.Deferred.Add(int64(len(keep)))
	report(c.cfg.Metrics, c.cfg.Logger, events, c.cfg.EventsFunc)
	return res, nil
}

// apply applies outs in one transaction and returns the outcomes of busy
// models; blocked holds the models whose outcomes were kept so far, whose
// later outcomes it keeps too, so that one model's outcomes apply in order.
// When the store refuses the batch for its content (EINVALID), it applies
// each half on its own, down to the single outcome at fault, which it sets
// aside as a dead letter.
func (c *Consumer) apply(ctx context.Context, outs []Outcome, blocked map[string]bool, events *[]Event, res *ConsumeResult) ([]Outcome, error) {
	written, keep, due, err := c.write(ctx, outs, blocked)
	if err == nil {
		for _, d := range c.took {
			c.cfg.Metrics.observeAttempt(d)
		}
		res.Due += due
		*events = append(*events, written.Events...)
		for _, e := range written.Events {
			if e.Type == EventStale {
				res.Stale++
			} else {
				res.Applied++
			}
		}
		putChanges(written)
		return keep, nil
	}
	putChanges(written)
	if ErrorCode(err) != EINVALID {
		return nil, err
	}
	if len(outs) == 1 {
		reason := "the store refused it: " + ErrorMessage(err)
		if err := c.cfg.Outcomes.DeadLetter(ctx, outs[0], reason); err != nil {
			return nil, fmt.Errorf("dead-letter outcome of model %q: %w", outs[0].ModelID, err)
		}
		c.cfg.Metrics.DeadLettered.Add(1)
		res.DeadLettered++
		c.cfg.Logger.Warn("dead-lettered outcome", "model", outs[0].ModelID, "uid", outs[0].AttemptUID, "reason", reason)
		return nil, nil
	}
	half := len(outs) / 2
	k1, err := c.apply(ctx, outs[:half], blocked, events, res)
	if err != nil {
		return nil, err
	}
	k2, err := c.apply(ctx, outs[half:], blocked, events, res)
	if err != nil {
		return nil, err
	}
	return append(k1, k2...), nil
}

// write applies outs in one store transaction and returns what it wrote
// (for putChanges), the outcomes, in order, of the models another
// transaction holds or that are blocked, and how many models it left due;
// it adds the models of the outcomes it keeps to blocked (those HeldFunc
// reports at once: the store is not asked for them).
func (c *Consumer) write(ctx context.Context, outs []Outcome, blocked map[string]bool) (*changes, []Outcome, int, error) {
	ids := make([]string, 0, len(outs))
	seen := make(map[string]bool, len(outs))
	for _, o := range outs {
		if seen[o.ModelID] {
			continue
		}
		seen[o.ModelID] = true
		if c.cfg.HeldFunc != nil && !blocked[o.ModelID] && c.cfg.HeldFunc(o.ModelID) {
			// Its outcomes are kept like those of a busy model.
			blocked[o.ModelID] = true
			continue
		}
		ids = append(ids, o.ModelID)
	}
	var ch *changes
	var keep []Outcome
	due := 0
	if len(ids) == 0 {
		// Every model is held: nothing to ask the store.
		ch, c.took = getChanges(0), c.took[:0]
		return ch, outs, 0, nil
	}
	err := c.cfg.Store.TryModify(ctx, ids, func(found []Model, busy []string) (Batch, error) {
		putChanges(ch)
		ch, keep, due = getChanges(len(outs)), nil, 0
		c.took = c.took[:0]
		now := c.cfg.Clock.Now()
		// The models as the outcomes change them, one after the other;
		// found stays as it was read.
		c.models = append(c.models[:0], found...)
		models := c.models
		byID := make(map[string]int, len(found))
		for i, m := range found {
			byID[m.ID] = i
		}
		isBusy := make(map[string]bool, len(busy))
		for _, id := range busy {
			isBusy[id] = true
		}
		for _, o := range outs {
			if isBusy[o.ModelID] || blocked[o.ModelID] {
				keep = append(keep, o)
				continue
			}
			i, ok := byID[o.ModelID]
			if !ok {
				_, d := Stale(Model{ID: o.ModelID}, o, "unknown model")
				ch.add(Model{ID: o.ModelID}, Model{ID: o.ModelID}, d, now)
				continue
			}
			after, d := ApplyOutcome(models[i], o, now)
			ch.add(models[i], after, d, now)
			if d.Event == EventSuccess || d.Event == EventFailure || d.Event == EventSnooze {
				arrived := o.ArrivedAt
				if arrived.IsZero() {
					arrived = now
				}
				c.took = append(c.took, arrived.Sub(models[i].StartedAt))
			}
			if d.Event != EventStale && !models[i].CanStart(now) && after.CanStart(now) {
				due++
			}
			models[i] = after
		}
		return ch.Batch, nil
	})
	// The slice is kept for the next pass, not the models: a batch of
	// them may hold megabytes of payloads.
	clear(c.models)
	if err == nil {
		for _, o := range keep {
			blocked[o.ModelID] = true
		}
	}
	return ch, keep, due, err
}
