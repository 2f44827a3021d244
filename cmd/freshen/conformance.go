//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	workcmd "github.com/freshen-dev/freshen/queue/command"
	"github.com/freshen-dev/freshen/queue/conformance"
)

const conformanceUsage = `usage: freshen conformance [flags] -- command [args...]

Checks that a worker keeps the wire format's contract (queue/WIRE.md). It
starts command itself, several times, as a worker whose handler follows the
conformance handler of docs/workers.md, with REDIS_URL, FRESHEN_QUEUE,
FRESHEN_REDIS_PREFIX, FRESHEN_ID, FRESHEN_LEASE and FRESHEN_CONCURRENCY in
its environment, and drives it through Redis and a scheduler of its own (the
memory store, or PostgreSQL with --database-url), under a key prefix of its
own that it deletes at the end. It prints one line per case:
  PASS name (duration)
  FAIL name: why
then "N passed, N failed", and exits 1 if a case failed, 2 on bad input.
Cases: %s.

`

// runConformance is `freshen conformance`.
func runConformance(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	cfg := conformance.Config{RedisURL: os.Getenv("REDIS_URL")}
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "Redis URL for the kit and the worker (env REDIS_URL)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", "", "a migrated PostgreSQL database for the scheduler; without it, the memory store")
	fs.IntVar(&cfg.Bench, "bench", 0, "if > 0, also measure the worker's throughput with that many no-op jobs (cycles/s, CPU per 1,000 jobs)")
	fs.IntVar(&cfg.Parallel, "parallel", 4, "how many cases run at once")
	listVar(fs, &cfg.Only, "cases", "comma-separated names of the cases to run (default: all)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, conformanceUsage, strings.Join(conformance.CaseNames(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg.Command = fs.Args()
	switch {
	case len(cfg.Command) == 0:
		fmt.Fprintln(stderr, "freshen conformance: a worker command must follow the flags, e.g. freshen conformance -- ./worker")
		return 2
	case cfg.RedisURL == "":
		fmt.Fprintln(stderr, "freshen conformance: --redis-url (or REDIS_URL) must be set")
		return 2
	case cfg.Bench < 0:
		fmt.Fprintf(stderr, "freshen conformance: --bench: must be >= 0, got %d\n", cfg.Bench)
		return 2
	case cfg.Parallel < 1:
		fmt.Fprintf(stderr, "freshen conformance: --parallel: must be >= 1, got %d\n", cfg.Parallel)
		return 2
	}
	if _, err := workcmd.LookPath(cfg.Command[0]); err != nil {
		fmt.Fprintf(stderr, "freshen conformance: %v\n", err)
		return 2
	}
	sum, err := conformance.Run(ctx, cfg, func(r conformance.Result) {
		if r.Err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %v\n", r.Name, r.Err)
			if r.Log != "" {
				fmt.Fprintf(stdout, "  %s\n", strings.ReplaceAll(r.Log, "\n", "\n  "))
			}
			return
		}
		fmt.Fprintf(stdout, "PASS %s (%s)", r.Name, r.Took.Round(10*time.Millisecond))
		if r.Note != "" {
			fmt.Fprintf(stdout, ": %s", r.Note)
		}
		fmt.Fprintln(stdout)
	})
	if err != nil {
		fmt.Fprintf(stderr, "freshen conformance: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", sum.Passed, sum.Failed)
	if sum.Failed > 0 {
		return 1
	}
	return 0
}
