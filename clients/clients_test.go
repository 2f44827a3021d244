//go:build linux

// Package clients_test runs, from go test, what keeps the worker clients in
// clients/ honest: their Lua scripts are the Go SDK's (queue/lua), their
// own test suites pass against the Redis of scripts/with-servers.sh, and
// each passes the conformance kit (queue/conformance), its throughput
// measured beside the Go SDK's, and its API client works against a real
// freshen serve (api_test.go). A client whose toolchain is missing
// (scripts/install-clients.sh installs them) is skipped, saying why.
package clients_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/queue"
	"github.com/freshen-dev/freshen/queue/conformance"
)

// The test binary is also the Go SDK's worker that the throughput is
// compared with: run with FRESHEN_TEST_WORKER=go, it is that worker.
func TestMain(m *testing.M) {
	if os.Getenv("FRESHEN_TEST_WORKER") == "go" {
		os.Exit(goWorker())
	}
	os.Exit(m.Run())
}

// goWorker is a Go SDK worker running conformance.Handler, set up from the
// kit's environment.
func goWorker() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	lease, err := time.ParseDuration(os.Getenv("FRESHEN_LEASE"))
	if err != nil {
		log.Error("FRESHEN_LEASE", "err", err)
		return 2
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

// client is a client in clients/ and how to run it.
type client struct {
	name string
	dir  string // under clients/
	// missing says what its toolchain lacks, or "".
	missing func() string
	// test is the command of its own test suite, run in dir.
	test []string
	// workers are the commands of its conformance workers by name: a
	// program and a script, which is relative to the repository's root.
	workers map[string][]string
}

func clients() []client {
	return []client{{
		name: "python", dir: "python",
		missing: func() string {
			if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
				return "/usr/bin/python3 with the redis module (Debian's python3-redis)"
			}
			return ""
		},
		test: []string{"/usr/bin/python3", "-m", "unittest", "discover", "-s", "tests", "-t", "."},
		workers: map[string][]string{
			"python":         {"/usr/bin/python3", "clients/python/examples/conformance.py"},
			"python-asyncio": {"/usr/bin/python3", "clients/python/examples/conformance.py", "--aio"},
		},
	}, {
		name: "typescript", dir: "typescript",
		missing: func() string {
			if _, err := exec.LookPath("node"); err != nil {
				return "node"
			}
			if _, err := os.Stat("typescript/dist/esm/index.js"); err != nil {
				return "the built client (npm ci && npm run build in clients/typescript)"
			}
			return ""
		},
		test: []string{"node", "--test", "test/"},
		workers: map[string][]string{
			"typescript": {"node", "clients/typescript/examples/conformance.mjs"},
		},
	}, {
		name: "php", dir: "php",
		missing: func() string {
			out, err := exec.Command("php", "-m").Output()
			if err != nil {
				return "php (Debian's php-cli)"
			}
			if !bytes.Contains(out, []byte("\nredis\n")) {
				return "php's redis extension (Debian's php-redis)"
			}
			return ""
		},
		test: []string{"php", "tests/run.php"},
		workers: map[string][]string{
			"php": {"php", "clients/php/examples/conformance.php"},
		},
	}}
}

func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Skip("REDIS_URL is not set; run under scripts/with-servers.sh")
	}
	return u
}

// TestLuaCopies: each client ships the Go SDK's Lua scripts unchanged
// (clients/sync-lua.sh copies them).
func TestLuaCopies(t *testing.T) {
	want, err := filepath.Glob("../queue/lua/*.lua")
	require.NoError(t, err)
	require.NotEmpty(t, want)
	for _, dir := range []string{"python/src/freshen/lua", "typescript/lua", "php/lua"} {
		got, err := filepath.Glob(dir + "/*.lua")
		require.NoError(t, err)
		require.Len(t, got, len(want), "%s: run clients/sync-lua.sh", dir)
		for _, f := range want {
			a, err := os.ReadFile(f)
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(dir, filepath.Base(f)))
			require.NoError(t, err, "%s: run clients/sync-lua.sh", dir)
			require.Equal(t, string(a), string(b), "%s differs from queue/lua: run clients/sync-lua.sh", filepath.Join(dir, filepath.Base(f)))
		}
	}
}

