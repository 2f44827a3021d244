package webhook

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/freshen-dev/freshen/refresh"
)

// Store keeps the deliveries; refresh/postgres implements it.
type Store interface {
	// ClaimDeliveries claims up to limits[endpoint] pending deliveries of
	// each endpoint due at now, marking them with claim and making them due
	// again at leaseUntil should their result never be recorded.
	// Concurrent callers never claim the same delivery.
	ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, claim string, limits map[string]int) ([]refresh.Delivery, error)
	// FinishDelivery records the result of a claimed delivery and reports
	// whether the claim was still its own.
	FinishDelivery(ctx context.Context, d refresh.Delivery, r refresh.DeliveryResult) (bool, error)
	// PruneDeliveries deletes the deliveries delivered before
	// deliveredBefore and those given up before failedBefore.
	PruneDeliveries(ctx context.Context, deliveredBefore, failedBefore time.Time) (int, error)
	// PendingDeliveries counts the pending deliveries by endpoint.
	PendingDeliveries(ctx context.Context) (map[string]int, error)
}

// Config configures a Dispatcher. Store, Endpoints and Clock are required;
// the rest have defaults.
type Config struct {
	Store     Store
	Endpoints []Endpoint
	Clock     refresh.Clock
	// Client sends the requests (default: a client that follows no
	// redirect, so a 3xx answer is a failed send, and that refuses the
	// addresses AllowPrivate is about once a name is resolved). A client
	// given here is used as it is: its dialer decides where it connects.
	Client *http.Client
	// AllowPrivate lets endpoints point at loopback, link-local and cloud
	// metadata addresses and names (see CheckPrivate); without it New
	// refuses such an endpoint, and the default client refuses a name
	// that resolves to one.
	AllowPrivate bool
	// Timeout bounds one request, answer included (default 10s).
	Timeout time.Duration
	// MaxInFlight bounds the sends in flight to one endpoint from this
	// instance (default 4).
	MaxInFlight int
	// MaxAttempts is how many sends a delivery gets before it is given up
	// (default 12).
	MaxAttempts int
	// MaxAge is how long after its event a delivery is still sent; a retry
	// planned later gives it up instead (default 24h).
	MaxAge time.Duration
	// Backoff is the delay between sends (default base 10s, max 1h,
	// jitter 0.2).
	Backoff Backoff
	// PollInterval is the longest the loop waits before it looks for due
	// deliveries again (default 1s).
	PollInterval time.Duration
	// Retention is how long delivered deliveries are kept (default 24h);
	// FailedRetention how long those given up are (default 7 days).
	Retention       time.Duration
	FailedRetention time.Duration
	// PruneInterval is how often old deliveries are deleted (default 1m).
	PruneInterval time.Duration
	Logger        *slog.Logger
	Metrics       *Metrics
	// RandFunc returns the jitter's uniform number in [0, 1) (default
	// math/rand/v2.Float64).
	RandFunc func() float64
	// SentFunc, if set, is called after each send's result is recorded
	// (or found claimed by another) and its slot freed; tests wait on it.
	SentFunc func(Sent)
	// PassedFunc, if set, is called after each pass of Start.
	PassedFunc func(Result, error)
}

// Sent is one send of a delivery and what came of it.
type Sent struct {
	Delivery refresh.Delivery
	Result   refresh.DeliveryResult
	// Recorded is false if the result could not be written or the lease
	// had run out (another caller holds the delivery).
	Recorded bool
	Err      error
}

// Result is what one pass did.
type Result struct {
	// Claimed is how many deliveries the pass claimed (and started to
	// send).
	Claimed int
	// Pruned is how many old deliveries it deleted.
	Pruned int
}

