package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/internal/bench"
)

// Targets of freshen bench: printed next to the figures, never enforced.
const (
	targetStarts   = 20_000 // starts/s
	targetOutcomes = 30_000 // outcomes/s
	// Of the plain SQL baselines: a single instance's starts/s and
	// outcomes/s.
	targetStartsRatio   = 0.8
	targetOutcomesRatio = 0.5
	targetP99           = 100 * time.Millisecond
	targetRSS           = 150 << 20 // bytes

	// A request up to the body limit (and a connection, an outcome):
	// CPU of serve and memory it keeps.
	targetRequestCPU = 100 * time.Millisecond
	targetRetained   = 16 << 20 // bytes
	// The next occurrence of any accepted schedule.
	targetNext = time.Millisecond
)

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
// next to its target. `freshen bench e2e` measures Freshen end to end,
// `freshen bench hostile` what hostile clients cost freshen serve, and
// `freshen bench worker` is the worker process they start. The harness is
// package internal/bench.
func runBench(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "e2e":
			return runBenchE2E(ctx, args[1:], stdout, stderr)
		case "hostile":
			return runBenchHostile(ctx, args[1:], stdout, stderr)
		case "soak":
			return runBenchSoak(ctx, args[1:], stdout, stderr)
		case "latency":
			return runBenchLatency(ctx, args[1:], stdout, stderr)
		case "worker":
			return runBenchWorker(ctx, args[1:], stdout, stderr)
		}
	}
	cfg, err := parseBenchFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "freshen bench: %v\n", err)
		return 2
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintf(stderr, "freshen bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "freshen bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	servers := bench.Config{DatabaseURL: cfg.DatabaseURL, RedisURL: cfg.RedisURL, BatchSize: cfg.BatchSize}
	return benchRun(ctx, "freshen bench", servers, nil, "", stdout, stderr, func(b *bench.Bench) error {
		return benchFigures(ctx, b, cfg, stdout)
	})
}

// benchServerFlags registers on fs the flags that every freshen bench
// command shares: the servers' URLs (see checkBenchServers) and the batch
// size of serve's passes, described by batchUsage.
func benchServerFlags(fs *flag.FlagSet, databaseURL, redisURL *string, batchSize *int, batchUsage string) {
	fs.StringVar(databaseURL, "database-url", "", "PostgreSQL URL (env FRESHEN_DATABASE_URL or DATABASE_URL)")
	fs.StringVar(redisURL, "redis-url", "", "Redis URL (env FRESHEN_REDIS_URL or REDIS_URL)")
	fs.IntVar(batchSize, "batch-size", bench.DefaultBatchSize, batchUsage)
}

// checkBenchServers, once fs is parsed, reads the URLs the flags left
// unset from the environment and checks what every freshen bench command
// asks: no argument, both URLs, a batch size of at least 1.
func checkBenchServers(fs *flag.FlagSet, databaseURL, redisURL *string, batchSize int) error {
	*databaseURL, *redisURL = orEnv(*databaseURL, databaseURLFromEnv()), orEnv(*redisURL, redisURLFromEnv())
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case *databaseURL == "" || *redisURL == "":
		return errors.New("--database-url (or DATABASE_URL) and --redis-url (or REDIS_URL) must be set")
	case batchSize < 1:
		return fmt.Errorf("--batch-size: must be >= 1, got %d", batchSize)
	}
	return nil
}

// benchRun ends a freshen bench command called name (e.g. "freshen bench
// e2e"): it reports bad, the flags' error, with exit status 2; else it
// opens the bench on cfg, with its progress on stderr, prints the first
// line (the servers, the machine and the batch size, then more) and runs
// measure, reporting an error, redacted, with exit status 1.
func benchRun(ctx context.Context, name string, cfg bench.Config, bad error, more string, stdout, stderr io.Writer, measure func(*bench.Bench) error) int {
	if bad != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, bad)
		return 2
	}
	redact := newRedactor(cfg.DatabaseURL, cfg.RedisURL)
	cfg.Progress = stderr
	b, err := bench.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, redact.Error(err))
		return 1
	}
	defer b.Close()
	env, err := b.Environment(ctx)
	if err == nil {
		fmt.Fprintf(stdout, "%s: PostgreSQL %s (%s), Redis %s, %d CPUs (load average %s), batch size %d%s\n",
			name, env.PostgresVersion, env.Durability(), env.RedisVersion, env.CPUs, env.LoadAverage, cfg.BatchSize, more)
		err = measure(b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, redact.Error(err))
		return 1
	}
	return 0
}

