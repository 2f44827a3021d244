package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// WorkerReady is the line RunWorker writes once it is connected and about
// to take jobs.
const WorkerReady = "ready"

// DefaultWorkerConcurrency is the default of WorkerConfig.Concurrency and
// E2EConfig.Concurrency.
const DefaultWorkerConcurrency = 256

// WorkerConfig configures RunWorker.
type WorkerConfig struct {
	// RedisURL is the Redis server. Required.
	RedisURL string
	// Prefix starts every key; it must be serve's. Required.
	Prefix string
	// Queue is the queue taken from (default Queue).
	Queue string
	// Concurrency is how many jobs run at once (default
	// DefaultWorkerConcurrency).
	Concurrency int
	// ID names the worker among the workers of its queue (default: the
	// SDK's).
	ID string
	// Logger (default: discarded).
	Logger *slog.Logger
	// FailPercent of the jobs fail (a retryable failure), and HangPercent
	// run until their deadline (the attempt times out); the others succeed
	// at once.
	FailPercent, HangPercent float64
	// Report, if set, receives a line per job of a model whose id starts
	// with ReportPrefix as it reaches the handler: TookLine, the model id,
	// the time in Unix nanoseconds, the attempt's number and its start in
	// Unix nanoseconds (see parseTook).
	Report       io.Writer
	ReportPrefix string
}

// TookLine starts the lines RunWorker writes to WorkerConfig.Report.
const TookLine = "took"

// RunWorker runs the queue.Worker SDK with a handler that succeeds at once
// (but for the failures and hangs of cfg) until ctx ends; it writes WorkerReady and a newline to ready once
// connected. `freshen bench worker` is this function; E2E runs it as a
// child process so that its CPU and memory are its own.
func RunWorker(ctx context.Context, cfg WorkerConfig, ready io.Writer) error {
	switch {
	case cfg.RedisURL == "":
		return errors.New("bench: worker: RedisURL: must be set")
	case cfg.Prefix == "":
		return errors.New("bench: worker: Prefix: must be set")
	case cfg.Concurrency < 0:
		return fmt.Errorf("bench: worker: Concurrency: must be >= 1, got %d", cfg.Concurrency)
	case cfg.FailPercent < 0 || cfg.HangPercent < 0 || cfg.FailPercent+cfg.HangPercent > 100:
		return fmt.Errorf("bench: worker: FailPercent, HangPercent: must be >= 0 and add up to at most 100, got %g and %g", cfg.FailPercent, cfg.HangPercent)
	}
	if cfg.Queue == "" {
		cfg.Queue = Queue
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultWorkerConcurrency
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("redis URL: %w", err)
	}
	// Each taker holds a connection while it waits for a job; no command
	// is sent again on its own (see queue.NewClient).
	opt.PoolSize, opt.MaxRetries = cfg.Concurrency+10, -1
	client := redis.NewClient(opt)
	defer client.Close()
	if err := client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connect to redis: %w", err)
	}
	w, err := queue.NewWorker(client, queue.WorkerOptions{
		Prefix: cfg.Prefix, Queue: cfg.Queue, Concurrency: cfg.Concurrency, ID: cfg.ID, Logger: cfg.Logger,
	}, newHandler(cfg))
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(ready, WorkerReady); err != nil {
		return err
	}
	return w.Run(ctx)
}

// took is what a line RunWorker writes to WorkerConfig.Report says: the
// job of an attempt reached the handler.
type took struct {
	modelID string
	at      time.Time // when the job reached the handler
	attempt int       // the attempt's number
	started time.Time // the attempt's start
}

// parseTook reads a line RunWorker writes to WorkerConfig.Report; ok is
// false for any other line.
func parseTook(l string) (t took, ok bool) {
	f := strings.Fields(l)
	if len(f) != 5 || f[0] != TookLine {
		return t, false
	}
	at, err1 := strconv.ParseInt(f[2], 10, 64)
	attempt, err2 := strconv.Atoi(f[3])
	started, err3 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return t, false
	}
	return took{modelID: f[1], at: time.Unix(0, at), attempt: attempt, started: time.Unix(0, started)}, true
}

// errPlanned is the failure of the jobs RunWorker fails on purpose.
var errPlanned = errors.New("bench: planned failure")

// newHandler returns the handler of RunWorker.
func newHandler(cfg WorkerConfig) queue.Handler {
	var mu sync.Mutex
	clock := refresh.SystemClock{}
	return func(ctx context.Context, job queue.Job) error {
		if cfg.Report != nil && strings.HasPrefix(job.ModelID, cfg.ReportPrefix) {
			now := clock.Now()
			mu.Lock()
			fmt.Fprintf(cfg.Report, "%s %s %d %d %d\n", TookLine, job.ModelID, now.UnixNano(), job.AttemptNo, job.StartedAt.UnixNano())
			mu.Unlock()
		}
		if cfg.FailPercent == 0 && cfg.HangPercent == 0 {
			return nil
		}
		switch r := rand.Float64() * 100; {
		case r < cfg.FailPercent:
			return errPlanned
		case r < cfg.FailPercent+cfg.HangPercent:
			<-ctx.Done()
			return context.Cause(ctx)
		}
		return nil
	}
}
