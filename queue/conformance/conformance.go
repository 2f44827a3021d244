//go:build unix

package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Settings the kit gives every worker it starts.
const (
	// Lease is the worker lease (FRESHEN_LEASE): short, so that the cases
	// that need a dead worker's jobs given back end soon.
	Lease = 3 * time.Second
	// Concurrency is FRESHEN_CONCURRENCY.
	Concurrency = 8
	// DefaultRevokeWithin bounds the time from a revocation (cancel,
	// trigger) to the outcome of the stopped job, and from a job's
	// deadline to the outcome of the job stopped then: the promise of the
	// wire format.
	DefaultRevokeWithin = time.Second
)

// Config configures a run of the kit.
type Config struct {
	// RedisURL is the Redis the kit and the worker use. Required. The kit
	// works under a key prefix of its own (conformance-<random>) and
	// deletes its keys at the end.
	RedisURL string
	// DatabaseURL, if set, is a migrated PostgreSQL database the
	// scheduler uses; empty: the memory store.
	DatabaseURL string
	// Command is the worker command and its arguments. Required.
	Command []string
	// Environ is the environment the worker gets, before the kit's
	// variables (default os.Environ()).
	Environ []string
	// Bench, if > 0, adds a case that measures how many jobs with a no-op
	// handler the worker runs per second, with that many jobs.
	Bench int
	// Parallel is how many cases run at once (default 4).
	Parallel int
	// Only, if set, runs only the cases whose names it lists.
	Only []string
	// Logger gets the kit's own log (default: none).
	Logger *slog.Logger
	// RevokeWithin is the bound of the revocation and deadline cases
	// (default DefaultRevokeWithin). The project's own tests, which run
	// beside every other package on a shared machine, allow more; a
	// worker that does not stop still fails, its handler running 30 s.
	RevokeWithin time.Duration
}

// Result is what one case found.
type Result struct {
	Name string
	Took time.Duration
	// Err says why the case failed; nil if it passed.
	Err error
	// Note holds the figures of a case that measures (throughput).
	Note string
	// Log holds the last lines the worker wrote, when the case failed.
	Log string
}

// Summary counts the cases of a run.
type Summary struct {
	Passed, Failed int
}

// kit is one run: the scheduler side and what the cases share.
type kit struct {
	cfg    Config
	clock  refresh.Clock
	rdb    redis.UniversalClient
	prefix string
	run    string // the id of the run, in queue names and model ids
	store  refresh.Store
	svc    *refresh.Service
	tee    *tee
	log    *slog.Logger
}

// CaseNames returns the names of the cases, in the order they are
// reported.
func CaseNames() []string {
	names := make([]string, 0, len(cases))
	for _, c := range cases {
		names = append(names, c.name)
	}
	return names
}

// Run runs every case against cfg.Command and calls report with the result
// of each, in the order of the cases. It returns an error if the kit itself
// cannot run (Redis or the database unreachable, a bad Config).
func Run(ctx context.Context, cfg Config, report func(Result)) (Summary, error) {
	var sum Summary
	if cfg.RedisURL == "" {
		return sum, errors.New("conformance: a Redis URL is required")
	}
	if len(cfg.Command) == 0 {
		return sum, errors.New("conformance: a worker command is required")
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ()
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 4
	}
	if cfg.RevokeWithin <= 0 {
		cfg.RevokeWithin = DefaultRevokeWithin
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	selected, err := selectCases(cfg.Only, cfg.Bench > 0)
	if err != nil {
		return sum, err
	}
	k := &kit{cfg: cfg, clock: refresh.SystemClock{}, log: cfg.Logger}
	stop, err := k.open(ctx)
	if err != nil {
		return sum, err
	}
	defer stop()

	results := make([]chan Result, len(selected))
	slots := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for i, c := range selected {
		results[i] = make(chan Result, 1)
		if c.alone {
			continue // run after the others, alone
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			results[i] <- k.runCase(ctx, c)
		})
	}
	for i, c := range selected {
		if c.alone {
			wg.Wait()
			results[i] <- k.runCase(ctx, c)
		}
		r := <-results[i]
		if r.Err == nil {
			sum.Passed++
		} else {
			sum.Failed++
		}
		report(r)
	}
	wg.Wait()
	return sum, nil
}

