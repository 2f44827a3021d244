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
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	refreshhttp "github.com/freshen-dev/freshen/refresh/http"
	"github.com/freshen-dev/freshen/refresh/http/ui"
	"github.com/freshen-dev/freshen/refresh/postgres"
	"github.com/freshen-dev/freshen/refresh/webhook"
)

// runServe is `freshen serve`: the scheduler, the outcome consumer and the
// HTTP API, until SIGINT or SIGTERM.
func runServe(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	m := NewMain(stderr)
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "freshen serve: %v\n", m.redact.Error(err))
		return 2
	}
	if m.Config.GCMinHeapMiB > 0 {
		defer keepHeapGoal(uint64(m.Config.GCMinHeapMiB) << 20)()
	}
	if m.Config.MemoryLimitMiB > 0 {
		// A soft limit: the collector works harder as the heap nears it,
		// so that bursts of large requests do not grow the process.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(m.Config.MemoryLimitMiB) << 20))
	}
	if err := m.Run(ctx); err != nil {
		_ = m.Close()
		if ctx.Err() != nil {
			m.Logger.Info("stopped while starting", "err", err)
			return 0
		}
		fmt.Fprintf(stderr, "freshen serve: %v\n", m.redact.Error(err))
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
	// WebhookSentFunc, if set, is passed to the webhook dispatcher.
	WebhookSentFunc func(webhook.Sent)

	logOut   io.Writer
	redact   redactor
	notify   notifications
	store    atomic.Pointer[postgres.Store]
	client   redis.UniversalClient
	queue    *queue.Redis
	server   *http.Server
	listener net.Listener
	pprof    *http.Server
	router   *router
	auth     *refreshhttp.Auth
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
			BatchSize:       refresh.DefaultBatchSize,
			ClaimLoops:      3,
			GCMinHeapMiB:    defaultGCMinHeapMiB,
			MemoryLimitMiB:  memoryLimitFor(refresh.DefaultBatchSize, defaultGCMinHeapMiB),
			InstanceID:      defaultInstanceID(),
			MaxSleep:        time.Minute,
			ShutdownTimeout: 10 * time.Second,
			SessionTTL:      ui.DefaultSessionTTL,
			ConsumerLease:   queue.DefaultConsumerTimeout,
			Retention: RetentionConfig{
				HistoryMaxAge: refresh.DefaultHistoryMaxAge, HistoryMaxPerModel: refresh.DefaultHistoryMaxPerModel,
				PruneInterval: refresh.DefaultPruneInterval, MaxDeadLetters: refresh.DefaultMaxDeadLetters,
				EventsMaxLen: queue.DefaultEventsMaxLen,
			},
			Session: postgres.DefaultSession(),
			Webhook: defaultWebhookConfig(),
			HTTP: HTTPConfig{
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       30 * time.Second,
				WriteTimeout:      60 * time.Second,
				IdleTimeout:       60 * time.Second,
				RequestTimeout:    refreshhttp.DefaultRequestTimeout,
				MaxHeaderBytes:    64 << 10,
				MaxConns:          1000,
				ResponseMiB:       refreshhttp.DefaultResponseBytes >> 20,
			},
		},
		Logger: newLogger(logOut, slog.LevelInfo, redactor{}),
		logOut: logOut,
		failed: make(chan error, 1),
	}
}

// defaultInstanceID is the host name: stable across restarts of the
// deployment (a container's host name is its pod or container name).
func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "freshen"
	}
	return host
}

