package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/freshen-dev/freshen/internal/bench"
)

// Targets of freshen bench soak and latency: printed next to the figures,
// never enforced.
const (
	targetDriftPct      = 10 // last window against the first, cycles/s and p99 lateness
	targetGrowthPct     = 5  // table and index sizes over the end of the run
	targetIdleWorkerP99 = 20 // ms, trigger to worker, idle
	targetLoadWorkerP99 = 50 // ms, trigger to worker, under load
)

// runBenchSoak is `freshen bench soak`.
func runBenchSoak(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg     bench.Config
		run     bench.SoakConfig
		minutes float64
	)
	fs := flag.NewFlagSet("bench soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchServerFlags(fs, &cfg.DatabaseURL, &cfg.RedisURL, &cfg.BatchSize, "freshen serve --batch-size")
	fs.IntVar(&run.Models, "models", bench.DefaultSoakModels, "models loaded")
	fs.Float64Var(&run.Rate, "rate", 0, "cycles due a second (default half the cycles/s of a burst of --burst-models measured first)")
	fs.IntVar(&run.BurstModels, "burst-models", bench.DefaultSoakBurstModels, "models of the burst measured first when --rate is not set")
	fs.Float64Var(&minutes, "minutes", bench.DefaultSoakDuration.Minutes(), "how long the load runs, in minutes")
	durationVar(fs, &run.Interval, "interval", 0, "time between two samples (default a minute, or a fifth of the run if shorter)")
	durationVar(fs, &run.Horizon, "horizon", bench.DefaultSoakHorizon, "freshen serve --history-max-age: the history is pruned during the run")
	fs.IntVar(&run.Concurrency, "concurrency", bench.DefaultSoakConcurrency, "worker concurrency")
	fs.Float64Var(&run.FailPercent, "fail-percent", bench.DefaultSoakFailPercent, "percent of the jobs that fail (retried)")
	fs.Float64Var(&run.HangPercent, "hang-percent", bench.DefaultSoakHangPercent, "percent of the jobs that hang until their deadline (timed out)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: freshen bench soak [flags]

Runs a steady load for --minutes: --models models, due so that --rate cycles a second fall
due, freshen serve (history pruned after --horizon) and a worker that fails and hangs some
jobs, as child processes; the history starts full (each model's last start of the --horizon
before the run), so that pruning works from the first minute as it does later. Every
--interval it prints cycles/s, start lateness, the memory of serve, the worker and Redis, the
size of every table and index, dead tuples and autovacuum runs; at the end, the drift of
cycles/s and p99 lateness from the first fifth of the run (at most 5 minutes) to the last, the
growth of the sizes over the last third (at most 10 minutes), and an SQL check that every due
start of the last --horizon happened exactly once and nothing is stuck (the command fails if
not). It works in a schema and under a Redis key prefix of its own.`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	run.Duration = time.Duration(minutes * float64(time.Minute))
	bad := checkBenchServers(fs, &cfg.DatabaseURL, &cfg.RedisURL, cfg.BatchSize)
	switch {
	case bad != nil:
	case run.Models < 1:
		bad = fmt.Errorf("--models: must be >= 1, got %d", run.Models)
	case run.Rate < 0:
		bad = fmt.Errorf("--rate: must be > 0, got %g", run.Rate)
	case run.BurstModels < 1:
		bad = fmt.Errorf("--burst-models: must be >= 1, got %d", run.BurstModels)
	case run.Duration < time.Second:
		bad = fmt.Errorf("--minutes: must be at least a second, got %g", minutes)
	case run.Concurrency < 1:
		bad = fmt.Errorf("--concurrency: must be >= 1, got %d", run.Concurrency)
	}
	run.OnSample = func(s bench.SoakSample) { printSoakSample(stdout, s) }
	return benchRun(ctx, "freshen bench soak", cfg, bad, fmt.Sprintf(", worker concurrency %d", run.Concurrency), stdout, stderr,
		func(b *bench.Bench) error {
			res, err := b.Soak(ctx, run)
			if len(res.Samples) > 0 {
				printSoak(stdout, res)
			}
			return err
		})
}

// printSoakSample prints one sample of a soak run.
func printSoakSample(out io.Writer, s bench.SoakSample) {
	fmt.Fprintf(out, "\n%s: %s cycles/s (%d succeeded, %d failed, %d timed out); %d starts late p50 %s, p99 %s, max %s\n",
		benchDur(s.At), benchNumber(s.CyclesPerSec, 0), s.Succeeded, s.Failed, s.TimedOut, s.Starts,
		benchMs(s.LateP50), benchMs(s.LateP99), benchMs(s.LateMax))
	if len(s.Slow) > 0 {
		parts := make([]string, len(s.Slow))
		for i, w := range s.Slow {
			parts[i] = fmt.Sprintf("%.0f s (%d)", w.At.Seconds(), w.Count)
		}
		fmt.Fprintf(out, "  starts over 100 ms late, most in the crowds due at %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(out, "  %d of their jobs reached the worker late p50 %s, p99 %s, max %s (after their start p50 %s, p99 %s)\n",
		s.Reached, benchMs(s.ReachedP50), benchMs(s.ReachedP99), benchMs(s.ReachedMax), benchMs(s.HandOffP50), benchMs(s.HandOffP99))
	fmt.Fprintf(out, "  %d outcomes received; kept for a later pass, their model locked: %d times\n", s.Outcomes, s.Deferred)
	fmt.Fprintf(out, "  RSS: serve %s, worker %s; Redis used_memory %s; tables and indexes %s\n",
		benchMB(s.ServeRSS), benchMB(s.WorkerRSS), benchMB(s.RedisMemory), benchMB(s.TotalBytes))
	parts := make([]string, len(s.Relations))
	for i, r := range s.Relations {
		parts[i] = fmt.Sprintf("%s %s", r.Name, benchMB(r.Bytes))
	}
	fmt.Fprintf(out, "  sizes: %s\n", strings.Join(parts, ", "))
	parts = make([]string, len(s.Tables))
	for i, t := range s.Tables {
		parts[i] = fmt.Sprintf("%s %d live, %d dead, %d autovacuums, %d autoanalyzes", t.Name, t.Live, t.Dead, t.Autovacuums, t.Autoanalyzes)
	}
	fmt.Fprintf(out, "  pg_stat_user_tables: %s\n", strings.Join(parts, "; "))
	fmt.Fprintf(out, "  the server: %s\n", benchWAL(s.WAL))
}

// printSoak prints the summary of a soak run, then its RESULT line.
func printSoak(out io.Writer, r bench.SoakResult) {
	burst := "given"
	if r.BurstRate > 0 {
		burst = "half of a burst's " + benchRate(r.BurstRate)
	}
	fmt.Fprintf(out, "\n%d models due every %s: %s due (%s); %s; history pruned after %s (%d attempts of it written before the run)\n",
		r.Models, r.Period, benchRate(r.Rate), burst, benchDur(r.Duration), r.Horizon, r.History)
	benchRow(out, fmt.Sprintf("cycles/s drift, last %s against the first", r.Window), fmt.Sprintf("%+.1f%%", r.CyclesDriftPct),
		fmt.Sprintf("within ±%d%%", targetDriftPct), math.Abs(r.CyclesDriftPct) <= targetDriftPct)
	benchRow(out, fmt.Sprintf("p99 lateness drift, last %s against the first", r.Window), fmt.Sprintf("%+.1f%%", r.P99DriftPct),
		fmt.Sprintf("within ±%d%%", targetDriftPct), math.Abs(r.P99DriftPct) <= targetDriftPct)
	benchRow(out, "p99 lateness, worst sample", benchMs(r.WorstP99), "<= "+benchMs(targetP99), r.WorstP99 <= targetP99)
	benchRow(out, "p99 lateness to the worker, worst sample", benchMs(r.WorstReachedP99), "", true)
	benchRow(out, fmt.Sprintf("size growth, last %s", r.GrowthSpan), fmt.Sprintf("%+.1f%%", r.SizeGrowthPct),
		fmt.Sprintf("<= %d%%", targetGrowthPct), r.SizeGrowthPct <= targetGrowthPct)
	benchRow(out, "attempts timed out, of those that ended", fmt.Sprintf("%.2f%%", r.TimedOutPct),
		fmt.Sprintf("about %g%% (--hang-percent)", r.HangPercent), true)
	benchRow(out, fmt.Sprintf("lost (of %d occurrences checked)", r.Checked), fmt.Sprintf("%d", r.Lost()), "0", r.Lost() == 0)
	fmt.Fprintf(out, "  (lost: %d occurrences without a start, %d started more than once, %d attempts or models stuck; load average %s)\n",
		r.Missing, r.Duplicates, r.Stuck, bench.LoadAverage())
	last := r.Samples[len(r.Samples)-1]
	fmt.Fprintf(out, "RESULT mode=soak models=%d rate=%.1f seconds=%.0f cycles_drift_pct=%.1f p99_drift_pct=%.1f worst_p99_ms=%.1f worst_worker_p99_ms=%.1f size_growth_pct=%.1f lost=%d checked=%d timed_out_pct=%.2f serve_rss_kb=%d worker_rss_kb=%d redis_used_kb=%d pg_bytes=%d load=%s\n",
		r.Models, r.Rate, r.Duration.Seconds(), r.CyclesDriftPct, r.P99DriftPct, ms(r.WorstP99), ms(r.WorstReachedP99), r.SizeGrowthPct, r.Lost(), r.Checked, r.TimedOutPct,
		last.ServeRSS>>10, last.WorkerRSS>>10, last.RedisMemory>>10, last.TotalBytes, strings.ReplaceAll(bench.LoadAverage(), " ", ","))
}

// runBenchLatency is `freshen bench latency`.
func runBenchLatency(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		cfg bench.Config
		run bench.LatencyConfig
	)
	fs := flag.NewFlagSet("bench latency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchServerFlags(fs, &cfg.DatabaseURL, &cfg.RedisURL, &cfg.BatchSize, "freshen serve --batch-size")
	fs.IntVar(&run.Samples, "samples", bench.DefaultLatencySamples, "triggers, and PUTs, timed in each phase")
	fs.Float64Var(&run.LoadRate, "load-rate", bench.DefaultLatencyLoadRate, "background cycles due a second under load")
	fs.IntVar(&run.Concurrency, "concurrency", bench.DefaultWorkerConcurrency, "worker concurrency")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: freshen bench latency [flags]

Times, one at a time, --samples POST /models/{id}/trigger of idle models and --samples PUTs
that change the payload of a disabled model (which re-enables it and starts it now): from
the request sent to the job in the worker's handler, and to the outcome applied (the
attempt's finished_at), with freshen serve and a worker as child processes; first idle,
then while --load-rate background cycles a second fall due. It works in a schema and under
a Redis key prefix of its own.`)
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
	case run.Samples < 1:
		bad = fmt.Errorf("--samples: must be >= 1, got %d", run.Samples)
	case run.LoadRate <= 0:
		bad = fmt.Errorf("--load-rate: must be > 0, got %g", run.LoadRate)
	case run.Concurrency < 1:
		bad = fmt.Errorf("--concurrency: must be >= 1, got %d", run.Concurrency)
	}
	return benchRun(ctx, "freshen bench latency", cfg, bad, fmt.Sprintf(", worker concurrency %d", run.Concurrency), stdout, stderr,
		func(b *bench.Bench) error {
			res, err := b.Latency(ctx, run)
			if err == nil {
				printLatency(stdout, res)
			}
			return err
		})
}