func (c *Config) validate() error {
	if c.Store == nil || c.Clock == nil {
		return errors.New("webhook dispatcher: Store and Clock are required")
	}
	if err := Validate(c.Endpoints); err != nil {
		return err
	}
	if !c.AllowPrivate {
		if err := CheckPrivate(c.Endpoints); err != nil {
			return err
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Timeout, 10*time.Second)
	def(&c.MaxAge, 24*time.Hour)
	def(&c.Backoff.Base, 10*time.Second)
	def(&c.Backoff.Max, time.Hour)
	def(&c.PollInterval, time.Second)
	def(&c.Retention, 24*time.Hour)
	def(&c.FailedRetention, 7*24*time.Hour)
	def(&c.PruneInterval, time.Minute)
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 12
	}
	if c.Backoff.Jitter < 0 || c.Backoff.Jitter >= 1 {
		return fmt.Errorf("webhook dispatcher: backoff jitter: must be in [0, 1), got %g", c.Backoff.Jitter)
	}
	if c.Backoff.Max < c.Backoff.Base {
		return fmt.Errorf("webhook dispatcher: backoff max: must be >= base %s, got %s", c.Backoff.Base, c.Backoff.Max)
	}
	if c.Client == nil {
		c.Client = defaultClient(c.AllowPrivate)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		names := make([]string, len(c.Endpoints))
		for i, e := range c.Endpoints {
			names[i] = e.Name
		}
		c.Metrics = NewMetrics(names...)
	}
	if c.RandFunc == nil {
		c.RandFunc = rand.Float64
	}
	return nil
}

// Dispatcher is the delivery loop: it claims due deliveries and sends
// each, at most MaxInFlight at once per endpoint, recording its result.
type Dispatcher struct {
	cfg       Config
	endpoints map[string]Endpoint
	wake      chan struct{}
	sends     sync.WaitGroup

	mu        sync.Mutex
	inFlight  map[string]int
	lastPrune time.Time
}

// New returns a dispatcher, or an error if cfg lacks a required part or
// has an invalid endpoint.
func New(cfg Config) (*Dispatcher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := &Dispatcher{cfg: cfg, endpoints: map[string]Endpoint{}, wake: make(chan struct{}, 1), inFlight: map[string]int{}}
	for _, e := range cfg.Endpoints {
		d.endpoints[e.Name] = e
	}
	return d, nil
}

// Wake makes a waiting Start loop look for due deliveries at once; call it
// after deliveries are written.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Start runs passes until ctx ends, then waits for the sends in flight to
// stop (their deliveries, unrecorded, are sent again once their lease runs
// out). A failed pass is logged and retried with backoff. It returns nil.
func (d *Dispatcher) Start(ctx context.Context) error {
	defer d.sends.Wait()
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		res, err := d.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if d.cfg.PassedFunc != nil {
			d.cfg.PassedFunc(res, err)
		}
		wait := d.cfg.PollInterval
		if err != nil {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			d.cfg.Logger.Error("webhook pass failed", "err", err, "retry_in", backoff.String())
			wait = backoff
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-d.cfg.Clock.After(wait):
		}
	}
	return nil
}

// lease is how long a claimed delivery stays claimed: past its request's
// timeout, with room to record the result.
func (d *Dispatcher) lease() time.Duration { return 2*d.cfg.Timeout + 10*time.Second }

// runOnce prunes old deliveries when PruneInterval has passed, claims the
// due deliveries of the endpoints with free slots and starts sending them
// (each send records its result and calls SentFunc when done), and updates
// the pending gauge.
func (d *Dispatcher) runOnce(ctx context.Context) (Result, error) {
	var res Result
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	prune := d.lastPrune.IsZero() || now.Sub(d.lastPrune) >= d.cfg.PruneInterval
	free := make(map[string]int, len(d.endpoints))
	for name := range d.endpoints {
		if n := d.cfg.MaxInFlight - d.inFlight[name]; n > 0 {
			free[name] = n
		}
	}
	d.mu.Unlock()
	if prune {
		n, err := d.cfg.Store.PruneDeliveries(ctx, now.Add(-d.cfg.Retention), now.Add(-d.cfg.FailedRetention))
		if err != nil {
			return res, fmt.Errorf("prune deliveries: %w", err)
		}
		res.Pruned = n
		d.mu.Lock()
		d.lastPrune = now
		d.mu.Unlock()
	}
	if len(free) > 0 {
		claimed, err := d.cfg.Store.ClaimDeliveries(ctx, now, now.Add(d.lease()), crand.Text(), free)
		if err != nil {
			return res, fmt.Errorf("claim deliveries: %w", err)
		}
		res.Claimed = len(claimed)
		d.mu.Lock()
		for _, dl := range claimed {
			d.inFlight[dl.Endpoint]++
		}
		d.mu.Unlock()
		for _, dl := range claimed {
			d.sends.Add(1)
			go d.send(ctx, dl)
		}
	}
	pending, err := d.cfg.Store.PendingDeliveries(ctx)
	if err != nil {
		return res, fmt.Errorf("count pending deliveries: %w", err)
	}
	for name := range d.endpoints {
		d.cfg.Metrics.Pending.WithLabelValues(name).Set(float64(pending[name]))
	}
	return res, nil
}

