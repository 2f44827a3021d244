package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/memory"
)

// runDemo is `freshen demo`: the real scheduler, consumer, queue and
// workers on an in-memory store and an in-process Redis, on a fast clock,
// with a live view of what happens.
func runDemo(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseDemoFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "freshen demo: %v\n", err)
		return 2
	}
	if err := runDemoConfig(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "freshen demo: %v\n", err)
		return 1
	}
	return 0
}

// demoConfig is the configuration of freshen demo.
type demoConfig struct {
	Start     time.Time
	Speed     float64
	Duration  time.Duration // virtual
	FailRate  float64
	Seed      uint64
	EditEvery time.Duration // virtual
	Addr      string
}

// demoStart is 05:55 in Paris on Monday 2 March 2026: the first 06:00 run
// comes five virtual minutes in.
var demoStart = time.Date(2026, 3, 2, 4, 55, 0, 0, time.UTC)

func parseDemoFlags(args []string, stderr io.Writer) (demoConfig, error) {
	cfg := demoConfig{Start: demoStart, Speed: 7200, Duration: 48 * time.Hour, FailRate: 0.3, Seed: 1, EditEvery: 45 * time.Minute}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("start", "virtual start time, RFC 3339 (default 2026-03-02T05:55:00+01:00, 05:55 in Paris)", func(s string) error {
		t, err := time.Parse(time.RFC3339, s)
		cfg.Start = t
		return err
	})
	fs.Float64Var(&cfg.Speed, "speed", cfg.Speed, "virtual seconds per real second (7200: two virtual hours a second)")
	fs.Func("duration", `virtual time to run, e.g. "48h" or "P2D" (default 48h)`, func(s string) error {
		d, err := refresh.ParseDuration(s)
		cfg.Duration = time.Duration(d)
		return err
	})
	fs.Float64Var(&cfg.FailRate, "fail-rate", cfg.FailRate, "share of attempts that fail, in [0, 1]")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workers' random choices")
	fs.Func("edit-every", `virtual time between two edits of the thumbnail, which trigger it (default 45m)`, func(s string) error {
		d, err := refresh.ParseDuration(s)
		cfg.EditEvery = time.Duration(d)
		return err
	})
	fs.StringVar(&cfg.Addr, "addr", "", "also serve the HTTP API on this address, e.g. :8080")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: freshen demo [flags]\n\nRuns the real scheduler, outcome consumer, Redis queue and workers on an in-memory\nstore and an embedded Redis, on a fast virtual clock, and shows what happens.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case !(cfg.Speed > 0):
		return cfg, fmt.Errorf("--speed: must be > 0, got %v", cfg.Speed)
	case cfg.Duration <= 0:
		return cfg, fmt.Errorf("--duration: must be > 0, got %s", cfg.Duration)
	case !(cfg.FailRate >= 0 && cfg.FailRate <= 1):
		return cfg, fmt.Errorf("--fail-rate: must be between 0 and 1, got %v", cfg.FailRate)
	case cfg.EditEvery <= 0:
		return cfg, fmt.Errorf("--edit-every: must be > 0, got %s", cfg.EditEvery)
	}
	return cfg, nil
}

// demoModels are the demo's models, after the examples of docs/transitions.md.
var demoModels = []refresh.PutRequest{
	{ID: "bigtable-1", Queue: "tables", Payload: []byte(`{"input_url": "https://data.example.com/big.csv"}`), Policy: []byte(`{
		"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
		"timezone": "Europe/Paris", "timeout": "1h",
		"retry": {"delays": ["0s", "1m", "5m", "15m", "30m", "1h"]},
		"on_exhausted": "disable"}`)},
	{ID: "bigtable-2", Queue: "tables", Payload: []byte(`{"input_url": "https://data.example.com/big.csv"}`), Policy: []byte(`{
		"schedule": "DTSTART;TZID=Europe/Paris:20260101T000000\nRRULE:FREQ=DAILY;BYHOUR=6,16",
		"timezone": "Europe/Paris", "timeout": "1h",
		"retry": {"delays": ["0s", "1m", "5m", "15m", "30m", "1h"]},
		"on_exhausted": "wait_next", "give_up_after": "P7D"}`)},
	{ID: "thumbnail-1", Queue: "thumbnails", Payload: []byte(`{"image": "s3://bucket/42.png"}`), Policy: []byte(`{
		"timeout": "5m",
		"retry": {"delays": ["0s", "1m", "5m"]},
		"disabled_message": "thumbnail creation failed"}`)},
	{ID: "cache-1", Queue: "caches", Payload: []byte(`{"url": "https://customer.example.com/prices.json"}`), Policy: []byte(`{
		"schedule": "FREQ=HOURLY", "timezone": "Europe/Paris", "timeout": "10m",
		"retry": {"backoff": {"strategy": "exponential", "base": "1m", "max_retries": 3}}}`)},
}

