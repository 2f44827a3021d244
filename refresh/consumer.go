package refresh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ConsumerConfig configures a Consumer. Store, Outcomes, Queue (for
// lifecycle events) and Clock are required.
type ConsumerConfig struct {
	Store    Store
	Outcomes Outcomes
	Queue    Queue
	Clock    Clock
	// BatchSize is how many outcomes one pass applies (default 1000).
	BatchSize int
	// Block is how long Receive waits for an outcome in Start (default 1s).
	Block   time.Duration
	Logger  *slog.Logger
	Metrics *Metrics
	// AppliedFunc, if set, is called after every pass; tests wait on it.
	AppliedFunc func(ConsumeResult, error)
}

func (c *ConsumerConfig) validate() error {
	if c.Store == nil || c.Outcomes == nil || c.Queue == nil || c.Clock == nil {
		return errors.New("consumer: Store, Outcomes, Queue and Clock are required")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1000
	}
	if c.Block <= 0 {
		c.Block = time.Second
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
type Consumer struct {
	cfg     ConsumerConfig
	pending []Outcome // received, not yet applied
}

// ConsumeResult is what one pass did.
type ConsumeResult struct {
	Received int
	Applied  int
	Stale    int
}

// NewConsumer returns a consumer, or an error if cfg lacks a required part.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg}, nil
}

// Start runs passes until ctx ends, waiting up to Block for outcomes. A
// failed pass keeps its outcomes and is retried with backoff. It returns
// nil when ctx ends.
func (c *Consumer) Start(ctx context.Context) error {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		res, err := c.runOnce(ctx, c.cfg.Block)
		if c.cfg.AppliedFunc != nil {
			c.cfg.AppliedFunc(res, err)
		}
		if err == nil || ctx.Err() != nil {
			backoff = 0
			continue
		}
		c.cfg.Metrics.Errors.Add(1)
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		c.cfg.Logger.Error("outcome pass failed", "err", err, "retry_in", backoff)
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

// runOnce receives a batch (unless one failed to apply before), applies it
// in one store transaction, acknowledges it and publishes the events.
func (c *Consumer) runOnce(ctx context.Context, block time.Duration) (ConsumeResult, error) {
	var res ConsumeResult
	if len(c.pending) == 0 {
		outs, err := c.cfg.Outcomes.Receive(ctx, c.cfg.BatchSize, block)
		if err != nil {
			return res, fmt.Errorf("receive outcomes: %w", err)
		}
		c.cfg.Metrics.Outcomes.Add(int64(len(outs)))
		c.pending = outs
	}
	if len(c.pending) == 0 {
		return res, nil
	}
	res.Received = len(c.pending)
	now := c.cfg.Clock.Now()
	ids := make([]string, 0, len(c.pending))
	seen := map[string]bool{}
	for _, o := range c.pending {
		if !seen[o.ModelID] {
			seen[o.ModelID] = true
			ids = append(ids, o.ModelID)
		}
	}
	var ch changes
	err := c.cfg.Store.Modify(ctx, ids, func(found []Model) ([]Change, error) {
		ch = changes{}
		byID := make(map[string]Model, len(found))
		for _, m := range found {
			byID[m.ID] = m
		}
		for _, o := range c.pending {
			m, ok := byID[o.ModelID]
			if !ok {
				_, d := Stale(Model{ID: o.ModelID}, o, "unknown model")
				ch.add(Model{ID: o.ModelID}, Model{ID: o.ModelID}, d, now)
				continue
			}
			after, d := ApplyOutcome(m, o, now)
			byID[m.ID] = after
			ch.add(m, after, d, now)
		}
		return ch.list, nil
	})
	if err != nil {
		return res, fmt.Errorf("apply %d outcomes: %w", len(c.pending), err)
	}
	if err := c.cfg.Outcomes.Ack(ctx); err != nil {
		// The state is written; a redelivery is fenced off as stale.
		c.cfg.Logger.Error("ack outcomes", "err", err)
	}
	c.pending = nil
	for _, e := range ch.events {
		if e.Type == EventStale {
			res.Stale++
		} else {
			res.Applied++
		}
	}
	finish(ctx, c.cfg.Queue, c.cfg.Metrics, c.cfg.Logger, ch.events)
	return res, nil
}
