package refresh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// PublisherConfig configures a Publisher. Store, Queue and Clock are
// required; the rest have defaults.
type PublisherConfig struct {
	Store Store
	Queue Queue
	Clock Clock
	// BatchSize is about how many events one pass publishes (default 2000).
	BatchSize int
	// MaxSleep is the longest the loop sleeps without looking at the store,
	// so that events written by other instances are published even when
	// this one is idle (default 1s).
	MaxSleep time.Duration
	// BusyWait is how long the loop waits when another instance is taking
	// events (default 50ms).
	BusyWait time.Duration
	Logger   *slog.Logger
	Metrics  *Metrics
	// PropagateFunc, if set, is called with the events of a pass before
	// they are published (Service.Propagate: the upstream triggers of the
	// successes); if it fails, the pass fails and its events stay.
	PropagateFunc func(ctx context.Context, events []Event) (int, error)
	// PublishedFunc, if set, is called after every pass; tests wait on it.
	PublishedFunc func(PublishResult, error)
	// RouteFunc, if set, returns the webhook deliveries of the events of a
	// pass; they are written in the transaction that takes the events, so
	// Store must then be a DeliveryStore.
	RouteFunc func(events []Event) []Delivery
}

func (c *PublisherConfig) validate() error {
	if c.Store == nil || c.Queue == nil || c.Clock == nil {
		return errors.New("publisher: Store, Queue and Clock are required")
	}
	if _, ok := c.Store.(DeliveryStore); c.RouteFunc != nil && !ok {
		return errors.New("publisher: RouteFunc needs a Store that keeps deliveries (a DeliveryStore)")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 2000
	}
	if c.MaxSleep <= 0 {
		c.MaxSleep = time.Second
	}
	if c.BusyWait <= 0 {
		c.BusyWait = 50 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = &Metrics{}
	}
	return nil
}

// Publisher is the event loop: it takes the lifecycle events that committed
// batches wrote to the store, publishes them on the queue and revokes the
// attempts they end without an outcome (superseded, cancelled, deleted). An
// event is published at least once after its batch commits, whatever
// happens to the process or the queue meanwhile.
type Publisher struct {
	cfg  PublisherConfig
	wake chan struct{}
}

// PublishResult is what one pass did.
type PublishResult struct {
	Published int
	Revoked   int
	// Routed is how many webhook deliveries the events made (RouteFunc).
	Routed int
}

// NewPublisher returns a publisher, or an error if cfg lacks a required part.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, wake: make(chan struct{}, 1)}, nil
}

// Wake makes a sleeping Start loop look for events at once; call it after a
// batch with events commits.
func (p *Publisher) Wake() {
	signal(p.wake)
}

// Start runs passes until ctx ends. A failed pass (the queue is down) is
// logged and retried with backoff; its events stay in the store. It returns
// nil when ctx ends.
func (p *Publisher) Start(ctx context.Context) error {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		res, err := p.RunOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if p.cfg.PublishedFunc != nil {
			p.cfg.PublishedFunc(res, err)
		}
		wait := p.cfg.MaxSleep
		switch {
		case errors.Is(err, ErrBusy):
			wait = p.cfg.BusyWait
		case err != nil:
			p.cfg.Metrics.Errors.Add(1)
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			p.cfg.Logger.Error("publish pass failed", "err", err, "retry_in", backoff.String())
			wait = backoff
		case res.Published > 0:
			backoff = 0
			continue
		default:
			backoff = 0
		}
		select {
		case <-ctx.Done():
		case <-p.wake:
		case <-p.cfg.Clock.After(wait):
		}
	}
	return nil
}

// RunOnce publishes one batch of events, if this instance may take them.
func (p *Publisher) RunOnce(ctx context.Context) (PublishResult, error) {
	var res PublishResult
	publish := func(events []Event) error {
		res = PublishResult{}
		if p.cfg.PropagateFunc != nil {
			if _, err := p.cfg.PropagateFunc(ctx, events); err != nil {
				return err
			}
		}
		if revoked := revocations(events); len(revoked) > 0 {
			if err := p.cfg.Queue.Revoke(ctx, revoked); err != nil {
				return fmt.Errorf("revoke %d attempts: %w", len(revoked), err)
			}
			res.Revoked = len(revoked)
		}
		if err := p.cfg.Queue.Publish(ctx, events); err != nil {
			return fmt.Errorf("publish %d events: %w", len(events), err)
		}
		res.Published = len(events)
		return nil
	}
	var err error
	if p.cfg.RouteFunc == nil {
		_, err = p.cfg.Store.TakeEvents(ctx, p.cfg.BatchSize, publish)
	} else {
		_, err = p.cfg.Store.(DeliveryStore).TakeEventsRouted(ctx, p.cfg.BatchSize, func(events []Event) ([]Delivery, error) {
			if err := publish(events); err != nil {
				return nil, err
			}
			deliveries := p.cfg.RouteFunc(events)
			res.Routed = len(deliveries)
			return deliveries, nil
		})
	}
	if errors.Is(err, ErrBusy) {
		return PublishResult{}, err
	}
	if err != nil {
		return PublishResult{}, fmt.Errorf("publish events: %w", err)
	}
	return res, nil
}

// revocations returns the attempts that events end without an outcome
// (EventRevocation).
func revocations(events []Event) []Revocation {
	var out []Revocation
	for _, e := range events {
		if r, ok := EventRevocation(e); ok {
			out = append(out, r)
		}
	}
	return out
}