// printLatency prints the figures of a latency run, then its RESULT line.
func printLatency(out io.Writer, r bench.LatencyResult) {
	fmt.Fprintf(out, "\n%d samples of each write, one at a time; under load: %d background models, %s due (%s ended during the phase)\n",
		r.Samples, r.LoadModels, benchRate(r.LoadRate), benchRate(r.Load.CyclesPerSec))
	for _, p := range []struct {
		name   string
		phase  bench.LatencyPhase
		target time.Duration
	}{{"idle", r.Idle, targetIdleWorkerP99 * time.Millisecond}, {"under load", r.Load, targetLoadWorkerP99 * time.Millisecond}} {
		for _, w := range []struct {
			name string
			l    bench.Latencies
		}{{"trigger", p.phase.Trigger}, {"PUT of a disabled model", p.phase.Put}} {
			benchRow(out, fmt.Sprintf("%s, %s: to the worker p50", p.name, w.name), benchMs(w.l.WorkerP50), "", true)
			benchRow(out, fmt.Sprintf("%s, %s: to the worker p99", p.name, w.name), benchMs(w.l.WorkerP99), "<= "+benchMs(p.target), w.l.WorkerP99 <= p.target)
			benchRow(out, fmt.Sprintf("%s, %s: to the worker max", p.name, w.name), benchMs(w.l.WorkerMax), "", true)
			benchRow(out, fmt.Sprintf("%s, %s: to the outcome applied p50, p99", p.name, w.name),
				benchMs(w.l.AppliedP50)+", "+benchMs(w.l.AppliedP99), "", true)
		}
	}
	fmt.Fprintf(out, "RESULT mode=latency samples=%d load_rate=%.0f idle_p50_worker_ms=%.1f idle_p99_worker_ms=%.1f load_p50_worker_ms=%.1f load_p99_worker_ms=%.1f idle_p99_applied_ms=%.1f load_p99_applied_ms=%.1f idle_put_p99_worker_ms=%.1f load_put_p99_worker_ms=%.1f load=%s\n",
		r.Samples, r.LoadRate, ms(r.Idle.Trigger.WorkerP50), ms(r.Idle.Trigger.WorkerP99), ms(r.Load.Trigger.WorkerP50), ms(r.Load.Trigger.WorkerP99),
		ms(r.Idle.Trigger.AppliedP99), ms(r.Load.Trigger.AppliedP99), ms(r.Idle.Put.WorkerP99), ms(r.Load.Put.WorkerP99),
		strings.ReplaceAll(bench.LoadAverage(), " ", ","))
}