// TestClientSuites runs each client's own tests.
func TestClientSuites(t *testing.T) {
	url := redisURL(t)
	for _, c := range clients() {
		t.Run(c.name, func(t *testing.T) {
			if m := c.missing(); m != "" {
				t.Skipf("%s is missing: run scripts/install-clients.sh", m)
			}
			cmd := exec.Command(c.test[0], c.test[1:]...)
			cmd.Dir = c.dir
			cmd.Env = append(os.Environ(), "REDIS_URL="+url, "PYTHONPATH=src")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s\n%s", strings.Join(c.test, " "), out)
			t.Logf("%s: %s", strings.Join(c.test, " "), lastLine(out))
		})
	}
}

// TestConformance runs the kit against each client's conformance worker,
// one worker at a time (their cases are timed: revocations and deadlines
// within a second), and measures the throughput of each beside the Go
// SDK's, with a no-op handler, on the same Redis.
func TestConformance(t *testing.T) {
	url := redisURL(t)
	var figures []string
	run := func(t *testing.T, name string, command []string, env []string, cfg conformance.Config) map[string]conformance.Result {
		cfg.RedisURL = url
		// The clients run beside every other package of make test: a
		// revoked job may take longer than the promised second to stop,
		// though not the 30 s its handler would run (see
		// conformance.Config.RevokeWithin).
		cfg.RevokeWithin = 3 * time.Second
		cfg.Command = command
		cfg.Environ = append(os.Environ(), env...)
		results := map[string]conformance.Result{}
		report := func(r conformance.Result) {
			results[r.Name] = r
			if r.Err != nil {
				t.Logf("FAIL %s: %v\n%s", r.Name, r.Err, r.Log)
			} else {
				t.Logf("PASS %s (%s) %s", r.Name, r.Took.Round(10*time.Millisecond), r.Note)
			}
		}
		sum, err := conformance.Run(context.Background(), cfg, report)
		require.NoError(t, err)
		if sum.Failed > 0 {
			// The kit starts the worker and triggers the case's model at
			// once: the deadline case's 3 s then include the startup of an
			// interpreter, which on a loaded machine can take longer. Each
			// failed case runs once more, alone, and must pass then.
			var again []string
			for n, r := range results {
				if r.Err != nil {
					again = append(again, n)
				}
			}
			t.Logf("%s: %d cases failed; running %v again, alone", name, sum.Failed, again)
			cfg.Only, cfg.Parallel = again, 1
			sum, err = conformance.Run(context.Background(), cfg, report)
			require.NoError(t, err)
			require.Zero(t, sum.Failed, "%s: %d cases failed twice", name, sum.Failed)
		}
		if r, ok := results["throughput"]; ok {
			figures = append(figures, fmt.Sprintf("%-15s %s", name, r.Note))
		}
		return results
	}
	const bench = 2000
	t.Run("go", func(t *testing.T) {
		self, err := os.Executable()
		require.NoError(t, err)
		run(t, "go", []string{self}, []string{"FRESHEN_TEST_WORKER=go"}, conformance.Config{Bench: bench, Only: []string{"throughput"}})
	})
	for _, c := range clients() {
		for name, command := range c.workers {
			t.Run(name, func(t *testing.T) {
				if m := c.missing(); m != "" {
					t.Skipf("%s is missing: run scripts/install-clients.sh", m)
				}
				root, err := filepath.Abs("..")
				require.NoError(t, err)
				abs := append([]string{command[0], filepath.Join(root, command[1])}, command[2:]...)
				run(t, name, abs, nil, conformance.Config{Bench: bench})
			})
		}
	}
	t.Logf("throughput with a no-op handler, %d jobs, concurrency %d:\n%s", bench, conformance.Concurrency, strings.Join(figures, "\n"))
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
