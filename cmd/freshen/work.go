//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/peterbourgon/ff/v3"
	"golang.org/x/sys/unix"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
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
  A stdout line {"status": "42%"} posts a status: at most one per
  --status-interval, the latest wins.
  The last stdout line that is a JSON object without "status" may say
    {"outcome": "failure", "kind": "validation", "message": "row 3: no date",
     "retryable": false, "user_message": "Row 3 of your file has no date."}
  "outcome" (success, failure, unchanged or snooze) wins over the exit status;
  kind, message, retryable and user_message go with a failure, said by outcome
  or by the exit status. A line with a wrong type, an unknown outcome or
  failure fields on a success makes the job a failure of kind bad_output that
  names the field. "unchanged" is posted as a success whose data did not
  change ({"outcome": "success", "unchanged": true}: no dependent is
  triggered); "snooze" says the input is not ready and takes "until" (RFC 3339,
  in the future) or "for" (a duration > 0, e.g. "10m"): the attempt ends
  without a failure and the model is tried again then (see the policy's
  max_snooze).
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

// Bounds of what freshen work reads from a command.
const (
	// workMaxLine is the longest output line read whole; the rest of a
	// longer line is skipped.
	workMaxLine = 64 << 10
	// workLogBytes and workLogLines bound how much of a job's output goes
	// to the log; the lines beyond are only counted.
	workLogBytes = 64 << 10
	workLogLines = 1000
	// workLogLine is the longest output line put in the log.
	workLogLine = 1 << 10
	// workTailLines and workTailBytes bound the last lines of stderr that
	// end a failure's message.
	workTailLines = 10
	workTailBytes = 2 << 10
)

// Failure kinds of freshen work besides exit_<code> and signal_<NAME>.
const (
	// kindBadOutput: the command's last JSON line cannot be reported.
	kindBadOutput = "bad_output"
	// kindExecFailed: the command could not be started.
	kindExecFailed = "exec_failed"
)

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

	RedisURL              string
	RedisSentinelMaster   string
	RedisSentinelAddrs    []string
	RedisSentinelPassword string
	RedisClusterAddrs     []string
	RedisPrefix           string
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
	fs.StringVar(&c.RedisSentinelMaster, "redis-sentinel-master", c.RedisSentinelMaster, "name of the Redis primary that Redis Sentinel watches (with --redis-sentinel-addrs)")
	listVar(fs, &c.RedisSentinelAddrs, "redis-sentinel-addrs", "comma-separated host:port of the Redis Sentinels; --redis-url then has no host (e.g. redis://:password@/0)")
	fs.StringVar(&c.RedisSentinelPassword, "redis-sentinel-password", c.RedisSentinelPassword, "password of the Redis Sentinels, if they need one")
	listVar(fs, &c.RedisClusterAddrs, "redis-cluster-addrs", "comma-separated host:port of some Redis Cluster nodes; --redis-url then has no host")
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
	path, err := lookCommand(c.Command[0])
	if err != nil {
		return c, err
	}
	c.Path = path
	return c, nil
}