// selectCases returns the cases named in only (all if empty), with the
// throughput case if bench is set, or an error naming an unknown case.
func selectCases(only []string, bench bool) ([]kitCase, error) {
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []kitCase
	for _, c := range cases {
		if c.alone && !bench {
			continue
		}
		if len(only) == 0 || want[c.name] {
			out = append(out, c)
			delete(want, c.name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("conformance: no case %q (cases: %v)", n, CaseNames())
	}
	return out, nil
}

// open connects to Redis and the store and starts the scheduler's loops;
// stop ends them and deletes the run's keys and models.
func (k *kit) open(ctx context.Context) (stop func(), err error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	k.run = "cf" + hex.EncodeToString(b)
	k.prefix = "conformance-" + k.run
	k.rdb, err = queue.NewClient(queue.ClientConfig{URL: k.cfg.RedisURL})
	if err != nil {
		return nil, fmt.Errorf("conformance: redis: %w", err)
	}
	if err := k.rdb.Ping(ctx).Err(); err != nil {
		_ = k.rdb.Close()
		return nil, fmt.Errorf("conformance: connect to redis: %w", err)
	}
	closeStore := func() {}
	if k.cfg.DatabaseURL != "" {
		s, err := postgres.Open(ctx, k.cfg.DatabaseURL, postgres.Session{ApplicationName: "freshen conformance"})
		if err != nil {
			_ = k.rdb.Close()
			return nil, fmt.Errorf("conformance: database: %w", err)
		}
		k.store, closeStore = s, s.Close
	} else {
		k.store = memory.NewStore()
	}
	rq, err := queue.New(k.rdb, queue.Options{Prefix: k.prefix, Consumer: "conformance", Logger: k.log})
	if err != nil {
		closeStore()
		_ = k.rdb.Close()
		return nil, err
	}
	k.tee = newTee(rq, k.clock)
	metrics := &refresh.Metrics{}
	var svc *refresh.Service
	publisher, err := refresh.NewPublisher(refresh.PublisherConfig{Store: k.store, Queue: k.tee, Clock: k.clock, Logger: k.log, Metrics: metrics,
		PropagateFunc: func(ctx context.Context, events []refresh.Event) (int, error) { return svc.Propagate(ctx, events) }})
	if err != nil {
		return nil, err
	}
	var consumer *refresh.Consumer
	scheduler, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: k.store, Queue: k.tee, Clock: k.clock, Logger: k.log, Metrics: metrics,
		MaxSleep: time.Second,
		EventsFunc: func() {
			publisher.Wake()
			consumer.Wake()
		}})
	if err != nil {
		return nil, err
	}
	consumer, err = refresh.NewConsumer(refresh.ConsumerConfig{Store: k.store, Outcomes: k.tee, Clock: k.clock, Logger: k.log, Metrics: metrics,
		EventsFunc: publisher.Wake,
		AppliedFunc: func(res refresh.ConsumeResult, _ error) {
			if res.Due > 0 {
				scheduler.Wake()
			}
		}})
	if err != nil {
		return nil, err
	}
	svc = &refresh.Service{Store: k.store, Clock: k.clock, Logger: k.log, Metrics: metrics, WakeFunc: scheduler.Wake, EventsFunc: publisher.Wake}
	k.svc = svc

	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	loops.Go(func() { _ = scheduler.Start(loopCtx) })
	loops.Go(func() { _ = consumer.Start(loopCtx) })
	loops.Go(func() { _ = publisher.Start(loopCtx) })
	loops.Go(func() { _ = rq.Heartbeat(loopCtx) })
	return func() {
		cancel()
		loops.Wait()
		bg := context.Background()
		for _, id := range k.tee.models() {
			_ = k.svc.Delete(bg, id)
		}
		iter := k.rdb.Scan(bg, 0, k.prefix+":*", 1000).Iterator()
		for iter.Next(bg) {
			k.rdb.Del(bg, iter.Val())
		}
		closeStore()
		_ = k.rdb.Close()
	}, nil
}

// key returns the Redis key P:<name> of the run (WIRE.md, "Keys").
func (k *kit) key(name string) string {
	return k.prefix + ":{" + k.prefix + "}:" + name
}

// tee is the scheduler's queue, which also records what the cases look
// at: the outcomes received, by model, and when each attempt was revoked.
type tee struct {
	*queue.Redis
	clock refresh.Clock

	mu       sync.Mutex
	outcomes map[string][]refresh.Outcome // by model id, in order of arrival
	revoked  map[string]time.Time         // attempt uid -> when its key was set
	ids      map[string]bool              // the models the run created
	changed  chan struct{}                // closed at each change
}

func newTee(r *queue.Redis, clock refresh.Clock) *tee {
	return &tee{Redis: r, clock: clock, outcomes: map[string][]refresh.Outcome{}, revoked: map[string]time.Time{},
		ids: map[string]bool{}, changed: make(chan struct{})}
}

// Receive is the queue's, recording the outcomes.
func (t *tee) Receive(ctx context.Context, max int, block time.Duration) ([]refresh.Outcome, error) {
	outs, err := t.Redis.Receive(ctx, max, block)
	if len(outs) > 0 {
		t.mu.Lock()
		for _, o := range outs {
			t.outcomes[o.ModelID] = append(t.outcomes[o.ModelID], o)
		}
		t.notifyLocked()
		t.mu.Unlock()
	}
	return outs, err
}

// Revoke is the queue's, recording when each revocation was written.
func (t *tee) Revoke(ctx context.Context, revoked []refresh.Revocation) error {
	err := t.Redis.Revoke(ctx, revoked)
	if err == nil {
		now := t.clock.Now()
		t.mu.Lock()
		for _, r := range revoked {
			t.revoked[r.AttemptUID] = now
		}
		t.notifyLocked()
		t.mu.Unlock()
	}
	return err
}

func (t *tee) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// created records a model of the run, to delete at the end.
func (t *tee) created(id string) {
	t.mu.Lock()
	t.ids[id] = true
	t.mu.Unlock()
}

func (t *tee) models() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, 0, len(t.ids))
	for id := range t.ids {
		ids = append(ids, id)
	}
	return ids
}

// snapshot returns the outcomes of model id received so far, the time the
// attempt uid was revoked (zero if it was not), and a channel closed at
// the next change.
func (t *tee) snapshot(id, uid string) ([]refresh.Outcome, time.Time, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]refresh.Outcome(nil), t.outcomes[id]...), t.revoked[uid], t.changed
}

// count returns how many of the models ids have received a success.
func (t *tee) count(ids []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, id := range ids {
		for _, o := range t.outcomes[id] {
			if o.Type == refresh.OutcomeSuccess {
				n++
				break
			}
		}
	}
	return n
}
