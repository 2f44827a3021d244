// Package bench is the harness of `freshen bench`: it measures Freshen on
// real PostgreSQL and Redis and returns the figures as structs, which the
// subcommand prints.
//
// Each run works in a PostgreSQL schema of its own, in the database it is
// given, and under a Redis key prefix of its own; Close removes both. The
// runs are:
//
//   - Throughput: starts/s and outcomes/s of the real Scheduler and
//     Consumer passes, in process, with 1 and 2 instances, and the same
//     work in plain SQL.
//   - Lateness: how late attempts start, and jobs reach a worker, with a
//     `freshen serve` child process and a steady stream of due models; the
//     peak RSS of serve.
//   - E2E: N models due at one instant, a `freshen serve` child and a
//     `freshen bench worker` child (the queue.Worker SDK with a no-op
//     handler, see RunWorker), timed from the due instant until every model
//     has one successful attempt and is idle again; the CPU of each process
//     and of the servers, peak memory, and the transactions and commands
//     the servers ran.
//   - Hostile: what hostile clients cost a `freshen serve` child: each
//     reproduction of an attack (requests at the edge of every limit,
//     outcomes pushed on the outcomes list, slow and idle connections) on
//     an otherwise idle serve, measured from /proc and /metrics; the next
//     occurrences of the costliest accepted schedules, in process; and a
//     loop of attacks while background models cycle with a worker.
//
// The children are the freshen binary itself (Config.Executable), run with
// the flags of `freshen serve` and `freshen bench worker`.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/refresh"
)

// Policy is the policy of every model of the harness: the scheduled table
// of docs/transitions.md, so that a success computes the next occurrence (the next
// 06:00 or 16:00), and a model does not become due again during a run.
const Policy = `{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timeout": "1h", "retry": {"delays": ["1m", "5m"]}}`

// Payload is the payload of every model of the harness.
const Payload = `{"input_url": "https://example.com/a.csv"}`

// Queue is the queue of every model of the harness.
const Queue = "bench"

// DefaultBatchSize is the default of Config.BatchSize, as of freshen
// serve's --batch-size.
const DefaultBatchSize = refresh.DefaultBatchSize

// Config configures a Bench.
type Config struct {
	// DatabaseURL is the PostgreSQL database the runs work in, each in a
	// schema of its own. Required.
	DatabaseURL string
	// RedisURL is the Redis server; every key is under a prefix of the
	// harness's own. Required.
	RedisURL string
	// BatchSize is how many models are claimed, and outcomes applied, per
	// pass, in process and in freshen serve (default DefaultBatchSize).
	BatchSize int
	// Executable is the freshen binary run as `freshen serve` and `freshen
	// bench worker` (default: the executable of this process).
	Executable string
	// Progress receives a line per step (default: discarded).
	Progress io.Writer
}

// withDefaults returns c with its zero fields set to their defaults, or an
// error naming the field at fault.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.DatabaseURL == "":
		return c, errors.New("bench: DatabaseURL: must be set")
	case c.RedisURL == "":
		return c, errors.New("bench: RedisURL: must be set")
	case c.BatchSize < 0:
		return c, fmt.Errorf("bench: BatchSize: must be >= 1, got %d", c.BatchSize)
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("bench: Executable: %w", err)
		}
		c.Executable = exe
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c, nil
}

// Bench runs the measures on one PostgreSQL database and one Redis server.
// Its methods run one at a time.
type Bench struct {
	cfg      Config
	clock    refresh.Clock
	admin    *pgx.Conn
	redisOpt *redis.Options
	rdb      *redis.Client
	prefix   string
	keys     keys
	policy   string // Policy as stored
	schemas  []string
	dbs      []string // databases of the runs (see newDatabase)
	quiet    *slog.Logger
}