// Run opens the HTTP server (answering /healthz, and /readyz with 503 until
// the connections exist), then connects to PostgreSQL and Redis, retrying
// with backoff for up to ConnectTimeout (0: until they answer), checks the
// database schema (migrating it first if asked), starts the scheduler, the
// consumer, the publisher and the LISTEN/NOTIFY wake-up, opens the API and
// returns. From then on errors are logged and retried; only a failure of
// the HTTP listener is fatal, and it is sent on Failed.
//
// It refuses a schema of another version than this build's, and returns
// the error of a connection that cannot succeed by waiting (a wrong
// password, a missing database) at once.
func (m *Main) Run(ctx context.Context) error {
	c := m.Config
	log := m.Logger
	queue.SetRedisLogger(log)

	poolConfig, err := postgres.ParseConfig(c.DatabaseURL, c.Session)
	if err != nil {
		return fmt.Errorf("--database-url: %w", m.redact.Error(err))
	}
	m.client, err = queue.NewClient(c.redisServers.clientConfig(c.RedisURL))
	if err != nil {
		return fmt.Errorf("%w", m.redact.Error(err))
	}

	m.router = newRouter(m.client, redisTarget(c), &m.store, m.redact, m.auth, log)
	m.router.addDetail(m.notify.detail)
	listener, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.Addr, err)
	}
	if err := checkExposure(listener.Addr(), c.Addr, m.auth, c.Insecure, log); err != nil {
		_ = listener.Close()
		return err
	}
	limited := newLimitListener(listener, c.HTTP.MaxConns)
	m.listener = limited
	m.server = &http.Server{
		Handler:           m.router,
		ReadHeaderTimeout: c.HTTP.ReadHeaderTimeout,
		ReadTimeout:       c.HTTP.ReadTimeout,
		WriteTimeout:      c.HTTP.WriteTimeout,
		IdleTimeout:       c.HTTP.IdleTimeout,
		MaxHeaderBytes:    c.HTTP.MaxHeaderBytes,
		ConnState:         limited.track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	m.goLoop(func() {
		if err := m.server.Serve(m.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.fail(fmt.Errorf("http server: %w", err))
		}
	})
	if c.PprofAddr != "" {
		if err := m.servePprof(c.PprofAddr); err != nil {
			return err
		}
	}
	log.Info("listening", "addr", m.listener.Addr().String(), "instance_id", c.InstanceID,
		"database_url", redactURL(c.DatabaseURL), "redis_url", redactURL(c.RedisURL))

	connectCtx, cancelConnect := ctx, context.CancelFunc(func() {})
	if c.ConnectTimeout > 0 {
		connectCtx, cancelConnect = context.WithTimeout(ctx, c.ConnectTimeout)
	}
	defer cancelConnect()
	err = retryConnect(connectCtx, log, "check database schema", func() error {
		return checkSchema(connectCtx, poolConfig.ConnConfig, c.Migrate)
	})
	if err != nil {
		return err
	}
	err = retryConnect(connectCtx, log, "open database", func() error {
		s, err := postgres.Open(connectCtx, c.DatabaseURL, c.Session)
		if err == nil {
			m.store.Store(s)
		}
		return err
	})
	if err != nil {
		return err
	}
	store := m.store.Load()
	store.SetLimits(c.Limits)
	if c.ListenDatabaseURL != "" {
		if err := store.SetListenURL(c.ListenDatabaseURL, c.Session); err != nil {
			return fmt.Errorf("--listen-database-url: %w", m.redact.Error(err))
		}
	}
	store.SetEvents(c.Events.With(webhook.EventNames(c.Webhook.Endpoints)...))
	if err := seedLimits(connectCtx, store, c.MaxRunning, log); err != nil {
		return err
	}
	err = retryConnect(connectCtx, log, "connect to redis", func() error { return m.client.Ping(connectCtx).Err() })
	if err != nil {
		return err
	}
	m.queue, err = queue.New(m.client, queue.Options{Prefix: c.RedisPrefix, Consumer: c.InstanceID, Logger: log, Clock: refresh.SystemClock{},
		ConsumerTimeout: c.ConsumerLease, Heartbeat: c.ConsumerLease / 5,
		EventsMaxLen: c.Retention.EventsMaxLen, MaxDeadLetters: c.Retention.MaxDeadLetters, Events: c.Events})
	if err != nil {
		return err
	}

	metrics := &refresh.Metrics{Observer: refreshhttp.NewHistograms()}
	clock := refresh.SystemClock{}
	hooks, err := newWebhooks(c.Webhook, store, clock, m)
	if err != nil {
		return err
	}
	var svc *refresh.Service
	publisher, err := refresh.NewPublisher(refresh.PublisherConfig{
		Store: store, Queue: m.queue, Clock: clock, Logger: log, Metrics: metrics,
		RouteFunc: hooks.route, PublishedFunc: hooks.wake,
		// The upstream triggers of the successes, before their events leave
		// the store.
		PropagateFunc: func(ctx context.Context, events []refresh.Event) (int, error) { return svc.Propagate(ctx, events) },
	})
	if err != nil {
		return err
	}
	var consumer *refresh.Consumer
	// waiting is set while the last pass left models waiting for a
	// concurrency slot: an outcome applied then frees a slot, and wakes the
	// scheduler rather than letting it wait for its SlotPoll.
	var waiting atomic.Bool
	scheduler, err := refresh.NewScheduler(refresh.SchedulerConfig{
		Store: store, Queue: m.queue, Clock: clock, BatchSize: c.BatchSize, Loops: c.ClaimLoops, MaxSleep: c.MaxSleep,
		Logger: log, Metrics: metrics,
		TickedFunc: func(res refresh.TickResult, err error) {
			if err == nil {
				waiting.Store(res.Waiting > 0)
			}
			if m.TickedFunc != nil {
				m.TickedFunc(res, err)
			}
		},
		EventsFunc: func() {
			publisher.Wake()
			consumer.Wake() // outcomes of the models the pass held
		},
		TenantsFunc: tenantsFunc(m.auth),
	})
	if err != nil {
		return err
	}
	consumer, err = refresh.NewConsumer(refresh.ConsumerConfig{
		Store: store, Outcomes: m.queue, Clock: clock, BatchSize: c.BatchSize,
		Logger: log, Metrics: metrics, EventsFunc: publisher.Wake, HeldFunc: scheduler.Holds,
		AppliedFunc: func(res refresh.ConsumeResult, err error) {
			if res.Due > 0 || res.Applied > 0 && waiting.Load() {
				scheduler.Wake() // a retry is due at once, or a slot is free
			}
			if m.AppliedFunc != nil {
				m.AppliedFunc(res, err)
			}
		},
	})
	if err != nil {
		return err
	}
	svc = &refresh.Service{Store: store, Clock: clock, Limits: c.Limits, Logger: log, Metrics: metrics, WakeFunc: scheduler.Wake, EventsFunc: publisher.Wake}
	api := refreshhttp.NewServer(svc,
		refreshhttp.WithLogger(log),
		refreshhttp.WithMetrics(metrics),
		refreshhttp.WithCollectors(m.queue.Collectors()...),
		refreshhttp.WithCollectors(hooks.collectors...),
		refreshhttp.WithAuth(m.auth),
		refreshhttp.WithDeadLetters(m.queue),
		refreshhttp.WithRequestTimeout(c.HTTP.RequestTimeout),
		refreshhttp.WithResponseBytes(int64(c.HTTP.ResponseMiB)<<20),
		refreshhttp.WithState(refreshhttp.StateConfig{Models: store, Clock: clock, LengthsFunc: m.queueLengths}),
	)
	pruner, err := refresh.NewPruner(refresh.PrunerConfig{
		Store: store, Clock: clock, MaxAge: c.Retention.HistoryMaxAge, MaxPerModel: c.Retention.HistoryMaxPerModel,
		Interval: c.Retention.PruneInterval, Dead: m.queue, MaxDeadLetters: c.Retention.MaxDeadLetters,
		Policies: store, Logger: log, Metrics: metrics,
	})
	if err != nil {
		return err
	}

	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	m.goLoop(func() { _ = scheduler.Start(loopCtx) })
	m.goLoop(func() { _ = consumer.Start(loopCtx) })
	m.goLoop(func() { _ = publisher.Start(loopCtx) })
	m.goLoop(func() { _ = pruner.Start(loopCtx) })
	m.goLoop(func() { hooks.start(loopCtx) })
	m.goLoop(func() { _ = m.queue.Heartbeat(loopCtx) })
	m.goLoop(func() { m.listen(loopCtx, scheduler.Wake) })
	m.router.open(withDashboard(api, svc, m.auth, m.queue, m.queue, log, ui.WithSessions(store), ui.WithSessionTTL(c.SessionTTL)))
	log.Info("serving", "addr", m.listener.Addr().String(), "instance_id", c.InstanceID,
		"batch_size", c.BatchSize, "max_sleep", c.MaxSleep)
	return nil
}

