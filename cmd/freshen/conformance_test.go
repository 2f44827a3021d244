//go:build linux

package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// conformanceHandler is the conformance handler as a command of freshen
// work.
const conformanceHandler = "../../queue/conformance/testdata/handler.sh"

func TestConformanceFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		err  string
	}{
		{"no command", []string{"--redis-url", "redis://127.0.0.1:1/0"}, "a worker command must follow the flags"},
		{"bench", []string{"--redis-url", "redis://127.0.0.1:1/0", "--bench", "-1", "--", "true"}, "--bench: must be >= 0, got -1"},
		{"parallel", []string{"--redis-url", "redis://127.0.0.1:1/0", "--parallel", "0", "--", "true"}, "--parallel: must be >= 1, got 0"},
		{"no such command", []string{"--redis-url", "redis://127.0.0.1:1/0", "--", "./no-such-worker"}, `command "./no-such-worker": no such file`},
		{"no such case", []string{"--redis-url", "redis://127.0.0.1:1/0", "--cases", "nope", "--", "true"}, `no case "nope"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			require.Equal(t, 2, run(context.Background(), append([]string{"conformance"}, tt.args...), nil, &stdout, &stderr), stderr.String())
			require.Contains(t, stderr.String(), "freshen conformance: ")
			require.Contains(t, stderr.String(), tt.err)
		})
	}
}

// TestConformanceWork: freshen work, with the conformance handler as a
// shell script, passes the kit, driven by a scheduler on PostgreSQL.
func TestConformanceWork(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("the handler script needs jq")
	}
	e := newEnv(t)
	cmd := exec.Command(e.bin, "conformance", "--redis-url", e.redisURL, "--database-url", e.dbURL, "--bench", "20",
		"--", e.bin, "work", "--grace", "1s", "--", conformanceHandler)
	out, err := cmd.CombinedOutput()
	t.Logf("freshen conformance:\n%s", out)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(out), "15 passed, 0 failed\n"), "every case passes")
}