// lookCommand returns the path of the executable name (a path, or a name
// looked up in PATH), or an error that names it and says what is wrong.
func lookCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, nil
	case errors.Is(err, exec.ErrDot):
		return "", fmt.Errorf("command %q: found in the current directory through PATH; name it ./%s", name, name)
	case errors.Is(err, exec.ErrNotFound):
		return "", fmt.Errorf("command %q: not found in PATH", name)
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("command %q: no such file", name)
	case errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("command %q: is a directory", name)
	case errors.Is(err, fs.ErrPermission):
		return "", fmt.Errorf("command %q: is not executable", name)
	}
	return "", fmt.Errorf("command %q: %w", name, err)
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
	client, err := queue.NewClient(queue.ClientConfig{
		URL: redisURL, SentinelMaster: c.RedisSentinelMaster, SentinelAddrs: c.RedisSentinelAddrs,
		SentinelPassword: c.RedisSentinelPassword, ClusterAddrs: c.RedisClusterAddrs,
	})
	if err != nil {
		return redact.Error(err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return fmt.Errorf("connect to redis: %w", redact.Error(err))
	}

	r := newCommandRunner(c, os.Environ(), log)
	w, err := queue.NewWorker(client, queue.WorkerOptions{
		Prefix: c.RedisPrefix, Queue: c.Queue, Concurrency: c.Concurrency, ID: c.ID,
		WorkerTimeout: c.Lease, Logger: log,
	}, r.handle)
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
		log.Info("stopping: taking no more jobs, waiting for the running commands", "running", r.runningCount())
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
	n := r.abortAll()
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

// commandRunner runs the command for each job: it is the worker's Handler.
type commandRunner struct {
	path        string
	args        []string
	env         []string // the worker's environment, less FRESHEN_*
	grace       time.Duration
	statusEvery time.Duration
	log         *slog.Logger

	mu      sync.Mutex
	aborted bool
	abort   chan struct{}  // closed when running commands must be killed
	running sync.WaitGroup // commands started and not yet waited for
	count   atomic.Int64   // commands running
	killed  atomic.Int64   // commands killed by the abort
}

// newCommandRunner returns the runner of c's command, which gets environ
// less its FRESHEN_* variables (the worker's settings, such as the Redis
// URL) and plus those of its job.
func newCommandRunner(c workConfig, environ []string, log *slog.Logger) *commandRunner {
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "FRESHEN_") {
			env = append(env, kv)
		}
	}
	return &commandRunner{
		path: c.Path, args: c.Command, env: env, grace: c.Grace, statusEvery: c.StatusInterval,
		log: log, abort: make(chan struct{}),
	}
}

// handle is the worker's Handler.
func (r *commandRunner) handle(ctx context.Context, job queue.Job) error {
	return r.run(ctx, job.Job, job.Status)
}

// runningCount returns how many commands run.
func (r *commandRunner) runningCount() int64 { return r.count.Load() }

// begin counts a command about to start, or reports false if the runner is
// aborting.
func (r *commandRunner) begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted {
		return false
	}
	r.running.Add(1)
	r.count.Add(1)
	return true
}

// end counts a command waited for.
func (r *commandRunner) end() {
	r.count.Add(-1)
	r.running.Done()
}

// abortAll kills the running commands, makes every handler keep its job
// without posting anything (the process is about to exit; the jobs are
// given back as those of a dead worker), and returns, once every command
// has been waited for, how many it killed.
func (r *commandRunner) abortAll() int64 {
	r.mu.Lock()
	r.aborted = true
	close(r.abort)
	r.mu.Unlock()
	r.running.Wait()
	return r.killed.Load()
}

// hold blocks for good: the handler neither returns nor posts an outcome.
func hold() { select {} }

