//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/peterbourgon/ff/v3"

	"github.com/freshen-dev/freshen/queue"
	workcmd "github.com/freshen-dev/freshen/queue/command"
)

const workUsage = `usage: freshen work [flags] [--] command [args...]

Takes the jobs of one queue from Redis and runs command once per job, up to
--concurrency at a time, with the crash safety of the Go worker SDK: a job
whose outcome is not posted (the worker died) is given back and runs again.
The worker refuses to start if command is not found or not executable. Every
flag can also be set as FRESHEN_<FLAG> (e.g. FRESHEN_REDIS_URL).

What the command gets:
  stdin        the job's payload as JSON (null if it has none) and a newline
  environment  the worker's, less its own FRESHEN_* settings, plus
               FRESHEN_MODEL_ID, FRESHEN_ATTEMPT_UID, FRESHEN_ATTEMPT_NO,
               FRESHEN_DEADLINE_AT (RFC 3339, UTC) and FRESHEN_QUEUE
  directory    the worker's working directory
  a process group of its own, which it shares with its children

What it reports:
  Exit status 0 is a success, N a failure of kind exit_N, death by a signal a
  failure of kind signal_NAME (signal_KILL, signal_SEGV...), so that a policy's
  non_retryable can name them. The failure's message is "exit status N" (or
  "killed by signal SIGNAME") and the last lines of stderr (at most 10 lines,
  2 KiB).
  A stdout line {"status": "42%"} (or, as on the wire, {"outcome": "status",
  "message": "42%"}) posts a status: at most one per --status-interval, the
  latest wins.
  The last stdout line that is a JSON object without "status" says the
  outcome as a worker pushes it to Redis (queue/WIRE.md), without model_id
  and attempt_uid, and is checked by the same rules:
    {"outcome": "failure", "kind": "validation", "message": "row 3: no date",
     "retryable": false, "user_message": "Row 3 of your file has no date."}
    {"outcome": "success", "unchanged": true}
    {"outcome": "snooze", "for": "10m"}
  "outcome" (success, failure or snooze) wins over the exit status; without
  it the exit status says success or failure. kind, message, retryable and
  user_message go with a failure, said by outcome or by the exit status;
  user_message is the reason the customer reads if the failure disables the
  model. "unchanged": true goes with a success whose data did not change (no
  dependent is triggered; {"outcome": "unchanged"} says the same); a snooze
  says the input is not ready and takes "until" (RFC 3339, in the future) or
  "for" (a duration > 0): the attempt ends without a failure and the model is
  tried again then (see the policy's max_snooze). A line that breaks a rule
  (a wrong type, a duplicate member, an unknown outcome, failure fields on a
  success) makes the job a failure of kind bad_output that names the field
  and the rule.
  Lines are read up to 64 KiB; the rest of a longer one is skipped, and a
  longer line that starts with { fails the job with bad_output unless a JSON
  line follows it. stderr, and the stdout lines that are not JSON objects, go
  to the worker's log (lines cut at 1 KiB; at most 1,000 lines and 64 KiB per
  job, then only a count).

When it is stopped:
  At the job's deadline, or within a second of its attempt being superseded,
  cancelled or deleted, the command's process group gets SIGTERM, and SIGKILL
  --grace later. Its outcome is still posted, and the scheduler ignores it
  (it arrives at or after the deadline, which the scheduler has recorded as a
  timeout, or for an attempt that is over). Whatever the command leaves
  running in its group when it exits is killed with SIGKILL.
  On SIGINT or SIGTERM the worker takes no more jobs, lets the running
  commands finish, posts their outcomes and exits 0. A second signal, or the
  end of --shutdown-timeout, kills them (SIGTERM, SIGKILL --grace later) and
  the worker exits 1 without posting their outcomes: their jobs are given back
  at once by a worker started again with the same --id, else by another worker
  of the queue once this one's --lease has run out. If the worker itself is
  killed with SIGKILL, Linux sends SIGKILL to each command it runs (not to their
  children), and the jobs are given back the same way.

`

