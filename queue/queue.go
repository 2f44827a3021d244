// Package queue carries Freshen's jobs, outcomes and lifecycle events over
// Redis, in the language-neutral wire format of WIRE.md.
//
// Redis is the scheduler's side: it implements refresh.Queue (push jobs,
// publish lifecycle events) and refresh.Outcomes (receive workers' outcomes
// reliably). Worker is the Go SDK for the workers' side.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
)

var (
	_ refresh.Queue    = (*Redis)(nil)
	_ refresh.Outcomes = (*Redis)(nil)
)

// Defaults of Options.
const (
	DefaultEventsMaxLen    = 100000
	DefaultConsumerTimeout = time.Minute
)

// Options configures a Redis.
type Options struct {
	// Prefix starts every key (default "freshen"); schedulers and workers
	// that talk to each other use the same one.
	Prefix string
	// Consumer names this outcome consumer, e.g. the instance id. Required.
	// It must be unique among live consumers and should survive restarts:
	// a consumer recovers the outcomes its previous life left unacknowledged
	// when it receives for the first time.
	Consumer string
	// EventsMaxLen bounds the events stream (approximately, MAXLEN ~;
	// default 100000).
	EventsMaxLen int64
	// ConsumerTimeout is how long a consumer may go without receiving or
	// acknowledging before another one takes its unacknowledged outcomes
	// back (default 1m). It must be well above the block of Receive plus
	// the time a batch takes to apply; a live consumer taken for dead only
	// causes duplicates, which attempt uid fencing makes harmless.
	ConsumerTimeout time.Duration
	// Clock gives the time of heartbeats and dead letters (default
	// refresh.SystemClock).
	Clock refresh.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Redis is the scheduler's side of the wire format: it pushes jobs,
// publishes lifecycle events and receives outcomes. Push and Publish may be
// called concurrently; Receive and Ack must be called from one goroutine at
// a time, as refresh.Consumer does.
type Redis struct {
	client redis.UniversalClient
	opt    Options
	keys   keys
	clock  refresh.Clock
	log    *slog.Logger

	// Receive state.
	dirty       bool      // the processing list may hold outcomes the caller never got
	nextRecover time.Time // when Receive next looks for dead consumers
	unacked     int64

	stats struct {
		pushed, published, received, acked, dead, recovered atomic.Int64
	}
}

// New returns a Redis on client, or an error naming a missing option.
func New(client redis.UniversalClient, opt Options) (*Redis, error) {
	if client == nil {
		return nil, errors.New("queue: client: must not be nil")
	}
	if opt.Consumer == "" {
		return nil, errors.New("queue: consumer: must not be empty")
	}
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	if opt.EventsMaxLen <= 0 {
		opt.EventsMaxLen = DefaultEventsMaxLen
	}
	if opt.ConsumerTimeout <= 0 {
		opt.ConsumerTimeout = DefaultConsumerTimeout
	}
	if opt.Clock == nil {
		opt.Clock = refresh.SystemClock{}
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Redis{
		client: client,
		opt:    opt,
		keys:   newKeys(opt.Prefix),
		clock:  opt.Clock,
		log:    opt.Logger.With("consumer", opt.Consumer),
		dirty:  true, // recover the leftovers of a previous life first
	}, nil
}

// pushChunk bounds the jobs one LPUSH carries.
const pushChunk = 1000

// Push enqueues jobs, each on the list of its queue (DefaultQueue if
// empty), in one pipeline with one LPUSH per queue (per pushChunk jobs).
// Jobs of one queue are taken in the order given.
func (r *Redis) Push(ctx context.Context, jobs []refresh.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	var order []string // the keys, in the order of their first job
	byKey := make(map[string][]any)
	for _, j := range jobs {
		b, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("encode job of model %s: %w", j.ModelID, err)
		}
		k := r.keys.jobsKey(j.Queue)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], b)
	}
	pipe := r.client.Pipeline()
	for _, k := range order {
		// LPUSH puts its values on the left one after the other, so the
		// first of them is the first popped from the right.
		for vs := byKey[k]; len(vs) > 0; {
			n := min(len(vs), pushChunk)
			pipe.LPush(ctx, k, vs[:n]...)
			vs = vs[n:]
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("push %d jobs: %w", len(jobs), err)
	}
	r.stats.pushed.Add(int64(len(jobs)))
	return nil
}

// Publish adds events to the events stream, in one pipeline, trimming it
// to about EventsMaxLen entries. Each entry has the fields type (the
// lifecycle name), model_id and event (the JSON of the refresh.Event); a
// failure or timeout adds two entries, failed and then retry_scheduled or
// disabled.
func (r *Redis) Publish(ctx context.Context, events []refresh.Event) error {
	if len(events) == 0 {
		return nil
	}
	pipe := r.client.Pipeline()
	n := 0
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode event of model %s: %w", e.ModelID, err)
		}
		for _, typ := range lifecycle(e) {
			pipe.XAdd(ctx, &redis.XAddArgs{
				Stream: r.keys.eventsKey(),
				MaxLen: r.opt.EventsMaxLen,
				Approx: true,
				Values: []any{"type", typ, "model_id", e.ModelID, "event", string(b)},
			})
			n++
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish %d events: %w", len(events), err)
	}
	r.stats.published.Add(int64(n))
	return nil
}