func parseBenchFlags(args []string, stderr io.Writer) (benchConfig, error) {
	cfg := benchConfig{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchServerFlags(fs, &cfg.DatabaseURL, &cfg.RedisURL, &cfg.BatchSize, "models claimed, and outcomes applied, per pass")
	fs.IntVar(&cfg.Models, "models", bench.DefaultThroughputModels, "models due at once in the starts/s and outcomes/s runs")
	fs.IntVar(&cfg.LatenessModels, "lateness-models", bench.DefaultLatenessModels, "models loaded for the lateness run")
	fs.IntVar(&cfg.LatenessRate, "lateness-rate", bench.DefaultLatenessRate, "models due per second in the lateness run")
	durationVar(fs, &cfg.Window, "window", bench.DefaultLatenessWindow, "how long the lateness run watches freshen serve")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the in-process runs to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: freshen bench [flags]
       freshen bench e2e [flags]     (see freshen bench e2e -h)
       freshen bench hostile [flags] (see freshen bench hostile -h)
       freshen bench soak [flags]    (see freshen bench soak -h)
       freshen bench latency [flags] (see freshen bench latency -h)

Measures starts/s, outcomes/s (and their ratio to plain SQL), start lateness and the
peak memory of freshen serve on real PostgreSQL and Redis, and prints each figure next
to its target. It works in schemas and under a Redis key prefix of its own.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := checkBenchServers(fs, &cfg.DatabaseURL, &cfg.RedisURL, cfg.BatchSize); err != nil {
		return cfg, err
	}
	switch {
	case cfg.Models < 1:
		return cfg, fmt.Errorf("--models: must be >= 1, got %d", cfg.Models)
	case cfg.LatenessModels < 1:
		return cfg, fmt.Errorf("--lateness-models: must be >= 1, got %d", cfg.LatenessModels)
	case cfg.LatenessRate < 1:
		return cfg, fmt.Errorf("--lateness-rate: must be >= 1, got %d", cfg.LatenessRate)
	case cfg.Window < time.Second:
		return cfg, fmt.Errorf("--window: must be >= 1s, got %s", cfg.Window)
	}
	return cfg, nil
}

// orEnv returns flag, or else env.
func orEnv(flag, env string) string {
	if flag != "" {
		return flag
	}
	return env
}

// redisURLFromEnv returns FRESHEN_REDIS_URL, or else REDIS_URL.
func redisURLFromEnv() string {
	if url := os.Getenv("FRESHEN_REDIS_URL"); url != "" {
		return url
	}
	return os.Getenv("REDIS_URL")
}

// benchFigures runs the throughput and lateness runs and prints their
// figures.
func benchFigures(ctx context.Context, b *bench.Bench, cfg benchConfig, out io.Writer) error {
	tp, err := b.Throughput(ctx, bench.ThroughputConfig{Models: cfg.Models})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d models due at once (real Scheduler and Consumer passes, in process)\n", tp.Models)
	for _, r := range tp.Starts {
		benchRow(out, fmt.Sprintf("starts/s, %s", benchInstances(r.Instances)), benchRate(r.PerSec), fmt.Sprintf(">= %s", benchRate(targetStarts)), r.PerSec >= targetStarts)
	}
	benchRow(out, "starts/s, plain SQL (database alone)", benchRate(tp.StartsSQL), "", true)
	ratio := tp.Starts[0].PerSec / tp.StartsSQL
	benchRow(out, "starts, 1 instance / plain SQL", fmt.Sprintf("%.2f", ratio), fmt.Sprintf(">= %.1f", targetStartsRatio), ratio >= targetStartsRatio)
	for _, r := range tp.Outcomes {
		benchRow(out, fmt.Sprintf("outcomes/s, %s", benchInstances(r.Instances)), benchRate(r.PerSec), fmt.Sprintf(">= %s", benchRate(targetOutcomes)), r.PerSec >= targetOutcomes)
	}
	benchRow(out, "outcomes/s, plain SQL (database alone)", benchRate(tp.OutcomesSQL), "", true)
	ratio = tp.Outcomes[0].PerSec / tp.OutcomesSQL
	benchRow(out, "outcomes, 1 instance / plain SQL", fmt.Sprintf("%.2f", ratio), fmt.Sprintf(">= %.1f", targetOutcomesRatio), ratio >= targetOutcomesRatio)

	lt, err := b.Lateness(ctx, bench.LatenessConfig{Models: cfg.LatenessModels, Rate: cfg.LatenessRate, Window: cfg.Window})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%d models, %d due per second, freshen serve watched for %s\n", lt.Models, lt.Rate, lt.Window)
	benchRow(out, "start lateness p50", benchMs(lt.P50), "", true)
	benchRow(out, "start lateness p99", benchMs(lt.P99), fmt.Sprintf("<= %s", benchMs(targetP99)), lt.P99 <= targetP99)
	benchRow(out, "start lateness max", benchMs(lt.Max), "", true)
	benchRow(out, "job taken by a worker, lateness p50", benchMs(lt.PickP50), "", true)
	benchRow(out, "job taken by a worker, lateness p99", benchMs(lt.PickP99), "", true)
	benchRow(out, "peak RSS of freshen serve (VmHWM)", benchMB(lt.PeakRSS), fmt.Sprintf("<= %s", benchMB(targetRSS)), lt.PeakRSS <= targetRSS)
	fmt.Fprintf(out, "  (%d starts measured, due from %.1fs into the run; %d due in the window did not start)\n",
		lt.Measured, lt.Skipped.Seconds(), lt.Missed)
	fmt.Fprintf(out, "  (the server meanwhile: %s)\n", benchWAL(lt.WAL))
	return nil
}

// benchWAL says what the server wrote in a span.
func benchWAL(w bench.WALActivity) string {
	return fmt.Sprintf("%d checkpoints (%d requested by WAL volume), %s of WAL, %d full-page images",
		w.Checkpoints, w.Requested, benchMB(w.Bytes), w.FullPages)
}

// runBenchE2E is `freshen bench e2e`: N models due at once, a freshen serve
// child and a freshen bench worker child, timed until every model has one
// successful attempt and is idle again.
func runBenchE2E(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg bench.Config
		run bench.E2EConfig
	)
	fs := flag.NewFlagSet("bench e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchServerFlags(fs, &cfg.DatabaseURL, &cfg.RedisURL, &cfg.BatchSize, "freshen serve --batch-size")
	fs.IntVar(&run.Models, "n", bench.DefaultE2EModels, "models due at the same instant")
	fs.IntVar(&run.Concurrency, "concurrency", bench.DefaultWorkerConcurrency, "worker concurrency")
	durationVar(fs, &run.Lead, "lead", 0, "time from the start of the load to the instant the models are due (default 2s + 40µs a model)")
	durationVar(fs, &run.Timeout, "timeout", bench.DefaultE2ETimeout, "give up this long after the due instant")
	fs.StringVar(&run.Events, "events", "", "freshen serve --events (default all): e.g. -started,-succeeded; without started or succeeded the run is followed on serve's metrics")
	fs.BoolVar(&run.FollowMetrics, "follow-metrics", false, "follow the run on serve's metrics (read every 20ms) rather than on the events stream, whatever --events")
	fs.StringVar(&run.ServeDatabaseURL, "serve-database-url", "", "PostgreSQL URL freshen serve connects to instead of --database-url, e.g. a pooler in transaction mode in front of the same server; the run then works in a database of its own, created and dropped over --database-url")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: freshen bench e2e [flags]

Measures Freshen end to end: N models due at the same instant, freshen serve and a
worker (the queue.Worker SDK with a no-op handler, run as 'freshen bench worker') as
child processes of this one, timed from the due instant until every model has one
successful attempt and is idle again (read on the lifecycle events stream, then checked
in SQL). Prints cycles/s, the time to the first start, first outcome and the end, the
CPU of serve, the worker, PostgreSQL and Redis (when they run on this machine), peak
memory, and the transactions, statements and Redis commands per 1,000 cycles. Statements
are counted when the server preloads pg_stat_statements (shared_preload_libraries).
It works in a schema and under a Redis key prefix of its own; with --serve-database-url, in
a database of its own (a pooler refuses the search_path a schema needs), which serve
reaches through that URL and LISTENs on over --database-url.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := checkBenchServers(fs, &cfg.DatabaseURL, &cfg.RedisURL, cfg.BatchSize)
	switch {
	case bad != nil:
	case run.Models < 1:
		bad = fmt.Errorf("-n: must be >= 1, got %d", run.Models)
	case run.Concurrency < 1:
		bad = fmt.Errorf("--concurrency: must be >= 1, got %d", run.Concurrency)
	case run.Lead < 0:
		bad = fmt.Errorf("--lead: must be >= 0, got %s", run.Lead)
	case run.Timeout <= 0:
		bad = fmt.Errorf("--timeout: must be > 0, got %s", run.Timeout)
	case run.Events != "":
		_, bad = parseEvents(run.Events)
	}
	more := fmt.Sprintf(", worker concurrency %d", run.Concurrency)
	if run.ServeDatabaseURL != "" {
		more += ", serve through --serve-database-url"
	}
	return benchRun(ctx, "freshen bench e2e", cfg, bad, more, stdout, stderr,
		func(b *bench.Bench) error {
			res, err := b.E2E(ctx, run)
			if err == nil {
				printE2E(stdout, res)
			}
			return err
		})
}

// printE2E prints the figures of an end-to-end run, then a RESULT line of
// key=value pairs for scripts.
func printE2E(out io.Writer, r bench.E2EResult) {
	per1k := func(n int64) float64 { return float64(n) * 1000 / float64(r.Models) }
	fmt.Fprintf(out, "\n%d models due at once; freshen serve (pid %d) and freshen bench worker (pid %d) as child processes; loaded in %s\n",
		r.Models, r.ServePID, r.WorkerPID, r.LoadTime.Round(time.Millisecond))
	benchRow(out, "cycles/s", benchRate(r.CyclesPerSec()), "", true)
	benchRow(out, "time to done", benchSecMs(r.Done), "", true)
	benchRow(out, "time to first start", benchMs(r.FirstStart), "", true)
	benchRow(out, "time to first outcome", benchMs(r.FirstOutcome), "", true)
	benchRow(out, "CPU of freshen serve", benchSec(r.CPU.Serve), "", true)
	benchRow(out, "CPU of freshen bench worker", benchSec(r.CPU.Worker), "", true)
	benchRow(out, "CPU of PostgreSQL (all its processes)", orNA(benchSec(r.CPU.Postgres), r.CPU.PostgresNote), "", true)
	benchRow(out, "CPU of Redis", orNA(benchSec(r.CPU.Redis), r.CPU.RedisNote), "", true)
	benchRow(out, "peak RSS of freshen serve (VmHWM)", benchMB(r.ServePeakRSS), "", true)
	benchRow(out, "peak RSS of freshen bench worker (VmHWM)", benchMB(r.WorkerPeakRSS), "", true)
	benchRow(out, "PostgreSQL transactions / 1,000 cycles", benchNumber(per1k(r.Transactions), 1), "", true)
	benchRow(out, "PostgreSQL statements / 1,000 cycles", orNA(benchNumber(per1k(r.Statements), 1), r.StatementsNote), "", true)
	benchRow(out, "Redis commands / 1,000 cycles", benchNumber(per1k(r.RedisCommandsTotal()), 1), "", true)
	names := make([]string, 0, len(r.RedisCommands))
	for name := range r.RedisCommands {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.RedisCommands[b], r.RedisCommands[a]), cmp.Compare(a, b))
	})
	for _, name := range names {
		benchRow(out, "  "+name, benchNumber(per1k(r.RedisCommands[name]), 1), "", true)
	}
	for _, note := range []struct{ what, why string }{
		{"CPU of PostgreSQL", r.CPU.PostgresNote}, {"CPU of Redis", r.CPU.RedisNote}, {"PostgreSQL statements", r.StatementsNote},
	} {
		if note.why != "" {
			fmt.Fprintf(out, "  (%s not measured: %s)\n", note.what, note.why)
		}
	}
	fmt.Fprintf(out, "  (load average before %s, after %s; checked in SQL: every model idle with its next run in the future, with exactly one attempt, successful)\n",
		r.LoadBefore, r.LoadAfter)
	printE2ESizes(out, r)

	field := func(v string, why string) string {
		if why != "" {
			return "-"
		}
		return v
	}
	fmt.Fprintf(out, "RESULT system=freshen n=%d seconds=%.3f rate=%.1f first_start_ms=%.1f first_outcome_ms=%.1f serve_hwm_kb=%d worker_hwm_kb=%d serve_cpu_s=%.2f worker_cpu_s=%.2f pg_cpu_s=%s redis_cpu_s=%s pg_xacts_per_1k=%.1f pg_statements_per_1k=%s redis_commands_per_1k=%.1f load=%s events=%s pg_bytes_per_model=%.0f pg_bytes_per_attempt=%.0f\n",
		r.Models, r.Done.Seconds(), r.CyclesPerSec(), ms(r.FirstStart), ms(r.FirstOutcome), r.ServePeakRSS>>10, r.WorkerPeakRSS>>10,
		r.CPU.Serve.Seconds(), r.CPU.Worker.Seconds(),
		field(fmt.Sprintf("%.2f", r.CPU.Postgres.Seconds()), r.CPU.PostgresNote),
		field(fmt.Sprintf("%.2f", r.CPU.Redis.Seconds()), r.CPU.RedisNote),
		per1k(r.Transactions), field(fmt.Sprintf("%.1f", per1k(r.Statements)), r.StatementsNote),
		per1k(r.RedisCommandsTotal()), strings.ReplaceAll(r.LoadBefore, " ", ","), cmp.Or(r.Events, "all"),
		r.Sizes.ModelBytes, r.Sizes.AttemptBytes)
}

