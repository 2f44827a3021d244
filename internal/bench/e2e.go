package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Defaults of E2EConfig.
const (
	DefaultE2EModels  = 10_000
	DefaultE2ETimeout = 10 * time.Minute
)

// E2EConfig configures E2E.
type E2EConfig struct {
	// Models is how many models are due at the same instant (default
	// DefaultE2EModels).
	Models int
	// Concurrency is the worker's (default DefaultWorkerConcurrency).
	Concurrency int
	// Lead is the time from the start of the load of the models to the
	// instant they are all due; setup must fit in it (default 2s + 40µs a
	// model).
	Lead time.Duration
	// Timeout is how long after the due instant the run gives up (default
	// DefaultE2ETimeout).
	Timeout time.Duration
	// Events, if set, is serve's --events. Without started or succeeded
	// in it, the run is followed on serve's metrics instead of the events
	// stream.
	Events string
	// FollowMetrics follows the run on serve's metrics even if the stream
	// carries started and succeeded, so that runs with and without them
	// pay for the same reads.
	FollowMetrics bool
	// ServeDatabaseURL, if set, is where serve connects instead of
	// Config.DatabaseURL: a pooler (e.g. PgBouncer in transaction mode) in
	// front of the same server. The run then works in a database of its
	// own rather than a schema (a pooler refuses the search_path a schema
	// needs at connection), created, loaded, checked and dropped over
	// Config.DatabaseURL; both URLs name it in place of their database,
	// and serve LISTENs over Config.DatabaseURL (--listen-database-url).
	ServeDatabaseURL string
}

func (c E2EConfig) withDefaults() (E2EConfig, error) {
	switch {
	case c.Models < 0:
		return c, fmt.Errorf("bench: e2e: Models: must be >= 1, got %d", c.Models)
	case c.Concurrency < 0:
		return c, fmt.Errorf("bench: e2e: Concurrency: must be >= 1, got %d", c.Concurrency)
	case c.Lead < 0:
		return c, fmt.Errorf("bench: e2e: Lead: must be >= 0, got %s", c.Lead)
	case c.Timeout < 0:
		return c, fmt.Errorf("bench: e2e: Timeout: must be > 0, got %s", c.Timeout)
	}
	if c.Models == 0 {
		c.Models = DefaultE2EModels
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultWorkerConcurrency
	}
	if c.Lead == 0 {
		c.Lead = 2*time.Second + time.Duration(c.Models)*40*time.Microsecond
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultE2ETimeout
	}
	return c, nil
}

// E2EResult holds the figures of an end-to-end run. Times are from the
// instant all models were due.
type E2EResult struct {
	Models, Concurrency, BatchSize int
	ServePID, WorkerPID            int
	// LoadTime is how long loading the models took, before they were due.
	LoadTime time.Duration
	// FirstStart and FirstOutcome are when the first started and succeeded
	// entries reached the events stream; Done when the last model's
	// succeeded entry did.
	FirstStart, FirstOutcome, Done time.Duration
	// CPU is the CPU time used from the due instant to Done.
	CPU E2ECPU
	// ServePeakRSS and WorkerPeakRSS are the peak resident set sizes
	// (VmHWM) of the child processes, in bytes.
	ServePeakRSS, WorkerPeakRSS int64
	// Transactions is how many transactions the database committed or
	// rolled back from the due instant until serve stopped
	// (pg_stat_database); Statements how many statements it ran
	// (pg_stat_statements), if StatementsNote is empty, else why they
	// were not counted.
	Transactions, Statements int64
	StatementsNote           string
	// RedisCommands is how many times Redis ran each command from the due
	// instant to Done (INFO commandstats), leaving out the harness's own.
	RedisCommands map[string]int64
	// LoadBefore and LoadAfter are the machine's load average before and
	// after the run.
	LoadBefore, LoadAfter string
	// Events is serve's --events ("" for all).
	Events string
	// Sizes is what the tables take at the end of the run.
	Sizes E2ESizes
}