// run runs the command for job and returns its outcome as a Handler does.
// status posts a status outcome.
func (r *commandRunner) run(ctx context.Context, job refresh.Job, status func(context.Context, string) error) error {
	log := r.log.With("model_id", job.ModelID, "attempt_uid", job.AttemptUID)
	if !r.begin() {
		hold()
	}
	started := time.Now()
	p, err := r.start(job)
	if err != nil {
		r.end()
		log.Error("start command", "err", err)
		return queue.Fail(kindExecFailed, fmt.Sprintf("start %s: %v", r.args[0], err))
	}
	statuses := newStatusPoster(r.statusEvery, func(msg string) {
		if err := status(ctx, msg); err != nil && ctx.Err() == nil {
			log.Warn("post status", "err", err)
		}
	})
	out := &jobOutput{log: log}
	var readers sync.WaitGroup
	readers.Go(func() { out.readErr(readLines(p.stderr, workMaxLine, out.stderrLine)) })
	readers.Go(func() {
		out.readErr(readLines(p.stdout, workMaxLine, func(line []byte, cut bool) { out.stdoutLine(line, cut, statuses.put) }))
	})

	var stopped error
	aborted := false
	select {
	case <-p.exited:
	case <-ctx.Done():
		stopped = context.Cause(ctx)
		log.Info("stopping the command", "why", stopped.Error(), "grace", r.grace)
		p.stop(r.grace)
	case <-r.abort:
		aborted = true
		log.Warn("killing the command: the worker is stopping", "grace", r.grace)
		p.stop(r.grace)
	}
	// What the command left running in its group goes with it; output
	// still held by a process that left the group is not waited for.
	signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	deadline := time.Now().Add(r.grace)
	_ = p.stdout.SetReadDeadline(deadline)
	_ = p.stderr.SetReadDeadline(deadline)
	readers.Wait()
	p.stdout.Close()
	p.stderr.Close()
	statuses.close()
	if aborted {
		r.killed.Add(1)
		r.end()
		hold()
	}
	r.end()

	e := ended{stopped: stopped, stderr: out.tail(), result: out.result, unreadable: out.unreadable}
	e.exitKind, e.exitText = exitOf(p.cmd.ProcessState)
	res := e.outcome(time.Now())
	attrs := []any{"exit", e.exitText, "took", time.Since(started).Round(time.Millisecond)}
	var result *queue.Result
	switch {
	case errors.As(res, &result) && result.Snooze:
		attrs = append(attrs, "outcome", "snooze", "message", res.Error())
	case result != nil:
		attrs = append(attrs, "outcome", "success", "unchanged", true)
	case res != nil:
		var je *queue.JobError
		if errors.As(res, &je) {
			attrs = append(attrs, "kind", je.Kind)
		}
		attrs = append(attrs, "outcome", "failure", "message", res.Error())
	default:
		attrs = append(attrs, "outcome", "success")
	}
	if n := out.dropped; n > 0 {
		attrs = append(attrs, "output_lines_not_logged", n)
	}
	log.Info("command ended", attrs...)
	return res
}

// process is a command started for a job.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *os.File      // the reading ends
	exited         chan struct{} // closed once cmd.Wait has returned
}

