//go:build linux

package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

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
		{"unchanged in the wire's form", line(exit0, `{"outcome": "success", "unchanged": true}`), want{result: &queue.Result{Unchanged: true}}},
		{"unchanged in the wire's form wins over the exit status", line(exit3, `{"outcome": "success", "unchanged": true}`), want{result: &queue.Result{Unchanged: true}}},
		{"unchanged with exit status 0 and no outcome", line(exit0, `{"unchanged": true}`), want{result: &queue.Result{Unchanged: true}}},
		{"unchanged false is a plain success", line(exit0, `{"outcome": "success", "unchanged": false}`), want{success: true}},
		{"unchanged on a failure", line(exit0, `{"outcome": "failure", "unchanged": true}`), bad("unchanged: only a success outcome takes it")},
		{"unchanged on an exit failure", line(exit3, `{"unchanged": true}`), bad("unchanged: only a success outcome takes it")},
		{"unchanged on a snooze", line(exit0, `{"outcome": "snooze", "for": "1m", "unchanged": true}`), bad("unchanged: only a success outcome takes it")},
		{"unchanged not a boolean", line(exit0, `{"outcome": "success", "unchanged": "yes"}`), bad(`unchanged: must be true or false, got "yes"`)},
		{"a duplicate member, as on the wire", line(exit3, `{"kind": "a", "kind": "b"}`), bad("kind: duplicate field")},
		{"NUL in a message, as on the wire", line(exit3, `{"message": "a\u0000b"}`), bad("message: must not contain NUL")},
		{"a long message is cut, as on the wire", line(exit3, `{"message": "`+strings.Repeat("m", 5000)+`"}`),
			want{kind: "exit_3", message: strings.Repeat("m", 4096-len(queue.TruncatedMarker)) + queue.TruncatedMarker}},
		{"snooze for", line(exit0, `{"outcome": "snooze", "for": "10m"}`), want{result: &queue.Result{Snooze: true, For: 10 * time.Minute}}},
		{"snooze for in ISO 8601", line(exit3, `{"outcome": "snooze", "for": "PT1H30M"}`), want{result: &queue.Result{Snooze: true, For: 90 * time.Minute}}},
		{"snooze until", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T07:00:00Z"}`),
			want{result: &queue.Result{Snooze: true, Until: time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)}}},
		{"snooze until in another zone", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T08:00:00+01:00"}`),
			want{result: &queue.Result{Snooze: true, Until: time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)}}},
		{"unchanged with snooze fields", line(exit0, `{"outcome": "unchanged", "for": "1m"}`), bad(`for: only a snooze outcome takes it`)},
		{"unchanged with failure fields", line(exit0, `{"outcome": "unchanged", "kind": "x"}`), bad(`kind: only with outcome failure, got outcome "unchanged"`)},
		{"snooze needs a time", line(exit0, `{"outcome": "snooze"}`), bad("stdout: last JSON line: until: a snooze needs until or for")},
		{"snooze with both", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T07:00:00Z", "for": "1h"}`), bad("until: a snooze sets until or for, not both")},
		{"snooze until the past", line(exit0, `{"outcome": "snooze", "until": "2026-03-02T05:00:00Z"}`), bad("until: must be after 2026-03-02T06:00:00Z, got 2026-03-02T05:00:00Z")},
		{"snooze until not a time", line(exit0, `{"outcome": "snooze", "until": "tomorrow"}`), bad(`until: must be an RFC 3339 time, got "tomorrow"`)},
		{"snooze for not a duration", line(exit0, `{"outcome": "snooze", "for": "a while"}`), bad(`for: `)},
		{"snooze for zero", line(exit0, `{"outcome": "snooze", "for": "0s"}`), bad(`until: a snooze needs until or for`)},
		{"snooze for less than zero", line(exit0, `{"outcome": "snooze", "for": "-5m"}`), bad(`for: must be > 0, got -5m`)},
		{"unknown outcome", line(exit0, `{"outcome": "done"}`), bad(`stdout: last JSON line: outcome: must be success, failure, snooze or unchanged, got "done" (exit status 0)`)},
		{"status is not a result", line(exit0, `{"outcome": "status"}`), bad(`outcome: must be success, failure, snooze or unchanged, got "status"`)},
		{"outcome not a string", line(exit0, `{"outcome": 1}`), bad("outcome: must be a string, got 1")},
		{"kind not a string", line(exit3, `{"kind": 42}`), bad("kind: must be a string, got 42")},
		{"message not a string", line(exit3, `{"message": ["a"]}`), bad(`message: must be a string, got ["a"]`)},
		{"retryable not a boolean", line(exit3, `{"retryable": "no"}`), bad(`retryable: must be true or false, got "no"`)},
		{"user_message not a string", line(exit3, `{"user_message": {}}`), bad("user_message: must be a string, got {}")},
		{"an empty kind is absent, as on the wire", line(exit3, `{"kind": ""}`), want{kind: "exit_3", message: "exit status 3: no input\nbye"}},
		{"long kind", line(exit3, `{"kind": "`+strings.Repeat("k", 65)+`"}`), bad("kind: must be at most 64 bytes, got 65")},
		{"kind with NUL", line(exit3, `{"kind": "a\u0000b"}`), bad("kind: must not contain NUL")},
		{"failure fields on exit status 0", line(exit0, `{"kind": "validation"}`), bad("kind: only with a failure, and the command exited with status 0 and gave no outcome")},
		{"failure fields on a success", line(exit3, `{"outcome": "success", "message": "done"}`), bad(`message: only with outcome failure, got outcome "success"`)},
		{"failure fields on a snooze", line(exit0, `{"outcome": "snooze", "for": "1m", "user_message": "x"}`), bad(`user_message: only with outcome failure, got outcome "snooze"`)},
		{"snooze fields on a failure", line(exit3, `{"outcome": "failure", "until": "2026-03-02T07:00:00Z"}`), bad(`until: only a snooze outcome takes it`)},
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
	require.LessOrEqual(t, len(tail), tailBytes+len("…\n"))
	require.True(t, strings.HasPrefix(tail, "…\n"), tail)
	require.Equal(t, 1, strings.Count(tail, "\n"), "only the last line fits")

	o = &jobOutput{log: slog.New(slog.DiscardHandler)}
	o.stderrLine(bytes.Repeat([]byte("x"), 5000), false)
	tail = o.tail()
	require.True(t, strings.HasSuffix(tail, queue.TruncatedMarker), tail)
	require.LessOrEqual(t, len(tail), tailBytes)
}