// workConfig is the configuration of freshen work.
type workConfig struct {
	// Command is the command and its arguments; Path is where it was found.
	Command []string
	Path    string

	Queue           string
	ID              string
	Concurrency     int
	Grace           time.Duration
	StatusInterval  time.Duration
	ShutdownTimeout time.Duration
	Lease           time.Duration
	LogLevel        slog.Level

	RedisURL string
	redisServers
	RedisPrefix string
}

// runWork is `freshen work`: a worker that runs a command for each job.
func runWork(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	cfg, err := parseWorkFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "freshen work: %v\n", err)
		return 2
	}
	if err := runWorkConfig(ctx, cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "freshen work: %v\n", err)
		return 1
	}
	return 0
}

func parseWorkFlags(args []string, stderr io.Writer) (workConfig, error) {
	c := workConfig{
		Queue: "default", Concurrency: 1, Grace: 10 * time.Second, StatusInterval: time.Second,
		Lease: queue.DefaultWorkerTimeout, RedisPrefix: queue.DefaultPrefix,
	}
	fs := flag.NewFlagSet("work", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Queue, "queue", c.Queue, "queue to take jobs from")
	fs.IntVar(&c.Concurrency, "concurrency", c.Concurrency, "how many commands run at once")
	durationVar(fs, &c.Grace, "grace", c.Grace, "time between SIGTERM and SIGKILL when a command is stopped")
	durationVar(fs, &c.StatusInterval, "status-interval", c.StatusInterval, "least time between two status outcomes of a job (the latest status line wins)")
	durationVar(fs, &c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "after SIGINT or SIGTERM, longest to wait for the running commands before killing them; 0 waits until they end")
	fs.StringVar(&c.ID, "id", c.ID, "name of this worker among the workers of its queue; keep it across restarts to have the jobs of a previous life given back at once (default: host name, process id and a random suffix)")
	durationVar(fs, &c.Lease, "lease", c.Lease, "how long this worker may go unseen before other workers give back its jobs")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "Redis URL, e.g. redis://localhost:6379/0 (env FRESHEN_REDIS_URL or REDIS_URL)")
	c.redisServers.addFlags(fs)
	fs.StringVar(&c.RedisPrefix, "redis-prefix", c.RedisPrefix, "prefix of every Redis key; serve's")
	level := fs.String("log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(stderr, workUsage)
		fs.PrintDefaults()
	}
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("FRESHEN")); err != nil {
		return c, err
	}
	if c.RedisURL == "" {
		c.RedisURL = os.Getenv("REDIS_URL")
	}
	if err := c.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return c, fmt.Errorf("--log-level: must be debug, info, warn or error, got %q", *level)
	}
	c.Command = fs.Args()
	if len(c.Command) == 0 {
		return c, errors.New("a command must follow the flags, e.g. freshen work --queue thumbnails -- ./render.sh")
	}
	if err := queue.ValidateName(c.Queue); err != nil {
		return c, fmt.Errorf("--queue: %w", err)
	}
	if c.ID != "" {
		if err := queue.ValidateName(c.ID); err != nil {
			return c, fmt.Errorf("--id: %w", err)
		}
	}
	switch {
	case c.Concurrency < 1:
		return c, fmt.Errorf("--concurrency: must be >= 1, got %d", c.Concurrency)
	case c.Grace <= 0:
		return c, fmt.Errorf("--grace: must be > 0, got %s", c.Grace)
	case c.StatusInterval <= 0:
		return c, fmt.Errorf("--status-interval: must be > 0, got %s", c.StatusInterval)
	case c.ShutdownTimeout < 0:
		return c, fmt.Errorf("--shutdown-timeout: must be >= 0, got %s", c.ShutdownTimeout)
	case c.Lease <= 0:
		return c, fmt.Errorf("--lease: must be > 0, got %s", c.Lease)
	case c.RedisURL == "" && c.RedisSentinelMaster == "" && len(c.RedisClusterAddrs) == 0:
		return c, errors.New("--redis-url (or REDIS_URL) must be set")
	}
	path, err := workcmd.LookPath(c.Command[0])
	if err != nil {
		return c, err
	}
	c.Path = path
	return c, nil
}

