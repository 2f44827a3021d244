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
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/refresh"
)

// workScript is the command of the tests, the engine's (queue/command):
// what it does is its payload's "do".
const workScript = "../../queue/command/testdata/work.sh"

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
	put("slow", "sleep", "", `"timeout": "3s", "retry": {"delays": []}`) // time for the script to start on a busy machine
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
	require.Equal(t, "Refresh disabled after 1 failed attempt(s).", exit3["disabled_reason"], "the customer's text carries none of the command's stderr")

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

	// slow overruns its 3s timeout.
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
