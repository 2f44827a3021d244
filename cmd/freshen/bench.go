package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/migrations"
	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/postgres"
)

// Targets of freshen bench: printed next to the figures, never enforced.
const (
	targetStarts   = 20_000 // starts/s
	targetOutcomes = 30_000 // outcomes/s
	targetRatio    = 0.5    // of the plain SQL baseline
	targetP99      = 100 * time.Millisecond
	targetRSS      = 150 << 20 // bytes
)

// benchPolicy is the policy of every model of the benchmark: the scheduled
// table of DESIGN.md, so that a success computes the next occurrence.
const benchPolicy = `{"schedule": "FREQ=DAILY;BYHOUR=6,16", "timeout": "1h", "retry": {"delays": ["1m", "5m"]}}`

const benchPayload = `{"input_url": "https://example.com/a.csv"}`

// benchConfig is the configuration of freshen bench.
type benchConfig struct {
	DatabaseURL string
	RedisURL    string
	Models      int
	BatchSize   int
	// LatenessModels are loaded for the lateness run, LatenessRate of them
	// due per second, watched for Window.
	LatenessModels int
	LatenessRate   int
	Window         time.Duration
	CPUProfile     string
}

// runBench is `freshen bench`: it measures starts/s, outcomes/s, their
// ratio to the same work in plain SQL, start lateness and the daemon's peak
// memory on the PostgreSQL and Redis it is given, and prints each figure
// next to its target. It works in schemas and under a Redis prefix of its
// own, which it removes at the end.
func runBench(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseBenchFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	redact := newRedactor(cfg.DatabaseURL, cfg.RedisURL)
	if err != nil {
		fmt.Fprintf(stderr, "freshen bench: %v\n", redact.Error(err))
		return 2
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintf(stderr, "freshen bench: %v\n", redact.Error(err))
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "freshen bench: %v\n", redact.Error(err))
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	b, err := newBencher(ctx, cfg, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "freshen bench: %v\n", redact.Error(err))
		return 1
	}
	defer b.close()
	if err := b.run(ctx); err != nil {
		fmt.Fprintf(stderr, "freshen bench: %v\n", redact.Error(err))
		return 1
	}
	return 0
}

func parseBenchFlags(args []string, stderr io.Writer) (benchConfig, error) {
	cfg := benchConfig{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL URL (env FRESHEN_DATABASE_URL or DATABASE_URL)")
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "Redis URL (env FRESHEN_REDIS_URL or REDIS_URL)")
	fs.IntVar(&cfg.Models, "models", 100_000, "models due at once in the starts/s and outcomes/s runs")
	fs.IntVar(&cfg.BatchSize, "batch-size", 1000, "models claimed, and outcomes applied, per pass")
	fs.IntVar(&cfg.LatenessModels, "lateness-models", 1_000_000, "models loaded for the lateness run")
	fs.IntVar(&cfg.LatenessRate, "lateness-rate", 1000, "models due per second in the lateness run")
	durationVar(fs, &cfg.Window, "window", time.Minute, "how long the lateness run watches freshen serve")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the in-process runs to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: freshen bench [flags]\n\nMeasures starts/s, outcomes/s (and their ratio to plain SQL), start lateness and the\npeak memory of freshen serve on real PostgreSQL and Redis, and prints each figure next\nto its target. It works in schemas and under a Redis key prefix of its own.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = databaseURLFromEnv()
	}
	if cfg.RedisURL == "" {
		cfg.RedisURL = redisURLFromEnv()
	}
	switch {
	case fs.NArg() > 0:
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.DatabaseURL == "" || cfg.RedisURL == "":
		return cfg, errors.New("--database-url (or DATABASE_URL) and --redis-url (or REDIS_URL) must be set")
	case cfg.Models < 1:
		return cfg, fmt.Errorf("--models: must be >= 1, got %d", cfg.Models)
	case cfg.BatchSize < 1:
		return cfg, fmt.Errorf("--batch-size: must be >= 1, got %d", cfg.BatchSize)
	case cfg.LatenessModels < 1:
		return cfg, fmt.Errorf("--lateness-models: must be >= 1, got %d", cfg.LatenessModels)
	case cfg.LatenessRate < 1:
		return cfg, fmt.Errorf("--lateness-rate: must be >= 1, got %d", cfg.LatenessRate)
	case cfg.Window < time.Second:
		return cfg, fmt.Errorf("--window: must be >= 1s, got %s", cfg.Window)
	}
	return cfg, nil
}