// freeSlot ends a send to endpoint: the next pass may claim another. It
// comes before SentFunc, so that whoever hears of a send finds its slot
// free.
func (d *Dispatcher) freeSlot(endpoint string) {
	d.mu.Lock()
	d.inFlight[endpoint]--
	d.mu.Unlock()
	d.Wake()
}

// maxErrorBody bounds how much of a failed answer's body is kept.
const maxErrorBody = 512

// send POSTs dl to its endpoint and records the result, unless ctx ends
// first.
func (d *Dispatcher) send(ctx context.Context, dl refresh.Delivery) {
	defer d.sends.Done()
	ep := d.endpoints[dl.Endpoint]
	status, sendErr := d.post(ctx, ep, dl)
	if ctx.Err() != nil {
		d.freeSlot(dl.Endpoint)
		return // the lease makes it due again
	}
	now := d.cfg.Clock.Now()
	r := refresh.DeliveryResult{State: refresh.DeliveryDelivered, At: now, Status: status}
	if sendErr != nil {
		r.Error = sendErr.Error()
		r.State = refresh.DeliveryPending
		r.At = now.Add(d.cfg.Backoff.Delay(dl.Attempts, d.cfg.RandFunc()))
		if dl.Attempts >= d.cfg.MaxAttempts || r.At.Sub(dl.CreatedAt) > d.cfg.MaxAge {
			r.State, r.At = refresh.DeliveryFailed, now
		}
	}
	ok, err := d.cfg.Store.FinishDelivery(ctx, dl, r)
	log := d.cfg.Logger.With("endpoint", dl.Endpoint, "model_id", dl.ModelID, "event", dl.Event, "idempotency_key", dl.Key, "attempt", dl.Attempts)
	if pe, refused := errors.AsType[*PrivateAddressError](sendErr); refused {
		d.cfg.Metrics.Refused.WithLabelValues(dl.Endpoint).Inc()
		log.Warn("webhook send refused: the endpoint's name resolved to a loopback, link-local or cloud metadata address", "addr", pe.Addr)
	}
	switch {
	case err != nil:
		log.Error("record webhook delivery", "err", err)
	case !ok:
		log.Warn("webhook delivery was claimed again before its result was recorded (its lease ran out)")
	case r.State == refresh.DeliveryDelivered:
		d.cfg.Metrics.Delivered.WithLabelValues(dl.Endpoint).Inc()
	case r.State == refresh.DeliveryPending:
		d.cfg.Metrics.Retried.WithLabelValues(dl.Endpoint).Inc()
		log.Warn("webhook send failed; retrying", "err", r.Error, "retry_at", r.At)
	default:
		d.cfg.Metrics.Failed.WithLabelValues(dl.Endpoint).Inc()
		log.Error("webhook delivery given up", "err", r.Error, "age", now.Sub(dl.CreatedAt).String())
	}
	d.freeSlot(dl.Endpoint)
	if d.cfg.SentFunc != nil {
		d.cfg.SentFunc(Sent{Delivery: dl, Result: r, Recorded: err == nil && ok, Err: err})
	}
}

// post sends dl to ep and returns the answer's status; the error is nil
// only for a 2xx answer.
func (d *Dispatcher) post(ctx context.Context, ep Endpoint, dl refresh.Delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(dl.Payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "freshen-webhook")
	req.Header.Set(SignatureHeader, Sign(ep.Secret, d.cfg.Clock.Now(), dl.Payload))
	req.Header.Set("Idempotency-Key", dl.Key)
	req.Header.Set("Freshen-Event", dl.Event)
	req.Header.Set("Freshen-Attempt", strconv.Itoa(dl.Attempts))
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) { // without the URL's path and query, which may hold a token
			err = fmt.Errorf("%s %s: %w", ue.Op, origin(ep.URL), ue.Err)
		}
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := resp.Status
	if b := bytes.TrimSpace(body); len(b) > 0 {
		msg += ": " + string(bytes.ToValidUTF8(bytes.ReplaceAll(b, []byte{0}, nil), []byte("?")))
	}
	return resp.StatusCode, errors.New(msg)
}
