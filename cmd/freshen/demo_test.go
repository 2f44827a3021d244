package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	// 12 virtual hours from 05:55 in Paris, in about a second.
	code := run(context.Background(), []string{"demo", "--duration", "PT12H", "--speed", "43200", "--seed", "3"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	out := stdout.String()
	require.Contains(t, out, "freshen demo: 12h of virtual time from Mon 05:55 Paris")
	require.Contains(t, out, "\nMon 05:55 Paris  bigtable-1   created    first run Mon 06:00 Paris\n")
	require.Contains(t, out, "bigtable-1   start      attempt 1\n")
	require.Contains(t, out, "cache-1      start      attempt 1\n")
	require.Contains(t, out, "thumbnail-1  trigger    edited → refresh now\n")
	require.Contains(t, out, "\nSummary: 12h of virtual time in ")
	require.Regexp(t, `\d+ starts?, \d+ success(es)?, \d+ failures? \(\d+ timeouts?\), \d+ retr(y|ies), \d+ disables?, \d+ stale outcomes?`, out)
	require.Contains(t, out, "  model         starts  successes  failures  retries  disables\n")
	require.NotRegexp(t, `\nTue `, out, "no event after the end")
}

func TestDemoFlags(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--speed 0":         "--speed: must be > 0, got 0",
		"--duration 0s":     "--duration: must be > 0, got 0s",
		"--duration soon":   `invalid value "soon" for flag -duration`,
		"--fail-rate 1.5":   "--fail-rate: must be between 0 and 1, got 1.5",
		"--edit-every -1m":  "--edit-every: must be > 0, got -1m",
		"--start yesterday": `invalid value "yesterday" for flag -start`,
		"extra":             `unexpected argument "extra"`,
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"demo"}, strings.Fields(args)...), nil, &stdout, &stderr)
		require.Equal(t, 2, code, args)
		require.Contains(t, stderr.String(), want, args)
		require.Empty(t, stdout.String(), args)
	}
}

func TestDemoServesTheAPI(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"demo", "--duration", "1h", "--speed", "36000", "--addr", "127.0.0.1:0"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Regexp(t, `HTTP API on http://127\.0\.0\.1:\d+ \(try GET /models\)`, stdout.String())
	require.Contains(t, stdout.String(), "\nSummary: 1h of virtual time in ")
}

func TestDemoEndsEarlyOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"demo"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "\nSummary: ")
}