// CyclesPerSec is how many models went due -> started -> succeeded -> idle
// per second.
func (r E2EResult) CyclesPerSec() float64 { return float64(r.Models) / r.Done.Seconds() }

// RedisCommandsTotal is how many commands Redis ran in all.
func (r E2EResult) RedisCommandsTotal() int64 {
	var n int64
	for _, c := range r.RedisCommands {
		n += c
	}
	return n
}

// E2ECPU is the CPU time (user and system) of each process of a run.
type E2ECPU struct {
	Serve, Worker time.Duration
	// Postgres is the postmaster and all its children (backends,
	// background processes), including those that started or ended during
	// the run.
	Postgres, Redis time.Duration
	// PostgresNote and RedisNote say why Postgres or Redis was not
	// measured (a server on another machine); they are empty if it was.
	PostgresNote, RedisNote string
}

// E2E measures Freshen end to end: Models idle models due at the same
// instant, a `freshen serve` child process and a `freshen bench worker`
// child process (queue.Worker with a no-op handler), timed from the due
// instant until every model has gone due -> started -> worked -> outcome
// applied, as read on the lifecycle events stream (one succeeded entry per
// model), or on serve's metrics when cfg.Events leaves started or
// succeeded out of the stream. It then stops both children and checks in
// SQL that every model has exactly one attempt, successful, and is idle
// with its next run in the future; it returns an error if not. Last, it
// measures what the tables take (Sizes).
func (b *Bench) E2E(ctx context.Context, cfg E2EConfig) (E2EResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return E2EResult{}, err
	}
	res := E2EResult{Models: cfg.Models, Concurrency: cfg.Concurrency, BatchSize: b.cfg.BatchSize, LoadBefore: LoadAverage(), Events: cfg.Events}
	var serveFlags []string
	if cfg.Events != "" {
		serveFlags = append(serveFlags, "--events", cfg.Events)
	}
	// counters reads the statistics of the run's database.
	poolCfg, urls, counters, err := b.e2eDatabase(ctx, cfg)
	if err != nil {
		return res, err
	}
	if counters != b.admin {
		defer counters.Close(ctx)
	}
	b.clearRedis(ctx)

	pgPID, err := postmasterPID(ctx, b.admin)
	if err != nil {
		res.CPU.PostgresNote = err.Error()
	}
	redisPID, err := redisServerPID(ctx, b.rdb)
	if err != nil {
		res.CPU.RedisNote = err.Error()
	}
	view, why := statementsView(ctx, counters, cmp.Or(poolCfg.ConnConfig.RuntimeParams["search_path"], "public"))
	res.StatementsNote = why

	b.logf("e2e: starting freshen serve and freshen bench worker (concurrency %d)", cfg.Concurrency)
	serve, err := b.startServeURL(ctx, urls, serveFlags...)
	if err != nil {
		return res, err
	}
	defer serve.kill()
	worker, err := b.startWorker(ctx, cfg.Concurrency)
	if err != nil {
		return res, err
	}
	defer worker.kill()
	res.ServePID, res.WorkerPID = serve.pid(), worker.pid()

	events, err := b.newProgress(cfg.Events, cfg.FollowMetrics, serve.addr, cfg.Models)
	if err != nil {
		return res, err
	}
	readCtx, stopReading := context.WithCancel(ctx)
	readErr, readDone := make(chan error, 1), make(chan struct{})
	go func() {
		readErr <- events.run(readCtx)
		close(readDone)
	}()
	defer func() {
		stopReading()
		<-readDone
	}()

	loadStart := b.clock.Now()
	t0 := loadStart.Add(cfg.Lead).Truncate(time.Millisecond)
	b.logf("e2e: loading %d models, all due at %s", cfg.Models, t0.Format("15:04:05.000"))
	if err := b.loadAndNotify(ctx, poolCfg, cfg.Models, t0); err != nil {
		return res, err
	}
	res.LoadTime = b.clock.Now().Sub(loadStart)

	// The counters before the due instant: the load's connections are
	// closed, so their transactions are reported already.
	var before sample
	if err := b.sample(ctx, &before, serve, worker, pgPID, redisPID, events); err != nil {
		return res, err
	}
	if before.xacts, err = transactions(ctx, counters); err != nil {
		return res, err
	}
	if view != "" {
		if before.statements, err = statements(ctx, counters, view); err != nil {
			return res, err
		}
	}
	if now := b.clock.Now(); !now.Before(t0) {
		return res, fmt.Errorf("setup took %s, longer than the lead of %s (loading %s): raise the lead",
			now.Sub(loadStart).Round(time.Millisecond), cfg.Lead, res.LoadTime.Round(time.Millisecond))
	}
	select {
	case <-b.clock.After(t0.Sub(b.clock.Now())):
	case <-ctx.Done():
		return res, ctx.Err()
	}

	progress := b.clock.After(2 * time.Second)
	timeout := b.clock.After(cfg.Timeout)
	for done := false; !done; {
		select {
		case <-events.finished():
			done = true
		case <-progress:
			started, succeeded := events.counts()
			b.logf("e2e: %.0fs: %d started, %d succeeded", b.clock.Now().Sub(t0).Seconds(), started, succeeded)
			progress = b.clock.After(2 * time.Second)
		case err := <-readErr:
			return res, fmt.Errorf("follow the run: %w", err)
		case <-timeout:
			started, succeeded := events.counts()
			c, err := b.check(ctx, poolCfg)
			if err != nil {
				return res, err
			}
			return res, fmt.Errorf("timed out %s after the due instant: %d started and %d succeeded entries read of %d; in SQL: %s",
				cfg.Timeout, started, succeeded, cfg.Models, c)
		case <-serve.done:
			return res, serve.exited()
		case <-worker.done:
			return res, worker.exited()
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}

	var after sample
	if err := b.sample(ctx, &after, serve, worker, pgPID, redisPID, events); err != nil {
		return res, err
	}
	if res.ServePeakRSS, err = peakRSS(serve.pid()); err != nil {
		return res, err
	}
	if res.WorkerPeakRSS, err = peakRSS(worker.pid()); err != nil {
		return res, err
	}
	stopReading()
	firstStart, firstSuccess, doneAt, duplicates := events.times()
	res.FirstStart, res.FirstOutcome, res.Done = firstStart.Sub(t0), firstSuccess.Sub(t0), doneAt.Sub(t0)
	res.CPU.Serve, res.CPU.Worker = after.serve-before.serve, after.worker-before.worker
	if pgPID != 0 {
		res.CPU.Postgres = treeCPU(before.postgres, after.postgres)
	}
	if redisPID != 0 {
		res.CPU.Redis = after.redis - before.redis
	}
	// The harness's own commands: its reads of the stream, and the INFO
	// that took the counts before (counted once it returned).
	res.RedisCommands = commandsBetween(before.commands, after.commands,
		map[string]int64{"xread": after.reads - before.reads, "info": 1})

	if err := worker.stop(); err != nil {
		return res, err
	}
	if err := serve.stop(); err != nil {
		return res, err
	}
	// Serve's backends have exited (a pooler's are ended), so their
	// transactions are reported. The harness's own since the counts
	// before: the two queries that took them.
	if counters != b.admin {
		if err := b.endBackends(ctx, counters.Config().Database, counters.PgConn().PID()); err != nil {
			return res, err
		}
	}
	xacts, err := transactions(ctx, counters)
	if err != nil {
		return res, err
	}
	res.Transactions = xacts - before.xacts - 2
	if view != "" {
		n, err := statements(ctx, counters, view)
		if err != nil {
			return res, err
		}
		res.Statements = n - before.statements - 2
	}
	res.LoadAfter = LoadAverage()

	c, err := b.check(ctx, poolCfg)
	if err != nil {
		return res, err
	}
	if !c.ok(cfg.Models) || duplicates > 0 {
		return res, fmt.Errorf("check failed: want %d models, each idle with its next run in the future and with exactly one attempt, successful; got %s; %d models with more than one succeeded entry on the events stream",
			cfg.Models, c, duplicates)
	}
	b.logf("e2e: checked: %s", c)
	if res.Sizes, err = b.sizes(ctx, poolCfg); err != nil {
		return res, err
	}
	return res, nil
}

