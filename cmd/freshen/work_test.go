//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// workScript is the command of the tests (testdata/work.sh): what it does
// is its payload's "do".
const workScript = "testdata/work.sh"

func TestWorkFlags(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	redis := []string{"--redis-url", "redis://127.0.0.1:1/0"}
	for _, tt := range []struct {
		name string
		args []string
		err  string
	}{
		{"no command", redis, "a command must follow the flags"},
		{"concurrency", append([]string{"--concurrency", "0"}, append(redis, workScript)...), "--concurrency: must be >= 1, got 0"},
		{"queue", append([]string{"--queue", "a:b"}, append(redis, workScript)...), `--queue: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "a:b"`},
		{"id", append([]string{"--id", "-x"}, append(redis, workScript)...), `--id: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got "-x"`},
		{"grace", append([]string{"--grace", "0s"}, append(redis, workScript)...), "--grace: must be > 0, got 0s"},
		{"status interval", append([]string{"--status-interval", "-1s"}, append(redis, workScript)...), "--status-interval: must be > 0, got -1s"},
		{"shutdown timeout", append([]string{"--shutdown-timeout", "-1s"}, append(redis, workScript)...), "--shutdown-timeout: must be >= 0, got -1s"},
		{"no such file", append(redis, "./no-such-script.sh"), `command "./no-such-script.sh": no such file`},
		{"not executable", append(redis, plain), fmt.Sprintf("command %q: is not executable", plain)},
		{"directory", append(redis, dir), fmt.Sprintf("command %q: is a directory", dir)},
		{"not in PATH", append(redis, "no-such-command-anywhere"), `command "no-such-command-anywhere": not found in PATH`},
		{"log level", append([]string{"--log-level", "loud"}, append(redis, workScript)...), `--log-level: must be debug, info, warn or error, got "loud"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"work"}, tt.args...), nil, &bytes.Buffer{}, &stderr)
			require.Equal(t, 2, code, stderr.String())
			require.Contains(t, stderr.String(), "freshen work: "+tt.err)
		})
	}
	t.Run("no redis", func(t *testing.T) {
		t.Setenv("REDIS_URL", "")
		var stderr bytes.Buffer
		require.Equal(t, 2, run(context.Background(), []string{"work", workScript}, nil, &bytes.Buffer{}, &stderr))
		require.Equal(t, "freshen work: --redis-url (or REDIS_URL) must be set\n", stderr.String())
	})
	t.Run("valid", func(t *testing.T) {
		c, err := parseWorkFlags(append(redis, "--", "sh", "-c", "exit 0"), &bytes.Buffer{})
		require.NoError(t, err)
		require.Equal(t, []string{"sh", "-c", "exit 0"}, c.Command)
		require.True(t, filepath.IsAbs(c.Path), c.Path)
		require.Equal(t, "default", c.Queue)
		require.Equal(t, 10*time.Second, c.Grace)
	})
}

// TestWorkOutcome checks what the worker reports for each way a command
// can end: by its exit status, and by its last JSON line.
func TestWorkOutcome(t *testing.T) {
	now := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	exit0 := ended{exitText: "exit status 0"}
	exit3 := ended{exitKind: "exit_3", exitText: "exit status 3", stderr: "no input\nbye"}
	line := func(e ended, json string) ended { e.result = []byte(json); return e }
	type want struct {
		success bool
		// result is the snooze or unchanged success the worker posts.
		result    *queue.Result
		kind      string
		message   string // the whole message, or with contains, a part
		contains  bool
		permanent bool
		user      string
	}
	bad := func(msg string) want { return want{kind: "bad_output", message: msg, contains: true} }
	for _, tt := range []struct {
		name string
		e    ended
		want want
	}{
		{"exit 0", exit0, want{success: true}},
		{"exit 3", exit3, want{kind: "exit_3", message: "exit status 3: no input\nbye"}},
		{"exit 3 without stderr", ended{exitKind: "exit_3", exitText: "exit status 3"}, want{kind: "exit_3", message: "exit status 3"}},
		{"signal", ended{exitKind: "signal_SEGV", exitText: "killed by signal SIGSEGV"}, want{kind: "signal_SEGV", message: "killed by signal SIGSEGV"}},
		{"stopped at the deadline", ended{exitKind: "signal_TERM", exitText: "killed by signal SIGTERM", stopped: context.DeadlineExceeded},
			want{kind: "signal_TERM", message: "killed by signal SIGTERM (stopped at the job's deadline)"}},
		{"stopped by a cancel", ended{exitKind: "signal_KILL", exitText: "killed by signal SIGKILL", stopped: queue.ErrCancelled},
			want{kind: "signal_KILL", message: "killed by signal SIGKILL (stopped: attempt revoked: cancelled)"}},
		{"a failure in full", line(exit3, `{"outcome": "failure", "kind": "validation", "message": "row 3: no date", "retryable": false, "user_message": "Row 3 of your file has no date."}`),
			want{kind: "validation", message: "row 3: no date", permanent: true, user: "Row 3 of your file has no date."}},
		{"the kind of an exit failure", line(exit3, `{"kind": "http_503"}`), want{kind: "http_503", message: "exit status 3: no input\nbye"}},
		{"retryable true", line(exit3, `{"retryable": true}`), want{kind: "exit_3", message: "exit status 3: no input\nbye"}},
		{"null is absent", line(exit3, `{"kind": null, "outcome": null}`), want{kind: "exit_3", message: "exit status 3: no input\nbye"}},
		{"other members are ignored", line(exit0, `{"rows": 5, "status_code": 200}`), want{success: true}},
		{"success wins over the exit status", line(exit3, `{"outcome": "success"}`), want{success: true}},
		{"failure with exit status 0", line(exit0, `{"outcome": "failure"}`), want{kind: "error", message: "the command reported a failure"}},
		{"failure with exit status 0 and stderr", line(ended{exitText: "exit status 0", stderr: "half done"}, `{"outcome": "failure", "kind": "partial"}`),
			want{kind: "partial", message: "half done"}},
		{"unchanged", line(exit0, `{"outcome": "unchanged"}`), want{result: &queue.Result{Unchanged: true}}},
		{"unchanged wins over the exit status", line(exit3, `{"outcome": "unchanged"}`), want{result: &queue.Result{Unchanged: true}}},
		{"snooze for", line(exit0, `{"outcome": "snooze", "for": "10m"}`), want{result: &queue.Result{Snooze: true, For: 10 * time.Minute}}},
		{"snooze for in ISO 8601", line(exit3, `{"outcome": "snooze", "for": "PT1H30M"}`), want{result: &queue.Result{Snooze: true, For: 90 * time.Minute}}},
		{"snooze until", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T07:00:00Z"}`),
			want{result: &queue.Result{Snooze: true, Until: time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)}}},
		{"snooze until in another zone", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T08:00:00+01:00"}`),
			want{result: &queue.Result{Snooze: true, Until: time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)}}},
		{"unchanged with snooze fields", line(exit0, `{"outcome": "unchanged", "for": "1m"}`), bad(`for: only with outcome snooze, got outcome "unchanged"`)},
		{"unchanged with failure fields", line(exit0, `{"outcome": "unchanged", "kind": "x"}`), bad(`kind: only with outcome failure, got outcome "unchanged"`)},
		{"snooze needs a time", line(exit0, `{"outcome": "snooze"}`), bad("stdout: last JSON line: until or for: a snooze needs one of them")},
		{"snooze with both", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T07:00:00Z", "for": "1h"}`), bad("until and for: give only one of them")},
		{"snooze until the past", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T05:00:00Z"}`), bad("until: must be in the future, got 2026-03-02T05:00:00Z")},
		{"snooze until not a time", line(exit0, `{"outcome": "snooze", "until": "tomorrow"}`), bad(`until: must be an RFC 3339 time, got "tomorrow"`)},
		{"snooze for not a duration", line(exit0, `{"outcome": "snooze", "for": "a while"}`), bad(`for: `)},
		{"snooze for zero", line(exit0, `{"outcome": "snooze", "for": "0s"}`), bad(`for: must be > 0, got "0s"`)},
		{"unknown outcome", line(exit0, `{"outcome": "done"}`), bad(`stdout: last JSON line: outcome: must be success, failure, snooze or unchanged, got "done" (exit status 0)`)},
		{"status is not a result", line(exit0, `{"outcome": "status"}`), bad(`outcome: must be success, failure, snooze or unchanged, got "status"`)},
		{"outcome not a string", line(exit0, `{"outcome": 1}`), bad("outcome: must be a string, got 1")},
		{"kind not a string", line(exit3, `{"kind": 42}`), bad("kind: must be a string, got 42")},
		{"message not a string", line(exit3, `{"message": ["a"]}`), bad(`message: must be a string, got ["a"]`)},
		{"retryable not a boolean", line(exit3, `{"retryable": "no"}`), bad(`retryable: must be true or false, got "no"`)},
		{"user_message not a string", line(exit3, `{"user_message": {}}`), bad("user_message: must be a string, got {}")},
		{"empty kind", line(exit3, `{"kind": ""}`), bad("kind: must not be empty")},
		{"long kind", line(exit3, `{"kind": "`+strings.Repeat("k", 65)+`"}`), bad("kind: must be at most 64 bytes, got 65")},
		{"kind with NUL", line(exit3, `{"kind": "a\u0000b"}`), bad("kind: must not contain NUL")},
		{"failure fields on exit status 0", line(exit0, `{"kind": "validation"}`), bad("kind: only with a failure, and the command exited with status 0 and gave no outcome")},
		{"failure fields on a success", line(exit3, `{"outcome": "success", "message": "done"}`), bad(`message: only with outcome failure, got outcome "success"`)},
		{"failure fields on a snooze", line(exit0, `{"outcome": "snooze", "for": "1m", "user_message": "x"}`), bad(`user_message: only with outcome failure, got outcome "snooze"`)},
		{"snooze fields on a failure", line(exit3, `{"outcome": "failure", "until": "2026-03-02T07:00:00Z"}`), bad(`until: only with outcome snooze, got outcome "failure"`)},
		{"an unreadable line", ended{exitText: "exit status 0", unreadable: true}, bad("a line that starts with { is longer than 65536 bytes and cannot be read")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.e.outcome(now)
			if tt.want.success {
				require.NoError(t, err)
				return
			}
			if tt.want.result != nil {
				var r *queue.Result
				require.ErrorAs(t, err, &r)
				require.Equal(t, tt.want.result.Snooze, r.Snooze)
				require.Equal(t, tt.want.result.Unchanged, r.Unchanged)
				require.Equal(t, tt.want.result.For, r.For)
				require.True(t, tt.want.result.Until.Equal(r.Until), "until: want %s, got %s", tt.want.result.Until, r.Until)
				return
			}
			var je *queue.JobError
			require.ErrorAs(t, err, &je)
			require.Equal(t, tt.want.kind, je.Kind)
			if tt.want.contains {
				require.Contains(t, err.Error(), tt.want.message)
			} else {
				require.Equal(t, tt.want.message, err.Error())
			}
			require.Equal(t, tt.want.permanent, je.Permanent)
			require.Equal(t, tt.want.user, je.UserMessage)
		})
	}
}