// printE2ESizes prints what the tables of an end-to-end run take.
func printE2ESizes(out io.Writer, r bench.E2EResult) {
	s := r.Sizes
	benchRow(out, "PostgreSQL bytes / model (models: heap, indexes, TOAST)", benchNumber(s.ModelBytes, 0), "", true)
	benchRow(out, "PostgreSQL bytes / history row (attempts: heap, indexes)", benchNumber(s.AttemptBytes, 0), "", true)
	benchRow(out, "  in the table's heap, in its indexes", benchNumber(s.ModelHeapBytes, 0)+", "+benchNumber(s.ModelIndexBytes, 0), "", true)
	benchRow(out, "  a live row of models (header included)", benchNumber(s.ModelRowBytes, 0), "", true)
	benchRow(out, "  after VACUUM FULL models (no dead versions)", benchNumber(s.CompactModelBytes, 0), "", true)
	for _, t := range []struct {
		name string
		cols []bench.ColumnSize
	}{{"models", s.ModelColumns}, {"attempts", s.AttemptColumns}} {
		parts := make([]string, len(t.cols))
		for i, c := range t.cols {
			parts[i] = fmt.Sprintf("%s %.1f", c.Name, c.Bytes)
		}
		fmt.Fprintf(out, "  (bytes per column of %s, average: %s)\n", t.name, strings.Join(parts, ", "))
	}
}