// workScript is the command of the tests: what it does is its payload's
// "do".
const workScript = "testdata/work.sh"

// lineLog keeps what is written to it; it is safe for concurrent writers.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tail returns the last n lines.
func (l *lineLog) tail(n int) string {
	lines := strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitFor polls cond until it returns true, and fails the test if that
// takes longer than timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
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
func (r *scriptRun) runner(grace, every time.Duration, environ ...string) *Runner {
	if len(environ) == 0 {
		environ = os.Environ()
	}
	path, err := LookPath(workScript)
	require.NoError(r.t, err)
	return newRunner(r.t, Config{Path: path, Args: []string{workScript}, Environ: environ, Grace: grace, StatusInterval: every,
		Logger: slog.New(slog.NewJSONHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
}

// newRunner is New, which must not fail.
func newRunner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	r, err := New(cfg)
	require.NoError(t, err)
	return r
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
func (r *scriptRun) run(ctx context.Context, cr *Runner, job refresh.Job) <-chan error {
	res := make(chan error, 1)
	go func() {
		err := cr.Run(ctx, job, r.status)
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
		sh, err := LookPath("sh")
		require.NoError(t, err)
		cr := newRunner(t, Config{Path: sh, Args: []string{"sh", "-c", `read -r p; [ "$p" = null ]`}, Logger: slog.New(slog.DiscardHandler)})
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
		require.Equal(t, KindBadOutput, failure(t, err).Kind)
		require.Equal(t, "stdout: last JSON line: kind: must be a string, got 42 (exit status 0)", err.Error())
	})

	t.Run("a JSON line too long to read", func(t *testing.T) {
		t.Parallel()
		r := newScriptRun(t)
		long := `{"outcome": "failure", "message": "` + strings.Repeat("m", MaxLine) + `"}`
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, "stdout"), []byte(long+"\n"), 0o644))
		err := r.result(r.run(ctx, r.runner(time.Second, time.Second), r.job("print", "code", "0")))
		require.Equal(t, KindBadOutput, failure(t, err).Kind)
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
		cr := newRunner(t, Config{Path: filepath.Join(r.dir, "gone"), Args: []string{"gone"}, Logger: slog.New(slog.DiscardHandler)})
		err := r.result(r.run(ctx, cr, r.job("succeed")))
		require.Equal(t, KindExecFailed, failure(t, err).Kind)
		require.True(t, strings.HasPrefix(err.Error(), "start gone: "), err.Error())
	})
}
