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
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/peterbourgon/ff/v3"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// runServe is `freshen serve`: the scheduler, the outcome consumer and the
// HTTP API, until SIGINT or SIGTERM.
func runServe(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	m := NewMain(stderr)
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "freshen serve: %v\n", err)
		return 2
	}
	if err := m.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "freshen serve: %v\n", err)
		_ = m.Close()
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
		m.Logger.Info("shutting down")
	case err := <-m.Failed():
		m.Logger.Error("fatal error, shutting down", "err", err)
		code = 1
	}
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown", "err", err)
		code = 1
	}
	return code
}

// ServeConfig is the configuration of freshen serve.
type ServeConfig struct {
	DatabaseURL string
	RedisURL    string
	// RedisPrefix starts every Redis key; workers use the same one.
	RedisPrefix string
	Addr        string
	BatchSize   int
	InstanceID  string
	MaxSleep    time.Duration
	LogLevel    slog.Level
	// Migrate applies the database migrations before starting.
	Migrate bool
	// ConnectTimeout bounds how long Run waits for PostgreSQL and Redis to
	// answer at start.
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for HTTP requests in
	// flight.
	ShutdownTimeout time.Duration
}

// Main is the freshen serve program, in the manner of WTF Dial's Main:
// ParseFlags, then Run, which returns once everything is started, then
// Close. End-to-end tests drive it the same way.
type Main struct {
	Config ServeConfig
	Logger *slog.Logger
	// TickedFunc and AppliedFunc, if set, are passed to the scheduler and
	// the consumer; tests wait on them.
	TickedFunc  func(refresh.TickResult, error)
	AppliedFunc func(refresh.ConsumeResult, error)

	logOut   io.Writer
	store    *postgres.Store
	client   *redis.Client
	queue    *queue.Redis
	server   *http.Server
	listener net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	failed   chan error
}

// NewMain returns a Main with the default configuration that logs JSON to
// logOut.
func NewMain(logOut io.Writer) *Main {
	return &Main{
		Config: ServeConfig{
			Addr:            ":8080",
			RedisPrefix:     queue.DefaultPrefix,
			BatchSize:       1000,
			InstanceID:      defaultInstanceID(),
			MaxSleep:        time.Minute,
			ConnectTimeout:  30 * time.Second,
			ShutdownTimeout: 10 * time.Second,
		},
		Logger: slog.New(slog.NewJSONHandler(logOut, nil)),
		logOut: logOut,
		failed: make(chan error, 1),
	}
}

func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "freshen"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// ParseFlags reads the configuration from args, then from FRESHEN_*
// environment variables (FRESHEN_DATABASE_URL for --database-url, ...),
// then from DATABASE_URL and REDIS_URL.
func (m *Main) ParseFlags(args []string) error {
	c := &m.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(m.logOut)
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL (env FRESHEN_DATABASE_URL or DATABASE_URL)")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL, e.g. redis://localhost:6379/0 (env FRESHEN_REDIS_URL or REDIS_URL)")
	fs.StringVar(&c.RedisPrefix, "redis-prefix", c.RedisPrefix, "prefix of every Redis key; workers must use the same")
	fs.StringVar(&c.Addr, "addr", c.Addr, "HTTP listen address")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "models claimed, and outcomes applied, per pass")
	fs.StringVar(&c.InstanceID, "instance-id", c.InstanceID, "name of this instance among the outcome consumers (keep it stable across restarts)")
	fs.DurationVar(&c.MaxSleep, "max-sleep", c.MaxSleep, "longest the scheduler sleeps without looking at the database")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&c.Migrate, "migrate", c.Migrate, "apply the database migrations at start")
	fs.Usage = func() {
		fmt.Fprintln(m.logOut, "usage: freshen serve [flags]\n\nRuns the scheduler, the outcome consumer and the HTTP API until SIGINT or SIGTERM.\nEvery flag can also be set as FRESHEN_<FLAG> (e.g. FRESHEN_BATCH_SIZE).")
		fs.PrintDefaults()
	}
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("FRESHEN")); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = os.Getenv("DATABASE_URL")
	}
	if c.RedisURL == "" {
		c.RedisURL = os.Getenv("REDIS_URL")
	}
	if err := c.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: must be debug, info, warn or error, got %q", *level)
	}
	var missing []string
	if c.DatabaseURL == "" {
		missing = append(missing, "--database-url (or DATABASE_URL)")
	}
	if c.RedisURL == "" {
		missing = append(missing, "--redis-url (or REDIS_URL)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s must be set", strings.Join(missing, " and "))
	}
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("--batch-size: must be >= 1, got %d", c.BatchSize)
	case c.MaxSleep <= 0:
		return fmt.Errorf("--max-sleep: must be > 0, got %s", c.MaxSleep)
	case c.InstanceID == "":
		return errors.New("--instance-id: must not be empty")
	}
	m.Logger = slog.New(slog.NewJSONHandler(m.logOut, &slog.HandlerOptions{Level: c.LogLevel}))
	return nil
}

