// Package queue carries Freshen's jobs, outcomes and lifecycle events over
// Redis, in the language-neutral wire format of WIRE.md.
//
// Redis is the scheduler's side: it implements refresh.Queue (push jobs,
// publish lifecycle events, revoke attempts) and refresh.Outcomes (receive
// workers' outcomes reliably); its Heartbeat loop keeps the consumer's lease.
// Worker is the Go SDK for the workers' side. NewClient connects to a single
// server, a Sentinel-watched primary or a Cluster, and SetRedisLogger routes
// go-redis' own log lines through slog.
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
	DefaultConsumerTimeout = 5 * time.Second
	DefaultHeartbeat       = time.Second
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
	// Events are the lifecycle names the events stream carries (the zero
	// value: all); Publish leaves the others out.
	Events refresh.EventNames
	// MaxDeadLetters, if > 0, bounds the dead-letter list: each time this
	// Redis sets messages aside, and at each TrimDead, the oldest entries
	// beyond it are dropped (counted in Stats.Trimmed). Workers do not
	// trim the list. 0 leaves it unbounded.
	MaxDeadLetters int64
	// ConsumerTimeout is the consumer's lease: how long it may go unseen
	// before another consumer gives its unacknowledged outcomes back to the
	// outcomes list (default 5s). Heartbeat renews it; without Heartbeat
	// running, only Receive and Ack do, and a pass longer than the lease
	// lets another consumer take its outcomes back, which only causes
	// duplicates (attempt uid fencing makes them harmless). Clocks of the
	// hosts must agree to well within it.
	ConsumerTimeout time.Duration
	// Heartbeat is how often Heartbeat renews the lease (default 1s, or
	// ConsumerTimeout/5 if that is shorter); at most ConsumerTimeout/2.
	Heartbeat time.Duration
	// Limits bound the outcomes received (default DefaultLimits()).
	Limits Limits
	// Clock gives the time of heartbeats, arrivals and dead letters
	// (default refresh.SystemClock).
	Clock refresh.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Redis is the scheduler's side of the wire format: it pushes jobs,
// publishes lifecycle events and receives outcomes. Push, Publish, Revoke,
// Recover and Heartbeat may be called concurrently with anything; Receive,
// Ack and DeadLetter must be called from one goroutine at a time, as
// refresh.Consumer does.
type Redis struct {
	client redis.UniversalClient
	opt    Options
	keys   keys
	clock  refresh.Clock
	log    *slog.Logger

	// Receive state.
	// delivered are the messages Receive returned and Ack has not yet
	// acknowledged: what the processing list holds unless dirty.
	delivered []string
	// dirty is set when the processing list may hold messages the caller
	// never got (a move whose reply was lost).
	dirty bool
	// nextRecover is when Receive or Heartbeat next looks for dead
	// consumers (Unix nanoseconds on the clock).
	nextRecover atomic.Int64

	stats struct {
		pushed, published, received, acked, dead, recovered, truncated, trimmed atomic.Int64
	}
}

// New returns a Redis on client, or an error naming an invalid option.
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
	if opt.MaxDeadLetters < 0 {
		return nil, fmt.Errorf("queue: max dead letters: must be >= 0, got %d", opt.MaxDeadLetters)
	}
	if opt.EventsMaxLen <= 0 {
		opt.EventsMaxLen = DefaultEventsMaxLen
	}
	if opt.ConsumerTimeout < 0 {
		return nil, fmt.Errorf("queue: consumer timeout: must be > 0, got %s", opt.ConsumerTimeout)
	}
	if opt.ConsumerTimeout == 0 {
		opt.ConsumerTimeout = DefaultConsumerTimeout
	}
	if opt.Heartbeat == 0 {
		opt.Heartbeat = min(DefaultHeartbeat, opt.ConsumerTimeout/5)
	}
	if opt.Heartbeat <= 0 || opt.Heartbeat > opt.ConsumerTimeout/2 {
		return nil, fmt.Errorf("queue: heartbeat: must be > 0 and at most half the consumer timeout (%s), got %s",
			opt.ConsumerTimeout, opt.Heartbeat)
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
	warnRetries(client, opt.Logger)
	return &Redis{
		client: client,
		opt:    opt,
		keys:   newKeys(opt.Prefix),
		clock:  opt.Clock,
		log:    opt.Logger.With("consumer", opt.Consumer),
		dirty:  true, // recover the leftovers of a previous life first
	}, nil
}