// runWorkConfig runs the worker until ctx ends and its running commands
// have finished, or until it is told to stop them (a second signal or the
// shutdown timeout), which it reports as an error.
func runWorkConfig(ctx context.Context, c workConfig, logOut io.Writer) error {
	redact := newRedactor(c.RedisURL)
	if c.RedisSentinelPassword != "" {
		redact.secrets = append(redact.secrets, c.RedisSentinelPassword)
	}
	log := newLogger(logOut, c.LogLevel, redact)
	queue.SetRedisLogger(log)
	// Each taker holds a connection while it waits for a job.
	redisURL, err := withPoolSize(c.RedisURL, c.Concurrency+10)
	if err != nil {
		return redact.Error(err)
	}
	client, err := queue.NewClient(c.redisServers.clientConfig(redisURL))
	if err != nil {
		return redact.Error(err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return fmt.Errorf("connect to redis: %w", redact.Error(err))
	}

	r, err := workcmd.New(workcmd.Config{Path: c.Path, Args: c.Command, Environ: os.Environ(),
		Grace: c.Grace, StatusInterval: c.StatusInterval, Logger: log})
	if err != nil {
		_ = client.Close()
		return err
	}
	w, err := queue.NewWorker(client, queue.WorkerOptions{
		Prefix: c.RedisPrefix, Queue: c.Queue, Concurrency: c.Concurrency, ID: c.ID,
		WorkerTimeout: c.Lease, Logger: log,
	}, r.Handle)
	if err != nil {
		_ = client.Close()
		return err
	}
	// main cancels ctx at the first SIGINT or SIGTERM; this channel gets
	// that one too, and the second.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	runCtx, stopTaking := context.WithCancel(ctx)
	defer stopTaking()
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	log.Info("taking jobs", "queue", c.Queue, "worker", w.ID(), "command", c.Command, "concurrency", c.Concurrency)

	ctxDone := ctx.Done()
	var timeout <-chan time.Time
	draining, received := false, 0
	drain := func() {
		if draining {
			return
		}
		draining = true
		stopTaking()
		log.Info("stopping: taking no more jobs, waiting for the running commands", "running", r.Running())
		if c.ShutdownTimeout > 0 {
			timeout = time.After(c.ShutdownTimeout)
		}
	}
	for abort := false; !abort; {
		select {
		case err := <-done:
			_ = client.Close()
			if err != nil {
				return err
			}
			s := w.Stats()
			log.Info("stopped", "taken", s.Taken, "succeeded", s.Succeeded, "failed", s.Failed)
			return nil
		case <-ctxDone:
			ctxDone = nil
			drain()
		case <-signals:
			received++
			abort = received > 1
			drain()
		case <-timeout:
			abort = true
		}
	}
	// The client stays open: the worker's heartbeat goes on until the
	// process exits, and its handlers never return.
	n := r.Abort()
	log.Warn("stopped without posting the outcomes of the commands it killed; their jobs are given back "+
		"by a worker started with the same --id, else once this worker's lease has run out",
		"killed", n, "worker", w.ID(), "lease", c.Lease)
	return fmt.Errorf("killed %d running command(s) without posting their outcomes", n)
}

// withPoolSize returns the Redis URL raw with a connection pool of at least
// n connections, unless it sets pool_size itself. Without a URL (Sentinel
// or Cluster alone) it returns one that carries only the pool size.
func withPoolSize(raw string, n int) (string, error) {
	if n <= 10*runtime.GOMAXPROCS(0) { // go-redis' default
		return raw, nil
	}
	if raw == "" {
		return "redis://?pool_size=" + strconv.Itoa(n), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("redis: url: %v", err)
	}
	q := u.Query()
	if q.Has("pool_size") {
		return raw, nil
	}
	q.Set("pool_size", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String(), nil
}