// Receive moves up to max outcomes, oldest first, from the outcomes list to
// this consumer's processing list and returns them. If none is there and
// block > 0, it waits up to block for one (Redis counts whole seconds from
// one second up, milliseconds below). Messages that cannot be decoded are
// dead-lettered and counted, not returned.
//
// The first Receive first gives back the outcomes a previous life of this
// consumer left unacknowledged; every ConsumerTimeout/2 Receive gives back
// those of consumers not seen for ConsumerTimeout. After an error, the next
// Receive gives back this consumer's processing list too, so an outcome is
// never lost, at worst delivered twice.
func (r *Redis) Receive(ctx context.Context, max int, block time.Duration) ([]refresh.Outcome, error) {
	if max <= 0 {
		return nil, nil
	}
	now := r.clock.Now()
	if r.dirty {
		n, err := requeue(ctx, r.client, r.keys.processingKey(r.opt.Consumer), r.keys.outcomesKey(),
			r.keys.consumersKey(), r.opt.Consumer, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("recover own outcomes: %w", err)
		}
		if n > 0 {
			r.stats.recovered.Add(int64(n))
			r.log.Info("recovered unacknowledged outcomes", "count", n)
		}
		r.dirty = false
		r.unacked = 0
	}
	if !now.Before(r.nextRecover) {
		if _, err := r.Recover(ctx); err != nil {
			r.log.Error("recover outcomes of dead consumers", "err", err)
		}
		r.nextRecover = now.Add(r.opt.ConsumerTimeout / 2)
	}
	raws, err := r.move(ctx, max, now)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 && block > 0 {
		raw, err := blmove(ctx, r.client, r.keys.outcomesKey(), r.keys.processingKey(r.opt.Consumer), block)
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			r.dirty = true // the move may have happened without our hearing of it
			return nil, fmt.Errorf("wait for outcomes: %w", err)
		}
		more, err := r.move(ctx, max-1, r.clock.Now())
		if err != nil {
			return nil, err
		}
		raws = append([]string{raw}, more...)
	}
	return r.decode(ctx, raws, r.clock.Now()), nil
}

// move moves up to max outcomes to the processing list and refreshes the
// heartbeat. It is atomic: on error, nothing moved.
func (r *Redis) move(ctx context.Context, max int, now time.Time) ([]string, error) {
	raws, err := move(ctx, r.client, r.keys.outcomesKey(), r.keys.processingKey(r.opt.Consumer),
		r.keys.consumersKey(), r.opt.Consumer, max, now)
	if err != nil {
		r.dirty = true // a reply lost on the way may hide a move
		return nil, fmt.Errorf("receive outcomes: %w", err)
	}
	return raws, nil
}

// decode decodes raws, which arrived at at, and dead-letters those that are
// not valid outcomes.
func (r *Redis) decode(ctx context.Context, raws []string, arrived time.Time) []refresh.Outcome {
	outs := make([]refresh.Outcome, 0, len(raws))
	var pipe redis.Pipeliner
	at := r.clock.Now().UTC()
	dead := 0
	for _, raw := range raws {
		o, reason := decodeOutcome(raw)
		if reason == "" {
			o.ArrivedAt, o.Raw = arrived, raw
			outs = append(outs, o)
			continue
		}
		if pipe == nil {
			pipe = r.client.TxPipeline()
		}
		b, _ := json.Marshal(deadLetter{Reason: reason, Message: raw, At: at})
		pipe.LPush(ctx, r.keys.deadKey(), b)
		pipe.LRem(ctx, r.keys.processingKey(r.opt.Consumer), 1, raw)
		r.log.Warn("dead-lettered outcome", "reason", reason, "message", truncate(raw, 200))
		dead++
	}
	if pipe != nil {
		if _, err := pipe.Exec(ctx); err != nil {
			// They stay in the processing list: the next Receive gives them
			// back and tries again, unless Ack drops them first (they were
			// logged above).
			r.dirty = true
			r.log.Error("dead-letter outcomes", "count", dead, "err", err)
		} else {
			r.stats.dead.Add(int64(dead))
		}
	}
	r.stats.received.Add(int64(len(outs)))
	r.unacked += int64(len(outs))
	return outs
}

// Ack drops everything this consumer has received, its processing list,
// but the outcomes in keep, which stay in it.
func (r *Redis) Ack(ctx context.Context, keep []refresh.Outcome) error {
	pipe := r.client.Pipeline()
	if len(keep) == 0 {
		pipe.Del(ctx, r.keys.processingKey(r.opt.Consumer))
	} else {
		raws := make([]any, len(keep))
		for i, o := range keep {
			raws[i] = o.Raw
		}
		ackScript.Run(ctx, pipe, []string{r.keys.processingKey(r.opt.Consumer)}, raws...)
	}
	pipe.ZAdd(ctx, r.keys.consumersKey(), redis.Z{Score: float64(r.clock.Now().UnixMilli()), Member: r.opt.Consumer})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ack outcomes: %w", err)
	}
	r.stats.acked.Add(r.unacked - int64(len(keep)))
	r.unacked = int64(len(keep))
	r.dirty = false
	return nil
}