func TestReadLines(t *testing.T) {
	type line struct {
		text string
		cut  bool
	}
	for _, tt := range []struct {
		name string
		in   string
		want []line
	}{
		{"lines", "a\nb\r\n\nlast", []line{{"a", false}, {"b", false}, {"", false}, {"last", false}}},
		{"a long line", "abc\n" + strings.Repeat("x", 40) + "\nend\n", []line{{"abc", false}, {strings.Repeat("x", 16), true}, {"end", false}}},
		{"a long last line", strings.Repeat("y", 17), []line{{strings.Repeat("y", 16), true}}},
		{"exactly the buffer", strings.Repeat("z", 15) + "\n", []line{{strings.Repeat("z", 15), false}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []line
			err := readLines(strings.NewReader(tt.in), 16, func(l []byte, cut bool) { got = append(got, line{string(l), cut}) })
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestStderrTail(t *testing.T) {
	o := &jobOutput{log: slog.New(slog.DiscardHandler)}
	for i := 1; i <= 30; i++ {
		o.stderrLine([]byte("line "+strconv.Itoa(i)), false)
		o.stderrLine([]byte("  "), false) // blank lines are left out
	}
	require.Equal(t, "…\nline 21\nline 22\nline 23\nline 24\nline 25\nline 26\nline 27\nline 28\nline 29\nline 30", o.tail())

	o = &jobOutput{log: slog.New(slog.DiscardHandler)}
	for range 3 {
		o.stderrLine(bytes.Repeat([]byte("é"), 1000), false) // 2,000 bytes each
	}
	tail := o.tail()
	require.LessOrEqual(t, len(tail), workTailBytes+len("…\n"))
	require.True(t, strings.HasPrefix(tail, "…\n"), tail)
	require.Equal(t, 1, strings.Count(tail, "\n"), "only the last line fits")

	o = &jobOutput{log: slog.New(slog.DiscardHandler)}
	o.stderrLine(bytes.Repeat([]byte("x"), 5000), false)
	tail = o.tail()
	require.True(t, strings.HasSuffix(tail, queue.TruncatedMarker), tail)
	require.LessOrEqual(t, len(tail), workTailBytes)
}

// scriptRun is one run of testdata/work.sh by a commandRunner, outside any
// worker: the statuses it posts are recorded.
type scriptRun struct {
	t   *testing.T
	dir string // where the script leaves its traces
	log *lineLog

	mu       sync.Mutex
	statuses []postedStatus
	posted   chan string
	done     bool
}

type postedStatus struct {
	msg string
	at  time.Time
}

// runner returns a commandRunner of testdata/work.sh with the grace period
// and status interval given, logging to r.log, in the environment environ
// (default: the test's).
func (r *scriptRun) runner(grace, every time.Duration, environ ...string) *commandRunner {
	if len(environ) == 0 {
		environ = os.Environ()
	}
	path, err := lookCommand(workScript)
	require.NoError(r.t, err)
	return newCommandRunner(workConfig{Path: path, Command: []string{workScript}, Grace: grace, StatusInterval: every},
		environ, newLogger(r.log, slog.LevelDebug, redactor{}))
}

func newScriptRun(t *testing.T) *scriptRun {
	return &scriptRun{t: t, dir: t.TempDir(), log: &lineLog{}, posted: make(chan string, 100)}
}

// job returns a job whose payload asks the script to do what, with the
// members of more, and to leave its traces in r.dir.
func (r *scriptRun) job(what string, more ...string) refresh.Job {
	payload := map[string]string{"do": what, "dir": r.dir}
	for i := 0; i+1 < len(more); i += 2 {
		payload[more[i]] = more[i+1]
	}
	b, err := json.Marshal(payload)
	require.NoError(r.t, err)
	now := time.Now()
	return refresh.Job{ModelID: "m-" + what, AttemptUID: "uid-" + what, AttemptNo: 2, Queue: "q", Payload: b,
		StartedAt: now, DeadlineAt: now.Add(time.Hour)}
}

// status records a status posted; it is the runner's status function.
func (r *scriptRun) status(_ context.Context, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	require.False(r.t, r.done, "status %q posted after the outcome", msg)
	r.statuses = append(r.statuses, postedStatus{msg, time.Now()})
	r.posted <- msg
	return nil
}

// run runs job with cr, in the background; the handler's result comes on
// the channel returned.
func (r *scriptRun) run(ctx context.Context, cr *commandRunner, job refresh.Job) <-chan error {
	res := make(chan error, 1)
	go func() {
		err := cr.run(ctx, job, r.status)
		r.mu.Lock()
		r.done = true
		r.mu.Unlock()
		res <- err
	}()
	return res
}

// waitStatus waits for the next status posted and returns it.
func (r *scriptRun) waitStatus() string {
	r.t.Helper()
	select {
	case msg := <-r.posted:
		return msg
	case <-time.After(10 * time.Second):
		r.t.Fatalf("no status posted within 10s; log:\n%s", r.log.tail(20))
		return ""
	}
}

// result waits for the handler's result.
func (r *scriptRun) result(res <-chan error) error {
	r.t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(20 * time.Second):
		r.t.Fatalf("the handler did not return within 20s; log:\n%s", r.log.tail(20))
		return nil
	}
}

// trace returns the content of a file the script wrote, trimmed.
func (r *scriptRun) trace(name string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	require.NoError(r.t, err)
	return strings.TrimSpace(string(b))
}

// pid returns the process id the script wrote in the file name.
func (r *scriptRun) pid(name string) int {
	r.t.Helper()
	pid, err := strconv.Atoi(r.trace(name))
	require.NoError(r.t, err)
	return pid
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the
	// last parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone waits for process pid, sent SIGKILL, to be gone (a signal is
// delivered asynchronously).
func (r *scriptRun) waitGone(pid int, what string) {
	r.t.Helper()
	waitFor(r.t, 5*time.Second, what+" to be gone", func() bool { return !alive(pid) })
}

// failure returns the JobError of a handler's result.
func failure(t *testing.T, err error) *queue.JobError {
	t.Helper()
	var je *queue.JobError
	require.ErrorAs(t, err, &je)
	return je
}

// TestWorkRun runs testdata/work.sh through the handler of freshen work,
// without Redis: what the command is given, and what is reported for each
// way it ends.
func TestWorkRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("success: stdin, environment, directory", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		cr := r.runner(time.Second, time.Second, "PATH="+os.Getenv("PATH"), "KEEP=1", "FRESHEN_REDIS_URL=redis://:secret@host/0")
		job := r.job("succeed")
		require.NoError(t, r.result(r.run(ctx, cr, job)))
		require.Equal(t, string(job.Payload), r.trace("stdin"))
		require.Equal(t, strings.Join([]string{
			"FRESHEN_ATTEMPT_NO=2",
			"FRESHEN_ATTEMPT_UID=uid-succeed",
			"FRESHEN_DEADLINE_AT=" + job.DeadlineAt.UTC().Format(time.RFC3339Nano),
			"FRESHEN_MODEL_ID=m-succeed",
			"FRESHEN_QUEUE=q",
		}, "\n"), r.trace("env"), "the worker's FRESHEN_* settings are not passed on")
		wd, err := os.Getwd()
		require.NoError(t, err)
		require.Equal(t, wd, r.trace("pwd"))
		require.Contains(t, r.log.String(), `"stream":"stdout","line":"rendered m-succeed"`)
		require.Contains(t, r.log.String(), `"msg":"command ended"`)
	})

	t.Run("no payload is null", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		sh, err := lookCommand("sh")
		require.NoError(t, err)
		cr := newCommandRunner(workConfig{Path: sh, Command: []string{"sh", "-c", `read -r p; [ "$p" = null ]`}, Grace: time.Second, StatusInterval: time.Second},
			nil, slog.New(slog.DiscardHandler))
		require.NoError(t, r.result(r.run(ctx, cr, refresh.Job{ModelID: "m", AttemptUID: "u"})))
	})

	t.Run("exit status", func(t *testing.T) {
		t.Parallel()
		for _, code := range []int{1, 3, 64, 255} {
			r := newScriptRun(t)
			err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("exit", "code", strconv.Itoa(code))))
			je := failure(t, err)
			require.Equal(t, "exit_"+strconv.Itoa(code), je.Kind)
			want := fmt.Sprintf("exit status %d: …", code)
			for i := 3; i <= 12; i++ {
				want += fmt.Sprintf("\nproblem %d", i)
			}
			require.Equal(t, want, err.Error())
			require.False(t, je.Permanent)
			require.Equal(t, 12, strings.Count(r.log.String(), `"stream":"stderr"`), "every stderr line is logged")
		}
	})

	t.Run("signal", func(t *testing.T) {
		t.Parallel()
		for _, sig := range []string{"USR1", "SEGV", "KILL"} {
			r := newScriptRun(t)
			err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("signal", "sig", sig)))
			require.Equal(t, "signal_"+sig, failure(t, err).Kind)
			require.Equal(t, "killed by signal SIG"+sig, err.Error())
		}
	})

	t.Run("last JSON line", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "stdout"), []byte(`working
{"status": "half"}
{"outcome": "success"}
{"kind": "validation", "message": "row 3: no date", "retryable": false, "user_message": "Row 3 of your file has no date."}
not JSON: {"kind": "other"}
`), 0o644))
		err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("print", "code", "1")))
		je := failure(t, err)
		require.Equal(t, "validation", je.Kind)
		require.Equal(t, "row 3: no date", err.Error())
		require.True(t, je.Permanent)
		require.Equal(t, "Row 3 of your file has no date.", je.UserMessage)
		require.Equal(t, "half", r.waitStatus())
	})

	t.Run("bad last JSON line", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "stdout"), []byte(`{"outcome": "failure", "kind": 42}`+"\n"), 0o644))
		err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("print", "code", "0")))
		require.Equal(t, kindBadOutput, failure(t, err).Kind)
		require.Equal(t, "stdout: last JSON line: kind: must be a string, got 42 (exit status 0)", err.Error())
	})

	t.Run("a JSON line too long to read", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		long := `{"outcome": "failure", "message": "` + strings.Repeat("m", workMaxLine) + `"}`
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "stdout"), []byte(long+"\n"), 0o644))
		err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("print", "code", "0")))
		require.Equal(t, kindBadOutput, failure(t, err).Kind)
		require.Contains(t, err.Error(), "a line that starts with { is longer than 65536 bytes and cannot be read")
	})

	t.Run("megabytes of output", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("flood")))
		je := failure(t, err)
		require.Equal(t, "flooded", je.Kind)
		require.Equal(t, "too much", err.Error())
		logged := r.log.String()
		t.Logf("about 4.8 MB of stdout made %d bytes of log", len(logged))
		require.Less(t, len(logged), 400<<10, "the log of one job is bounded")
		require.Contains(t, logged, `"line":"xxxxxxxx`)
		require.Contains(t, logged, `x`+queue.TruncatedMarker+`"`, "the 3 MB line is logged cut, with the marker")
		require.Contains(t, logged, `"output_lines_not_logged":99001`)
		require.Contains(t, logged, "a line that starts with { is too long to be read")
	})

	t.Run("statuses: at most one per interval, the latest wins", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		every := 500 * time.Millisecond
		res := r.run(ctx, r.runner(time.Second, every), r.job("status"))
		require.Equal(t, "1/3", r.waitStatus(), "the first status is posted at once")
		// 2/3 and 3/3 come at once, within the interval.
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "next"), nil, 0o644))
		require.Equal(t, "3/3", r.waitStatus(), "then only the latest")
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "go"), nil, 0o644))
		require.NoError(t, r.result(res))
		r.mu.Lock()
		defer r.mu.Unlock()
		require.Len(t, r.statuses, 2)
		require.GreaterOrEqual(t, r.statuses[1].at.Sub(r.statuses[0].at), every)
	})

	t.Run("deadline: SIGTERM to the group", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		jctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		grace := 5 * time.Second
		res := r.run(jctx, r.runner(grace, time.Second), r.job("sleep"))
		require.Equal(t, "running", r.waitStatus())
		pid, child := r.pid("pid"), r.pid("child")
		require.True(t, alive(child))
		at := time.Now()
		cancel(context.DeadlineExceeded)
		err := r.result(res)
		took := time.Since(at)
		t.Logf("stopped %s after the deadline", took.Round(time.Millisecond))
		require.Equal(t, "signal_TERM", failure(t, err).Kind)
		require.Equal(t, "killed by signal SIGTERM (stopped at the job's deadline)", err.Error())
		require.Less(t, took, grace, "SIGTERM was enough")
		require.False(t, alive(pid), "the command is gone")
		r.waitGone(child, "its child")
	})

	t.Run("cancelled: SIGTERM, then SIGKILL", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		jctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		grace := 200 * time.Millisecond
		res := r.run(jctx, r.runner(grace, time.Second), r.job("stubborn"))
		require.Equal(t, "running", r.waitStatus())
		pid, child := r.pid("pid"), r.pid("child")
		at := time.Now()
		cancel(queue.ErrCancelled)
		err := r.result(res)
		took := time.Since(at)
		t.Logf("killed %s after the cancel", took.Round(time.Millisecond))
		require.Equal(t, "signal_KILL", failure(t, err).Kind)
		require.Equal(t, "killed by signal SIGKILL (stopped: attempt revoked: cancelled)", err.Error())
		require.Equal(t, "TERM", r.trace("signals"), "it got SIGTERM first")
		require.GreaterOrEqual(t, took, grace)
		require.Less(t, took, grace+2*time.Second)
		require.False(t, alive(pid), "the command is gone")
		r.waitGone(child, "its child, which ignored SIGTERM too,")
	})

	t.Run("what the command leaves in its group is killed", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		require.NoError(t, r.result(r.run(ctx, r.runner(5*time.Second, time.Second), r.job("leave"))))
		r.waitGone(r.pid("child"), "the child")
	})

	t.Run("a command that cannot start", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		cr := newCommandRunner(workConfig{Path: filepath.Join(r.dir, "gone"), Command: []string{"gone"}, Grace: time.Second, StatusInterval: time.Second},
			nil, slog.New(slog.DiscardHandler))
		err := r.result(r.run(ctx, cr, r.job("succeed")))
		require.Equal(t, kindExecFailed, failure(t, err).Kind)
		require.True(t, strings.HasPrefix(err.Error(), "start gone: "), err.Error())
	})
}