// e2eDatabase makes the database or schema of a run of cfg and returns the
// configuration of a pool that works in it directly, the URL serve is to
// connect to, and a connection to read the run's database statistics on:
// b.admin when the run has a schema, else one to its database, for the
// caller to close.
func (b *Bench) e2eDatabase(ctx context.Context, cfg E2EConfig) (*pgxpool.Config, serveURLs, *pgx.Conn, error) {
	if cfg.ServeDatabaseURL == "" {
		poolCfg, err := b.newSchema(ctx, "e2e")
		if err != nil {
			return nil, serveURLs{}, nil, err
		}
		return poolCfg, serveURLs{database: schemaURL(poolCfg)}, b.admin, nil
	}
	poolCfg, pooled, direct, err := b.newDatabase(ctx, "e2e", cfg.ServeDatabaseURL)
	if err != nil {
		return nil, serveURLs{}, nil, err
	}
	b.logf("e2e: freshen serve connects through the serve database URL; the run works in database %s", poolCfg.ConnConfig.Database)
	urls := serveURLs{database: pooled, listen: direct}
	conn, err := pgx.ConnectConfig(ctx, poolCfg.ConnConfig)
	if err != nil {
		return nil, serveURLs{}, nil, fmt.Errorf("connect to database: %w", err)
	}
	return poolCfg, urls, conn, nil
}