// runBenchWorker is `freshen bench worker`, the worker process of freshen
// bench e2e: the queue.Worker SDK with a handler that succeeds at once,
// until SIGINT or SIGTERM. It prints "ready" once connected.
func runBenchWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cfg bench.WorkerConfig
	fs := flag.NewFlagSet("bench worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "Redis URL (env FRESHEN_REDIS_URL or REDIS_URL)")
	fs.StringVar(&cfg.Prefix, "redis-prefix", "", "prefix of every Redis key: freshen serve's --redis-prefix")
	fs.StringVar(&cfg.Queue, "queue", bench.Queue, "queue to take jobs from")
	fs.IntVar(&cfg.Concurrency, "concurrency", bench.DefaultWorkerConcurrency, "jobs run at once")
	fs.StringVar(&cfg.ID, "id", "", "worker id (default: host, pid and a random suffix)")
	fs.Float64Var(&cfg.FailPercent, "fail-percent", 0, "percent of the jobs that fail (a retryable failure)")
	fs.Float64Var(&cfg.HangPercent, "hang-percent", 0, "percent of the jobs that run until their deadline (the attempt times out)")
	fs.StringVar(&cfg.ReportPrefix, "report", "", `print "took MODEL_ID UNIX_NANOS ATTEMPT_NO STARTED_UNIX_NANOS" when the job of a model whose id starts with this prefix reaches the handler`)
	level := fs.String("log-level", "warn", "log level (to stderr): debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: freshen bench worker [flags]

Runs the queue.Worker SDK with a handler that succeeds at once (but for --fail-percent
and --hang-percent), until SIGINT or SIGTERM; prints "ready" once connected. freshen
bench e2e, soak and latency run it as a child process.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg.RedisURL = orEnv(cfg.RedisURL, redisURLFromEnv())
	redact := newRedactor(cfg.RedisURL)
	var lvl slog.Level
	var bad error
	switch {
	case fs.NArg() > 0:
		bad = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.RedisURL == "":
		bad = errors.New("--redis-url (or REDIS_URL) must be set")
	case cfg.Prefix == "":
		bad = errors.New("--redis-prefix: must be set")
	case cfg.Concurrency < 1:
		bad = fmt.Errorf("--concurrency: must be >= 1, got %d", cfg.Concurrency)
	case lvl.UnmarshalText([]byte(*level)) != nil:
		bad = fmt.Errorf("--log-level: must be debug, info, warn or error, got %q", *level)
	case cfg.FailPercent < 0 || cfg.HangPercent < 0 || cfg.FailPercent+cfg.HangPercent > 100:
		bad = fmt.Errorf("--fail-percent, --hang-percent: must be >= 0 and add up to at most 100, got %g and %g", cfg.FailPercent, cfg.HangPercent)
	}
	if cfg.ReportPrefix != "" {
		cfg.Report = stdout
	}
	if bad != nil {
		fmt.Fprintf(stderr, "freshen bench worker: %v\n", bad)
		return 2
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	if err := bench.RunWorker(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "freshen bench worker: %v\n", redact.Error(err))
		return 1
	}
	return 0
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

// orNA returns value, or "n/a" if why says why it was not measured.
func orNA(value, why string) string {
	if why != "" {
		return "n/a"
	}
	return value
}

func benchInstances(n int) string {
	if n == 1 {
		return "1 instance"
	}
	return fmt.Sprintf("%d instances", n)
}

func benchRate(v float64) string { return benchNumber(v, 0) + "/s" }

// benchNumber formats v with decimals decimals and commas between
// thousands.
func benchNumber(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var out []byte
	for i := range len(whole) {
		if i > 0 && (len(whole)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, whole[i])
	}
	if frac != "" {
		return sign + string(out) + "." + frac
	}
	return sign + string(out)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchMs(d time.Duration) string { return fmt.Sprintf("%.1f ms", ms(d)) }

func benchSec(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func benchSecMs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func benchMB(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// runBenchHostile is `freshen bench hostile`: a freshen serve child against
// hostile clients, measured from outside.
func runBenchHostile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg bench.Config
		run bench.HostileConfig
	)
	fs := flag.NewFlagSet("bench hostile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchServerFlags(fs, &cfg.DatabaseURL, &cfg.RedisURL, &cfg.BatchSize, "freshen serve --batch-size")
	durationVar(fs, &run.Duration, "duration", bench.DefaultHostileDuration, "how long the hostile clients attack in the loop phase (the background runs alone half as long before)")
	fs.IntVar(&run.Repeats, "repeats", bench.DefaultHostileRepeats, "runs of each reproduction on the idle serve (the most CPU is kept)")
	durationVar(fs, &run.Settle, "settle", bench.DefaultHostileSettle, "wait before reading serve's memory after a reproduction")
	fs.IntVar(&run.Background, "background", bench.DefaultHostileBackground, "background models, each due once a minute, cycling with a worker during the loop phase")
	fs.IntVar(&run.Concurrency, "concurrency", bench.DefaultHostileConcurrency, "concurrency of the background worker")
	fs.IntVar(&run.Clients, "clients", bench.DefaultHostileClients, "hostile clients running the reproductions in turn in the loop phase")
	fs.IntVar(&run.IdleConns, "idle-conns", bench.DefaultHostileIdleConns, "keep-alive connections the idle-connection reproduction holds")
	fs.IntVar(&run.SlowConns, "slow-conns", bench.DefaultHostileSlowConns, "connections trickling their headers, and as many trickling their bodies")
	durationVar(fs, &run.TrickleEvery, "trickle-every", bench.DefaultHostileTrickle, "a slow connection sends one byte this often")
	fs.IntVar(&run.Pass, "pass", bench.DefaultHostilePass, "models, each with its own variant of the costliest schedule, in the in-process scheduler pass")
	fs.IntVar(&run.Crowd, "crowd", bench.DefaultHostileCrowd, "models with payloads at the limit due at once in the crowd phase")
	listVar(fs, &run.ServeArgs, "serve-args", "comma-separated extra flags of freshen serve, e.g. --http-read-timeout=5s")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: freshen bench hostile [flags]

Measures what hostile clients cost freshen serve, from outside. First, in process,
the next occurrences of the costliest schedules a PUT accepts. Then, with freshen
serve as a child process, each reproduction (requests at the edge of every limit,
schedules refused and accepted, outcomes pushed on the outcomes list, slow and idle
connections) runs a few times on the otherwise idle serve: its CPU (from /proc, less
what serve uses idle), its memory after a settle, and its answers. Last, hostile
clients run every reproduction in a loop while background models cycle with a
worker (freshen bench worker): serve's peak memory and CPU, and whether the
background still starts on time and has its outcomes applied, against a quiet
window before. Each figure is printed next to its target, never enforced. It works
in a schema and under a Redis key prefix of its own.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := checkBenchServers(fs, &cfg.DatabaseURL, &cfg.RedisURL, cfg.BatchSize)
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"--duration", int64(run.Duration)}, {"--repeats", int64(run.Repeats)}, {"--settle", int64(run.Settle)},
		{"--background", int64(run.Background)}, {"--concurrency", int64(run.Concurrency)}, {"--clients", int64(run.Clients)},
		{"--idle-conns", int64(run.IdleConns)}, {"--slow-conns", int64(run.SlowConns)}, {"--trickle-every", int64(run.TrickleEvery)},
		{"--pass", int64(run.Pass)},
	} {
		if bad == nil && f.v <= 0 {
			bad = fmt.Errorf("%s: must be > 0, got %s", f.name, fs.Lookup(strings.TrimPrefix(f.name, "--")).Value)
		}
	}
	return benchRun(ctx, "freshen bench hostile", cfg, bad, "", stdout, stderr, func(b *bench.Bench) error {
		res, err := b.Hostile(ctx, run)
		if err == nil {
			printHostile(stdout, res)
		}
		return err
	})
}

// printHostile prints the figures of the hostile run, then a RESULT line
// of key=value pairs for scripts.
func printHostile(out io.Writer, r bench.HostileResult) {
	n := r.Next
	fmt.Fprintf(out, "\nworst accepted schedules, in process: first parse (fastest on 3 variants), and next occurrence through refresh.Model.Next (rrule cache, then Next), fastest of 3 at each of %d instants over 20 years\n", n.Queries)
	for _, s := range n.Schedules {
		fmt.Fprintf(out, "  %-48s parse %9s   next %9s\n", s.Name, benchDur(s.Parse), benchDur(s.Max))
	}
	benchRow(out, "next occurrence, max", benchDur(n.Worst.Max), "<= "+benchDur(targetNext), n.Worst.Max <= targetNext)
	fmt.Fprintf(out, "  (the slowest: %s)\n", n.Worst.Name)
	fmt.Fprintf(out, "  pass over %s due models, each with its own variant of %q (cold for one model: the fastest on 3 new variants of the same cost):\n", benchNumber(float64(n.PassModels), 0), n.PassSchedule)
	benchRow(out, "  none cached: most for one model", benchDur(n.PassMax), "<= "+benchDur(targetNext), n.PassMax <= targetNext)
	benchRow(out, "  none cached: the whole pass", benchDur(n.PassCold), "", true)
	benchRow(out, "  again at once: the whole pass", benchDur(n.PassWarm), "", true)

	fmt.Fprintf(out, "\neach reproduction on an otherwise idle freshen serve (pid %d), runs: %d; the most CPU of serve in a run (%s) less its idle %s/s; memory after a %s settle\n",
		r.ServePID, r.Repeats, r.CPUSource, benchDur(r.IdleCPU), r.Settle)
	fmt.Fprintf(out, "  targets: CPU <= %s per request, connection or message; Go heap in use right after a garbage collection (serve made to collect) <= %s more after it (* if serve did not collect: garbage counts)\n",
		benchDur(targetRequestCPU), benchMB(targetRetained))
	fmt.Fprintf(out, "  %-58s %10s %10s %-6s %9s %9s %9s %-6s %s\n", "reproduction", "CPU", "CPU/unit", "", "RSS after", "Δ RSS", "Δ heap", "", "answer")
	var worstCPU time.Duration
	var worstRetained int64
	unexpected := 0
	for _, p := range r.Repros {
		cpuOK, memOK := p.CPUPerUnit() <= targetRequestCPU, p.Retained() <= targetRetained
		worstCPU, worstRetained = max(worstCPU, p.CPUPerUnit()), max(worstRetained, p.Retained())
		answer := p.Status
		if !p.OK {
			answer += "   UNEXPECTED"
			unexpected++
		}
		unit := p.Unit
		if p.Units > 1 {
			unit = fmt.Sprintf("%s x %s", benchNumber(float64(p.Units), 0), p.Unit)
		}
		retained := benchSignedMB(p.Retained())
		if !p.HeapGC {
			retained += "*"
		}
		fmt.Fprintf(out, "  %-58s %10s %10s %-6s %9s %9s %9s %-6s %s (%s)\n", p.Name, benchDur(p.CPU), benchDur(p.CPUPerUnit()), verdict(cpuOK),
			benchMB(p.RSSAfter), benchSignedMB(p.RSSAfter-p.RSSBefore), retained, verdict(memOK), answer, unit)
	}
	benchRow(out, "CPU per request, connection or message, max", benchDur(worstCPU), "<= "+benchDur(targetRequestCPU), worstCPU <= targetRequestCPU)
	benchRow(out, "Go heap in use after, more than before, max", benchSignedMB(worstRetained), "<= "+benchMB(targetRetained), worstRetained <= targetRetained)
	benchRow(out, "answers not as the limits promise", strconv.Itoa(unexpected), "", true)

	l := r.Loop
	fmt.Fprintf(out, "\nloop: %d hostile clients running the reproductions in turn, and the slow and idle connections, for %s; %d background models (%.0f due/s) with a worker, alone for %s before\n",
		l.Clients, l.Duration, l.Background, float64(l.Background)/60, l.Quiet.Window.Round(time.Millisecond))
	benchRow(out, "reproductions run", benchNumber(float64(l.Runs), 0), "", true)
	benchRow(out, "requests, connections, messages sent", benchNumber(float64(l.Units), 0), "", true)
	benchRow(out, "answers not as the limits promise", benchNumber(float64(l.Unexpected), 0), "", true)
	benchRow(out, "runs the client could not finish", benchNumber(float64(l.Errors), 0), "", true)
	benchRow(out, "peak RSS of freshen serve", benchMB(l.PeakRSS), "<= "+benchMB(targetRSS), l.PeakRSS <= targetRSS)
	benchRow(out, "CPU of freshen serve, attack", fmt.Sprintf("%s (%.0f%%)", benchSec(l.ServeCPU), 100*l.ServeCPU.Seconds()/l.Attack.Window.Seconds()), "", true)
	benchRow(out, "CPU of freshen serve, quiet", fmt.Sprintf("%s (%.0f%%)", benchSec(l.QuietCPU), 100*l.QuietCPU.Seconds()/l.Quiet.Window.Seconds()), "", true)
	for _, w := range []struct {
		name string
		t    bench.Traffic
	}{{"quiet", l.Quiet}, {"attack", l.Attack}} {
		benchRow(out, "background starts, "+w.name, fmt.Sprintf("%d of %d", w.t.Started, w.t.Due), fmt.Sprintf("= %d due", w.t.Due), w.t.Started == w.t.Due)
		benchRow(out, "start lateness p50, "+w.name, benchMs(w.t.P50), "", true)
		benchRow(out, "start lateness p99, "+w.name, benchMs(w.t.P99), "", true)
		benchRow(out, "start lateness max, "+w.name, benchMs(w.t.Max), "", true)
		benchRow(out, "outcomes applied/s, "+w.name, benchNumber(w.t.AppliedPerSec(), 1)+"/s", "", true)
	}
	if l.PeakNote != "" {
		fmt.Fprintf(out, "  (peak RSS: %s)\n", l.PeakNote)
	}
	if l.FirstUnexpected != "" {
		fmt.Fprintf(out, "  (first answer not as the limits promise: %s)\n", l.FirstUnexpected)
	}
	if l.FirstError != "" {
		fmt.Fprintf(out, "  (first run the client could not finish: %s)\n", l.FirstError)
	}
	c := r.Crowd
	fmt.Fprintf(out, "\ncrowd: %s models with payloads of %d KiB (the limit) due at once, run by a worker, then a bulk dry run and a bulk pause of them all, 8 clients list them all at once (GET /models, pages of 1,000), and %d clients ask for a page of 1,000 at once and do not read it\n",
		benchNumber(float64(c.Models), 0), c.PayloadBytes>>10, c.Stalled)
	benchRow(out, "time from due to the last success", benchSec(c.Done), "", true)
	benchRow(out, "clients that do not read: got a page", benchNumber(float64(c.StalledPages), 0), "", true)
	benchRow(out, "clients that do not read: answered 503", benchNumber(float64(c.StalledRefused), 0), "", true)
	benchRow(out, "peak RSS of freshen serve", benchMB(c.PeakRSS), "<= "+benchMB(targetRSS), c.PeakRSS <= targetRSS)
	if c.PeakNote != "" {
		fmt.Fprintf(out, "  (peak RSS: %s)\n", c.PeakNote)
	}
	fmt.Fprintf(out, "  (load average before %s, after %s)\n", r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(out, "RESULT system=freshen mode=hostile next_max_us=%.1f pass_max_us=%.1f repro_cpu_max_ms=%.2f repro_retained_max_kb=%d unexpected=%d loop_runs=%d loop_unexpected=%d loop_serve_hwm_kb=%d loop_serve_cpu_s=%.2f quiet_p99_ms=%.1f attack_p99_ms=%.1f quiet_applied_per_s=%.1f attack_applied_per_s=%.1f attack_started=%d attack_due=%d crowd_serve_hwm_kb=%d crowd_stalled_pages=%d crowd_stalled_refused=%d load=%s\n",
		us(n.Worst.Max), us(n.PassMax), ms(worstCPU), worstRetained>>10, unexpected, l.Runs, l.Unexpected, l.PeakRSS>>10, l.ServeCPU.Seconds(),
		ms(l.Quiet.P99), ms(l.Attack.P99), l.Quiet.AppliedPerSec(), l.Attack.AppliedPerSec(), l.Attack.Started, l.Attack.Due,
		c.PeakRSS>>10, c.StalledPages, c.StalledRefused, strings.ReplaceAll(r.LoadBefore, " ", ","))
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// benchDur formats a duration in µs below 0.1 ms, in s from 1 s, else in
// ms.
func benchDur(d time.Duration) string {
	switch {
	case d < 100*time.Microsecond:
		return fmt.Sprintf("%.1f µs", us(d))
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", ms(d))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func benchSignedMB(n int64) string { return fmt.Sprintf("%+.1f MB", float64(n)/(1<<20)) }