func TestWithPoolSize(t *testing.T) {
	big := 1000
	for _, tt := range []struct{ in, want string }{
		{"redis://:p%40ss@host:6379/2?dial_timeout=3s", "redis://:p%40ss@host:6379/2?dial_timeout=3s&pool_size=1000"},
		{"redis://host/0?pool_size=7", "redis://host/0?pool_size=7"},
		{"", "redis://?pool_size=1000"},
	} {
		got, err := withPoolSize(tt.in, big)
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
	got, err := withPoolSize("redis://host/0", 2)
	require.NoError(t, err)
	require.Equal(t, "redis://host/0", got, "the default pool is large enough")
	_, err = withPoolSize("redis://host:port:x/0", big)
	require.EqualError(t, err, `redis: url: invalid port ":x" after host`)
}

// workProc is a freshen work process.
type workProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	log  *lineLog
	done chan struct{} // closed when it has exited
}

// startWork starts freshen work on the test's Redis and prefix with the
// flags given and testdata/work.sh as its command; it is killed when the
// test ends, and its log printed if the test failed.
func (e *env) startWork(flags ...string) *workProc {
	e.t.Helper()
	args := append([]string{"work", "--redis-url", e.redisURL, "--redis-prefix", e.prefix}, flags...)
	p := &workProc{t: e.t, cmd: exec.Command(e.bin, append(args, "--", workScript)...), log: &lineLog{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(e.t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	e.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if e.t.Failed() {
			e.t.Logf("log of freshen work (last lines):\n%s", p.log.tail(30))
		}
	})
	return p
}

func (p *workProc) signal(sig os.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
}

// exit waits for the process to exit and returns its exit code.
func (p *workProc) exit() int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.t.Fatalf("freshen work did not exit within 20s")
	}
	return p.cmd.ProcessState.ExitCode()
}