// endBackends ends the backends connected to database db but keep, which
// a pooler holds once its clients have gone, and waits until they have
// exited and so reported their transactions. It works over b.admin,
// connected to another database, so that its queries are not db's.
func (b *Bench) endBackends(ctx context.Context, db string, keep uint32) error {
	timeout := b.clock.After(stopTimeout)
	for {
		var n int
		// FILTER: terminate only once WHERE has kept the row.
		err := b.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> $2`, db, int64(keep)).Scan(&n)
		if err != nil {
			return fmt.Errorf("end the pooler's connections: %w", err)
		}
		if n == 0 {
			return nil
		}
		select {
		case <-timeout:
			return fmt.Errorf("%d connections to database %s still open %s after they were ended", n, db, stopTimeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-b.clock.After(20 * time.Millisecond):
		}
	}
}

// loadAndNotify loads n models due at t0, on connections it closes
// afterwards, and wakes the schedulers.
func (b *Bench) loadAndNotify(ctx context.Context, cfg *pgxpool.Config, n int, t0 time.Time) error {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer pool.Close()
	if err := b.loadPayload(ctx, pool, "m-", n, t0, 0, E2EPayload); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, current_schema())`, postgres.NotifyChannel); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// sample is what E2E reads before and after the run.
type sample struct {
	serve, worker, redis time.Duration
	postgres             tree
	commands             map[string]int64
	reads                int64 // XREADs of the events reader
	xacts, statements    int64
}

// sample reads the CPU of the processes (of the servers if their pids are
// known) and the Redis command counts into s.
func (b *Bench) sample(ctx context.Context, s *sample, serve, worker *child, pgPID, redisPID int, events e2eProgress) error {
	var err error
	if s.serve, err = processCPU(serve.pid()); err != nil {
		return err
	}
	if s.worker, err = processCPU(worker.pid()); err != nil {
		return err
	}
	if pgPID != 0 {
		if s.postgres, err = snapshotTree(pgPID); err != nil {
			return fmt.Errorf("CPU of PostgreSQL: %w", err)
		}
	}
	if redisPID != 0 {
		if s.redis, err = processCPU(redisPID); err != nil {
			return err
		}
	}
	s.reads = events.xreads()
	s.commands, err = commandCalls(ctx, b.rdb)
	return err
}

// counts are what the SQL check of E2E finds.
type counts struct {
	models, idle, attempts, successful, successfulModels int
}

func (c counts) ok(n int) bool {
	return c.models == n && c.idle == n && c.attempts == n && c.successful == n && c.successfulModels == n
}

func (c counts) String() string {
	return fmt.Sprintf("%d models, %d of them idle with their next run in the future; %d attempts, %d of them successful, of %d models",
		c.models, c.idle, c.attempts, c.successful, c.successfulModels)
}

// check counts the models, the idle ones, and the attempts.
func (b *Bench) check(ctx context.Context, cfg *pgxpool.Config) (counts, error) {
	var c counts
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return c, fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM models),
			(SELECT count(*) FROM models WHERE attempt_uid IS NULL AND started_at IS NULL
				AND last_success_at IS NOT NULL AND refresh_at > $1 AND consecutive_failures = 0
				AND disabled_at IS NULL),
			(SELECT count(*) FROM attempt_history),
			(SELECT count(*) FROM attempt_history WHERE outcome = 'success' AND finished_at IS NOT NULL),
			(SELECT count(DISTINCT model_id) FROM attempt_history WHERE outcome = 'success')`,
		b.clock.Now()).Scan(&c.models, &c.idle, &c.attempts, &c.successful, &c.successfulModels)
	if err != nil {
		return c, fmt.Errorf("check: %w", err)
	}
	return c, nil
}

// eventReader reads the lifecycle events stream from its start and notes
// when the started and succeeded entries arrive; done is closed once every
// one of want models has a succeeded entry.
type eventReader struct {
	rdb    *redis.Client
	stream string
	want   int
	clock  refresh.Clock
	reads  atomic.Int64 // XREADs sent
	done   chan struct{}

	mu           sync.Mutex
	started      int
	succeeded    map[string]int // model -> succeeded entries
	duplicates   int            // models with more than one
	firstStart   time.Time
	firstSuccess time.Time
	doneAt       time.Time
}

func newEventReader(rdb *redis.Client, stream string, want int, clock refresh.Clock) *eventReader {
	return &eventReader{rdb: rdb, stream: stream, want: want, clock: clock,
		done: make(chan struct{}), succeeded: make(map[string]int, want)}
}

// run reads until ctx ends, and returns nil then, or the error of a read.
func (r *eventReader) run(ctx context.Context) error {
	last := "0-0"
	for ctx.Err() == nil {
		r.reads.Add(1)
		res, err := r.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{r.stream, last}, Count: 10_000, Block: time.Second}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := r.clock.Now()
		r.mu.Lock()
		for _, s := range res {
			for _, m := range s.Messages {
				last = m.ID
				r.note(m, now)
			}
		}
		r.mu.Unlock()
	}
	return nil
}

// note counts entry m, read at now; r.mu is held.
func (r *eventReader) note(m redis.XMessage, now time.Time) {
	switch m.Values["type"] {
	case refresh.LifecycleStarted:
		r.started++
		if r.firstStart.IsZero() {
			r.firstStart = now
		}
	case refresh.LifecycleSucceeded:
		id, _ := m.Values["model_id"].(string)
		if id == "" {
			id = "entry " + m.ID
		}
		r.succeeded[id]++
		if r.succeeded[id] == 2 {
			r.duplicates++
		}
		if r.firstSuccess.IsZero() {
			r.firstSuccess = now
		}
		if len(r.succeeded) == r.want && r.doneAt.IsZero() {
			r.doneAt = now
			close(r.done)
		}
	}
}

// counts returns how many started entries, and models with a succeeded
// entry, were read.
func (r *eventReader) counts() (started, succeeded int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started, len(r.succeeded)
}

// times returns when the first started and succeeded entries were read,
// when the last model's succeeded entry was, and how many models had more
// than one.
func (r *eventReader) times() (firstStart, firstSuccess, doneAt time.Time, duplicates int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstStart, r.firstSuccess, r.doneAt, r.duplicates
}
