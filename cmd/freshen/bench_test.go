package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBenchNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v        float64
		decimals int
		want     string
	}{
		{0, 0, "0"},
		{999, 0, "999"},
		{1000, 0, "1,000"},
		{28760.04, 1, "28,760.0"},
		{1234567.891, 2, "1,234,567.89"},
		{-1500, 0, "-1,500"},
		{9.6, 1, "9.6"},
	} {
		require.Equal(t, tc.want, benchNumber(tc.v, tc.decimals), "%v with %d decimals", tc.v, tc.decimals)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"e2e", "--database-url", "postgres://db", "--redis-url", "redis://r", "-n", "0"}, "freshen bench e2e: -n: must be >= 1, got 0"},
		{[]string{"e2e", "--database-url", "postgres://db", "--redis-url", "redis://r", "--concurrency", "0"}, "freshen bench e2e: --concurrency: must be >= 1, got 0"},
		{[]string{"worker", "--redis-url", "redis://r"}, "freshen bench worker: --redis-prefix: must be set"},
		{[]string{"worker", "--redis-url", "redis://r", "--redis-prefix", "p", "--log-level", "loud"}, `freshen bench worker: --log-level: must be debug, info, warn or error, got "loud"`},
		{[]string{"--database-url", "postgres://db", "--redis-url", "redis://r", "--window", "10ms"}, "freshen bench: --window: must be >= 1s, got 10ms"},
	} {
		code, stdout, stderr := runBenchArgs(tc.args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		require.Empty(t, stdout)
		require.Equal(t, tc.want+"\n", stderr, "%v", tc.args)
	}
}

func runBenchArgs(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"bench"}, args...), strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}