// demoThumbnail is the model the demo edits, and so triggers, again and
// again.
const demoThumbnail = "thumbnail-1"

// runDemoConfig runs the demo until cfg.Duration of virtual time has
// passed or ctx ends, then prints the summary.
func runDemoConfig(ctx context.Context, cfg demoConfig, out io.Writer) error {
	quiet := slog.New(slog.DiscardHandler)
	end := cfg.Start.Add(cfg.Duration)
	story := newDemoStory(cfg.Start)

	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return fmt.Errorf("start embedded redis: %w", err)
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1}) // as queue.NewClient
	defer client.Close()
	if err := client.Ping(context.WithoutCancel(ctx)).Err(); err != nil {
		return fmt.Errorf("embedded redis: %w", err)
	}

	view := newDemoView(out, end, cfg.Speed)
	store := memory.NewStore()
	metrics := &refresh.Metrics{}

	// The models are created at the start time, then the clock starts: at
	// a high speed, setting up would take virtual minutes.
	view.header(cfg, story)
	setup := &refresh.Service{Store: store, Clock: refresh.NewVirtualClock(cfg.Start), Logger: quiet, Metrics: metrics}
	for _, req := range demoModels {
		if _, _, err := setup.Put(ctx, req); err != nil {
			return fmt.Errorf("create %s: %w", req.ID, err)
		}
	}

	clock := refresh.NewScaledClock(cfg.Start, cfg.Speed)
	redisQueue, err := queue.New(client, queue.Options{Consumer: "demo", Clock: clock, Logger: quiet})
	if err != nil {
		return err
	}
	q := &teeQueue{Redis: redisQueue, sink: view.add}
	var svc *refresh.Service
	publisher, err := refresh.NewPublisher(refresh.PublisherConfig{Store: store, Queue: q, Clock: clock, Logger: quiet, Metrics: metrics,
		PropagateFunc: func(ctx context.Context, events []refresh.Event) (int, error) { return svc.Propagate(ctx, events) }})
	if err != nil {
		return err
	}
	scheduler, err := refresh.NewScheduler(refresh.SchedulerConfig{Store: store, Queue: q, Clock: clock, Logger: quiet, Metrics: metrics, EventsFunc: publisher.Wake})
	if err != nil {
		return err
	}
	consumer, err := refresh.NewConsumer(refresh.ConsumerConfig{
		Store: store, Outcomes: q, Clock: clock, Logger: quiet, Metrics: metrics, EventsFunc: publisher.Wake,
		Block: 50 * time.Millisecond, // a real wait in Redis: it bounds how long shutdown takes
		AppliedFunc: func(res refresh.ConsumeResult, _ error) {
			if res.Applied > 0 {
				scheduler.Wake() // a retry may be due at once
			}
		},
	})
	if err != nil {
		return err
	}
	svc = &refresh.Service{Store: store, Clock: clock, Logger: quiet, Metrics: metrics, WakeFunc: scheduler.Wake, EventsFunc: publisher.Wake}

	// runCtx runs the system (loops, workers, HTTP), storyCtx what the
	// story adds to it (the edits, the person on call, the live view): the
	// story ends at end, the system when ctx ends or, without --addr, with
	// the story.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	storyCtx, stopStory := context.WithCancel(runCtx)
	defer stopStory()
	var wg, storyWG sync.WaitGroup
	goRun := func(f func()) { wg.Go(f) }
	goRun(func() { _ = scheduler.Start(runCtx) })
	goRun(func() { _ = consumer.Start(runCtx) })
	goRun(func() { _ = publisher.Start(runCtx) })

	handler := &demoWorker{clock: clock, seed: cfg.Seed, failRate: cfg.FailRate, story: story, done: runCtx.Done()}
	for _, name := range []string{"tables", "thumbnails", "caches"} {
		w, err := queue.NewWorker(client, queue.WorkerOptions{
			Queue: name, Concurrency: 4, ID: "demo-" + name, Clock: clock, Logger: quiet,
			Block: 50 * time.Millisecond, WorkerTimeout: 24 * time.Hour,
			// At thousands of times real speed, the default half-second of
			// virtual time between revocation checks is microseconds.
			RevokedCheck: time.Hour,
		}, handler.handle)
		if err != nil {
			return err
		}
		goRun(func() { _ = w.Run(runCtx) })
	}
	storyWG.Go(func() { editThumbnail(storyCtx, svc, clock, cfg) })
	storyWG.Go(func() { showEvents(storyCtx, view, clock) })
	storyWG.Go(func() { operator(storyCtx, svc, clock, story) })

	var addr string
	if cfg.Addr != "" {
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
		}
		api := refreshhttp.NewServer(svc, refreshhttp.WithLogger(quiet), refreshhttp.WithDeadLetters(redisQueue))
		handler := withDashboard(api, svc, nil, redisQueue, redisQueue, quiet)
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		goRun(func() { _ = srv.Serve(ln) })
		goRun(func() {
			<-runCtx.Done()
			_ = srv.Close()
		})
		addr = ln.Addr().String()
		view.printf("HTTP API on http://%s (try GET /models); dashboard on http://%s/ui/\n", addr, addr)
		view.printf("Both keep serving after the story, at real speed, until Ctrl-C.\n\n")
	}

	started := time.Now()
	select {
	case <-ctx.Done():
	case <-clock.After(end.Sub(clock.Now())):
	}
	serving := cfg.Addr != "" && ctx.Err() == nil
	if serving {
		clock.SetSpeed(1)
	} else {
		stop()
	}
	stopStory()
	storyWG.Wait()
	view.close()
	took := time.Since(started)

	disabled := true
	models, err := store.List(context.WithoutCancel(ctx), refresh.Filter{Disabled: &disabled, Limit: 1000})
	if err == nil {
		view.summary(cfg.Duration, took, models)
	}
	if serving {
		view.printf("\nThe story is over. The API and the dashboard keep serving on http://%s, the clock at real speed\n"+
			"from %s: a trigger runs as it would in production (the dashboard shows it; this view is closed).\n"+
			"Ctrl-C stops the demo.\n", addr, clockTime(clock.Now()))
		<-ctx.Done()
	}
	stop()
	wg.Wait()
	return err
}

