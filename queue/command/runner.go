//go:build unix

package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// Bounds of what a Runner reads from a command.
const (
	// MaxLine is the longest output line read whole; the rest of a longer
	// line is skipped.
	MaxLine = 64 << 10
	// logBytes and logLines bound how much of a job's output goes to the
	// log; the lines beyond are only counted.
	logBytes = 64 << 10
	logLines = 1000
	// logLine is the longest output line put in the log.
	logLine = 1 << 10
	// tailLines and tailBytes bound the last lines of stderr that end a
	// failure's message.
	tailLines = 10
	tailBytes = 2 << 10
)

// Failure kinds of a Runner besides exit_<code> and signal_<NAME>.
const (
	// KindBadOutput: the command's last JSON line cannot be reported.
	KindBadOutput = "bad_output"
	// KindExecFailed: the command could not be started.
	KindExecFailed = "exec_failed"
)

// LookPath returns the path of the executable name (a path, or a name
// looked up in PATH), or an error that names it and says what is wrong.
func LookPath(name string) (string, error) {
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

// Config configures a Runner.
type Config struct {
	// Path is the executable (see LookPath); Args its arguments, Args[0]
	// the name it is given as. Both are required.
	Path string
	Args []string
	// Environ is the environment of the worker: the command gets it less
	// its FRESHEN_* variables (the worker's own settings, such as its
	// Redis URL), plus the job's FRESHEN_MODEL_ID, FRESHEN_ATTEMPT_UID,
	// FRESHEN_ATTEMPT_NO, FRESHEN_DEADLINE_AT and FRESHEN_QUEUE.
	Environ []string
	// Grace is the time between SIGTERM and SIGKILL when a command is
	// stopped (default 10s).
	Grace time.Duration
	// StatusInterval is the least time between two statuses of a job
	// (default 1s); the latest status line wins.
	StatusInterval time.Duration
	// Logger gets the command's output and what happens to it (default
	// slog.Default()).
	Logger *slog.Logger
	// Clock times the commands: an attempt's end, the grace before
	// SIGKILL, the least time between statuses (default
	// refresh.SystemClock).
	Clock refresh.Clock
}

// Defaults of Config.
const (
	DefaultGrace          = 10 * time.Second
	DefaultStatusInterval = time.Second
)

// Runner runs a command for each job; its Handle is a queue.Handler.
type Runner struct {
	path        string
	args        []string
	env         []string // the worker's environment, less FRESHEN_*
	grace       time.Duration
	statusEvery time.Duration
	log         *slog.Logger
	clock       refresh.Clock

	mu      sync.Mutex
	aborted bool
	abort   chan struct{}  // closed when running commands must be killed
	running sync.WaitGroup // commands started and not yet waited for
	count   atomic.Int64   // commands running
	killed  atomic.Int64   // commands killed by the abort
}

// New returns the runner of cfg's command, or an error naming what is
// missing.
func New(cfg Config) (*Runner, error) {
	if cfg.Path == "" || len(cfg.Args) == 0 {
		return nil, errors.New("command: Path and Args are required")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.StatusInterval <= 0 {
		cfg.StatusInterval = DefaultStatusInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = refresh.SystemClock{}
	}
	var env []string
	for _, kv := range cfg.Environ {
		if !strings.HasPrefix(kv, "FRESHEN_") {
			env = append(env, kv)
		}
	}
	return &Runner{
		path: cfg.Path, args: cfg.Args, env: env, grace: cfg.Grace, statusEvery: cfg.StatusInterval,
		log: cfg.Logger, clock: cfg.Clock, abort: make(chan struct{}),
	}, nil
}

// Handle runs the command for job and returns its outcome: it is a
// queue.Handler.
func (r *Runner) Handle(ctx context.Context, job queue.Job) error {
	return r.Run(ctx, job.Job, job.Status)
}

// Running returns how many commands run.
func (r *Runner) Running() int64 { return r.count.Load() }

// begin counts a command about to start, or reports false if the runner is
// aborting.
func (r *Runner) begin() bool {
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
func (r *Runner) end() {
	r.count.Add(-1)
	r.running.Done()
}

// Abort kills the running commands, makes every handler keep its job
// without posting anything (the process is about to exit; the jobs are
// given back as those of a dead worker), and returns, once every command
// has been waited for, how many it killed.
func (r *Runner) Abort() int64 {
	r.mu.Lock()
	r.aborted = true
	close(r.abort)
	r.mu.Unlock()
	r.running.Wait()
	return r.killed.Load()
}

// hold blocks for good: the handler neither returns nor posts an outcome.
func hold() { select {} }

// Run runs the command for job and returns its outcome as a queue.Handler
// does: nil for a success, a *queue.Result for an unchanged success or a
// snooze, else a failure (a *queue.JobError). status posts a status.
func (r *Runner) Run(ctx context.Context, job refresh.Job, status func(context.Context, string) error) error {
	log := r.log.With("model_id", job.ModelID, "attempt_uid", job.AttemptUID)
	if !r.begin() {
		hold()
	}
	started := r.clock.Now()
	p, err := r.start(job)
	if err != nil {
		r.end()
		log.Error("start command", "err", err)
		return queue.Fail(KindExecFailed, fmt.Sprintf("start %s: %v", r.args[0], err))
	}
	statuses := newStatusPoster(r.clock, r.statusEvery, func(msg string) {
		if err := status(ctx, msg); err != nil && ctx.Err() == nil {
			log.Warn("post status", "err", err)
		}
	})
	out := &jobOutput{log: log}
	var readers sync.WaitGroup
	readers.Go(func() { out.readErr(readLines(p.stderr, MaxLine, out.stderrLine)) })
	readers.Go(func() {
		out.readErr(readLines(p.stdout, MaxLine, func(line []byte, cut bool) { out.stdoutLine(line, cut, statuses.put) }))
	})

	var stopped error
	aborted := false
	select {
	case <-p.exited:
	case <-ctx.Done():
		stopped = context.Cause(ctx)
		log.Info("stopping the command", "why", stopped.Error(), "grace", r.grace)
		p.stop(r.clock, r.grace)
	case <-r.abort:
		aborted = true
		log.Warn("killing the command: the worker is stopping", "grace", r.grace)
		p.stop(r.clock, r.grace)
	}
	// What the command left running in its group goes with it; output
	// still held by a process that left the group is not waited for.
	signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	deadline := r.clock.Now().Add(r.grace)
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
	now := r.clock.Now()
	res := e.outcome(now)
	attrs := []any{"exit", e.exitText, "took", now.Sub(started).Round(time.Millisecond)}
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
func (r *Runner) start(job refresh.Job) (*process, error) {
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
func (p *process) stop(clock refresh.Clock, grace time.Duration) {
	signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-clock.After(grace):
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
