//go:build linux

package conformance_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/queue/conformance"
)

// The test binary is also the Go SDK's worker under test: run with
// FRESHEN_TEST_WORKER set, it is a worker (goWorker) rather than tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FRESHEN_TEST_WORKER"); mode != "" {
		os.Exit(goWorker(mode))
	}
	os.Exit(m.Run())
}

// goWorker is a worker of the Go SDK running conformance.Handler, set up
// from the kit's environment. Mode "nobeat" is a broken worker: it ignores
// FRESHEN_LEASE and beats once an hour.
func goWorker(mode string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	lease, err := time.ParseDuration(os.Getenv("FRESHEN_LEASE"))
	if err != nil {
		log.Error("FRESHEN_LEASE", "err", err)
		return 2
	}
	if mode == "nobeat" {
		lease = time.Hour
	}
	concurrency, _ := strconv.Atoi(os.Getenv("FRESHEN_CONCURRENCY"))
	client, err := queue.NewClient(queue.ClientConfig{URL: os.Getenv("REDIS_URL")})
	if err != nil {
		log.Error("redis", "err", err)
		return 2
	}
	w, err := queue.NewWorker(client, queue.WorkerOptions{
		Prefix: os.Getenv("FRESHEN_REDIS_PREFIX"), Queue: os.Getenv("FRESHEN_QUEUE"), ID: os.Getenv("FRESHEN_ID"),
		Concurrency: concurrency, WorkerTimeout: lease, Logger: log,
	}, conformance.Handler)
	if err != nil {
		log.Error("worker", "err", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil {
		log.Error("run", "err", err)
		return 1
	}
	return 0
}

// run runs the kit on the test binary as a worker of the given mode.
func run(t *testing.T, mode string, cfg conformance.Config) (conformance.Summary, map[string]conformance.Result) {
	t.Helper()
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		t.Skip("REDIS_URL is not set; run under scripts/with-servers.sh")
	}
	cfg.RedisURL = redisURL
	// This package runs beside every other of make test: a revoked job
	// may take longer than the promised second to stop, though not the
	// 30 s its handler would run (Config.RevokeWithin).
	cfg.RevokeWithin = 3 * time.Second
	cfg.Command = []string{os.Args[0]}
	cfg.Environ = append(os.Environ(), "FRESHEN_TEST_WORKER="+mode)
	results := map[string]conformance.Result{}
	sum, err := conformance.Run(context.Background(), cfg, func(r conformance.Result) {
		results[r.Name] = r
		t.Log(line(r))
	})
	require.NoError(t, err)
	return sum, results
}

func line(r conformance.Result) string {
	if r.Err != nil {
		return fmt.Sprintf("FAIL %s: %v\n%s", r.Name, r.Err, r.Log)
	}
	s := fmt.Sprintf("PASS %s (%s)", r.Name, r.Took.Round(10*time.Millisecond))
	if r.Note != "" {
		s += ": " + r.Note
	}
	return s
}

// TestGoSDK: the Go SDK passes every case, and its throughput is measured.
func TestGoSDK(t *testing.T) {
	t.Parallel()
	sum, results := run(t, "go", conformance.Config{Bench: 500})
	require.Zero(t, sum.Failed)
	require.Equal(t, len(results), sum.Passed)
	require.Contains(t, results, "throughput")
}

// TestBrokenWorker: a worker that does not keep its lease fails the cases
// that look at it: the kit can fail.
func TestBrokenWorker(t *testing.T) {
	t.Parallel()
	sum, results := run(t, "nobeat", conformance.Config{Only: []string{"success", "heartbeat", "stall"}})
	require.Equal(t, 1, sum.Passed)
	require.Equal(t, 2, sum.Failed)
	require.NoError(t, results["success"].Err)
	require.ErrorContains(t, results["heartbeat"].Err, "more than its lease")
	require.ErrorContains(t, results["stall"].Err, "the job of the stopped worker was not run by the other")
}

func TestUnknownCase(t *testing.T) {
	_, err := conformance.Run(context.Background(), conformance.Config{RedisURL: "redis://127.0.0.1:1/0", Command: []string{"true"}, Only: []string{"nope"}}, nil)
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), `conformance: no case "nope"`), err.Error())
}