// start starts the command of job in a process group of its own.
func (r *commandRunner) start(job refresh.Job) (*process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	payload := job.Payload
	if len(payload) == 0 {
		payload = []byte("null")
	}
	deadline := ""
	if !job.DeadlineAt.IsZero() {
		deadline = job.DeadlineAt.UTC().Format(time.RFC3339Nano)
	}
	cmd := exec.Command(r.path, r.args[1:]...)
	cmd.Args[0] = r.args[0]
	cmd.Env = append(slices.Clip(r.env),
		"FRESHEN_MODEL_ID="+job.ModelID,
		"FRESHEN_ATTEMPT_UID="+job.AttemptUID,
		"FRESHEN_ATTEMPT_NO="+strconv.Itoa(job.AttemptNo),
		"FRESHEN_DEADLINE_AT="+deadline,
		"FRESHEN_QUEUE="+job.Queue,
	)
	cmd.Stdin = io.MultiReader(bytes.NewReader(payload), strings.NewReader("\n"))
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = processAttr()
	// A child that keeps stdin open without reading it does not hold up
	// Wait past this.
	cmd.WaitDelay = r.grace
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdout: outR, stderr: errR, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the outcome reads cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL if the command has
// not exited grace later, and returns once it has exited.
func (p *process) stop(grace time.Duration) {
	signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

// signalGroup sends sig to the process group pgid; a group that is gone
// already is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// exitOf returns the failure kind of a command that ended as ps says ("" for
// exit status 0) and a text for its message.
func exitOf(ps *os.ProcessState) (kind, text string) {
	if ps == nil {
		return "error", "the command's exit status is unknown"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG")
		if name == "" {
			name = strconv.Itoa(int(ws.Signal()))
		}
		return "signal_" + name, "killed by signal SIG" + name
	}
	code := ps.ExitCode()
	if code == 0 {
		return "", "exit status 0"
	}
	return "exit_" + strconv.Itoa(code), "exit status " + strconv.Itoa(code)
}

// readLines calls f with each line of rd, without its line ending, until
// the end of rd or an error, which it returns (nil at the end). A line
// longer than max is passed cut to its first max bytes, with cut set, and
// the rest of it is skipped. f must not keep line.
func readLines(rd io.Reader, max int, f func(line []byte, cut bool)) error {
	br := bufio.NewReaderSize(rd, max)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			f(trimEOL(line), false)
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			f(line, true)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == nil {
				continue
			}
		case len(line) > 0:
			f(trimEOL(line), false)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// cutText returns s made valid UTF-8 and cut to at most max bytes on a
// character boundary, ending with queue.TruncatedMarker if it was cut or if
// cut is set (the line it comes from was cut already).
func cutText(s string, max int, cut bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max && !cut {
		return s
	}
	n := min(len(s), max-len(queue.TruncatedMarker))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + queue.TruncatedMarker
}

// jobOutput is what the worker keeps of a command's output. stdoutLine and
// stderrLine are each called from one goroutine; the fields they set are read
// once both are done.
type jobOutput struct {
	log *slog.Logger

	mu            sync.Mutex
	logged, bytes int // lines and bytes logged
	dropped       int // lines not logged, over the bounds

	// result is the last stdout line that is a JSON object without a
	// status member; unreadable is set when a longer line starting with {
	// came after it.
	result     []byte
	unreadable bool

	lines [workTailLines]string // the last non-blank lines of stderr, a ring
	next  int
	total int
}

// stdoutLine reads one line of stdout: a status line is passed to status, a
// JSON object kept as the result line so far, any other line logged.
func (o *jobOutput) stdoutLine(line []byte, cut bool, status func(string)) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 {
		return
	}
	if t[0] == '{' {
		if cut {
			o.unreadable = true
			o.log.Warn("stdout: a line that starts with { is too long to be read", "max_bytes", workMaxLine)
			return
		}
		var members map[string]json.RawMessage
		if json.Unmarshal(t, &members) == nil {
			if raw, ok := members["status"]; ok {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					o.log.Warn("stdout: a status line's status must be a string", "got", cutText(string(raw), 100, false))
					return
				}
				o.log.Debug("status", "status", cutText(s, workLogLine, false))
				status(s)
				return
			}
			o.result = append(o.result[:0], t...)
			o.unreadable = false
			return
		}
	}
	o.forward("stdout", line, cut)
}

// stderrLine logs one line of stderr and keeps it among the last lines.
func (o *jobOutput) stderrLine(line []byte, cut bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	o.forward("stderr", line, cut)
	o.lines[o.next] = cutText(string(line), workTailBytes, cut)
	o.next = (o.next + 1) % len(o.lines)
	o.total++
}

// forward logs a line of output if the job's log budget allows.
func (o *jobOutput) forward(stream string, line []byte, cut bool) {
	text := cutText(string(line), workLogLine, cut)
	o.mu.Lock()
	ok := o.logged < workLogLines && o.bytes+len(text) <= workLogBytes
	if ok {
		o.logged++
		o.bytes += len(text)
	} else {
		o.dropped++
	}
	o.mu.Unlock()
	if ok {
		o.log.Info("output", "stream", stream, "line", text)
	}
}

// readErr logs an error that ended the reading of an output.
func (o *jobOutput) readErr(err error) {
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		o.log.Warn("stopped reading the command's output: a process that left its group holds it open")
	default:
		o.log.Warn("read the command's output", "err", err)
	}
}

// tail returns the last lines of stderr, newest last, within
// workTailBytes; "…" first if older lines were left out.
func (o *jobOutput) tail() string {
	n := min(o.total, len(o.lines))
	var kept []string
	size := 0
	for i := 1; i <= n; i++ {
		l := o.lines[(o.next-i+len(o.lines))%len(o.lines)]
		cost := len(l)
		if len(kept) > 0 {
			cost++ // the newline between two lines
		}
		if size+cost > workTailBytes {
			break
		}
		size += cost
		kept = append(kept, l)
	}
	slices.Reverse(kept)
	if len(kept) < o.total {
		kept = append([]string{"…"}, kept...)
	}
	return strings.Join(kept, "\n")
}

