package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// ServeConfig is the configuration of freshen serve.
type ServeConfig struct {
	DatabaseURL string
	// ListenDatabaseURL, if set, is where serve LISTENs for notifications
	// (a direct connection), rather than DatabaseURL (see notify.go).
	ListenDatabaseURL string
	RedisURL          string
	redisServers
	// RedisPrefix starts every Redis key; workers use the same one.
	RedisPrefix string
	Addr        string
	BatchSize   int
	// ClaimLoops is how many scheduler passes run at once while models are
	// due by the batch.
	ClaimLoops int
	// InstanceID names the instance among the outcome consumers and in
	// pg_stat_activity (application_name "freshen/<id>").
	InstanceID string
	MaxSleep   time.Duration
	LogLevel   slog.Level
	// Migrate applies the database migrations before starting.
	Migrate bool
	// ConnectTimeout bounds how long Run waits for PostgreSQL and Redis to
	// answer at start; 0 waits until they do (the HTTP server answers
	// /healthz and /readyz meanwhile).
	ConnectTimeout time.Duration
	// ShutdownTimeout bounds how long Close waits for HTTP requests in
	// flight.
	ShutdownTimeout time.Duration
	// Session are the settings of every database connection.
	Session postgres.Session
	HTTP    HTTPConfig
	// Limits bound every model written and every outcome applied.
	Limits refresh.Limits
	// MaxRunning are the concurrency limits to create at start when they
	// do not exist yet (--max-running).
	MaxRunning []refresh.Limit
	// ConsumerLease is how long this instance may go unseen before another
	// takes back the outcomes it holds; it beats every ConsumerLease/5.
	ConsumerLease time.Duration
	// TokensFile and Tokens hold the API's bearer tokens (see auth.go);
	// without any, Run refuses an Addr beyond loopback unless Insecure.
	TokensFile string
	Tokens     string
	Insecure   bool
	// SessionTTL is how long a dashboard session lasts after its sign-in;
	// the sessions are kept in the database, for every instance.
	SessionTTL time.Duration
	// PprofAddr, if set, is the address of a second HTTP server that
	// answers only the Go profiler's endpoints (/debug/pprof/...); Run
	// refuses one beyond loopback unless Insecure (see pprof.go).
	PprofAddr string
	// GCMinHeapMiB, if > 0, is the least heap size, in MiB, at which the
	// garbage collector starts a cycle (see keepHeapGoal).
	GCMinHeapMiB int
	// MemoryLimitMiB, if > 0, is Go's soft memory limit in MiB
	// (debug.SetMemoryLimit, as GOMEMLIMIT). Unless the flag (or its
	// variable) sets it, ParseFlags makes it follow the batch size
	// (memoryLimitFor).
	MemoryLimitMiB int
	// Retention bounds the attempt history, the dead-letter list and the
	// events stream.
	Retention RetentionConfig
	// Webhook configures the delivery of lifecycle events to webhook
	// endpoints (see webhook.go).
	Webhook WebhookConfig
	// Events are the lifecycle names of the events stream (--events, the
	// zero value: all); the outbox also gets those the webhooks deliver.
	Events refresh.EventNames
}

// RetentionConfig bounds what Freshen keeps; a zero bound keeps all.
type RetentionConfig struct {
	// HistoryMaxAge and HistoryMaxPerModel bound the attempt history by
	// age (from an attempt's start) and by count per model (the newest
	// kept); PruneInterval is the time between pruning passes.
	HistoryMaxAge      time.Duration
	HistoryMaxPerModel int
	PruneInterval      time.Duration
	// MaxDeadLetters bounds the dead-letter list (the oldest dropped);
	// EventsMaxLen bounds the events stream (about, MAXLEN ~).
	MaxDeadLetters int64
	EventsMaxLen   int64
}