// queueLengths reads the lengths of the queue's lists for /metrics.
func (m *Main) queueLengths(ctx context.Context, queues []string) (refreshhttp.Lengths, error) {
	l, err := m.queue.Lengths(ctx, queues)
	return refreshhttp.Lengths{Jobs: l.Jobs, Outcomes: l.Outcomes, Dead: l.Dead}, err
}

// redisTarget describes where c expects Redis, without credentials: the
// URL's host, the Sentinel master and addresses, or the Cluster nodes.
func redisTarget(c ServeConfig) string {
	switch {
	case c.RedisSentinelMaster != "":
		return "sentinel master " + c.RedisSentinelMaster + " at " + strings.Join(c.RedisSentinelAddrs, ",")
	case len(c.RedisClusterAddrs) > 0:
		return "cluster at " + strings.Join(c.RedisClusterAddrs, ",")
	}
	if u, err := url.Parse(c.RedisURL); err == nil && u.Host != "" {
		return u.Host
	}
	return "redis"
}

// Addr returns the address the HTTP server listens on, once Run has opened
// it.
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
	} else if m.listener != nil {
		_ = m.listener.Close()
	}
	if m.pprof != nil {
		_ = m.pprof.Close()
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
	if s := m.store.Load(); s != nil {
		s.Close()
	}
	return errors.Join(errs...)
}