// redisURLFromEnv returns FRESHEN_REDIS_URL, or else REDIS_URL.
func redisURLFromEnv() string {
	if url := os.Getenv("FRESHEN_REDIS_URL"); url != "" {
		return url
	}
	return os.Getenv("REDIS_URL")
}

// bencher runs the measures. Each run has a schema of its own in the
// database of DatabaseURL; every Redis key is under prefix.
type bencher struct {
	cfg      benchConfig
	out      io.Writer // the figures
	progress io.Writer // what it is doing
	admin    *pgx.Conn
	redisOpt *redis.Options
	rdb      *redis.Client
	prefix   string
	keys     benchKeys
	policy   string // benchPolicy as stored
	schemas  []string
	quiet    *slog.Logger
}

func newBencher(ctx context.Context, cfg benchConfig, out, progress io.Writer) (*bencher, error) {
	b := &bencher{cfg: cfg, out: out, progress: progress, quiet: slog.New(slog.DiscardHandler)}
	p, err := refresh.ParsePolicy([]byte(benchPolicy), refresh.Limits{})
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
		return nil, fmt.Errorf("--redis-url: %w", err)
	}
	b.rdb = redis.NewClient(b.redisOpt)
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		b.close()
		return nil, fmt.Errorf("connect to redis: %w", err)
	}
	b.prefix = "bench-" + benchSuffix()
	b.keys = benchKeys{base: b.prefix + ":{" + b.prefix + "}:"}
	return b, nil
}

// close drops the schemas and Redis keys of the run.
func (b *bencher) close() {
	ctx := context.Background()
	for _, s := range b.schemas {
		if _, err := b.admin.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			fmt.Fprintf(b.progress, "bench: drop schema %s: %v\n", s, err)
		}
	}
	b.clearRedis(ctx)
	_ = b.rdb.Close()
	b.admin.Close(ctx)
}

func (b *bencher) clearRedis(ctx context.Context) {
	iter := b.rdb.Scan(ctx, 0, b.prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		b.rdb.Del(ctx, iter.Val())
	}
}

// benchKeys spells the Redis keys of queue/WIRE.md under one prefix.
type benchKeys struct{ base string }

func (k benchKeys) jobs() string     { return k.base + "jobs:bench" }
func (k benchKeys) outcomes() string { return k.base + "outcomes" }

func (b *bencher) logf(format string, args ...any) {
	fmt.Fprintf(b.progress, "bench: "+format+"\n", args...)
}