// newRedisEnv is newEnv without PostgreSQL, for tests of the wire alone.
func newRedisEnv(t *testing.T) *env {
	t.Helper()
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		t.Skip("REDIS_URL is not set; run under scripts/with-servers.sh")
	}
	e := &env{t: t, bin: freshenBinary(t), redisURL: redisURL, prefix: "work-" + randomHex(t)}
	opt, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	e.rdb = redis.NewClient(opt)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := e.rdb.Scan(ctx, 0, e.prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			e.rdb.Del(ctx, iter.Val())
		}
		_ = e.rdb.Close()
	})
	return e
}

// TestE2EWorkRestart runs freshen work against the scheduler's side of the
// wire (queue.Redis): a worker killed with SIGKILL in the middle of a job
// takes its command with it, and the job runs again once the worker is
// started again with the same id; SIGTERM lets the running command finish
// and post its outcome, and takes no new job; a second SIGTERM kills the
// command and posts nothing, and the job runs again, as does the end of
// --shutdown-timeout.
func TestE2EWorkRestart(t *testing.T) {
	t.Parallel()
	e := newRedisEnv(t)
	ctx := context.Background()
	sched, err := queue.New(e.rdb, queue.Options{Prefix: e.prefix, Consumer: "test", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	flags := []string{"--queue", "q", "--id", "w1", "--grace", "200ms"}
	dirs := map[string]string{} // attempt uid -> the script's traces
	push := func(uid string) {
		dirs[uid] = t.TempDir()
		now := time.Now()
		require.NoError(t, sched.Push(ctx, []refresh.Job{{ModelID: "m", AttemptUID: uid, AttemptNo: 1, Queue: "q",
			Payload: []byte(`{"do": "block", "dir": "` + dirs[uid] + `"}`), StartedAt: now, DeadlineAt: now.Add(time.Hour)}}))
	}
	// next returns the next outcome the worker posts.
	var pending []refresh.Outcome
	next := func() refresh.Outcome {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for len(pending) == 0 {
			require.True(t, time.Now().Before(deadline), "no outcome within 20s")
			outs, err := sched.Receive(ctx, 10, time.Second)
			require.NoError(t, err)
			require.NoError(t, sched.Ack(ctx, nil))
			pending = append(pending, outs...)
		}
		o := pending[0]
		pending = pending[1:]
		return o
	}
	running := func(uid string) int {
		t.Helper()
		o := next()
		require.Equal(t, refresh.Outcome{ModelID: "m", AttemptUID: uid, Type: "status", Message: "running"},
			refresh.Outcome{ModelID: o.ModelID, AttemptUID: o.AttemptUID, Type: o.Type, Message: o.Message})
		b, err := os.ReadFile(filepath.Join(dirs[uid], "pid"))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		return pid
	}
	release := func(uid string) {
		require.NoError(t, os.WriteFile(filepath.Join(dirs[uid], "go"), nil, 0o644))
	}
	succeeded := func(uid string) {
		t.Helper()
		o := next()
		require.Equal(t, uid, o.AttemptUID)
		require.Equal(t, "success", o.Type, "%+v", o)
	}
	runs := func(uid string) []string {
		b, err := os.ReadFile(filepath.Join(dirs[uid], "runs"))
		require.NoError(t, err)
		return strings.Fields(string(b))
	}
	llen := func(k string) int64 {
		n, err := e.rdb.LLen(ctx, e.key(k)).Result()
		require.NoError(t, err)
		return n
	}

	// SIGKILL in the middle of a job.
	push("a")
	w := e.startWork(flags...)
	pid := running("a")
	w.signal(syscall.SIGKILL)
	w.exit()
	e.t.Logf("worker killed; its command %d goes with it", pid)
	waitFor(t, 5*time.Second, "the command of the killed worker to be gone", func() bool { return !alive(pid) })
	require.EqualValues(t, 1, llen("working:q:w1"), "the job waits in the dead worker's list")
	w = e.startWork(flags...)
	running("a")
	require.Equal(t, []string{"a", "a"}, runs("a"), "the job ran again")
	release("a")
	succeeded("a")

	// SIGTERM: the running command finishes, no new job is taken.
	push("b")
	pid = running("b")
	w.signal(syscall.SIGTERM)
	waitFor(t, 5*time.Second, "the worker to stop taking jobs", func() bool {
		return strings.Contains(w.log.String(), "stopping: taking no more jobs")
	})
	push("c")
	require.True(t, alive(pid), "the command still runs")
	release("b")
	succeeded("b")
	require.Equal(t, 0, w.exit(), w.log.tail(10))
	require.EqualValues(t, 1, llen("jobs:q"), "the job pushed after SIGTERM is still queued")
	require.Zero(t, llen("working:q:w1"))

	// Two SIGTERMs: the command is killed, nothing is posted.
	w = e.startWork(flags...)
	pid = running("c")
	w.signal(syscall.SIGTERM)
	waitFor(t, 5*time.Second, "the worker to stop taking jobs", func() bool {
		return strings.Contains(w.log.String(), "stopping: taking no more jobs")
	})
	w.signal(syscall.SIGTERM)
	require.Equal(t, 1, w.exit(), w.log.tail(10))
	require.False(t, alive(pid))
	require.Contains(t, w.log.String(), "freshen work: killed 1 running command(s) without posting their outcomes")
	outs, err := sched.Receive(ctx, 10, 0)
	require.NoError(t, err)
	require.Empty(t, append(pending, outs...), "no outcome posted for the killed command")
	require.EqualValues(t, 1, llen("working:q:w1"))
	w = e.startWork(flags...)
	running("c")
	release("c")
	succeeded("c")
	require.Equal(t, []string{"c", "c"}, runs("c"))
	w.signal(syscall.SIGTERM)
	require.Equal(t, 0, w.exit())

	// --shutdown-timeout: SIGTERM, then the command is killed.
	push("d")
	w = e.startWork(append(flags, "--shutdown-timeout", "300ms")...)
	pid = running("d")
	at := time.Now()
	w.signal(syscall.SIGTERM)
	require.Equal(t, 1, w.exit(), w.log.tail(10))
	t.Logf("killed %s after SIGTERM", time.Since(at).Round(time.Millisecond))
	require.GreaterOrEqual(t, time.Since(at), 300*time.Millisecond)
	require.False(t, alive(pid))
	w = e.startWork(flags...)
	running("d")
	release("d")
	succeeded("d")
	w.signal(syscall.SIGTERM)
	require.Equal(t, 0, w.exit())
	require.Zero(t, llen("working:q:w1")+llen("jobs:q"))
	require.Empty(t, pending)
}

// TestE2EWork runs models through freshen serve and freshen work: a
// success; an unchanged success and a snooze said by a JSON line; an exit status, a JSON line with a customer message, each
// disabling the model with their message; a command that overruns its
// deadline (killed with its child, the attempt timed out, the worker's late
// failure stale); statuses shown while the command runs; and a cancel that
// kills a command ignoring SIGTERM.
func TestE2EWork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.serve("work")
	w := e.startWork("--queue", "sh", "--concurrency", "8", "--grace", "200ms", "--status-interval", "100ms")
	dirs := map[string]string{}
	dir := func(id string) string {
		if dirs[id] == "" {
			dirs[id] = t.TempDir()
		}
		return dirs[id]
	}
	put := func(id, do, more, policy string) {
		dir(id)
		body := fmt.Sprintf(`{"queue": "sh", "trigger": true, "payload": {"do": %q, "dir": %q%s}, "policy": {%s}}`, do, dirs[id], more, policy)
		code, m := request(t, "PUT", p.base+"/models/"+id, body)
		require.Equal(t, http.StatusCreated, code, m)
	}
	get := func(id string) map[string]any {
		code, m := request(t, "GET", p.base+"/models/"+id, "")
		require.Equal(t, http.StatusOK, code, m)
		return m
	}
	trace := func(id, name string) string {
		b, _ := os.ReadFile(filepath.Join(dirs[id], name))
		return strings.TrimSpace(string(b))
	}
	pid := func(id, name string) int {
		n, err := strconv.Atoi(trace(id, name))
		require.NoError(t, err, "%s of %s", name, id)
		return n
	}
	const userMessage = "Row 3 of your file has no date."
	put("ok", "succeed", "", "")
	put("exit3", "exit", `, "code": "3"`, `"retry": {"non_retryable": ["exit_3"]}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir("reject"), "stdout"),
		[]byte(`{"kind": "validation", "message": "row 3: no date", "retryable": false, "user_message": "`+userMessage+`"}`+"\n"), 0o644))
	put("reject", "print", `, "code": "1"`, "")
	put("slow", "sleep", "", `"timeout": "1s", "retry": {"delays": []}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir("same"), "stdout"), []byte(`{"outcome": "unchanged"}`+"\n"), 0o644))
	put("same", "print", `, "code": "0"`, "")
	require.NoError(t, os.WriteFile(filepath.Join(dir("later"), "stdout"), []byte(`{"outcome": "snooze", "for": "1h"}`+"\n"), 0o644))
	put("later", "print", `, "code": "0"`, "")
	put("progress", "status", "", "")
	put("stubborn", "stubborn", "", "")

	waitFor(t, 20*time.Second, "ok to succeed", func() bool { return get("ok")["last_success_at"] != nil })

	var exit3 map[string]any
	waitFor(t, 20*time.Second, "exit3 to be disabled", func() bool { exit3 = get("exit3"); return exit3["disabled"] == true })
	wantMsg := "exit status 3: …"
	for i := 3; i <= 12; i++ {
		wantMsg += fmt.Sprintf("\nproblem %d", i)
	}
	require.Equal(t, map[string]any{"kind": "exit_3", "message": wantMsg}, map[string]any{
		"kind": exit3["last_error"].(map[string]any)["kind"], "message": exit3["last_error"].(map[string]any)["message"]})
	require.Equal(t, "Refresh disabled after 1 failed attempt(s): "+wantMsg, exit3["disabled_reason"])

	// same reports an unchanged success, later a snooze: the scheduler
	// gets them as they are.
	event := func(typ, id string) map[string]any {
		for _, ev := range streamEvents(t, e.rdb, e.key("events")) {
			if ev[0] == typ && ev[1] == id {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(ev[2]), &m))
				return m
			}
		}
		return nil
	}
	var ev map[string]any
	waitFor(t, 20*time.Second, "the success of same", func() bool { ev = event("succeeded", "same"); return ev != nil })
	require.Equal(t, true, ev["unchanged"])
	waitFor(t, 20*time.Second, "the snooze of later", func() bool { ev = event("snoozed", "later"); return ev != nil })
	until, err := time.Parse(time.RFC3339Nano, ev["until"].(string))
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339Nano, ev["at"].(string))
	require.NoError(t, err)
	require.Equal(t, time.Hour, until.Sub(at).Round(time.Second), "for 1h counts from the outcome's write")
	later := get("later")
	require.Nil(t, later["last_error"], "a snooze is not a failure")
	require.Equal(t, false, later["disabled"])

	var reject map[string]any
	waitFor(t, 20*time.Second, "reject to be disabled", func() bool { reject = get("reject"); return reject["disabled"] == true })
	require.Equal(t, userMessage, reject["disabled_reason"])
	require.Equal(t, "validation", reject["last_error"].(map[string]any)["kind"])

	// progress shows its statuses while it runs.
	waitFor(t, 20*time.Second, "the first status of progress", func() bool { return get("progress")["status_message"] == "1/3" })
	require.NoError(t, os.WriteFile(filepath.Join(dirs["progress"], "next"), nil, 0o644))
	waitFor(t, 20*time.Second, "the last status of progress", func() bool { return get("progress")["status_message"] == "3/3" })
	require.NoError(t, os.WriteFile(filepath.Join(dirs["progress"], "go"), nil, 0o644))
	waitFor(t, 20*time.Second, "progress to succeed", func() bool { return get("progress")["last_success_at"] != nil })
	require.Nil(t, get("progress")["status_message"], "cleared at the end of the attempt")

	// stubborn ignores SIGTERM: a cancel kills it after the grace period.
	waitFor(t, 20*time.Second, "stubborn to run", func() bool { return get("stubborn")["status_message"] == "running" })
	stubborn, stubbornChild := pid("stubborn", "pid"), pid("stubborn", "child")
	code, m := request(t, "POST", p.base+"/models/stubborn/cancel", "")
	require.Equal(t, http.StatusOK, code, m)

	// slow overruns its 1s timeout.
	var slow map[string]any
	waitFor(t, 20*time.Second, "slow to time out", func() bool { slow = get("slow"); return slow["disabled"] == true })
	require.Equal(t, "timeout", slow["last_error"].(map[string]any)["kind"])
	waitFor(t, 5*time.Second, "the command of slow and its child to be gone", func() bool {
		return !alive(pid("slow", "pid")) && !alive(pid("slow", "child"))
	})

	// The worker's failures of slow and stubborn came too late: stale (slow's
	// arrived at or after its deadline, or once the timeout was applied).
	stale := func(id string) map[string]any { return event("stale", id) }
	waitFor(t, 10*time.Second, "the stale failure of slow", func() bool { ev = stale("slow"); return ev != nil })
	require.Equal(t, "signal_TERM", ev["kind"])
	require.Equal(t, "killed by signal SIGTERM (stopped at the job's deadline)", ev["message"])
	waitFor(t, 10*time.Second, "the stale failure of stubborn", func() bool { ev = stale("stubborn"); return ev != nil })
	require.Equal(t, "signal_KILL", ev["kind"])
	require.Equal(t, "killed by signal SIGKILL (stopped: attempt revoked: cancelled)", ev["message"])
	require.Equal(t, "TERM", trace("stubborn", "signals"))
	require.False(t, alive(stubborn))
	waitFor(t, 5*time.Second, "the child of stubborn to be gone", func() bool { return !alive(stubbornChild) })

	w.signal(syscall.SIGTERM)
	require.Equal(t, 0, w.exit(), w.log.tail(10))
	p.stop()
}