// jobBytes is about the length of a job's message without its strings and
// payload (names, number and times: about 170 bytes).
const jobBytes = 192

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
	// One buffer holds all the messages; each is a slice of it, sized
	// for them up front (a batch's messages are a large allocation).
	size := 0
	for i := range jobs {
		size += jobBytes + len(jobs[i].Payload) + len(jobs[i].ModelID) + len(jobs[i].AttemptUID) + len(jobs[i].Queue)
	}
	buf := make([]byte, 0, size)
	for i := range jobs {
		j := &jobs[i]
		start := len(buf)
		var err error
		if buf, err = appendJob(buf, j); err != nil {
			return fmt.Errorf("encode job of model %s: %w", j.ModelID, err)
		}
		b := buf[start:len(buf):len(buf)]
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
// lifecycle name), model_id and event (the JSON of the refresh.Event: its
// Raw if set, else json.Marshal's); a failure or timeout adds two entries,
// failed and then retry_scheduled or disabled. A name not in Options.Events
// adds none.
func (r *Redis) Publish(ctx context.Context, events []refresh.Event) error {
	if len(events) == 0 {
		return nil
	}
	// The arguments of every XADD are cut from one slice (most events
	// make one entry), and the stream and its bound are boxed once.
	args := make([]any, 0, xaddArgs*len(events))
	stream, maxLen := any(r.keys.eventsKey()), any(r.opt.EventsMaxLen)
	pipe := r.client.Pipeline()
	n := 0
	for i := range events {
		e := &events[i]
		b := []byte(e.Raw)
		if len(b) == 0 {
			var err error
			if b, err = json.Marshal(e); err != nil {
				return fmt.Errorf("encode event of model %s: %w", e.ModelID, err)
			}
		}
		model, event := any(e.ModelID), any(b)
		for _, typ := range e.Lifecycle() {
			if !r.opt.Events.Has(typ) {
				continue
			}
			from := len(args)
			args = append(args, "XADD", stream, "MAXLEN", "~", maxLen, "*", "type", typ, "model_id", model, "event", event)
			pipe.Do(ctx, args[from:len(args):len(args)]...)
			n++
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish %d events: %w", len(events), err)
	}
	r.stats.published.Add(int64(n))
	return nil
}

// xaddArgs is the number of arguments of the XADD of one lifecycle entry.
const xaddArgs = 12

// Receive moves up to max outcomes, oldest first, from the outcomes list to
// this consumer's processing list and returns them, stamped with their
// arrival time. If none is there and block > 0, it waits up to block for
// one (Redis counts whole seconds from one second up, milliseconds below)
// and may still return none if another consumer was quicker. Messages that
// cannot be decoded are dead-lettered and counted, not returned.
//
// The first Receive first gives back the outcomes a previous life of this
// consumer left unacknowledged; every ConsumerTimeout/2 Receive (or
// Heartbeat) gives back those of consumers not seen for ConsumerTimeout.
// After an error, the next Receive gives back whatever the processing list
// holds that was never returned, so an outcome is never lost, at worst
// delivered twice.
func (r *Redis) Receive(ctx context.Context, max int, block time.Duration) ([]refresh.Outcome, error) {
	if max <= 0 {
		return nil, nil
	}
	now := r.clock.Now()
	if r.dirty {
		if err := r.settle(ctx, r.delivered, nil, now); err != nil {
			return nil, fmt.Errorf("recover own outcomes: %w", err)
		}
	}
	r.maybeRecover(ctx, now)
	raws, err := r.move(ctx, max, now)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 && block > 0 {
		// Wait without taking: a message moved by a reply that never
		// reaches us would sit in a list nobody may be watching. The
		// rotation leaves the list as it was; the move below takes.
		outcomes := r.keys.outcomesKey()
		_, err := blmove(ctx, r.client, outcomes, outcomes, "RIGHT", block)
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("wait for outcomes: %w", err)
		}
		if raws, err = r.move(ctx, max, r.clock.Now()); err != nil {
			return nil, err
		}
	}
	return r.decode(ctx, raws, r.clock.Now()), nil
}

// move moves up to max outcomes to the processing list and renews the
// lease. It is atomic: on error, nothing moved, or everything did and the
// reply was lost, which marks the processing list dirty.
func (r *Redis) move(ctx context.Context, max int, now time.Time) ([]string, error) {
	raws, err := move(ctx, r.client, r.keys.outcomesKey(), r.keys.processingKey(r.opt.Consumer),
		r.keys.consumersKey(), r.opt.Consumer, max, r.opt.Limits.batchBytes(), now)
	if err != nil {
		r.dirty = true
		return nil, fmt.Errorf("receive outcomes: %w", err)
	}
	return raws, nil
}

// settle makes the processing list hold exactly the messages of keep that
// it still holds: it drops those of drop and gives back to the outcomes
// list any other, a message never delivered. It renews the lease and makes
// keep the delivered messages.
func (r *Redis) settle(ctx context.Context, keep, drop []string, now time.Time) error {
	args := make([]any, 0, 3+len(keep)+len(drop))
	args = append(args, now.UnixMilli(), r.opt.Consumer, len(keep))
	for _, raw := range keep {
		args = append(args, raw)
	}
	for _, raw := range drop {
		args = append(args, raw)
	}
	res, err := settleScript.Run(ctx, r.client,
		[]string{r.keys.processingKey(r.opt.Consumer), r.keys.outcomesKey(), r.keys.consumersKey()}, args...).Int64Slice()
	if err != nil {
		return err
	}
	acked, back := res[0], res[2]
	r.stats.acked.Add(acked)
	if back > 0 {
		r.stats.recovered.Add(back)
		r.log.Info("gave back unacknowledged outcomes", "count", back)
	}
	r.delivered = append(r.delivered[:0:0], keep...)
	r.dirty = false
	return nil
}

// decode decodes raws, which arrived at at, and dead-letters those that are
// not valid outcomes.
func (r *Redis) decode(ctx context.Context, raws []string, arrived time.Time) []refresh.Outcome {
	outs := make([]refresh.Outcome, 0, len(raws))
	var dead []any
	at := arrived.UTC()
	for _, raw := range raws {
		o, truncated, reason := decodeOutcome(raw, r.opt.Limits)
		if reason == "" {
			// The fields of a snooze or an unchanged success are judged
			// at the arrival: a snooze must ask for a later time.
			reason = refresh.CheckOutcome(o, arrived)
		}
		if reason == "" {
			if truncated {
				r.stats.truncated.Add(1)
			}
			o.ArrivedAt, o.Raw = arrived, raw
			outs = append(outs, o)
			r.delivered = append(r.delivered, raw)
			continue
		}
		dead = append(dead, raw, deadEntry(reason, raw, at, r.opt.Limits))
		r.log.Warn("dead-lettered outcome", "reason", reason, "message", truncateText(raw, 200))
	}
	if len(dead) > 0 {
		n, dropped, err := setAside(ctx, r.client, r.keys.processingKey(r.opt.Consumer), r.keys.deadKey(), r.opt.MaxDeadLetters, dead)
		r.stats.trimmed.Add(int64(dropped))
		if err != nil {
			// They stay in the processing list: the next Receive gives
			// them back and they are dead-lettered again.
			r.dirty = true
			r.log.Error("dead-letter outcomes", "count", len(dead)/2, "err", err)
		}
		r.stats.dead.Add(int64(n))
	}
	r.stats.received.Add(int64(len(outs)))
	return outs
}

// Ack acknowledges every outcome Receive returned but those in keep, which
// stay in the processing list (in their order) until a later Ack leaves
// them out. It renews the lease. An outcome another consumer took back
// while this one was taken for dead is acknowledged by that one, not here,
// and is not put back in keep.
func (r *Redis) Ack(ctx context.Context, keep []refresh.Outcome) error {
	now := r.clock.Now()
	if !r.dirty {
		args := make([]any, 0, 3+len(keep))
		args = append(args, len(r.delivered), now.UnixMilli(), r.opt.Consumer)
		for _, o := range keep {
			args = append(args, o.Raw)
		}
		n, err := ackScript.Run(ctx, r.client,
			[]string{r.keys.processingKey(r.opt.Consumer), r.keys.consumersKey()}, args...).Int64()
		if err != nil {
			return fmt.Errorf("ack outcomes: %w", err)
		}
		if n >= 0 {
			r.stats.acked.Add(n)
			r.delivered = r.delivered[:0]
			for _, o := range keep {
				r.delivered = append(r.delivered, o.Raw)
			}
			return nil
		}
		// The list is not what was delivered: another consumer took it
		// back while this one was taken for dead.
		r.log.Warn("processing list was taken back: acknowledging what is left")
	}
	kept := make(map[string]int, len(keep))
	raws := make([]string, len(keep))
	for i, o := range keep {
		kept[o.Raw]++
		raws[i] = o.Raw
	}
	var drop []string
	for _, raw := range r.delivered {
		if kept[raw] > 0 {
			kept[raw]--
			continue
		}
		drop = append(drop, raw)
	}
	if err := r.settle(ctx, raws, drop, now); err != nil {
		return fmt.Errorf("ack outcomes: %w", err)
	}
	return nil
}

// DeadLetter moves o, which Receive returned, from the processing list to
// the dead-letter list with reason. If another consumer took o back
// meanwhile, it is left to that one.
func (r *Redis) DeadLetter(ctx context.Context, o refresh.Outcome, reason string) error {
	entry := deadEntry(reason, o.Raw, r.clock.Now().UTC(), r.opt.Limits)
	n, dropped, err := setAside(ctx, r.client, r.keys.processingKey(r.opt.Consumer), r.keys.deadKey(), r.opt.MaxDeadLetters, []any{o.Raw, entry})
	if err != nil {
		return fmt.Errorf("dead-letter outcome: %w", err)
	}
	r.stats.trimmed.Add(int64(dropped))
	r.stats.dead.Add(int64(n))
	for i, raw := range r.delivered {
		if raw == o.Raw {
			r.delivered = append(r.delivered[:i], r.delivered[i+1:]...)
			break
		}
	}
	return nil
}

// Heartbeat renews this consumer's lease every Options.Heartbeat and, about
// every ConsumerTimeout/2, gives back the outcomes of consumers not seen
// for ConsumerTimeout, until ctx ends; it then returns nil. Errors are
// logged and the next beat tries again. Run it beside the outcome loop
// (e.g. go q.Heartbeat(ctx)): the lease then lasts however long a pass
// takes. It may run concurrently with Receive and Ack.
func (r *Redis) Heartbeat(ctx context.Context) error {
	for {
		now := r.clock.Now()
		err := r.client.ZAdd(ctx, r.keys.consumersKey(), redis.Z{Score: float64(now.UnixMilli()), Member: r.opt.Consumer}).Err()
		if err != nil && ctx.Err() == nil {
			r.log.Error("consumer heartbeat", "err", err)
		}
		r.maybeRecover(ctx, now)
		select {
		case <-ctx.Done():
			return nil
		case <-r.clock.After(r.opt.Heartbeat):
		}
	}
}

// maybeRecover runs Recover if it is due at now, in whichever of Receive
// and Heartbeat gets there first.
func (r *Redis) maybeRecover(ctx context.Context, now time.Time) {
	next := r.nextRecover.Load()
	if now.UnixNano() < next || !r.nextRecover.CompareAndSwap(next, now.Add(r.opt.ConsumerTimeout/2).UnixNano()) {
		return
	}
	if _, err := r.Recover(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("recover outcomes of dead consumers", "err", err)
	}
}

// revokedTTL is the least time a revocation is kept, so a worker whose clock
// runs behind still sees it.
const revokedTTL = time.Minute

// Revoke marks each attempt as over, in one pipeline: the key
// P:revoked:<uid> holds the reason ("revoked" if empty) until a minute after
// the attempt's deadline (a minute from now if that has passed). Workers
// drop such a job unrun and stop it while it runs.
func (r *Redis) Revoke(ctx context.Context, revoked []refresh.Revocation) error {
	now := r.clock.Now()
	pipe := r.client.Pipeline()
	for _, rv := range revoked {
		if rv.AttemptUID == "" {
			continue
		}
		reason := rv.Reason
		if reason == "" {
			reason = "revoked"
		}
		ttl := max(rv.DeadlineAt.Sub(now), 0) + revokedTTL
		pipe.Set(ctx, r.keys.revokedKey(rv.AttemptUID), reason, ttl)
	}
	if pipe.Len() == 0 {
		return nil
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
	DeadLettered int64 // messages set aside as undecodable or refused
	Recovered    int64 // outcomes given back to the outcomes list
	Truncated    int64 // outcomes whose message or user_message was cut
	Trimmed      int64 // dead letters dropped to keep the list at MaxDeadLetters
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
		Truncated:    r.stats.truncated.Load(),
		Trimmed:      r.stats.trimmed.Load(),
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
		counter("outcomes_dead_lettered_total", "Outcome messages set aside because they could not be decoded or stored.", &r.stats.dead),
		counter("outcomes_recovered_total", "Unacknowledged outcomes given back for redelivery.", &r.stats.recovered),
		counter("outcomes_truncated_total", "Outcomes whose message or user_message was cut to its limit.", &r.stats.truncated),
		counter("dead_letters_trimmed_total", "Dead letters dropped, the oldest first, to keep the list at its maximum length.", &r.stats.trimmed),
	}
}

// deadLetter is an entry of the dead-letter list. Cut marks a message
// that keeps only its beginning (and so cannot be requeued).
type deadLetter struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
	Cut     bool      `json:"cut,omitempty"`
}

// deadEntry is the dead-letter entry of raw, set aside at at for reason. A
// message longer than the limits keep (Limits.keepBytes) keeps only its
// beginning.
func deadEntry(reason, raw string, at time.Time, lim Limits) string {
	e := deadLetter{Reason: reason, Message: raw, At: at}
	if len(raw) > lim.keepBytes() {
		e.Message, e.Cut = truncateText(raw, lim.MaxMessageBytes), true
	}
	b, _ := json.Marshal(e)
	return string(b)
}