func (b *bencher) run(ctx context.Context) error {
	var pgVersion, redisVersion, fsync, syncCommit string
	if err := b.admin.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").
		Scan(&pgVersion, &fsync, &syncCommit); err != nil {
		return err
	}
	// Every figure is printed with the durability it was measured at: with
	// fsync or synchronous_commit off, commits cost far less than they do
	// in production, where Freshen's no-loss promise needs them on.
	durability := fmt.Sprintf("fsync=%s, synchronous_commit=%s", fsync, syncCommit)
	if fsync != "on" || syncCommit != "on" {
		durability += ": NOT DURABLE, commits cost less than in production"
	}
	if info, err := b.rdb.Info(ctx, "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				redisVersion = v
			}
		}
	}
	load := "?"
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	fmt.Fprintf(b.out, "freshen bench: PostgreSQL %s (%s), Redis %s, %d CPUs (load average %s), batch size %d\n",
		pgVersion, durability, redisVersion, runtime.NumCPU(), load, b.cfg.BatchSize)

	tp, err := b.throughput(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "\n%d models due at once (real Scheduler and Consumer passes, in process; %s)\n", b.cfg.Models, durability)
	for _, r := range tp.starts {
		benchRow(b.out, fmt.Sprintf("starts/s, %s", benchInstances(r.instances)), benchRate(r.perSec), fmt.Sprintf(">= %s", benchRate(targetStarts)), r.perSec >= targetStarts)
	}
	benchRow(b.out, "starts/s, plain SQL (database alone)", benchRate(tp.startsSQL), "", true)
	ratio := tp.starts[0].perSec / tp.startsSQL
	benchRow(b.out, "starts, 1 instance / plain SQL", fmt.Sprintf("%.2f", ratio), fmt.Sprintf(">= %.1f", targetRatio), ratio >= targetRatio)
	for _, r := range tp.outcomes {
		benchRow(b.out, fmt.Sprintf("outcomes/s, %s", benchInstances(r.instances)), benchRate(r.perSec), fmt.Sprintf(">= %s", benchRate(targetOutcomes)), r.perSec >= targetOutcomes)
	}
	benchRow(b.out, "outcomes/s, plain SQL (database alone)", benchRate(tp.outcomesSQL), "", true)
	ratio = tp.outcomes[0].perSec / tp.outcomesSQL
	benchRow(b.out, "outcomes, 1 instance / plain SQL", fmt.Sprintf("%.2f", ratio), fmt.Sprintf(">= %.1f", targetRatio), ratio >= targetRatio)

	lt, err := b.lateness(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(b.out, "\n%d models, %d due per second, freshen serve watched for %s (%s)\n",
		b.cfg.LatenessModels, b.cfg.LatenessRate, b.cfg.Window, durability)
	benchRow(b.out, "start lateness p50", benchMs(lt.p50), "", true)
	benchRow(b.out, "start lateness p99", benchMs(lt.p99), fmt.Sprintf("<= %s", benchMs(targetP99)), lt.p99 <= targetP99)
	benchRow(b.out, "start lateness max", benchMs(lt.max), "", true)
	benchRow(b.out, "job taken by a worker, lateness p50", benchMs(lt.pickP50), "", true)
	benchRow(b.out, "job taken by a worker, lateness p99", benchMs(lt.pickP99), "", true)
	benchRow(b.out, "peak RSS of freshen serve (VmHWM)", benchMB(lt.peakRSS), fmt.Sprintf("<= %s", benchMB(targetRSS)), lt.peakRSS <= targetRSS)
	fmt.Fprintf(b.out, "  (%d starts measured, due from %.1fs into the run; %d due in the window did not start)\n",
		lt.measured, lt.skipped.Seconds(), lt.missed)
	return nil
}

// benchRow prints one figure with its target and whether it meets it.
func benchRow(w io.Writer, name, value, target string, ok bool) {
	verdict := ""
	if target != "" {
		verdict = "ok"
		if !ok {
			verdict = "MISSED"
		}
		target = "target " + target
	}
	fmt.Fprintf(w, "  %-40s %12s   %-18s %s\n", name, value, target, verdict)
}

func benchInstances(n int) string {
	if n == 1 {
		return "1 instance"
	}
	return fmt.Sprintf("%d instances", n)
}

func benchRate(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out) + "/s"
}