// HTTPConfig bounds what the HTTP server gives one client.
type HTTPConfig struct {
	ReadHeaderTimeout time.Duration // to read a request's headers
	ReadTimeout       time.Duration // to read a whole request, body included
	WriteTimeout      time.Duration // from the end of the headers to the end of the response
	IdleTimeout       time.Duration // a keep-alive connection waiting for its next request
	// RequestTimeout bounds a request's work once its headers are read
	// (its context, which every store call takes, ends then).
	RequestTimeout time.Duration
	MaxHeaderBytes int
	// MaxConns bounds the connections open at once. When they are all
	// open, the one idle the longest is closed for a new client; while all
	// are busy with requests, new clients wait in the kernel's backlog.
	MaxConns int
	// ResponseMiB bounds the MiB of large response bodies (over 64 KiB)
	// held at once while their clients read them; beyond it, a large
	// answer is a 503 with Retry-After.
	ResponseMiB int
}

// serveUsage heads the help of freshen serve.
const serveUsage = `usage: freshen serve [flags]

Runs the scheduler, the outcome consumer and the HTTP API until SIGINT or SIGTERM.
Every flag can also be set as FRESHEN_<FLAG> (e.g. FRESHEN_BATCH_SIZE,
FRESHEN_DB_LOCK_TIMEOUT). Durations read "30s", "1m30s" or ISO 8601 ("PT30S").

The HTTP server opens first: GET /healthz answers 200 while the process runs
(liveness), GET /readyz answers 200 once PostgreSQL and Redis answer and 503
while one does not (readiness); what is wrong goes to the log and, as "detail",
to an admin token only. The loops start once both answer.

Freshen's promise that no outcome and no start is lost assumes PostgreSQL runs
with synchronous_commit=on (its default): with it off, a commit that serve
acknowledged (and whose job it pushed) can vanish in a server crash.

With tokens (--tokens-file, --tokens; make them with freshen token new), every
route but /healthz and /readyz needs "Authorization: Bearer <token>" of a token
with the route's scope (read, write, admin) and, if the token has a prefix, a
model id that starts with it. Without tokens, serve listens only on a loopback
address unless --insecure is given.

The dashboard is at /ui/: sign in there with a token; the browser keeps a session
(kept in the database, --dashboard-session-ttl) in a cookie, never the token. Its
scopes and prefix apply as to the API.

The --db-* settings apply to every database connection. The idle-in-transaction
timeout ends the session, and releases the locks, of an instance stopped in the
middle of a pass (SIGSTOP, a frozen VM); it is below the lock timeout so that an
API write waiting on such a lock goes through once the server ends that session.

`

// defaultGCMinHeapMiB is the default of --gc-min-heap.
const defaultGCMinHeapMiB = 28

// memoryLimitFor is the default of --memory-limit, in MiB, for a batch
// size and a --gc-min-heap: 40 MiB up to batches of 1,000 models, 40 KiB a
// model beyond, and never below the heap floor. What serve holds at once
// grows with its batches (about 22 MB at most at 1,000 in a burst of
// starts and outcomes), and the limit leaves it room twice over, while
// keeping the process's peak near 64 MB at 1,000.
func memoryLimitFor(batchSize, gcMinHeapMiB int) int {
	return max(40, (40*batchSize+1023)/1024, gcMinHeapMiB)
}