// Run connects to PostgreSQL and Redis (waiting up to ConnectTimeout for
// them), migrates if asked, starts the scheduler, the consumer, the
// LISTEN/NOTIFY wake-up and the HTTP server, and returns. From then on
// errors are logged and retried; only a failure of the HTTP listener is
// fatal, and it is sent on Failed.
func (m *Main) Run(ctx context.Context) error {
	c := m.Config
	log := m.Logger
	connectCtx, cancelConnect := context.WithTimeout(ctx, c.ConnectTimeout)
	defer cancelConnect()

	if c.Migrate {
		if err := retryConnect(connectCtx, log, "migrate database", func() error { return serveMigrate(connectCtx, c.DatabaseURL) }); err != nil {
			return err
		}
	}
	err := retryConnect(connectCtx, log, "open database", func() error {
		s, err := postgres.Open(connectCtx, c.DatabaseURL, postgres.DefaultSession())
		m.store = s
		return err
	})
	if err != nil {
		return err
	}
	opt, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return fmt.Errorf("--redis-url: %w", err)
	}
	m.client = redis.NewClient(opt)
	err = retryConnect(connectCtx, log, "connect to redis", func() error { return m.client.Ping(connectCtx).Err() })
	if err != nil {
		return err
	}
	m.queue, err = queue.New(m.client, queue.Options{Prefix: c.RedisPrefix, Consumer: c.InstanceID, Logger: log})
	if err != nil {
		return err
	}

	metrics := &refresh.Metrics{}
	clock := refresh.SystemClock{}
	publisher, err := refresh.NewPublisher(refresh.PublisherConfig{
		Store: m.store, Queue: m.queue, Clock: clock, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return err
	}
	scheduler, err := refresh.NewScheduler(refresh.SchedulerConfig{
		Store: m.store, Queue: m.queue, Clock: clock, BatchSize: c.BatchSize, MaxSleep: c.MaxSleep,
		Logger: log, Metrics: metrics, TickedFunc: m.TickedFunc, EventsFunc: publisher.Wake,
	})
	if err != nil {
		return err
	}
	consumer, err := refresh.NewConsumer(refresh.ConsumerConfig{
		Store: m.store, Outcomes: m.queue, Clock: clock, BatchSize: c.BatchSize,
		Logger: log, Metrics: metrics, EventsFunc: publisher.Wake,
		AppliedFunc: func(res refresh.ConsumeResult, err error) {
			if res.Applied > 0 {
				scheduler.Wake() // a retry may be due at once
			}
			if m.AppliedFunc != nil {
				m.AppliedFunc(res, err)
			}
		},
	})
	if err != nil {
		return err
	}
	svc := &refresh.Service{Store: m.store, Clock: clock, Logger: log, Metrics: metrics, WakeFunc: scheduler.Wake, EventsFunc: publisher.Wake}
	handler := refreshhttp.NewServer(svc,
		refreshhttp.WithLogger(log),
		refreshhttp.WithMetrics(metrics),
		refreshhttp.WithCollectors(m.queue.Collectors()...),
		refreshhttp.WithHealthCheck("postgres", func(ctx context.Context) error {
			_, _, err := m.store.NextDue(ctx)
			return err
		}),
		refreshhttp.WithHealthCheck("redis", func(ctx context.Context) error { return m.client.Ping(ctx).Err() }),
	)

	m.listener, err = net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	m.server = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	m.goLoop(func() { _ = scheduler.Start(loopCtx) })
	m.goLoop(func() { _ = consumer.Start(loopCtx) })
	m.goLoop(func() { _ = publisher.Start(loopCtx) })
	m.goLoop(func() { m.listen(loopCtx, scheduler.Wake) })
	m.goLoop(func() {
		if err := m.server.Serve(m.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.fail(fmt.Errorf("http server: %w", err))
		}
	})
	log.Info("serving", "addr", m.listener.Addr().String(), "instance_id", c.InstanceID,
		"batch_size", c.BatchSize, "max_sleep", c.MaxSleep.String())
	return nil
}

// Addr returns the address the HTTP server listens on, once Run returned.
func (m *Main) Addr() string {
	if m.listener == nil {
		return ""
	}
	return m.listener.Addr().String()
}

// Failed returns a channel that receives the error that stopped the HTTP
// server, if it ever stops by itself.
func (m *Main) Failed() <-chan error { return m.failed }

func (m *Main) fail(err error) {
	select {
	case m.failed <- err:
	default:
	}
}

func (m *Main) goLoop(f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// Close stops the HTTP server (letting requests in flight finish, up to
// ShutdownTimeout), stops the loops and waits for them, and closes the
// connections. It may be called after a failed Run.
func (m *Main) Close() error {
	var errs []error
	if m.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.ShutdownTimeout)
		if err := m.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop http server: %w", err))
		}
		cancel()
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.client != nil {
		if err := m.client.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close redis: %w", err))
		}
	}
	if m.store != nil {
		m.store.Close()
	}
	return errors.Join(errs...)
}

// listen wakes the scheduler on every PostgreSQL notification of a model
// that became due earlier, so that a model created or triggered through
// another instance starts at once. A lost connection is re-opened with
// backoff; the scheduler is woken after each (re)connection to make up for
// the notifications missed meanwhile.
func (m *Main) listen(ctx context.Context, wake func()) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		ch, err := m.store.Listen(ctx)
		if err != nil {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			m.Logger.Error("listen for due models", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		wake()
		for range ch {
			wake()
		}
		if ctx.Err() == nil {
			m.Logger.Warn("listen connection lost; reconnecting")
		}
	}
}

// retryConnect calls f until it succeeds or ctx ends, with backoff, and returns
// f's last error if ctx ends first.
func retryConnect(ctx context.Context, log *slog.Logger, what string, f func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		log.Warn(what+" failed; retrying", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// serveMigrate applies the migrations on a connection of its own.
func serveMigrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return migrations.Migrate(ctx, conn)
}