// teeQueue publishes lifecycle events to Redis and also hands them to the
// live view.
type teeQueue struct {
	*queue.Redis
	sink func([]refresh.Event)
}

// Publish publishes events through Redis, then shows them.
func (q *teeQueue) Publish(ctx context.Context, events []refresh.Event) error {
	err := q.Redis.Publish(ctx, events)
	q.sink(events)
	return err
}

// showDelay is how long, in virtual time, the view holds events back to
// print them in time order.
const showDelay = 2 * time.Minute

// showEvents has the view print the events, showDelay after they happen.
func showEvents(ctx context.Context, view *demoView, clock refresh.Clock) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-clock.After(showDelay / 4):
		}
		view.flush(clock.Now().Add(-showDelay))
	}
}

// editThumbnail triggers the thumbnail model every cfg.EditEvery, give or
// take a third, as if a customer kept editing the image.
func editThumbnail(ctx context.Context, svc *refresh.Service, clock refresh.Clock, cfg demoConfig) {
	for i := uint64(0); ; i++ {
		u := unitFloat(cfg.Seed, "edit", i)
		wait := time.Duration(float64(cfg.EditEvery) * (2.0/3 + 2.0/3*u)).Round(time.Second)
		select {
		case <-ctx.Done():
			return
		case <-clock.After(wait):
		}
		_, _, _ = svc.Act(ctx, demoThumbnail, refresh.ActionTrigger)
	}
}

// operator plays the person on call: every day from story.enableAt, it
// enables the models that are disabled.
func operator(ctx context.Context, svc *refresh.Service, clock refresh.Clock, story demoStory) {
	for at := story.enableAt; ; at = at.AddDate(0, 0, 1) {
		if wait := at.Sub(clock.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-clock.After(wait):
			}
		}
		disabled := true
		models, err := svc.Store.List(ctx, refresh.Filter{Disabled: &disabled, Limit: 1000})
		if err != nil {
			continue
		}
		for _, m := range models {
			_, _, _ = svc.Act(ctx, m.ID, refresh.ActionEnable)
		}
	}
}
