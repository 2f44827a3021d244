package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSimulateReproducesScenarios runs every scenario file through the
// command and compares its output with the golden timeline.
func TestSimulateReproducesScenarios(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.timeline.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, golden := range files {
		spec := strings.TrimSuffix(golden, ".timeline.json") + ".json"
		t.Run(filepath.Base(spec), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"simulate", "-f", spec}, nil, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), stdout.String())
		})
	}
}

func TestSimulateStdinAndFormats(t *testing.T) {
	spec, err := os.ReadFile("../../scenarios/thumbnail.json")
	require.NoError(t, err)

	var table, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"simulate", "--format", "table"}, bytes.NewReader(spec), &table, &stderr), stderr.String())
	require.Contains(t, table.String(), "AT (UTC)")
	require.Contains(t, table.String(), "yes: thumbnail creation failed")
	require.Equal(t, 10, strings.Count(table.String(), "\n"), "header and nine entries:\n%s", table.String())

	var mermaid bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"simulate", "--format", "mermaid"}, bytes.NewReader(spec), &mermaid, &stderr), stderr.String())
	out := mermaid.String()
	require.True(t, strings.HasPrefix(out, "gantt\n"), out)
	require.Equal(t, 4, strings.Count(out, "    attempt "), out)
	require.Contains(t, out, "attempt 1  :crit, a1, 2026-03-02 09:00:00, 2026-03-02 09:00:10")
	require.Contains(t, out, "disabled - thumbnail creation failed :crit, milestone, 2026-03-02 09:06:40, 0m")
}

func TestSimulateBadInput(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"not json", []string{"simulate"}, "{", "invalid spec"},
		{"missing start", []string{"simulate"}, `{"until": "2026-03-02T00:00:00Z", "model": {"id": "m"}}`, "start: is required"},
		{"bad outcome", []string{"simulate"}, `{"start": "2026-03-02T00:00:00Z", "until": "2026-03-03T00:00:00Z", "model": {"id": "m"}, "attempts": [{"outcome": "maybe"}]}`, `attempts[0].outcome: must be success, failure, snooze or timeout, got "maybe"`},
		{"bad policy", []string{"simulate"}, `{"start": "2026-03-02T00:00:00Z", "until": "2026-03-03T00:00:00Z", "model": {"id": "m", "policy": {"retry": {"backoff": {"strategy": "exponential", "base": "1m", "multiplier": 0.5}}}}}`, "model.policy.retry.backoff.multiplier: must be >= 1, got 0.5"},
		{"bad action", []string{"simulate"}, `{"start": "2026-03-02T00:00:00Z", "until": "2026-03-03T00:00:00Z", "model": {"id": "m"}, "actions": [{"at": "2026-03-02T01:00:00Z", "do": "explode"}]}`, `actions[0].do: must be trigger, enable, pause, resume or cancel, got "explode"`},
		{"bad after", []string{"simulate"}, `{"start": "2026-03-02T00:00:00Z", "until": "2026-03-03T00:00:00Z", "model": {"id": "m"}, "attempts": [{"outcome": "success", "after": "-1m"}]}`, `attempts[0].after: must be a duration >= 0 like "2m" or "PT2M", got "-1m"`},
		{"unknown field", []string{"simulate"}, `{"start": "2026-03-02T00:00:00Z", "untill": "x"}`, "untill: unknown field"},
		{"bad format", []string{"simulate", "--format", "xml"}, "", "--format must be json, table or mermaid"},
		{"missing file", []string{"simulate", "-f", "/nonexistent/spec.json"}, "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			require.Equal(t, 2, code)
			require.Contains(t, stderr.String(), tt.want)
			require.Empty(t, stdout.String())
		})
	}
}

// A spec whose timeline would exceed --max-entries is refused with exit
// status 2 and an error naming the limit.
func TestSimulateMaxEntries(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"simulate", "-f", "../../scenarios/thumbnail.json", "--max-entries", "5"}, nil, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "the timeline has more than 5 entries")
	require.Contains(t, stderr.String(), "--max-entries 5")
	require.Empty(t, stdout.String())

	code = run(context.Background(), []string{"simulate", "--max-entries", "0"}, strings.NewReader("{}"), &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "--max-entries: must be >= 1, got 0")
}

// freshen simulate stops within a second of SIGINT or SIGTERM, even in the
// middle of a run that would take minutes (a year of a schedule every
// minute, with no entry limit to speak of).
func TestSimulateStopsOnSignal(t *testing.T) {
	t.Parallel()
	spec := `{"start": "2026-01-01T00:00:00Z", "until": "2026-12-31T00:00:00Z",
		"model": {"id": "runaway", "policy": {"schedule": "FREQ=MINUTELY", "timeout": "1s"}}}`
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(freshenBinary(t), "simulate", "--max-entries", "100000000")
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			done := make(chan struct{}) // closed once the command has exited
			go func() {
				_ = cmd.Wait()
				close(done)
			}()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-done
			})
			// The spec, padded past a pipe's buffer: once the write returns,
			// the command has begun reading it, so its signal handler is in
			// place. It then parses the spec and runs.
			_, err = io.WriteString(stdin, spec+strings.Repeat(" ", 1<<20))
			require.NoError(t, err)
			require.NoError(t, stdin.Close())
			// The run has a million entries ahead of it: it is still going.
			select {
			case <-done:
				t.Fatalf("simulate ended before the signal: %s\n%s", cmd.ProcessState, stderr.String())
			default:
			}
			require.NoError(t, cmd.Process.Signal(sig))
			// It stops at its next step (milliseconds); the bound leaves room
			// for a machine busy with the other tests, while a run that
			// ignores the signal would go on for minutes.
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("simulate did not stop within 10s of %s", sig)
			}
			require.Equal(t, 130, cmd.ProcessState.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "freshen simulate: interrupted")
			require.Empty(t, stdout.String())
		})
	}
}
