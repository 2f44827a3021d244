package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{"bad outcome", []string{"simulate"}, `{"start": "2026-03-02T00:00:00Z", "until": "2026-03-03T00:00:00Z", "model": {"id": "m"}, "attempts": [{"outcome": "maybe"}]}`, `attempts[0].outcome: must be success, failure or timeout, got "maybe"`},
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