// statusPoster posts the statuses put to it, at most one every interval:
// the latest put wins.
type statusPoster struct {
	post    func(string)
	every   time.Duration
	mu      sync.Mutex
	latest  string
	pending bool
	wake    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

func newStatusPoster(every time.Duration, post func(string)) *statusPoster {
	s := &statusPoster{post: post, every: every, wake: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{})}
	go s.loop()
	return s
}

func (s *statusPoster) put(msg string) {
	s.mu.Lock()
	s.latest, s.pending = msg, true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *statusPoster) loop() {
	defer close(s.stopped)
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		s.mu.Lock()
		msg, ok := s.latest, s.pending
		s.pending = false
		s.mu.Unlock()
		if !ok {
			continue
		}
		s.post(msg)
		select {
		case <-time.After(s.every):
		case <-s.done:
			return
		}
	}
}

// close stops posting, drops a status not yet posted, and returns once no
// post is under way.
func (s *statusPoster) close() {
	close(s.done)
	<-s.stopped
}

// ended is how a command ended, as its worker saw it.
type ended struct {
	exitKind   string // exit_<code> or signal_<NAME>; "" for exit status 0
	exitText   string // "exit status 3", "killed by signal SIGTERM"
	stopped    error  // why the worker stopped the command; nil if it did not
	stderr     string // the last lines of stderr
	result     []byte // the last JSON line; nil if none
	unreadable bool   // a line starting with { after it was too long to read
}

// outcome returns what the worker reports for the command at now: nil for
// a success, a *queue.Result for an unchanged success (queue.Unchanged) or
// a snooze (queue.Snooze, queue.SnoozeUntil), else a failure built with
// queue.Fail.
func (e ended) outcome(now time.Time) error {
	if e.unreadable {
		return e.badOutput(fmt.Sprintf("a line that starts with { is longer than %d bytes and cannot be read", workMaxLine))
	}
	if e.result == nil {
		if e.exitKind == "" {
			return nil
		}
		return queue.Fail(e.exitKind, e.exitMessage())
	}
	r, err := parseResult(e.result, now)
	if err != nil {
		return e.badOutput(err.Error())
	}
	outcome := r.outcome
	if outcome == "" {
		outcome = "success"
		if e.exitKind != "" {
			outcome = "failure"
		}
	}
	if outcome != "failure" {
		if name := r.failureField(); name != "" {
			if r.outcome == "" {
				return e.badOutput(name + ": only with a failure, and the command exited with status 0 and gave no outcome")
			}
			return e.badOutput(fmt.Sprintf("%s: only with outcome failure, got outcome %q", name, outcome))
		}
	}
	if outcome != "snooze" {
		if name := r.snoozeField(); name != "" {
			return e.badOutput(fmt.Sprintf("%s: only with outcome snooze, got outcome %q", name, outcome))
		}
	}
	switch outcome {
	case "success":
		return nil
	case "unchanged":
		return queue.Unchanged()
	case "snooze":
		if !r.untilTime.IsZero() {
			return queue.SnoozeUntil(r.untilTime)
		}
		return queue.Snooze(r.forDuration)
	}
	kind, message := e.exitKind, e.exitMessage()
	if kind == "" {
		kind, message = queue.KindError, e.stderr
		if message == "" {
			message = "the command reported a failure"
		}
	}
	if r.kind != nil {
		kind = *r.kind
	}
	if r.message != nil {
		message = *r.message
	}
	err = queue.Fail(kind, message)
	if r.retryable != nil && !*r.retryable {
		err = queue.Permanent(err)
	}
	if r.userMessage != nil && *r.userMessage != "" {
		err = queue.UserMessage(err, *r.userMessage)
	}
	return err
}