func benchMs(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func benchMB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

func benchSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newSchema creates and migrates a schema for one run and returns the
// connection configuration of a pool that works in it.
func (b *bencher) newSchema(ctx context.Context, name string) (*pgxpool.Config, error) {
	schema := "bench_" + name + "_" + benchSuffix()
	if _, err := b.admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	b.schemas = append(b.schemas, schema)
	cfg, err := pgxpool.ParseConfig(b.cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("--database-url: %w", err)
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

// throughputResult holds the figures of the runs with all models due at once.
type throughputResult struct {
	starts, outcomes       []instanceRate
	startsSQL, outcomesSQL float64
}

type instanceRate struct {
	instances int
	perSec    float64
}

// throughput measures starts/s and outcomes/s of 1 and 2 instances, and
// the same work in plain SQL.
func (b *bencher) throughput(ctx context.Context) (throughputResult, error) {
	var res throughputResult
	cfg, err := b.newSchema(ctx, "throughput")
	if err != nil {
		return res, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, fmt.Errorf("connect to database: %w", err)
	}
	defer pool.Close()

	for _, k := range []int{1, 2} {
		if err := b.seed(ctx, pool); err != nil {
			return res, err
		}
		b.logf("starting %d models with %s", b.cfg.Models, benchInstances(k))
		d, err := b.runSchedulers(ctx, cfg, k)
		if err != nil {
			return res, err
		}
		res.starts = append(res.starts, instanceRate{k, float64(b.cfg.Models) / d.Seconds()})
		if err := b.queueOutcomes(ctx, pool); err != nil {
			return res, err
		}
		b.logf("applying %d outcomes with %s", b.cfg.Models, benchInstances(k))
		d, err = b.runConsumers(ctx, cfg, k)
		if err != nil {
			return res, err
		}
		res.outcomes = append(res.outcomes, instanceRate{k, float64(b.cfg.Models) / d.Seconds()})
	}

	if err := b.seed(ctx, pool); err != nil {
		return res, err
	}
	b.logf("starting and ending %d models in plain SQL", b.cfg.Models)
	d, err := b.claimSQL(ctx, pool)
	if err != nil {
		return res, err
	}
	res.startsSQL = float64(b.cfg.Models) / d.Seconds()
	d, err = b.applySQL(ctx, pool)
	if err != nil {
		return res, err
	}
	res.outcomesSQL = float64(b.cfg.Models) / d.Seconds()
	return res, nil
}

// seed replaces the models with cfg.Models idle models, all due, and
// empties the Redis keys.
func (b *bencher) seed(ctx context.Context, pool *pgxpool.Pool) error {
	b.clearRedis(ctx)
	if _, err := pool.Exec(ctx, `TRUNCATE attempts, models`); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	_, err := pool.Exec(ctx, `INSERT INTO models (id, queue, payload, policy, created_at, refresh_at)
		SELECT 'model-' || lpad(i::text, 7, '0'), 'bench', $1::json, $2::jsonb,
			now() - interval '1 day', now() - interval '1 hour' - i * interval '1 millisecond'
		FROM generate_series(1, $3::int) AS i`, benchPayload, b.policy, b.cfg.Models)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE models`); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE attempts`); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// benchInstance is one in-process scheduler instance: a pool and a Redis
// connection of its own.
type benchInstance struct {
	pool   *pgxpool.Pool
	client *redis.Client
	store  *postgres.Store
	queue  *queue.Redis
}

func (b *bencher) newInstances(ctx context.Context, cfg *pgxpool.Config, k int) ([]benchInstance, func(), error) {
	var out []benchInstance
	closeAll := func() {
		for _, in := range out {
			in.pool.Close()
			_ = in.client.Close()
		}
	}
	for i := range k {
		pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect to database: %w", err)
		}
		client := redis.NewClient(b.redisOpt)
		q, err := queue.New(client, queue.Options{Prefix: b.prefix, Consumer: fmt.Sprintf("bench-%d", i), Logger: b.quiet})
		if err != nil {
			pool.Close()
			closeAll()
			return nil, nil, err
		}
		out = append(out, benchInstance{pool: pool, client: client, store: postgres.New(pool), queue: q})
	}
	return out, closeAll, nil
}

// pass is one pass of a loop: how many models it handled and whether there
// may be more.
type pass func(ctx context.Context) (handled int, more bool, err error)

// runPasses runs one loop per instance, each made by newPass, until none
// has more to do, and returns how long that took. The loops must handle
// want models in all.
func (b *bencher) runPasses(ctx context.Context, cfg *pgxpool.Config, k int, what string, want int, newPass func(benchInstance) (pass, error)) (time.Duration, error) {
	ins, closeAll, err := b.newInstances(ctx, cfg, k)
	if err != nil {
		return 0, err
	}
	defer closeAll()
	var handled atomic.Int64
	errs := make([]error, k)
	var wg sync.WaitGroup
	begin := time.Now()
	for i, in := range ins {
		p, err := newPass(in)
		if err != nil {
			return 0, err
		}
		wg.Go(func() {
			for {
				n, more, err := p(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				handled.Add(int64(n))
				if !more {
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(begin)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if n := handled.Load(); n != int64(want) {
		return 0, fmt.Errorf("%s %d models, want %d", what, n, want)
	}
	return d, nil
}

// runSchedulers runs k schedulers' passes until no model is due and
// returns how long that took.
func (b *bencher) runSchedulers(ctx context.Context, cfg *pgxpool.Config, k int) (time.Duration, error) {
	return b.runPasses(ctx, cfg, k, "started", b.cfg.Models, func(in benchInstance) (pass, error) {
		s, err := refresh.NewScheduler(refresh.SchedulerConfig{
			Store: in.store, Queue: in.queue, Clock: refresh.SystemClock{}, BatchSize: b.cfg.BatchSize, Logger: b.quiet,
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, bool, error) {
			res, err := s.RunOnce(ctx)
			return res.Started, res.Claimed > 0, err
		}, nil
	})
}

// queueOutcomes drops the jobs and pushes a success outcome for each
// running attempt, as workers would.
func (b *bencher) queueOutcomes(ctx context.Context, pool *pgxpool.Pool) error {
	if err := b.rdb.Del(ctx, b.keys.jobs()).Err(); err != nil {
		return err
	}
	rows, err := pool.Query(ctx, `SELECT id, attempt_uid FROM models WHERE attempt_uid IS NOT NULL ORDER BY started_at, id`)
	if err != nil {
		return fmt.Errorf("read attempts: %w", err)
	}
	var msgs []any
	for rows.Next() {
		var o refresh.Outcome
		if err := rows.Scan(&o.ModelID, &o.AttemptUID); err != nil {
			return err
		}
		o.Type = refresh.OutcomeSuccess
		m, _ := json.Marshal(o)
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 10_000)
		if err := b.rdb.LPush(ctx, b.keys.outcomes(), msgs[:n]...).Err(); err != nil {
			return fmt.Errorf("push outcomes: %w", err)
		}
		msgs = msgs[n:]
	}
	return nil
}

// runConsumers runs k consumers' passes until the outcomes list is empty
// and returns how long that took.
func (b *bencher) runConsumers(ctx context.Context, cfg *pgxpool.Config, k int) (time.Duration, error) {
	return b.runPasses(ctx, cfg, k, "applied outcomes of", b.cfg.Models, func(in benchInstance) (pass, error) {
		c, err := refresh.NewConsumer(refresh.ConsumerConfig{
			Store: in.store, Outcomes: in.queue, Clock: refresh.SystemClock{},
			BatchSize: b.cfg.BatchSize, Logger: b.quiet,
		})
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int, bool, error) {
			res, err := c.RunOnce(ctx)
			return res.Applied, res.Received > 0, err
		}, nil
	})
}

// claimSQL is the baseline of the starts: the same claim, update and
// history insert as Store.ClaimDue with Scheduler's start, as one SQL
// statement a batch, with no round trip of the rows (the statement of
// refresh/postgres's BenchmarkClaimDueSQL).
func (b *bencher) claimSQL(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	begin := time.Now()
	total := 0
	for {
		now := time.Now()
		tag, err := pool.Exec(ctx, `WITH due AS (
				SELECT id FROM models
				WHERE refresh_at <= $1 AND (NOT paused OR attempt_uid IS NOT NULL)
				ORDER BY refresh_at, id
				LIMIT $2
				FOR UPDATE SKIP LOCKED
			), started AS (
				UPDATE models AS m SET attempt_no = m.attempt_no + 1,
					attempt_uid = m.id || ':' || (m.attempt_no + 1),
					started_at = $1, deadline_at = $3, refresh_at = $3, updated_at = now()
				FROM due WHERE m.id = due.id
				RETURNING m.id, m.attempt_no, m.attempt_uid
			)
			INSERT INTO attempts (uid, model_id, attempt_no, started_at, deadline_at)
			SELECT attempt_uid, id, attempt_no, $1, $3 FROM started`,
			now, b.cfg.BatchSize, now.Add(time.Hour))
		if err != nil {
			return 0, fmt.Errorf("claim in plain SQL: %w", err)
		}
		n := int(tag.RowsAffected())
		if n == 0 {
			break
		}
		total += n
	}
	d := time.Since(begin)
	if total != b.cfg.Models {
		return 0, fmt.Errorf("plain SQL started %d models, want %d", total, b.cfg.Models)
	}
	return d, nil
}

// applySQL is the baseline of the outcomes: successes fenced by attempt
// uid, applied a batch at a time in one statement that ends the attempts
// and completes their history rows. The outcomes come from memory, not
// Redis, and the next run is a constant, not computed from the schedule.
func (b *bencher) applySQL(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	rows, err := pool.Query(ctx, `SELECT id, attempt_uid FROM models WHERE attempt_uid IS NOT NULL ORDER BY started_at, id`)
	if err != nil {
		return 0, fmt.Errorf("read attempts: %w", err)
	}
	var ids, uids []string
	for rows.Next() {
		var id, uid string
		if err := rows.Scan(&id, &uid); err != nil {
			return 0, err
		}
		ids, uids = append(ids, id), append(uids, uid)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	begin := time.Now()
	total := 0
	for i := 0; i < len(ids); i += b.cfg.BatchSize {
		j := min(i+b.cfg.BatchSize, len(ids))
		now := time.Now()
		tag, err := pool.Exec(ctx, `WITH o AS (
				SELECT * FROM unnest($1::text[], $2::text[]) AS o(id, uid)
			), done AS (
				UPDATE models AS m SET attempt_no = 0, attempt_uid = NULL, started_at = NULL,
					deadline_at = NULL, refresh_at = $4, consecutive_failures = 0,
					failing_since = NULL, last_success_at = $3, status_message = NULL, updated_at = now()
				FROM o WHERE m.id = o.id AND m.attempt_uid = o.uid
				RETURNING o.uid
			)
			UPDATE attempts AS a SET finished_at = $3, outcome = 'success'
			FROM done WHERE a.uid = done.uid`,
			ids[i:j], uids[i:j], now, now.Add(12*time.Hour))
		if err != nil {
			return 0, fmt.Errorf("apply in plain SQL: %w", err)
		}
		total += int(tag.RowsAffected())
	}
	d := time.Since(begin)
	if total != b.cfg.Models {
		return 0, fmt.Errorf("plain SQL applied %d outcomes, want %d", total, b.cfg.Models)
	}
	return d, nil
}

// latenessResult holds the figures of the lateness run.
type latenessResult struct {
	p50, p99, max    time.Duration
	pickP50, pickP99 time.Duration
	peakRSS          int64
	measured, missed int
	skipped          time.Duration
}

// lateness loads LatenessModels models, LatenessRate of them due per
// second, runs freshen serve as a child process for Window with a worker
// that succeeds every job, and measures how late each attempt started
// (started_at in the history minus the time the model was due) and how
// late its job reached the worker.
//
// The models due during the window (w-0000000 and up, due from T0 on) are
// loaded once serve runs, so that serve's start does not make them late;
// the others (f-...) are loaded before, due from after the window on.
func (b *bencher) lateness(ctx context.Context) (latenessResult, error) {
	var res latenessResult
	cfg, err := b.newSchema(ctx, "lateness")
	if err != nil {
		return res, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, fmt.Errorf("connect to database: %w", err)
	}
	defer pool.Close()
	b.clearRedis(ctx)

	step := time.Second / time.Duration(b.cfg.LatenessRate)
	inWindow := min(b.cfg.LatenessModels, int((b.cfg.Window+10*time.Second)/step))
	later := b.cfg.LatenessModels - inWindow
	b.logf("loading %d models due later", later)
	farBase := time.Now().Add(5*time.Minute + b.cfg.Window)
	if err := b.load(ctx, pool, "f-", later, farBase, step); err != nil {
		return res, err
	}

	b.logf("starting freshen serve")
	serve, err := b.startServe(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer serve.kill()

	drainCtx, stopDrain := context.WithCancel(ctx)
	drain := &drainWorker{b: b}
	drained := make(chan error, 1)
	go func() { drained <- drain.run(drainCtx) }()
	defer func() {
		stopDrain()
		<-drained
	}()

	// The models due in the window, from T0 on; their load takes about a
	// second per 100,000 rows, so T0 leaves twice that.
	lead := 2*time.Second + time.Duration(inWindow)*20*time.Microsecond
	t0 := time.Now().Add(lead).Truncate(time.Millisecond)
	drain.setDue(t0, step)
	b.logf("loading %d models due from now on, %d a second, and watching for %s", inWindow, b.cfg.LatenessRate, b.cfg.Window)
	if err := b.load(ctx, pool, "w-", inWindow, t0, step); err != nil {
		return res, err
	}
	loaded := time.Now()
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, current_schema())`, postgres.NotifyChannel); err != nil {
		return res, err
	}
	end := t0.Add(b.cfg.Window)
	select {
	case <-time.After(time.Until(end)):
	case <-serve.done:
		return res, fmt.Errorf("freshen serve exited during the run: %s\n%s", serve.cmd.ProcessState, serve.log.String())
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.peakRSS, err = readPeakRSS(serve.cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	if err := serve.stop(); err != nil {
		return res, err
	}

	// Measured: the models due from the end of their load (earlier ones
	// were late by construction) up to a second before the end.
	from := t0
	if loaded.After(from) {
		from = loaded
	}
	res.skipped = from.Sub(t0)
	until := end.Add(-time.Second)
	var p50, p99, worst *float64
	err = pool.QueryRow(ctx, `WITH due AS (
			SELECT id, $1::timestamptz + substr(id, 3)::bigint * $2::bigint * interval '1 microsecond' AS due_at
			FROM models WHERE id LIKE 'w-%'
		), late AS (
			SELECT extract(epoch FROM a.started_at - d.due_at) AS s
			FROM due d JOIN attempts a ON a.model_id = d.id AND a.attempt_no = 1
			WHERE d.due_at >= $3 AND d.due_at <= $4
		)
		SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY s),
			percentile_cont(0.99) WITHIN GROUP (ORDER BY s), max(s)
		FROM late`, t0, step.Microseconds(), from, until).Scan(&res.measured, &p50, &p99, &worst)
	if err != nil {
		return res, fmt.Errorf("measure lateness: %w", err)
	}
	if res.measured == 0 {
		return res, errors.New("no attempt started in the window")
	}
	res.p50, res.p99, res.max = benchSeconds(*p50), benchSeconds(*p99), benchSeconds(*worst)
	var due int
	err = pool.QueryRow(ctx, `SELECT count(*) FROM models WHERE id LIKE 'w-%'
		AND $1::timestamptz + substr(id, 3)::bigint * $2::bigint * interval '1 microsecond' BETWEEN $3 AND $4`,
		t0, step.Microseconds(), from, until).Scan(&due)
	if err != nil {
		return res, fmt.Errorf("measure lateness: %w", err)
	}
	res.missed = due - res.measured
	res.pickP50, res.pickP99 = drain.percentiles(from, until)
	return res, nil
}

func benchSeconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// load bulk-loads n idle models named prefix + index, model i due at
// base + i*step: the ids and times go through COPY into a temporary table,
// from which one INSERT adds the models with the benchmark's policy.
func (b *bencher) load(ctx context.Context, pool *pgxpool.Pool, prefix string, n int, base time.Time, step time.Duration) error {
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
		row := []any{fmt.Sprintf("%s%07d", prefix, i), base.Add(time.Duration(i) * step)}
		i++
		return row, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"load"}, []string{"id", "refresh_at"}, src); err != nil {
		return fmt.Errorf("load models: copy: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO models (id, queue, payload, policy, created_at, refresh_at)
		SELECT id, 'bench', $1::json, $2::jsonb, now(), refresh_at FROM load`, benchPayload, b.policy)
	if err != nil {
		return fmt.Errorf("load models: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("load models: %w", err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE models`); err != nil {
		return fmt.Errorf("load models: %w", err)
	}
	return nil
}

// serveProcess is a freshen serve child process.
type serveProcess struct {
	cmd  *exec.Cmd
	log  *benchLog
	done chan struct{}
}

// startServe runs freshen serve (this very executable) on the schema of
// cfg and waits until it answers /healthz.
func (b *bencher) startServe(ctx context.Context, cfg *pgxpool.Config) (*serveProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	dbURL := cfg.ConnString()
	if strings.Contains(dbURL, "://") {
		dbURL += querySep(dbURL) + "search_path=" + cfg.ConnConfig.RuntimeParams["search_path"]
	} else {
		dbURL += " search_path=" + cfg.ConnConfig.RuntimeParams["search_path"]
	}
	p := &serveProcess{
		cmd: exec.Command(exe, "serve", "--database-url", dbURL, "--redis-url", b.cfg.RedisURL,
			"--redis-prefix", b.prefix, "--addr", addr, "--instance-id", "bench-serve",
			"--batch-size", strconv.Itoa(b.cfg.BatchSize), "--log-level", "warn"),
		log:  &benchLog{},
		done: make(chan struct{}),
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start freshen serve: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	timeout := time.After(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("freshen serve exited at start: %s\n%s", p.cmd.ProcessState, p.log.String())
		case <-timeout:
			p.kill()
			return nil, fmt.Errorf("freshen serve did not answer within 30s\n%s", p.log.String())
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func querySep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

func (p *serveProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop asks serve to shut down and waits for it.
func (p *serveProcess) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
		return errors.New("freshen serve did not stop within 30s")
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("freshen serve: %s\n%s", p.cmd.ProcessState, p.log.String())
	}
	return nil
}

// readPeakRSS reads the peak resident set size (VmHWM) of process pid.
func readPeakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak RSS: %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("peak RSS: no VmHWM in /proc status")
}

// benchLog is a buffer safe for concurrent writers.
type benchLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (w *benchLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *benchLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// drainWorker takes jobs a batch at a time and answers each with a
// success, pipelined. It is not a reliable worker (a job it holds when it
// dies is lost); it is as fast as a worker can be. It notes how late each
// job of a model due in the window reached it.
type drainWorker struct {
	b    *bencher
	mu   sync.Mutex
	t0   time.Time
	step time.Duration
	late map[time.Time]time.Duration // due time -> lateness
}

func (w *drainWorker) setDue(t0 time.Time, step time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t0, w.step, w.late = t0, step, map[time.Time]time.Duration{}
}

func (w *drainWorker) run(ctx context.Context) error {
	b := w.b
	for ctx.Err() == nil {
		raws, err := b.rdb.RPopCount(ctx, b.keys.jobs(), 1000).Result()
		if errors.Is(err, redis.Nil) || (err == nil && len(raws) == 0) {
			kv, err := b.rdb.BRPop(ctx, time.Second, b.keys.jobs()).Result()
			if errors.Is(err, redis.Nil) || ctx.Err() != nil {
				continue
			}
			if err != nil {
				return err
			}
			raws = kv[1:]
		} else if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now()
		msgs := make([]any, 0, len(raws))
		for _, raw := range raws {
			var job refresh.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				return fmt.Errorf("drain worker: %w", err)
			}
			w.note(job.ModelID, now)
			m, _ := json.Marshal(refresh.Outcome{ModelID: job.ModelID, AttemptUID: job.AttemptUID, Type: refresh.OutcomeSuccess})
			msgs = append(msgs, m)
		}
		if err := b.rdb.LPush(ctx, b.keys.outcomes(), msgs...).Err(); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// note records that the job of model id reached the worker at now.
func (w *drainWorker) note(id string, now time.Time) {
	n, ok := strings.CutPrefix(id, "w-")
	if !ok {
		return
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	due := w.t0.Add(time.Duration(i) * w.step)
	if _, seen := w.late[due]; !seen {
		w.late[due] = now.Sub(due)
	}
}

// percentiles returns the median and 99th percentile of the lateness of
// the jobs of models due between from and until.
func (w *drainWorker) percentiles(from, until time.Time) (p50, p99 time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var l []time.Duration
	for due, d := range w.late {
		if !due.Before(from) && !due.After(until) {
			l = append(l, d)
		}
	}
	if len(l) == 0 {
		return 0, 0
	}
	slices.Sort(l)
	return l[len(l)/2], l[min(len(l)-1, len(l)*99/100)]
}