// DeadLetter moves o, which Receive returned, from the processing list to
// the dead-letter list with reason.
func (r *Redis) DeadLetter(ctx context.Context, o refresh.Outcome, reason string) error {
	b, _ := json.Marshal(deadLetter{Reason: reason, Message: o.Raw, At: r.clock.Now().UTC()})
	pipe := r.client.TxPipeline()
	pipe.LPush(ctx, r.keys.deadKey(), b)
	pipe.LRem(ctx, r.keys.processingKey(r.opt.Consumer), 1, o.Raw)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("dead-letter outcome: %w", err)
	}
	r.stats.dead.Add(1)
	r.unacked--
	return nil
}

// revokedTTL is the least time a revocation is kept, so a worker whose clock
// runs behind still sees it.
const revokedTTL = time.Minute

// Revoke marks each attempt as over: the key P:revoked:<uid> holds the
// reason until a minute after the attempt's deadline.
func (r *Redis) Revoke(ctx context.Context, revoked []refresh.Revocation) error {
	if len(revoked) == 0 {
		return nil
	}
	now := r.clock.Now()
	pipe := r.client.Pipeline()
	for _, rv := range revoked {
		ttl := max(rv.DeadlineAt.Sub(now), 0) + revokedTTL
		pipe.Set(ctx, r.keys.revokedKey(rv.AttemptUID), rv.Reason, ttl)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("revoke %d attempts: %w", len(revoked), err)
	}
	return nil
}

// Recover gives back, onto the outcomes list, the unacknowledged outcomes
// of every other consumer not seen for ConsumerTimeout, and returns how
// many it gave back. Receive calls it from time to time.
func (r *Redis) Recover(ctx context.Context) (int, error) {
	cutoff := r.clock.Now().Add(-r.opt.ConsumerTimeout)
	n, err := recoverDead(ctx, r.client, r.keys.consumersKey(), r.keys.outcomesKey(),
		r.keys.processingKey, r.opt.Consumer, cutoff)
	if n > 0 {
		r.stats.recovered.Add(int64(n))
		r.log.Info("recovered outcomes of dead consumers", "count", n)
	}
	return n, err
}

// Stats counts what a Redis has done since it was made.
type Stats struct {
	Pushed       int64 // jobs pushed
	Published    int64 // event stream entries added
	Received     int64 // outcomes returned by Receive
	Acked        int64 // outcomes acknowledged
	DeadLettered int64 // messages set aside as undecodable
	Recovered    int64 // outcomes given back by recovery
}

// Stats returns the counters.
func (r *Redis) Stats() Stats {
	return Stats{
		Pushed:       r.stats.pushed.Load(),
		Published:    r.stats.published.Load(),
		Received:     r.stats.received.Load(),
		Acked:        r.stats.acked.Load(),
		DeadLettered: r.stats.dead.Load(),
		Recovered:    r.stats.recovered.Load(),
	}
}

// Collectors returns Prometheus counters over Stats, labelled with the
// consumer, for the caller to register.
func (r *Redis) Collectors() []prometheus.Collector {
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace:   "freshen",
			Subsystem:   "queue",
			Name:        name,
			Help:        help,
			ConstLabels: prometheus.Labels{"consumer": r.opt.Consumer},
		}, func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{
		counter("jobs_pushed_total", "Jobs pushed to worker queues.", &r.stats.pushed),
		counter("events_published_total", "Entries added to the lifecycle events stream.", &r.stats.published),
		counter("outcomes_received_total", "Outcomes received from workers.", &r.stats.received),
		counter("outcomes_acked_total", "Outcomes acknowledged.", &r.stats.acked),
		counter("outcomes_dead_lettered_total", "Outcome messages set aside because they could not be decoded.", &r.stats.dead),
		counter("outcomes_recovered_total", "Unacknowledged outcomes given back for redelivery.", &r.stats.recovered),
	}
}

// deadLetter is an entry of the dead-letter list.
type deadLetter struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// decodeOutcome decodes raw, or says why it is not a valid outcome.
func decodeOutcome(raw string) (refresh.Outcome, string) {
	var o refresh.Outcome
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		return o, "invalid json: " + err.Error()
	}
	switch {
	case o.ModelID == "":
		return o, "missing model_id"
	case o.AttemptUID == "":
		return o, "missing attempt_uid"
	case o.Type == "":
		return o, "missing outcome"
	}
	switch o.Type {
	case refresh.OutcomeSuccess, refresh.OutcomeFailure, refresh.OutcomeStatus:
		return o, ""
	}
	return o, fmt.Sprintf("unknown outcome %q", o.Type)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