// fatalError marks an error that waiting cannot cure.
type fatalError struct{ error }

func (e fatalError) Unwrap() error { return e.error }

// retryConnect calls f until it succeeds or ctx ends, with backoff, and
// returns f's last error if ctx ends first. It returns at once an error
// that waiting cannot cure: a fatalError, a refused password or a missing
// database.
func retryConnect(ctx context.Context, log *slog.Logger, what string, f func() error) error {
	backoff := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		var fatal fatalError
		if errors.As(err, &fatal) {
			return fatal.error
		}
		var pg *pgconn.PgError
		if errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "28") || pg.Code == "3D000") {
			return fmt.Errorf("%s: %w", what, err) // invalid authorization, no such database
		}
		if name, ok := postgres.RefusedSetting(err); ok {
			return fmt.Errorf("%s: the database, or a pooler in front of it, refuses the setting %q at connection: remove it from the database URL (Freshen sets what it needs in each transaction): %w", what, name, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		log.Warn(what+" failed; retrying", "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// checkSchema connects with cfg, without its session timeouts (a migration
// may take long), applies the migrations if migrate is set, and returns a
// fatalError unless the schema is at the version this build needs.
func checkSchema(ctx context.Context, cfg *pgx.ConnConfig, migrate bool) error {
	cfg = cfg.Copy()
	for _, p := range []string{"lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout"} {
		delete(cfg.RuntimeParams, p)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if migrate {
		if err := migrations.Migrate(ctx, conn); err != nil {
			return err
		}
	}
	current, latest, err := migrations.Version(ctx, conn)
	if err != nil {
		return err
	}
	switch {
	case current < latest:
		return fatalError{fmt.Errorf("database schema is at version %d, this build needs %d: run freshen migrate", current, latest)}
	case current > latest:
		return fatalError{fmt.Errorf("database schema is at version %d, newer than this build (%d): upgrade freshen", current, latest)}
	}
	return nil
}

// keepHeapGoal keeps the garbage collector's heap goal at least minHeap
// bytes. Go's collector starts a cycle once the heap has grown by GOGC
// percent over what the last cycle left live; serve's live heap is small
// (10 to 25 MB at a batch size of 1000) and it allocates fast, so it ran a
// cycle every few megabytes. After each cycle this raises the percentage
// so that the goal is minHeap while twice the live heap stays below it, and
// gives back GOGC's own percentage once the live heap grows past half of
// it: the heap never grows further than GOGC alone would let it, apart
// from up to minHeap. A GOGC of off is left as it is. The function it
// returns stops it and gives back GOGC's percentage.
func keepHeapGoal(minHeap uint64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base < 0 {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	// The goal is the live heap plus GOGC percent of the live heap and the
	// other roots the collector scans (stacks, globals).
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	// cycleEnded runs once after each collection: a finalizer of an
	// object made unreachable just before it.
	type sentinel struct{ _ [16]byte }
	var cycleEnded func(*sentinel)
	cycleEnded = func(*sentinel) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		metrics.Read(samples)
		var v [3]uint64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = s.Value.Uint64()
			}
		}
		live, scanned := v[0], v[0]+v[1]+v[2]
		percent := base
		if scanned > 0 && live+scanned*uint64(base)/100 < minHeap {
			percent = int((minHeap - live) * 100 / scanned)
		}
		debug.SetGCPercent(percent)
		// The runtime's own accounting of the roots may differ: scale
		// down to its goal.
		metrics.Read(goal)
		if g := goal[0].Value; percent > base && g.Kind() == metrics.KindUint64 && g.Uint64() > minHeap && g.Uint64() > live {
			debug.SetGCPercent(max(base, int(uint64(percent)*(minHeap-live)/(g.Uint64()-live))))
		}
		runtime.SetFinalizer(&sentinel{}, cycleEnded)
	}
	runtime.SetFinalizer(&sentinel{}, cycleEnded)
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		debug.SetGCPercent(base)
	}
}