// exitMessage is the message of a failure said by the exit status.
func (e ended) exitMessage() string {
	msg := e.exitText
	switch {
	case errors.Is(e.stopped, context.DeadlineExceeded):
		msg += " (stopped at the job's deadline)"
	case e.stopped != nil:
		msg += " (stopped: " + e.stopped.Error() + ")"
	}
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

// badOutput is a failure of kind bad_output about the last JSON line.
func (e ended) badOutput(why string) error {
	return queue.Fail(kindBadOutput, "stdout: last JSON line: "+why+" ("+e.exitText+")")
}

// resultLine is a command's last JSON line, its types checked.
type resultLine struct {
	outcome     string
	kind        *string
	message     *string
	retryable   *bool
	userMessage *string
	until       *string
	forText     *string
	// untilTime and forDuration are a snooze's until or for, parsed.
	untilTime   time.Time
	forDuration time.Duration
}

// failureField returns the name of the first member given that only goes
// with a failure, or "".
func (r resultLine) failureField() string {
	switch {
	case r.kind != nil:
		return "kind"
	case r.message != nil:
		return "message"
	case r.retryable != nil:
		return "retryable"
	case r.userMessage != nil:
		return "user_message"
	}
	return ""
}

// snoozeField returns the name of the first member given that only goes
// with a snooze, or "".
func (r resultLine) snoozeField() string {
	switch {
	case r.until != nil:
		return "until"
	case r.forText != nil:
		return "for"
	}
	return ""
}

// parseResult checks the members of a JSON line at now and returns them,
// or an error naming the first member at fault. Members of other names
// are ignored; null counts as absent.
func parseResult(line []byte, now time.Time) (resultLine, error) {
	var r resultLine
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return r, fmt.Errorf("invalid json: %v", err)
	}
	str := func(name string) (*string, error) {
		raw, ok := members[name]
		if !ok || string(raw) == "null" {
			return nil, nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s: must be a string, got %s", name, cutText(string(raw), 40, false))
		}
		return &s, nil
	}
	var err error
	var outcome *string
	if outcome, err = str("outcome"); err != nil {
		return r, err
	}
	if outcome != nil {
		switch *outcome {
		case "success", "failure", "snooze", "unchanged":
			r.outcome = *outcome
		default:
			return r, fmt.Errorf("outcome: must be success, failure, snooze or unchanged, got %q", cutText(*outcome, 40, false))
		}
	}
	if r.kind, err = str("kind"); err != nil {
		return r, err
	}
	if k := r.kind; k != nil {
		switch {
		case *k == "":
			return r, errors.New("kind: must not be empty")
		case len(*k) > queue.DefaultMaxKindBytes:
			return r, fmt.Errorf("kind: must be at most %d bytes, got %d", queue.DefaultMaxKindBytes, len(*k))
		case strings.ContainsRune(*k, 0):
			return r, errors.New("kind: must not contain NUL (\\u0000)")
		}
	}
	if r.message, err = str("message"); err != nil {
		return r, err
	}
	if raw, ok := members["retryable"]; ok && string(raw) != "null" {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return r, fmt.Errorf("retryable: must be true or false, got %s", cutText(string(raw), 40, false))
		}
		r.retryable = &b
	}
	if r.userMessage, err = str("user_message"); err != nil {
		return r, err
	}
	if r.until, err = str("until"); err != nil {
		return r, err
	}
	if r.forText, err = str("for"); err != nil {
		return r, err
	}
	if r.outcome != "snooze" {
		return r, nil
	}
	switch {
	case r.until == nil && r.forText == nil:
		return r, errors.New("until or for: a snooze needs one of them")
	case r.until != nil && r.forText != nil:
		return r, errors.New("until and for: give only one of them")
	case r.until != nil:
		t, err := time.Parse(time.RFC3339Nano, *r.until)
		if err != nil {
			return r, fmt.Errorf("until: must be an RFC 3339 time, got %q", cutText(*r.until, 40, false))
		}
		if !t.After(now) {
			return r, fmt.Errorf("until: must be in the future, got %s", *r.until)
		}
		r.untilTime = t
	default:
		d, err := refresh.ParseDuration(*r.forText)
		if err != nil {
			return r, fmt.Errorf("for: %v", err)
		}
		if d <= 0 {
			return r, fmt.Errorf("for: must be > 0, got %q", *r.forText)
		}
		r.forDuration = time.Duration(d)
	}
	return r, nil
}