// ParseFlags reads the configuration from args, then from FRESHEN_*
// environment variables (FRESHEN_DATABASE_URL for --database-url, ...),
// then from DATABASE_URL and REDIS_URL.
func (m *Main) ParseFlags(args []string) error {
	c := &m.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(m.logOut)
	fs.StringVar(&c.DatabaseURL, "database-url", c.DatabaseURL, "PostgreSQL URL; give one with a password in the environment (FRESHEN_DATABASE_URL or DATABASE_URL): a command line is no secret")
	fs.StringVar(&c.ListenDatabaseURL, "listen-database-url", c.ListenDatabaseURL, "PostgreSQL URL for LISTEN, a direct connection (or a pooler in session mode) when --database-url is a pooler in transaction mode; default --database-url")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL, e.g. redis://localhost:6379/0; give one with a password in the environment (FRESHEN_REDIS_URL or REDIS_URL): a command line is no secret")
	c.redisServers.addFlags(fs)
	fs.StringVar(&c.RedisPrefix, "redis-prefix", c.RedisPrefix, "prefix of every Redis key; workers must use the same")
	durationVar(fs, &c.ConsumerLease, "consumer-lease", c.ConsumerLease, "how long this instance may go unseen before another takes back the outcomes it holds")
	limitFlags(fs, &c.Limits)
	fs.StringVar(&c.Addr, "addr", c.Addr, "HTTP listen address")
	fs.StringVar(&c.TokensFile, "tokens-file", c.TokensFile, `file of the API's bearer tokens: a JSON array of {"name", "hash", "scopes", "prefix"} (see freshen token new)`)
	fs.StringVar(&c.Tokens, "tokens", c.Tokens, "the API's bearer tokens as the text of a tokens file")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "serve the API without tokens, or the profiler (--pprof-addr), on an address beyond loopback")
	durationVar(fs, &c.SessionTTL, "dashboard-session-ttl", c.SessionTTL, "how long a dashboard session lasts after its sign-in (sessions are kept in the database, for every instance)")
	fs.IntVar(&c.GCMinHeapMiB, "gc-min-heap", c.GCMinHeapMiB, "least heap size, in MiB, at which the garbage collector starts a cycle; 0 leaves it to GOGC alone")
	fs.IntVar(&c.MemoryLimitMiB, "memory-limit", c.MemoryLimitMiB, "Go's soft memory limit, in MiB: the garbage collector works harder near it (unset: 40, and 40 KiB a model of --batch-size beyond 1,000; 0 leaves it to GOMEMLIMIT)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", c.PprofAddr, "if set, listen address of a separate HTTP server with the Go profiler's endpoints (/debug/pprof/), without tokens: a loopback address (e.g. 127.0.0.1:6060) unless --insecure")
	fs.IntVar(&c.BatchSize, "batch-size", c.BatchSize, "models claimed, and outcomes applied, per pass")
	fs.IntVar(&c.ClaimLoops, "claim-loops", c.ClaimLoops, "scheduler passes run at once while models are due by the batch (each holds a database connection)")
	fs.StringVar(&c.InstanceID, "instance-id", c.InstanceID, "name of this instance among the outcome consumers and in pg_stat_activity; "+
		"keep it stable across restarts (the default is the host name: two instances on one host need distinct ids)")
	durationVar(fs, &c.MaxSleep, "max-sleep", c.MaxSleep, "longest the scheduler sleeps without looking at the database")
	fs.Var(limitsFlag{&c.MaxRunning}, "max-running", "a concurrency limit to create at start if it does not exist yet: queue:NAME=N, prefix:PREFIX=N or rate_key:KEY=N (repeat the flag, or separate them with commas); change limits later, and set rate limits, with freshen limits")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&c.Migrate, "migrate", c.Migrate, "apply the database migrations at start (else serve refuses a schema that is not this build's)")
	durationVar(fs, &c.ConnectTimeout, "connect-timeout", c.ConnectTimeout, "longest to wait at start for PostgreSQL and Redis; 0 waits until they answer")
	durationVar(fs, &c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "longest to wait at shutdown for HTTP requests in flight")

	s := &c.Session
	durationVar(fs, &s.LockTimeout, "db-lock-timeout", s.LockTimeout, "PostgreSQL lock_timeout: longest a statement waits for a row another transaction holds, then the request fails with 503; 0 keeps the server's")
	durationVar(fs, &s.StatementTimeout, "db-statement-timeout", s.StatementTimeout, "PostgreSQL statement_timeout: longest one statement runs; 0 keeps the server's")
	durationVar(fs, &s.IdleInTransactionTimeout, "db-idle-in-transaction-timeout", s.IdleInTransactionTimeout,
		"PostgreSQL idle_in_transaction_session_timeout: the server ends a session idle this long inside a transaction, releasing its locks; 0 keeps the server's")
	durationVar(fs, &s.KeepAlive, "db-keepalive", s.KeepAlive, "TCP keepalive of database connections, both ends: first probe after this much silence, 3 probes KEEPALIVE/3 apart (a dead peer is noticed within about twice this); 0 keeps the system's")

	r := &c.Retention
	durationVar(fs, &r.HistoryMaxAge, "history-max-age", r.HistoryMaxAge, "attempts older than this (from their start) are deleted from the history; 0 keeps them whatever their age")
	fs.IntVar(&r.HistoryMaxPerModel, "history-max-per-model", r.HistoryMaxPerModel, "attempts kept in the history per model, the newest; 0 keeps them all")
	durationVar(fs, &r.PruneInterval, "prune-interval", r.PruneInterval, "time between two passes of the history pruning and dead-letter trimming")
	fs.Int64Var(&r.MaxDeadLetters, "max-dead-letters", r.MaxDeadLetters, "longest the dead-letter list grows; the oldest entries beyond it are dropped (counted in freshen_queue_dead_letters_trimmed_total); 0 keeps them all")
	fs.Int64Var(&r.EventsMaxLen, "events-max-len", r.EventsMaxLen, "about how many entries the lifecycle events stream keeps (XADD MAXLEN ~)")

	h := &c.HTTP
	durationVar(fs, &h.ReadHeaderTimeout, "http-read-header-timeout", h.ReadHeaderTimeout, "longest to read a request's headers")
	durationVar(fs, &h.ReadTimeout, "http-read-timeout", h.ReadTimeout, "longest to read a whole request, body included")
	durationVar(fs, &h.WriteTimeout, "http-write-timeout", h.WriteTimeout, "longest from the end of a request's headers to the end of its response")
	durationVar(fs, &h.IdleTimeout, "http-idle-timeout", h.IdleTimeout, "longest a keep-alive connection waits for its next request")
	durationVar(fs, &h.RequestTimeout, "http-request-timeout", h.RequestTimeout, "longest a request may work once its headers are read; then it answers 503 and its database work is cancelled")
	fs.IntVar(&h.MaxHeaderBytes, "http-max-header-bytes", h.MaxHeaderBytes, "largest request header accepted")
	fs.IntVar(&h.ResponseMiB, "http-response-mib", h.ResponseMiB, "most MiB of large answers (over 64 KiB, e.g. pages of models with their payloads) held at once while their clients read them; beyond it, a large answer is 503 with Retry-After")
	fs.IntVar(&h.MaxConns, "http-max-conns", h.MaxConns, "most HTTP connections open at once; when all are open, the one idle the longest is closed for a new client, and while all are busy new clients wait")

	c.Webhook.addFlags(fs)
	parseEvents := addEventsFlag(fs, &c.Events)

	fs.Usage = func() {
		fmt.Fprint(m.logOut, serveUsage)
		fs.PrintDefaults()
	}
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("FRESHEN")); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	limitSet := false
	fs.Visit(func(f *flag.Flag) { limitSet = limitSet || f.Name == "memory-limit" })
	if !limitSet {
		c.MemoryLimitMiB = memoryLimitFor(c.BatchSize, c.GCMinHeapMiB)
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = os.Getenv("DATABASE_URL")
	}
	if c.RedisURL == "" {
		c.RedisURL = os.Getenv("REDIS_URL")
	}
	m.redact = newRedactor(c.DatabaseURL, c.RedisURL, c.ListenDatabaseURL)
	if c.RedisSentinelPassword != "" {
		m.redact.secrets = append(m.redact.secrets, c.RedisSentinelPassword)
	}
	if err := c.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("--log-level: must be debug, info, warn or error, got %q", *level)
	}
	var missing []string
	if c.DatabaseURL == "" {
		missing = append(missing, "--database-url (or DATABASE_URL)")
	}
	if c.RedisURL == "" && c.RedisSentinelMaster == "" && len(c.RedisClusterAddrs) == 0 {
		missing = append(missing, "--redis-url (or REDIS_URL)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s must be set", strings.Join(missing, " and "))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--connect-timeout", c.ConnectTimeout}, {"--shutdown-timeout", c.ShutdownTimeout},
		{"--db-lock-timeout", s.LockTimeout}, {"--db-statement-timeout", s.StatementTimeout},
		{"--db-idle-in-transaction-timeout", s.IdleInTransactionTimeout}, {"--db-keepalive", s.KeepAlive},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s: must be >= 0, got %s", d.name, d.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--max-sleep", c.MaxSleep}, {"--consumer-lease", c.ConsumerLease}, {"--http-read-header-timeout", h.ReadHeaderTimeout}, {"--http-read-timeout", h.ReadTimeout},
		{"--http-write-timeout", h.WriteTimeout}, {"--http-idle-timeout", h.IdleTimeout}, {"--http-request-timeout", h.RequestTimeout},
		{"--prune-interval", c.Retention.PruneInterval},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s: must be > 0, got %s", d.name, d.v)
		}
	}
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("--batch-size: must be >= 1, got %d", c.BatchSize)
	case c.ClaimLoops < 1:
		return fmt.Errorf("--claim-loops: must be >= 1, got %d", c.ClaimLoops)
	case c.Retention.HistoryMaxAge < 0:
		return fmt.Errorf("--history-max-age: must be >= 0, got %s", c.Retention.HistoryMaxAge)
	case c.Retention.HistoryMaxPerModel < 0:
		return fmt.Errorf("--history-max-per-model: must be >= 0, got %d", c.Retention.HistoryMaxPerModel)
	case c.Retention.MaxDeadLetters < 0:
		return fmt.Errorf("--max-dead-letters: must be >= 0, got %d", c.Retention.MaxDeadLetters)
	case c.Retention.EventsMaxLen < 1:
		return fmt.Errorf("--events-max-len: must be >= 1, got %d", c.Retention.EventsMaxLen)
	case c.GCMinHeapMiB < 0:
		return fmt.Errorf("--gc-min-heap: must be >= 0, got %d", c.GCMinHeapMiB)
	case c.MemoryLimitMiB < 0:
		return fmt.Errorf("--memory-limit: must be >= 0, got %d", c.MemoryLimitMiB)
	case c.MemoryLimitMiB > 0 && c.MemoryLimitMiB < c.GCMinHeapMiB:
		return fmt.Errorf("--memory-limit: must be at least --gc-min-heap (%d), got %d", c.GCMinHeapMiB, c.MemoryLimitMiB)
	case c.InstanceID == "":
		return errors.New("--instance-id: must not be empty")
	case c.SessionTTL <= 0:
		return fmt.Errorf("--dashboard-session-ttl: must be > 0, got %s", c.SessionTTL)
	case h.ResponseMiB < 1:
		return fmt.Errorf("--http-response-mib: must be >= 1, got %d", h.ResponseMiB)
	case h.MaxHeaderBytes < 1024:
		return fmt.Errorf("--http-max-header-bytes: must be >= 1024, got %d", h.MaxHeaderBytes)
	case h.MaxConns < 1:
		return fmt.Errorf("--http-max-conns: must be >= 1, got %d", h.MaxConns)
	}
	if err := checkLimits(c.Limits); err != nil {
		return err
	}
	s.ApplicationName = "freshen/" + c.InstanceID
	// The loops hold a connection each while they work, and so does the
	// pass run beside a slow or full one; the API, the health checks and
	// the publisher use a few more.
	s.MaxConns = int32(c.ClaimLoops + 7)
	if err := c.Webhook.check(); err != nil {
		return err
	}
	if err := parseEvents(); err != nil {
		return err
	}
	if len(c.Webhook.Endpoints) > 0 {
		m.redact.secrets = append(m.redact.secrets, c.Webhook.secrets()...)
		s.MaxConns += 2 // the webhook dispatcher's passes and results
	}
	m.Logger = newLogger(m.logOut, c.LogLevel, m.redact)
	auth, err := loadAuth(c.TokensFile, c.Tokens, m.Logger)
	if err != nil {
		return err
	}
	m.auth = auth
	return nil
}