// New connects to the servers of cfg and returns a Bench, or an error
// naming what is wrong.
func New(ctx context.Context, cfg Config) (*Bench, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &Bench{cfg: cfg, clock: refresh.SystemClock{}, quiet: slog.New(slog.DiscardHandler)}
	p, err := refresh.ParsePolicy([]byte(Policy), refresh.Limits{})
	if err != nil {
		return nil, err
	}
	stored, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	b.policy = string(stored)
	b.admin, err = pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	b.redisOpt, err = redis.ParseURL(cfg.RedisURL)
	if err != nil {
		b.admin.Close(ctx)
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	b.redisOpt.MaxRetries = -1 // as queue.NewClient
	// The harness pushes up to 90 MB in one command (the hostile bench's
	// large outcomes): on a busy machine that takes longer than go-redis's
	// 3s default.
	if b.redisOpt.ReadTimeout == 0 && b.redisOpt.WriteTimeout == 0 {
		b.redisOpt.ReadTimeout, b.redisOpt.WriteTimeout = 30*time.Second, 30*time.Second
	}
	b.rdb = redis.NewClient(b.redisOpt)
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		b.Close()
		return nil, fmt.Errorf("connect to redis: %w", err)
	}
	b.prefix = "bench-" + suffix()
	b.keys = newKeys(b.prefix)
	return b, nil
}

// Close drops the schemas, databases and Redis keys of the runs and closes
// the connections.
func (b *Bench) Close() {
	ctx := context.Background()
	for _, s := range b.schemas {
		if _, err := b.admin.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			b.logf("drop schema %s: %v", s, err)
		}
	}
	// FORCE: a pooler may still hold connections to the database.
	for _, db := range b.dbs {
		if _, err := b.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			b.logf("drop database %s: %v", db, err)
		}
	}
	b.clearRedis(ctx)
	_ = b.rdb.Close()
	b.admin.Close(ctx)
}

// Environment describes where the figures were measured.
type Environment struct {
	PostgresVersion string
	// Fsync and SynchronousCommit are the server's settings: with either
	// off, commits cost far less than in production.
	Fsync, SynchronousCommit string
	RedisVersion             string
	CPUs                     int
	// LoadAverage is the 1, 5 and 15 minute load average of the machine,
	// or "?" if it could not be read.
	LoadAverage string
}

// Durability says how durable the PostgreSQL commits measured are, e.g.
// "fsync=on, synchronous_commit=on".
func (e Environment) Durability() string {
	d := "fsync=" + e.Fsync + ", synchronous_commit=" + e.SynchronousCommit
	if e.Fsync != "on" || e.SynchronousCommit != "on" {
		d += ": NOT DURABLE, commits cost less than in production"
	}
	return d
}

// Environment returns the server versions, the CPUs and the load average.
func (b *Bench) Environment(ctx context.Context) (Environment, error) {
	e := Environment{CPUs: runtime.NumCPU(), LoadAverage: LoadAverage()}
	if err := b.admin.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").
		Scan(&e.PostgresVersion, &e.Fsync, &e.SynchronousCommit); err != nil {
		return e, fmt.Errorf("read PostgreSQL version: %w", err)
	}
	info, err := b.rdb.InfoMap(ctx, "server").Result()
	if err != nil {
		return e, fmt.Errorf("read Redis version: %w", err)
	}
	e.RedisVersion = info["Server"]["redis_version"]
	return e, nil
}

func (b *Bench) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Progress, "bench: "+format+"\n", args...)
}

func (b *Bench) clearRedis(ctx context.Context) {
	iter := b.rdb.Scan(ctx, 0, b.prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		b.rdb.Del(ctx, iter.Val())
	}
}

// keys spells the Redis keys of queue/WIRE.md under one prefix.
type keys struct{ base string }

func newKeys(prefix string) keys { return keys{base: prefix + ":{" + prefix + "}:"} }

func (k keys) jobs() string     { return k.base + "jobs:" + Queue }
func (k keys) outcomes() string { return k.base + "outcomes" }
func (k keys) events() string   { return k.base + "events" }

func suffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newSchema creates and migrates a schema for one run and returns the
// connection configuration of a pool that works in it.
func (b *Bench) newSchema(ctx context.Context, name string) (*pgxpool.Config, error) {
	schema := "bench_" + name + "_" + suffix()
	if _, err := b.admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	b.schemas = append(b.schemas, schema)
	cfg, err := pgxpool.ParseConfig(b.cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	if err := migrations.Migrate(ctx, conn); err != nil {
		return nil, err
	}
	return cfg, nil
}

// newDatabase creates and migrates a database for one run, over the
// connection of Config.DatabaseURL, and returns the connection
// configuration of a pool that works in it over Config.DatabaseURL, and
// the URLs of that database through serveURL (e.g. a pooler in front of
// the same server) and directly. A run works there rather than in a schema
// of its own when its serve connects through a pooler, which refuses the
// search_path a schema needs at connection.
func (b *Bench) newDatabase(ctx context.Context, name, serveURL string) (cfg *pgxpool.Config, pooled, direct string, err error) {
	db := "bench_" + name + "_" + suffix()
	if pooled, err = databaseURL(serveURL, db); err != nil {
		return nil, "", "", fmt.Errorf("serve database URL: %w", err)
	}
	if direct, err = databaseURL(b.cfg.DatabaseURL, db); err != nil {
		return nil, "", "", fmt.Errorf("database URL: %w", err)
	}
	if cfg, err = pgxpool.ParseConfig(direct); err != nil {
		return nil, "", "", fmt.Errorf("database URL: %w", err)
	}
	if _, err := b.admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return nil, "", "", fmt.Errorf("create database: %w", err)
	}
	b.dbs = append(b.dbs, db)
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, "", "", fmt.Errorf("connect to database: %w", err)
	}
	defer conn.Close(ctx)
	if err := migrations.Migrate(ctx, conn); err != nil {
		return nil, "", "", err
	}
	return cfg, pooled, direct, nil
}

// databaseURL returns the PostgreSQL URL (or keyword/value string) raw
// with its database name replaced by db. Its errors do not quote raw,
// which may hold a password.
func databaseURL(raw, db string) (string, error) {
	if _, err := pgx.ParseConfig(raw); err != nil {
		return "", err // pgconn leaves the password out
	}
	if !strings.Contains(raw, "://") {
		return raw + " dbname=" + db, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not a valid URL")
	}
	u.Path, u.RawPath = "/"+db, ""
	return u.String(), nil
}

// schemaURL returns the URL of cfg's database with cfg's search_path, for
// a child process.
func schemaURL(cfg *pgxpool.Config) string {
	url := cfg.ConnString()
	schema := cfg.ConnConfig.RuntimeParams["search_path"]
	if !strings.Contains(url, "://") {
		return url + " search_path=" + schema
	}
	if strings.Contains(url, "?") {
		return url + "&search_path=" + schema
	}
	return url + "?search_path=" + schema
}

// load bulk-loads n idle models named prefix + index, model i due at
// base + i*step: the ids and times go through COPY into a temporary table,
// from which one INSERT adds the models with the harness's policy. It then
// analyzes the tables.
func (b *Bench) load(ctx context.Context, pool *pgxpool.Pool, prefix string, n int, base time.Time, step time.Duration) error {
	return b.loadPayload(ctx, pool, prefix, n, base, step, Payload)
}

// loadPayload is load with payload as every model's.
func (b *Bench) loadPayload(ctx context.Context, pool *pgxpool.Pool, prefix string, n int, base time.Time, step time.Duration, payload string) error {
	return b.loadRows(ctx, pool, n, func(i int) (string, time.Time) {
		return fmt.Sprintf("%s%07d", prefix, i), base.Add(time.Duration(i) * step)
	}, payload, b.policy)
}

// loadRows bulk-loads n idle models, model i with the id and refresh_at
// row(i) gives, the payload and the policy (as stored) given; see load.
func (b *Bench) loadRows(ctx context.Context, pool *pgxpool.Pool, n int, row func(i int) (string, time.Time), payload, policy string) error {
	if n == 0 {
		return nil
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE load (id text, refresh_at timestamptz) ON COMMIT DROP`); err != nil {
		return fmt.Errorf("load models: %w", err)
	}
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		id, at := row(i)
		i++
		return []any{id, at}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"load"}, []string{"id", "refresh_at"}, src); err != nil {
		return fmt.Errorf("load models: copy: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO models (id, queue, payload, policy_id, created_at, refresh_at)
		SELECT id, $1, $2::json, (SELECT freshen_policy_id($3::jsonb)), $4, refresh_at FROM load`, Queue, payload, policy, b.clock.Now())
	if err != nil {
		return fmt.Errorf("load models: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("load models: %w", err)
	}
	for _, table := range []string{"models", "attempts"} {
		if _, err := conn.Exec(ctx, `ANALYZE `+table); err != nil {
			return fmt.Errorf("load models: %w", err)
		}
	}
	return nil
}
