package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freshen-dev/freshen/refresh"
	"github.com/freshen-dev/freshen/refresh/memory"
	"github.com/freshen-dev/freshen/scenarios"
)

// replayDir holds the recorded history's spec, the proposed policy and the
// golden replays, shared with the tests of package scenarios.
var replayDir = filepath.Join("..", "..", "scenarios", "testdata", "replay")

// recordedServer returns the URL of an API over a memory store that holds
// the history of replayDir/history.json, recorded by the real service and
// loops (model bigtable-7, created 2026-03-01, disabled 2026-03-09
// 06:05Z), and the end of that history.
func recordedServer(t *testing.T) (string, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(replayDir, "history.json"))
	require.NoError(t, err)
	lim := refresh.DefaultLimits()
	spec, err := scenarios.ParseSpec(data, lim)
	require.NoError(t, err)
	store := memory.NewStore()
	_, err = scenarios.Run(context.Background(), spec, lim, scenarios.WithStore(store))
	require.NoError(t, err)
	return memoryAPI(t, store, spec.Until, lim), spec.Until.Format("2006-01-02T15:04:05Z07:00")
}

// Replayed under give_up_after P2D instead of P3D, a model that failed
// every day from March 6 and was disabled on March 9 would have been
// disabled on March 8; the command prints what the library writes, in
// every format.
func TestSimulateReplay(t *testing.T) {
	t.Parallel()
	url, until := recordedServer(t)
	policy := filepath.Join(replayDir, "policy.json")
	for format, golden := range map[string]string{"table": "shorter-give-up.txt", "json": "shorter-give-up.json", "mermaid": "shorter-give-up.mermaid"} {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"simulate", "--model", "bigtable-7", "--policy", policy, "--since", "P30D",
				"--until", until, "--format", format, "--server", url}, nil, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			want, err := os.ReadFile(filepath.Join(replayDir, golden))
			require.NoError(t, err)
			require.Equal(t, string(want), stdout.String())
		})
	}

	// The policy may come from stdin, and FRESHEN_SERVER names the API.
	data, err := os.ReadFile(policy)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"simulate", "--model", "bigtable-7", "--policy", "-", "--until", until, "--format", "table", "--server", url},
		bytes.NewReader(data), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "disabled  2026-03-09 06:05:00  2026-03-08 06:05:00")
}

func TestSimulateReplayBadInput(t *testing.T) {
	t.Parallel()
	url, until := recordedServer(t)
	policy := filepath.Join(replayDir, "policy.json")
	badPolicy := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(badPolicy, []byte(`{"timeout": "1h", "retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}`), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"negative since", []string{"--model", "bigtable-7", "--policy", policy, "--since", "-P1D"}, 2, `--since: must be a duration > 0 such as P30D or 720h, got "-P1D"`},
		{"zero since", []string{"--model", "bigtable-7", "--policy", policy, "--since", "0s"}, 2, `--since: must be a duration > 0`},
		{"since not a duration", []string{"--model", "bigtable-7", "--policy", policy, "--since", "a month"}, 2, `--since: must be a duration > 0 such as P30D or 720h, got "a month"`},
		{"since in months", []string{"--model", "bigtable-7", "--policy", policy, "--since", "P1M"}, 2, `--since: must be a duration > 0`},
		{"since too long", []string{"--model", "bigtable-7", "--policy", policy, "--since", "P367D"}, 2, `--since: must be at most P366D, got "P367D"`},
		{"bad until", []string{"--model", "bigtable-7", "--policy", policy, "--until", "yesterday"}, 2, `--until: must be an RFC 3339 time`},
		{"no policy", []string{"--model", "bigtable-7"}, 2, "--policy: is required with --model"},
		{"no model", []string{"--policy", policy}, 2, "--model: is required with --policy"},
		{"bad model id", []string{"--model", "a b", "--policy", policy}, 2, "--model: "},
		{"spec and model", []string{"--model", "bigtable-7", "--policy", policy, "-f", policy}, 2, "-f goes without --model"},
		{"since without model", []string{"--since", "P1D"}, 2, "--since, --until, --server and --token go with --model"},
		{"invalid policy", []string{"--model", "bigtable-7", "--policy", badPolicy}, 2, "retry.backoff.multiplier: must be >= 1, got 0.5"},
		{"missing policy file", []string{"--model", "bigtable-7", "--policy", "/nonexistent/policy.json"}, 2, "--policy: open /nonexistent/policy.json"},
		{"model not found", []string{"--model", "nope", "--policy", policy}, 1, `model "nope" not found`},
		{"no history in the period", []string{"--model", "bigtable-7", "--policy", policy, "--since", "PT1H"}, 1,
			`model "bigtable-7" has no recorded attempt from 2026-03-11T23:00:00Z to 2026-03-12T00:00:00Z: there is nothing to replay`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate"}, tt.args...)
			if !strings.Contains(tt.name, "without model") && !strings.Contains(tt.name, "bad until") {
				args = append(args, "--until", until)
			}
			if !strings.Contains(tt.name, "without model") {
				args = append(args, "--server", url)
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, tt.code, code, stderr.String())
			require.Contains(t, stderr.String(), tt.want)
			require.Empty(t, stdout.String())
		})
	}
}

// A server run with --min-interval 10s holds a model that runs every 10
// seconds: its replay checks the proposed policy against the limit flags,
// the same as serve's, so the model's own schedule replays once simulate
// is given the server's --min-interval.
func TestSimulateReplayLimits(t *testing.T) {
	t.Parallel()
	lim := refresh.DefaultLimits()
	lim.MinInterval = 10 * time.Second
	spec, err := scenarios.ParseSpec([]byte(`{"start": "2026-03-01T00:00:00Z", "until": "2026-03-01T00:10:00Z",
		"model": {"id": "fast-1", "policy": {"schedule": "FREQ=SECONDLY;INTERVAL=10", "timeout": "5s"}}}`), lim)
	require.NoError(t, err)
	store := memory.NewStore()
	_, err = scenarios.Run(context.Background(), spec, lim, scenarios.WithStore(store))
	require.NoError(t, err)
	url := memoryAPI(t, store, spec.Until, lim)
	policy := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"schedule": "FREQ=SECONDLY;INTERVAL=10", "timeout": "5s", "retry": {"delays": []}}`), 0o600))
	args := []string{"simulate", "--model", "fast-1", "--policy", policy, "--since", "PT1H", "--until", "2026-03-01T00:10:00Z",
		"--format", "table", "--server", url}

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, nil, &stdout, &stderr)
	require.Equal(t, 2, code, "under the default limits: %s", stderr.String())
	require.Contains(t, stderr.String(), "policy.schedule")

	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), append(args, "--min-interval", "10s"), nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.NotEmpty(t, stdout.String())

	stderr.Reset()
	code = run(context.Background(), append(args, "--min-interval", "0s"), nil, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Equal(t, "freshen simulate: --min-interval: must be > 0, got 0\n", stderr.String())
}
